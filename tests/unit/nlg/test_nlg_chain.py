"""The whole chain on synthetic data with known scores: files -> `peercore import` -> the fake LLM server ->
runner -> store -> `peercore nlg evaluate`. A judge that reads the candidates' known quality (with a
position bias on close pairs) must give rankings whose per-context Spearman with the human scores is
above 0.9 in every context, comparatively and absolutely."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from fakes.llm_server import FakeLLMServer
from peercore.cli import main
from peercore.nlg.evaluation import comparative_scores, per_context_correlations
from peercore.nlg.study import NLGStudy
from peercore.store import Store

CONTEXTS = 4
CANDIDATES = 5


def _world():
    """Known quality per candidate and context: 1, 3, 4, 6, 9 in another order in each context (one close pair)."""
    rng = np.random.default_rng(11)
    quality = {}
    for c in range(CONTEXTS):
        for m, value in zip(range(CANDIDATES), rng.permutation([1, 3, 4, 6, 9])):
            quality[f"reply {m} in dialogue {c}"] = int(value)
    return quality


def _judge(quality):
    def reply(body: dict, api: str) -> str:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if "Response 1: " in user:  # a comparison (nlg_compare), answered after the prefill
            first = re.search(r"Response 1: (.*)", user).group(1)
            second = re.search(r"Response 2: (.*)", user).group(1)
            gap = quality[first] - quality[second]
            return "1" if gap > 0 or gap == -1 else "2"  # the close pair (3, 4): the first position wins
        answer = re.search(r"Response: (.*)", user).group(1)
        return f"{quality[answer]}\nThe reply follows the conversation."  # after the prefill "Score: "
    return reply


def test_known_scores_are_recovered_through_the_whole_chain(tmp_path, capsys):
    quality = _world()
    db = str(tmp_path / "pb.sqlite")
    answers = pd.DataFrame([{"question_id": f"dialogue-{c}", "question": f"Conversation {c}: hello there.",
                             "model": f"system-{m}", "answer": f"reply {m} in dialogue {c}"}
                            for c in range(CONTEXTS) for m in range(CANDIDATES)])
    answers.to_csv(tmp_path / "qa.csv", index=False)
    human = answers[["question_id", "model"]].assign(
        coherence=[quality[a] / 3 for a in answers["answer"]])  # the human scale is another scale
    human.to_csv(tmp_path / "human.csv", index=False)
    assert main(["import", str(tmp_path / "qa.csv"), "--study", "synth", "--db", db]) == 0
    assert main(["import", str(tmp_path / "human.csv"), "--study", "synth", "--db", db]) == 0
    capsys.readouterr()

    with FakeLLMServer(reply=_judge(quality)) as server:
        spec = f"compatible:fake-judge@{server.openai_base_url}"
        assert main(["nlg", "compare", "--study", "synth", "--db", db, "--judge", spec, "--attribute", "coherence",
                     "--method", "verdict", "--no-progress"]) == 0
        assert "80 verdicts (80 valid + 0 invalid) stored" in capsys.readouterr().out
        assert main(["nlg", "score", "--study", "synth", "--db", db, "--judge", spec, "--attribute", "coherence",
                     "--method", "text", "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert "20 scores stored" in out and "0 failed items" in out
        requests = len(server.request_log)
    assert requests == CONTEXTS * CANDIDATES * (CANDIDATES - 1) + CONTEXTS * CANDIDATES

    store = Store(db)
    study = NLGStudy(store, "synth")
    comparisons = study.comparisons(*study.default_judge("coherence"))
    assert len(comparisons) == CONTEXTS * CANDIDATES * (CANDIDATES - 1)
    human_scores = study.human("coherence")
    for method in ("win_ratio", "bt", "poe_gaussian"):
        per_context = per_context_correlations(comparative_scores(comparisons, method=method), human_scores)
        assert len(per_context) == CONTEXTS and (per_context["spearman"] > 0.9).all(), (method, per_context)
    scores = study.scores(study.default_score_judge("coherence"), "coherence")
    per_context = per_context_correlations(scores.assign(score=scores["value"]), human_scores)
    assert (per_context["spearman"] > 0.9).all()

    assert main(["nlg", "evaluate", "--study", "synth", "--db", db, "--attribute", "coherence", "--format",
                 "json", "--rounds", "100"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["contexts"] == CONTEXTS and result["comparisons"] == 80 and result["scores"] == 20
    rows = {(r["scorer"], r["debiased"]): r for r in result["table"]}
    assert rows[("absolute", False)]["spearman"] == pytest.approx(1.0)
    assert rows[("win_ratio", False)]["spearman"] > 0.9 and rows[("poe_gaussian", True)]["spearman"] > 0.9
    # the judge favours the first position on close pairs: the bias is measured
    assert result["position_bias"]["p_first"] > 0.5
    systems = pd.DataFrame(result["systems"])
    assert len(systems) == CANDIDATES and systems["contexts"].eq(CONTEXTS).all()
    assert set(result["system_spearman"]) == {"absolute", "win_ratio"}
    accuracy = {r["reading"]: r for r in result["accuracy"]}
    assert accuracy["raw"]["n"] == 80 and accuracy["both orders"]["accuracy"] > accuracy["raw"]["accuracy"] - 1e-9

    assert main(["nlg", "evaluate", "--study", "synth", "--db", db, "--attribute", "coherence"]) == 0
    table = capsys.readouterr().out
    assert "comparative: PoE-Gaussian (debiased)" in table and "absolute: absolute score" in table
    assert main(["nlg", "curves", "--study", "synth", "--db", db, "--attribute", "coherence", "--repeats", "2",
                 "--format", "json"]) == 0
    curves = pd.DataFrame(json.loads(capsys.readouterr().out))
    full = curves[(curves["strategy"] == "random") & (curves["k"] == curves["k"].max())]
    assert (full["median"] > 0.9).all() and set(curves["debiased"]) == {False, True}
    assert main(["nlg", "judges", "--study", "synth", "--db", db]) == 0
    assert "coherence" in capsys.readouterr().out
    assert main(["nlg", "export", "--study", "synth", "--db", db, "--what", "human"]) == 0
    exported = capsys.readouterr().out.splitlines()
    assert exported[0] == "question_id,model,coherence" and len(exported) == 1 + CONTEXTS * CANDIDATES


def test_bad_requests_exit_2_with_one_line(tmp_path, capsys):
    db = str(tmp_path / "pb.sqlite")
    Store(db).studies.create("empty")
    assert main(["nlg", "evaluate", "--study", "empty", "--db", db, "--attribute", "coherence"]) == 2
    assert "has no human scores on 'coherence'" in capsys.readouterr().err
    assert main(["nlg", "score", "--study", "empty", "--db", db, "--judge", "local:qwen2.5-coder-1.5b",
                 "--attribute", "coherence", "--scale", "1-10", "--dry-run"]) == 2
    assert "Qwen's tokenizer splits '10'" in capsys.readouterr().err
