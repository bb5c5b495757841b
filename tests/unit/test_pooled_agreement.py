"""Human-vs-human agreement pooled over every pair of votes, as FastChat prints it (issue 22, item 5).

MT-Bench (Zheng et al. 2023), section 4.2 and Table 2 ("Human" vs "Human", with and without
ties); FastChat ``fastchat/llm_judge/compute_agreement.py`` (``get_mt_bench_votes_data`` and the
``judge1 == "human" and judge2 == "human"`` branch of ``get_mt_bench_agreement``), re-implemented
below from that file, independently of peercore, as the oracle. ``peercore agree --judge human:
--reference human:`` printed only each annotator against the others (leave-one-out), which the
user had to pool by hand to compare with FastChat's 65.4% / 82.8%.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from peercore.agreement import pooled_agreement
from peercore.cli import main


def _fastchat_human_human(votes: list[dict], ban: list[str]) -> tuple[int, int]:
    """FastChat's vote table and human-human agreement, over every turn."""
    def revert(vote):
        return {"model_a": "model_b", "model_b": "model_a"}.get(vote, vote)

    data: dict = {}
    for vote in votes:
        if vote["model_a"] < vote["model_b"]:
            key = (vote["turn"], vote["question_id"], vote["model_a"], vote["model_b"])
            winner = vote["winner"]
        else:
            key = (vote["turn"], vote["question_id"], vote["model_b"], vote["model_a"])
            winner = revert(vote["winner"])
        data.setdefault(key, []).append(winner)
    agree = total = 0
    for human in data.values():
        for i in range(len(human) - 1):
            for j in range(i + 1, len(human)):
                if ("tie" if "tie" in human[i] else human[i]) in ban or ("tie" if "tie" in human[j] else human[j]) in ban:
                    continue
                total += 1
                agree += ("tie" in human[i] and "tie" in human[j]) or human[i] == human[j]
    return agree, total


@pytest.fixture
def votes():
    # 6 experts, 40 questions x 2 turns, 3 model pairs; each comparison voted by 2-4 experts, once each, in a random
    # presentation order, ~20% ties.
    rng = np.random.default_rng(5)
    rows = []
    for q in range(40):
        for turn in (1, 2):
            for a, b in (("alpaca", "vicuna"), ("gpt4", "vicuna"), ("claude", "gpt4")):
                truth = rng.choice(["model_a", "model_b", "tie"], p=[0.45, 0.35, 0.2])
                for expert in rng.choice(6, size=int(rng.integers(2, 5)), replace=False):
                    vote = truth if rng.random() < 0.7 else rng.choice(["model_a", "model_b", "tie"])
                    first, second = (a, b) if rng.random() < 0.5 else (b, a)
                    if (first, second) != (a, b):
                        vote = {"model_a": "model_b", "model_b": "model_a"}.get(vote, vote)
                    rows.append({"question_id": f"q{q}", "turn": turn, "model_a": first, "model_b": second,
                                 "judge": f"human:expert_{expert}", "winner": vote})
    return rows


def test_pooled_agreement_equals_fastchats_human_human_count(votes):
    got = pooled_agreement(pd.DataFrame(votes))
    assert (got.agreeing, got.pairs) == _fastchat_human_human(votes, ban=[])
    assert (got.agreeing_without_ties, got.pairs_without_ties) == _fastchat_human_human(votes, ban=["tie"])
    assert got.agreement == pytest.approx(got.agreeing / got.pairs) and got.raters == 6


def test_agree_human_vs_human_prints_the_pooled_figure(votes, tmp_path, capsys):
    path = tmp_path / "humans.csv"
    pd.DataFrame(votes).to_csv(path, index=False)
    agree_with, pairs = _fastchat_human_human(votes, ban=[])
    agree_without, pairs_without = _fastchat_human_human(votes, ban=["tie"])
    assert main(["agree", str(path), "--judge", "human:", "--reference", "human:", "--format", "json"]) == 0
    rows = {row["judge"]: row for row in json.loads(capsys.readouterr().out)}
    pooled = rows["pooled"]
    assert (pooled["agreeing"], pooled["pairs"]) == (agree_with, pairs)
    assert (pooled["agreeing_without_ties"], pooled["pairs_without_ties"]) == (agree_without, pairs_without)
    assert pooled["agreement"] == pytest.approx(agree_with / pairs)
    assert len(rows) == 7  # the six experts (leave-one-out, as before) and the pooled row
    assert main(["agree", str(path), "--judge", "human:", "--reference", "human:"]) == 0
    out = capsys.readouterr().out
    assert f"with ties         {agree_with / pairs:.4f}  ({agree_with} of {pairs} pairs)" in out
    assert f"without ties      {agree_without / pairs_without:.4f}  ({agree_without} of {pairs_without} pairs)" in out
    # a judge against other raters keeps its one-object JSON, without a pooled row
    assert main(["agree", str(path), "--judge", "human:expert_0", "--reference", "human:", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["judge"] == "human:expert_0"
