"""PRD discussion and ScaleEval debate engines, their jobs, and the outcome measures."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest

from peercore.discussion import discussion_outcomes, opinion_changes, run_debate, run_discussion
from peercore.jobs.base import Judge, parse_item_key
from peercore.jobs.discussion import DebateJob, DiscussionJob
from peercore.runner import RetryPolicy, run_job_sync
from runner.fakes import FakeBackend, make_study

FAST = RetryPolicy(max_attempts=3, base_s=0.001)


async def direct(backend, request):
    return await backend.complete(request)


def is_initial(request) -> bool:
    return "impartial evaluator" in request.messages[0]["content"]


def scripted(initial: str, later: str | None = None):
    """Agent reply: ``initial`` verdict digit first, then ``later`` (default same) in discussion rounds."""
    def reply(request):
        digit = initial if is_initial(request) else (later or initial)
        return f"My reasoning about the criterion.\n{digit}"
    return reply


def agent(name, initial, later=None):
    return Judge(FakeBackend(name, reply=scripted(initial, later)), name=name)


def debate(agents, max_rounds=3):
    return asyncio.run(run_debate(direct, "Q?", "S1", "S2", agents=agents, criterion="helpfulness",
                                  max_rounds=max_rounds))


# ------------------------------------------------------------------------- debate


def test_debate_that_agrees_at_once_has_no_rounds():
    result = debate([agent("a", "1"), agent("b", "1"), agent("c", "1")])
    assert result.status == "agreed" and result.consensus == "model_a" and result.n_rounds == 0
    assert [(t.round, t.position, t.speaker) for t in result.turns] == [(0, 0, "a"), (0, 1, "b"), (0, 2, "c")]


def test_debate_converges_after_one_round():
    result = debate([agent("a", "1"), agent("b", "1"), agent("c", "2", later="1")])
    assert result.status == "agreed" and result.n_rounds == 1 and len(result.turns) == 6
    assert result.initial == {"a": "model_a", "b": "model_a", "c": "model_b"}
    assert result.final == {"a": "model_a", "b": "model_a", "c": "model_a"}


def test_debate_still_split_after_d_minus_1_rounds_is_unresolved():
    result = debate([agent("a", "1"), agent("b", "2"), agent("c", "0")], max_rounds=3)
    assert result.status == "unresolved" and result.consensus is None
    assert result.n_rounds == 2 and len(result.turns) == 9
    assert result.final == {"a": "model_a", "b": "model_b", "c": "tie"}


def test_an_unreadable_verdict_is_disagreement():
    result = debate([agent("a", "1"), agent("b", "1"), agent("c", "no idea")], max_rounds=2)
    assert result.status == "unresolved" and result.final["c"] is None


def test_in_a_round_each_agent_sees_its_own_and_the_others_previous_evaluations():
    def reply_for(name):
        def reply(request):
            return f"{name} text round {'0' if is_initial(request) else 'n'}\n{'1' if name != 'c' else '2'}"
        return reply

    backends = {n: FakeBackend(n, reply=reply_for(n)) for n in "abc"}
    asyncio.run(run_debate(direct, "Q?", "S1", "S2", agents=[Judge(b, name=n) for n, b in backends.items()],
                           criterion="helpfulness", max_rounds=2))
    second = backends["b"].requests[1]
    text = second.messages[-1]["content"]
    own = text.split("[Your previous evaluation]")[1].split("[The other evaluators' previous evaluations]")
    assert "b text round 0" in own[0]
    assert "a text round 0" in own[1] and "c text round 0" in own[1] and "b text round 0" not in own[1]
    assert "You are Speaker 2" in second.messages[0]["content"]


def test_debate_refuses_bad_panels():
    with pytest.raises(ValueError, match="at least 2 agents"):
        debate([agent("a", "1")])
    with pytest.raises(ValueError, match="max_rounds"):
        debate([agent("a", "1"), agent("b", "1")], max_rounds=0)


def test_debate_job_orders_come_from_the_seed(store, study):
    agents = [agent("a", "1"), agent("b", "1"), agent("c", "1")]
    job = DebateJob(study, agents, seed=3)
    items = job.prepare(store)
    assert len(items) == 3 * 3  # questions x unordered pairs of 3 models
    layouts = [job.layout(i) for i in items]
    again = DebateJob(study, agents, seed=3)
    again.prepare(store)
    assert [again.layout(i) for i in items] == layouts
    firsts = {(parse_item_key(i)[1] == lay[1]) for i, lay in zip(items, layouts)}
    assert firsts == {True, False}  # the shown order is randomised over items
    speaker_orders = {tuple(a.label for a in lay[4]) for lay in layouts}
    assert len(speaker_orders) > 1
    other = DebateJob(study, agents, seed=4)
    other.prepare(store)
    assert [other.layout(i) for i in items] != layouts


def test_debate_job_stores_debates_judgments_and_the_queue(store):
    make_study(store, questions=2, models=("m1", "m2"))
    agents = [agent("a", "1"), agent("b", "2"), agent("c", "1", later="1")]
    job = DebateJob("demo", agents, max_rounds=2, name="panel")
    result = run_job_sync(job, store, retry=FAST)
    assert result.status == "finished" and result.done == 2
    debates = store.debates.table("demo", kind="debate")
    assert len(debates) == 2 and set(debates["status"]) == {"unresolved"}
    assert set(debates["criterion"]) == {"helpfulness"} and set(debates["scenario"]) == {"cat"}
    assert set(debates["n_rounds"]) == {1}
    assert len(store.debates.queue("demo")) == 2
    turns = store.debates.turns(debates["id"])
    assert len(turns) == 2 * 3 * 2
    judgments = store.verdicts.table("demo")
    initial = judgments[judgments["round"].isna()]
    final = judgments[judgments["round"] == 1]
    assert len(initial) == 2 * 3 and len(final) == 2 * 3
    assert not any(judgments["judge"].str.startswith("debate:"))  # no consensus when split
    again = run_job_sync(DebateJob("demo", agents, max_rounds=2, name="panel"), store, retry=FAST)
    assert again.calls == 0 and len(store.debates.table("demo")) == 2


def test_debate_job_consensus_is_a_judgment(store):
    make_study(store, questions=1, models=("m1", "m2"))
    agents = [agent("a", "2"), agent("b", "2")]
    run_job_sync(DebateJob("demo", agents), store, retry=FAST)
    judgments = store.verdicts.table("demo")
    consensus = judgments[judgments["judge"] == "debate:scaleeval"]
    assert len(consensus) == 1 and consensus["winner"].item() == "model_b"
    assert consensus["criterion"].item() == "helpfulness"
    assert store.judges.table("demo").set_index("name").loc["debate:scaleeval", "kind"] == "debate"


def test_debate_job_validates(study):
    with pytest.raises(ValueError, match="no rubric"):
        DebateJob(study, [agent("a", "1"), agent("b", "1")], criteria=["taste"])
    with pytest.raises(ValueError, match="at least 2 agents"):
        DebateJob(study, [agent("a", "1")])


# --------------------------------------------------------------------- discussion


def reviewer(name, initial, turns):
    """A PRD reviewer: ``initial`` review verdict, then its discussion verdicts in order."""
    said = iter(turns)

    def reply(request):
        if "Reviewer 1's Evaluation" in request.messages[-1]["content"]:
            return f"{name} discusses.\n{next(said)}"
        return f"{name} reviews.\n{initial}"

    return Judge(FakeBackend(name, reply=reply), name=name)


def test_discussion_leader_speaks_first_and_every_turn_has_a_verdict():
    lead, follow = reviewer("x", "1", ["1", "1"]), reviewer("y", "2", ["1"])
    result = asyncio.run(run_discussion(direct, "Q?", "A1", "A2", leader=lead, follower=follow, turns=3))
    assert [(t.round, t.speaker, t.verdict) for t in result.turns] == [
        (0, "x", "model_a"), (0, "y", "model_b"), (1, "x", "model_a"), (2, "y", "model_a"), (3, "x", "model_a")]
    assert result.final == {"x": "model_a", "y": "model_a"} and result.agreed and result.consensus == "model_a"
    first_turn = lead.backend.requests[1]
    assert "You are reviewer 1" in first_turn.messages[0]["content"]
    second_turn = follow.backend.requests[1]
    assert "You are reviewer 2" in second_turn.messages[0]["content"]
    assert "x discusses." in second_turn.messages[-1]["content"]  # sees the discussion so far


def test_discussion_with_no_turns_keeps_the_initial_reviews():
    result = asyncio.run(run_discussion(direct, "Q?", "A1", "A2", leader=reviewer("x", "1", []),
                                        follower=reviewer("y", "2", []), turns=0))
    assert len(result.turns) == 2 and not result.agreed and result.final == {"x": "model_a", "y": "model_b"}


def test_discussion_job_runs_both_leader_orders_and_reuses_the_initial_reviews(store):
    make_study(store, questions=1, models=("m1", "m2"))
    x, y = reviewer("x", "1", ["1"] * 10), reviewer("y", "2", ["2"] * 10)
    job = DiscussionJob("demo", [x, y], turns=2)
    result = run_job_sync(job, store, retry=FAST)
    assert result.done == 4  # 2 ordered pairs x 2 leaders
    assert result.calls == 2 * 2 + 4 * 2  # initial reviews paid once per order, then 2 turns each
    debates = store.debates.table("demo", kind="discussion")
    assert len(debates) == 4
    assert sorted(m["leader"] for m in debates["metadata"]) == ["x", "x", "y", "y"]
    judgments = store.verdicts.table("demo", with_vote=True)
    finals = judgments[judgments["round"] == 2]
    assert len(finals) == 8 and set(finals["vote"]) == {0, 1}
    assert len(judgments[judgments["round"].isna()]) == 4  # initial reviews, stored once


def test_discussion_job_needs_two_reviewers(study):
    with pytest.raises(ValueError, match="exactly 2 reviewers"):
        DiscussionJob(study, [FakeBackend()])


# ----------------------------------------------------------------------- outcomes


def _turns(rows):
    return pd.DataFrame(rows, columns=["debate_id", "round", "position", "speaker", "verdict", "rationale"])


def test_opinion_changes_count_altered_and_held_per_later_verdict():
    turns = _turns([
        (1, 0, 0, "x", "model_a", ""), (1, 0, 1, "y", "model_b", ""),
        (1, 1, 0, "x", "model_a", ""), (1, 2, 0, "y", "model_a", ""), (1, 3, 0, "x", None, ""),
    ])
    changes = opinion_changes(turns)
    assert changes[["speaker", "previous", "verdict", "altered"]].values.tolist() == [
        ["x", "model_a", "model_a", False], ["y", "model_b", "model_a", True]]


def test_discussion_outcomes_report_agreement_and_the_leader_effect():
    debates = pd.DataFrame({"id": [1, 2, 3]})
    turns = _turns([
        # 1: split, then the follower adopts the leader's view
        (1, 0, 0, "x", "model_a", ""), (1, 0, 1, "y", "model_b", ""), (1, 1, 0, "x", "model_a", ""),
        (1, 2, 0, "y", "model_a", ""),
        # 2: split, the leader gives in
        (2, 0, 0, "y", "model_a", ""), (2, 0, 1, "x", "model_b", ""), (2, 1, 0, "y", "model_b", ""),
        # 3: agree from the start
        (3, 0, 0, "x", "tie", ""), (3, 0, 1, "y", "tie", ""),
    ])
    out = discussion_outcomes(debates, turns).set_index("debate_id")
    assert out.loc[1, "leader"] == "x" and out.loc[1, "followed_leader"] == True  # noqa: E712
    assert out.loc[2, "followed_leader"] == False  # noqa: E712
    assert out.loc[3, "initially_agreed"] and out.loc[3, "followed_leader"] is None
    assert out["finally_agreed"].tolist() == [True, True, True]
    assert out.loc[1, ["altered", "held"]].tolist() == [1, 1]
    assert out.loc[2, ["altered", "held"]].tolist() == [1, 0]


# ------------------------------------------------------- templates and seeded agents

COMPACT = {"initial_template": "scaleeval_compact_initial", "discussion_template": "scaleeval_compact_discussion"}


def verdict_first(initial: str, later: str | None = None):
    """Agent reply in the compact layout: the verdict line first, then a reason (which names the other side)."""
    def reply(request):
        digit = initial if is_initial(request) else (later or initial)
        return f"Verdict: {digit}\nReason: Submission {3 - int(digit) if digit in '12' else 1} is not as clear."
    return reply


def test_debate_job_runs_the_compact_templates(store):
    make_study(store, questions=1, models=("m1", "m2"))
    backends = {n: FakeBackend(n, reply=verdict_first(v, later="2")) for n, v in (("a", "2"), ("b", "1"))}
    job = DebateJob("demo", [Judge(b, name=n) for n, b in backends.items()], max_rounds=3, name="panel", **COMPACT)
    result = run_job_sync(job, store, retry=FAST)
    assert result.status == "finished" and result.done == 1
    first, second = backends["b"].requests
    assert "Reply with exactly two lines:\nVerdict: 1 if Submission 1 is better" in first.messages[-1]["content"]
    assert "This is discussion round 1." in second.messages[-1]["content"]
    assert "[Your previous evaluation]\nVerdict: 1\nReason:" in second.messages[-1]["content"]
    debate = store.debates.table("demo", kind="debate").iloc[0]
    assert (debate["status"], debate["consensus"], debate["n_rounds"]) == ("agreed", "model_b", 1)
    assert debate["metadata"]["templates"] == ["scaleeval_compact_initial", "scaleeval_compact_discussion"]
    turns = store.debates.turns([debate["id"]])
    assert turns["verdict"].notna().all() and len(turns) == 4
    judgments = store.verdicts.table("demo")
    b_initial = judgments[(judgments["judge"] == "b") & judgments["round"].isna()].iloc[0]
    assert b_initial["winner"] == "model_a" and b_initial["rationale"] == "Reason: Submission 2 is not as clear."
    assert judgments.loc[judgments["judge"] == "debate:panel", "winner"].tolist() == ["model_b"]


def test_debate_templates_are_part_of_the_config_and_the_run_id(study):
    agents = [agent("a", "1"), agent("b", "1")]
    default = DebateJob(study, agents)
    assert default.templates == ("scaleeval_initial", "scaleeval_discussion")
    assert "initial_template" not in default.config()  # unchanged config: earlier default runs keep their ids
    compact = DebateJob(study, agents, **COMPACT)
    assert compact.config()["initial_template"] == "scaleeval_compact_initial"
    assert compact.config()["discussion_template"] == "scaleeval_compact_discussion"
    assert compact.run_id() != default.run_id()
    assert compact.run_id() == DebateJob(study, agents, **COMPACT).run_id()


def test_debate_templates_are_checked(study):
    agents = [agent("a", "1"), agent("b", "1")]
    with pytest.raises(ValueError, match=r"initial_template must be a template of kind 'debate_initial'.*'prd_review'"):
        DebateJob(study, agents, initial_template="prd_review")
    with pytest.raises(ValueError, match=r"discussion_template must be .*'debate_discussion'.*'scaleeval_compact_initial'"):
        DebateJob(study, agents, discussion_template="scaleeval_compact_initial")
    with pytest.raises(ValueError, match=r"initial_template: .*'nope'"):
        DebateJob(study, agents, initial_template="nope")


def test_two_agents_of_one_model_at_one_temperature_sample_with_their_own_seeds(store):
    make_study(store, questions=1, models=("m1", "m2"))
    shared = FakeBackend("qwen", reply=lambda request: f"Verdict: {1 + (request.seed or 0) % 2}\nReason: seed {request.seed}")
    agents = [Judge(shared, name="warm-a", temperature=0.7, seed=1), Judge(shared, name="warm-b", temperature=0.7, seed=2)]
    run_job_sync(DebateJob("demo", agents, max_rounds=1, **COMPACT), store, retry=FAST)
    assert sorted(r.seed for r in shared.requests) == [1, 2]  # two calls: no shared cached reply
    turns = store.debates.turns(store.debates.table("demo")["id"]).set_index("speaker")
    assert turns.loc["warm-a", "verdict"] == "model_b" and turns.loc["warm-b", "verdict"] == "model_a"
    assert [a["seed"] for a in DebateJob("demo", agents).config()["agents"]] == [1, 2]
    assert "seed" not in Judge(shared).describe()  # unseeded judges keep the config they had
    with pytest.raises(ValueError, match="seed must be an integer or None, got 1.5"):
        Judge(shared, seed=1.5)
