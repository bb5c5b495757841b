"""Absolute scores: text parsing never guesses; the expected score over the score tokens; the score job."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from peercore.jobs.scoring import ScoreJob, default_score_method
from peercore.nlg.prompts import load_nlg_template, nlg_templates
from peercore.nlg.scoring import check_scale, expected_score, parse_score
from peercore.reviewers.base import Backend, Capabilities, ChatRequest, Completion
from peercore.runner import run_job_sync
from peercore.store import Store


@pytest.mark.parametrize(("text", "score"), [
    ("Score: 7", 7.0),
    ("Score: 7/9", 7.0),
    ("Score: 7 out of 9", 7.0),
    ("Score: **7**", 7.0),
    ("Rating: [[7]]", 7.0),
    ("[[3.5]]", 3.5),
    ("7", 7.0),
    ("7.", 7.0),
    ("Score: 7\nThe reply is coherent, so the score is 7.", 7.0),  # the same score twice
    ("Score: 9", 9.0),
    ("Score: 1", 1.0),
])
def test_a_score_is_read_where_the_reply_says_it(text, score):
    assert parse_score(text, low=1, high=9).score == score


@pytest.mark.parametrize(("text", "problem"), [
    ("Score: ", "no score"),
    ("Score: seven", "no score"),
    ("The response is good; it mentions 2 films.", "no score"),  # a number that is not a score
    ("Score: 7. Rating: 8", "two different scores (7 and 8)"),
    ("[[6]] ... Score: 8", "two different scores (6 and 8)"),
    ("Score: 7 or 8", "a range"),
    ("Score: 7-8", "a range"),
    ("Score: 7 to 8", "a range"),
    ("Score: 10", "10 is outside the scale 1-9"),
    ("Score: 0", "0 is outside the scale 1-9"),
    ("Score: 7/10", "a score out of 10, but the scale is 1-9"),
    ("7/10", "a score out of 10"),
])
def test_parsing_never_guesses(text, problem):
    parsed = parse_score(text, low=1, high=9)
    assert parsed.score is None and not parsed.valid and problem in parsed.problem


def test_the_scale_is_checked():
    assert parse_score("Score: 10", low=1, high=10).score == 10.0
    for low, high in ((5, 5), (3, 1), (1.5, 9), (True, 9)):
        with pytest.raises(ValueError, match="scale"):
            check_scale(low, high)


def test_expected_score_over_the_score_tokens():
    top = {"7": math.log(0.5), " 7": math.log(0.1), "8": math.log(0.2), "9": math.log(0.1), "Score": math.log(0.1)}
    expected, distribution, mass = expected_score(top, [str(k) for k in range(1, 10)])
    # P(7) = 0.6 / 0.9, P(8) = 0.2 / 0.9, P(9) = 0.1 / 0.9 (" 7" joins "7"; "Score" is not a score)
    assert distribution["7"] == pytest.approx(2 / 3) and distribution["1"] == 0.0
    assert expected == pytest.approx((7 * 0.6 + 8 * 0.2 + 9 * 0.1) / 0.9)
    assert mass == pytest.approx(0.9)
    assert expected_score({"Score": 0.0, "The": -1.0}, ["1", "2"]) is None
    assert expected_score(None, ["1", "2"]) is None


def test_the_nlg_templates_are_those_of_the_bundled_run():
    # The bundled TopicalChat run (sample_data/topicalchat, benchmarks/results/nlg_topicalchat.md) was made
    # with these template versions; a change of wording makes new judges (and a new run).
    assert nlg_templates() == ["nlg_compare", "nlg_compare_generative", "nlg_score"]
    assert load_nlg_template("nlg_compare").version == "f70e39de"
    assert load_nlg_template("nlg_score").version == "55ade6b0"
    score = load_nlg_template("nlg_score")
    assert score.kind == "score" and score.labels == tuple("123456789") and score.prefill == "Score: "


# --------------------------------------------------------------------- the score job


class ScoreBackend(Backend):
    """An in-process judge that knows each answer's quality: it reads the answer from the prompt."""

    backend = "local"
    model = "fake-scorer"
    capabilities = Capabilities(logprobs=True, logits=True, prefill=True)

    def __init__(self, quality: dict[str, int], *, unreadable: str | None = None) -> None:
        self.quality = quality
        self.unreadable = unreadable
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        answer = request.messages[-1]["content"].split("Response: ", 1)[1].split("\n", 1)[0]
        if answer == self.unreadable:
            return Completion(text="\n", top_logprobs={"\n": -0.01, "The": -5.0})
        q = self.quality[answer]
        top = {str(q): math.log(0.6), str(q + 1 if q < 9 else q - 1): math.log(0.3), "\n": math.log(0.1)}
        return Completion(text=str(q), top_logprobs=top, prompt_tokens=10, completion_tokens=1)


def _study(store: Store) -> dict[str, int]:
    store.studies.create("s")
    store.questions.add("s", pd.DataFrame({"question_id": ["q1", "q2"], "text": ["Context one.", "Context two."]}))
    quality = {}
    rows = []
    for q in ("q1", "q2"):
        for m, value in zip(("a", "b", "c"), (8, 5, 2)):
            text = f"answer {m} to {q}"
            quality[text] = value
            rows.append({"question_id": q, "model": m, "answer": text})
    store.questions.add_answers("s", pd.DataFrame(rows))
    return quality


def test_the_score_job_stores_expected_scores_and_accounts_for_every_call(tmp_path):
    store = Store(tmp_path / "pb.sqlite")
    quality = _study(store)
    backend = ScoreBackend(quality, unreadable="answer c to q2")
    job = ScoreJob("s", [backend], attribute="coherence")
    assert default_score_method(backend) == "auto" and job.settings["local:fake-scorer"].concrete == "logits"
    result = run_job_sync(job, store, concurrency=1)
    assert result.status == "finished" and result.invalid == 1
    scores = store.scores.judge_scores("s", include_invalid=True)
    assert len(scores) == 6 and scores["attribute"].eq("coherence").all()
    good = scores[scores["valid"] == 1].set_index(["question_id", "model"])
    # P(8) = 0.6 / 0.9, P(9) = 0.3 / 0.9 -> 8 1/3; the text reading is the likeliest token
    assert good.loc[("q1", "a"), "expected"] == pytest.approx((8 * 0.6 + 9 * 0.3) / 0.9)
    assert good.loc[("q1", "a"), "score"] == 8.0 and good.loc[("q1", "a"), "distribution"]["8"] == pytest.approx(2 / 3)
    bad = scores[scores["valid"] == 0].iloc[0]
    assert bad["model"] == "c" and bad["raw"] == "Score: \n" and math.isnan(bad["expected"])
    accounting = store.runs.accounting(result.run_id)
    assert accounting["calls_paid"] == 6 and accounting["scores"] == 6 and accounting["unaccounted"] == 0
    # the prompt: the context first (a shared prefix), the attribute's words, the scale, the prefill
    request = backend.requests[0]
    assert request.messages[-1]["content"].startswith("Context one.\n\nResponse: answer a to q1")
    assert "How coherent is this response" in request.messages[-1]["content"] and "from 1 (not at all coherent)" in \
        request.messages[-1]["content"]
    assert request.prefill == "Score: " and request.max_tokens == 1 and request.top_logprobs
    # the same job again resumes: nothing to do, nothing paid
    again = run_job_sync(ScoreJob("s", [ScoreBackend(quality)], attribute="coherence"), store, concurrency=1)
    assert again.calls == 0 and again.done == 6
    # the judge is its configuration: role score, the attribute, the scale
    judges = store.judges.table("s").set_index("name")
    settings = judges.loc["local:fake-scorer", "settings"]
    assert settings["role"] == "score" and settings["criterion"] == "coherence" and settings["scale"] == "1-9"
    store.close()


def test_a_probability_method_refuses_a_scale_of_two_digit_scores(tmp_path):
    backend = ScoreBackend({})
    with pytest.raises(ValueError, match="Qwen's tokenizer splits '10'"):
        ScoreJob("s", [backend], attribute="coherence", scale=(1, 10))
    assert ScoreJob("s", [backend], attribute="coherence", scale=(1, 10), method="text").high == 10
    with pytest.raises(ValueError, match="kind 'score'"):
        ScoreJob("s", [backend], template=load_nlg_template("nlg_compare"))


def test_nlg_jobs_are_rebuilt_from_their_stored_configuration():
    import json

    from peercore.jobs.base import Judge
    from peercore.jobs.specs import make_backend
    from peercore.nlg.jobs import ComparisonJob, job_from_config

    named = Judge(make_backend("local:qwen2.5-coder-1.5b"), name="qwen~coherence")
    for job in (ComparisonJob("s", [named], attribute="coherence", questions=["c1", "c2"]),
                ComparisonJob("s", [make_backend("local:qwen2.5-coder-1.5b")], attribute="fluency",
                              method="verdict", strategy="symmetric", comparisons=4),
                ScoreJob("s", [named], attribute="coherence"),
                ScoreJob("s", [make_backend("local:qwen2.5-coder-1.5b")], attribute="overall", method="text",
                         scale=(1, 10))):
        config = json.loads(json.dumps(job.config(), default=str))  # as the store keeps it
        again = job_from_config(job.kind, "s", config)
        assert again.run_id() == job.run_id() and type(again) is type(job)
    assert ComparisonJob("s", [named], attribute="fluency", method="verdict").settings[
        "qwen~coherence"].template.name == "nlg_compare_generative"
    with pytest.raises(ValueError, match="'nlg-compare' or 'score'"):
        job_from_config("review", "s", {})
