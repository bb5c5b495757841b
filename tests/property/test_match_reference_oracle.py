"""``match_reference`` and ``majority_vote`` against a plain-Python oracle of their definition.

The definition (PRD, Li et al. 2023, section 4 and its notebook's Table 3 comparison;
MT-Bench's ``compute_agreement.py`` for the per-vote mode):

* ``majority``: the reference reduced to one verdict per ordered key (question, model_a,
  model_b, turn, criterion) by the weighted vote of PRD section 4, then doubled: the
  mirror of each key added, flipped, unless the mirrored key has a verdict of its own;
  each judge row compared with the verdict of its own ordered key.
* ``votes``: each judge row compared with every reference vote on the same question and
  pair in either orientation (mirrored as needed), in the votes' order.

The oracle is a dict of lists filled row by row, the way the definition reads; the
product's vectorised version must give the same rows in the same order, with missing
turns and criteria matching only each other, both orientations and repeated votes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from peercore.agreement import majority_vote, match_reference
from peercore.judgments import judgments_from_frame

FLIP = {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}
KEY = ["question_id", "model_a", "model_b", "turn", "criterion"]


def key_of(row) -> tuple:
    return tuple(None if pd.isna(row[c]) else str(row[c]) for c in KEY)


def mirror(key: tuple) -> tuple:
    return (key[0], key[2], key[1], *key[3:])


def oracle_majority(reference: pd.DataFrame) -> dict[tuple, str]:
    """PRD section 4 with unit weights: the sign of (#model_a - #model_b) per ordered key."""
    score: dict[tuple, float] = {}
    for _, row in reference.iterrows():
        score[key_of(row)] = score.get(key_of(row), 0.0) + {"model_a": 1, "model_b": -1, "tie": 0}[row["winner"]]
    return {k: "model_a" if s > 0 else "model_b" if s < 0 else "tie" for k, s in score.items()}


def oracle_match(judged: pd.DataFrame, reference: pd.DataFrame, mode: str) -> list[tuple[int, str]]:
    table: dict[tuple, list[str]] = {}
    if mode == "majority":
        reduced = oracle_majority(reference)
        for key, verdict in reduced.items():
            table[key] = [verdict]
        for key, verdict in reduced.items():
            table.setdefault(mirror(key), [FLIP[verdict]])
    else:
        for _, row in reference.iterrows():
            table.setdefault(key_of(row), []).append(row["winner"])
            table.setdefault(mirror(key_of(row)), []).append(FLIP[row["winner"]])
    return [(k, v) for k, (_, row) in enumerate(judged.iterrows()) for v in table.get(key_of(row), ())]


def random_tables(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    models = ["m0", "m1", "m2"]
    pairs = [tuple(rng.choice(models, size=2, replace=False)) for _ in range(n)]
    rows = [{"question_id": f"q{rng.integers(0, 4)}", "model_a": pairs[k][0], "model_b": pairs[k][1],
             "winner": rng.choice(["model_a", "model_b", "tie"]),
             "turn": None if rng.random() < 0.4 else int(rng.integers(1, 3)),
             "criterion": None if rng.random() < 0.5 else rng.choice(["help", "harm"])} for k in range(n)]
    frame = pd.DataFrame(rows)
    judged = judgments_from_frame(frame.assign(judge="openai:j"))
    reference = judgments_from_frame(frame.sample(frac=1.0, replace=True, random_state=seed)
                                     .assign(judge="human:h", winner=lambda f: rng.choice(
                                         ["model_a", "model_b", "tie"], len(f))))
    return judged, reference


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("mode", ["majority", "votes"])
def test_match_reference_equals_the_definition(seed, mode):
    judged, reference = random_tables(seed)
    got = match_reference(judged, reference, reference_mode=mode)
    expected = oracle_match(judged, reference, mode)
    assert len(got) == len(expected)
    rows = [k for k, _ in expected]
    assert list(got["reference_verdict"]) == [v for _, v in expected]
    assert list(got["verdict"]) == list(judged["winner"].iloc[rows])
    assert list(got["question_id"]) == list(judged["question_id"].iloc[rows])  # judgment-row order


@pytest.mark.parametrize("seed", range(20))
def test_majority_vote_equals_prd_section_4_sorted_by_key_text(seed):
    _, reference = random_tables(seed)
    got = majority_vote(reference)
    expected = oracle_majority(reference)
    keys = [key_of(row) for _, row in got.iterrows()]
    assert dict(zip(keys, got["winner"])) == expected
    as_text = [tuple("\x00<missing>" if v is None else v for v in k) for k in keys]
    assert as_text == sorted(as_text)  # groups ordered by their key's text, as the tuple sort did
