"""ScaleEval (Chern et al. 2024) example-level agreement over all n examples, on the real files.

Section 3.3, eq. 2: the example-level agreement of a judge with the gold verdicts is
(1/n) sum_i 1[v_i = g_i] over all n examples. Section 8 measures exactly a judge that
does not give a usable verdict (Claude-2 refusing), so a verdict that could not be
parsed is one of the n examples and a miss, not an example to drop.

Data: ``../shared/data/scaleeval`` (GAIR-NLP/scaleeval, see its README). No human labels
were released, so the gold here is the debate consensus: the 783 debates whose three
speakers ended on one verdict. The expected values are computed twice, independently:
by hand from ``scores_long.csv`` below, and through the project (import into a store,
``Store.verdicts.table(include_invalid=True)``, :func:`peercore.agreement.agreement`).

Claude-2 vs the consensus: 767 examples, 8 of them unparsed, 651 equal verdicts:
651 / 767 = 0.8488 (the unparsed counted as misses, the default); 651 / 759 = 0.8577
with ``unparsed="exclude"`` (what PeerBoard reported before, issue 9 item 6).
"""

from __future__ import annotations

import pandas as pd
import pytest

from peerboard_testing import require_dataset
from peercore.agreement import agreement, example_level_agreement, scaleeval_agreement
from peercore.io.importer import import_path
from peercore.store import Store

pytestmark = pytest.mark.golden

KEY = ["pair", "criterion", "scenario", "id"]
N_EXAMPLES, N_UNPARSED, N_EQUAL = 767, 8, 651


@pytest.fixture(scope="module")
def folder():
    return require_dataset("scaleeval")


@pytest.fixture(scope="module")
def by_hand(folder):
    """Claude-2's single verdict and the debate consensus per example, straight from the CSV.

    Consensus: every speaker's verdict in the debate's last stage is the same 1, 2 or 0.
    A single verdict outside {1, 2, 0} (None, 3, 4, 5, 150 ...) was not parsed.
    """
    scores = pd.read_csv(folder / "scores_long.csv", dtype=str)
    debate = scores[scores["judge"].str.startswith("speaker_")]
    stage = debate["stage"].map({"initial": 0, "round_1": 1, "round_2": 2})
    last = debate[stage == stage.groupby([debate[k] for k in KEY]).transform("max")]
    verdicts = last.groupby(KEY)["score"].agg(lambda s: s.iloc[0] if s.nunique(dropna=False) == 1 else None)
    gold = verdicts[verdicts.isin(["0", "1", "2"])]
    single = scores[(scores["judge"] == "claude2") & (scores["stage"] == "single")].set_index(KEY)["score"]
    both = pd.concat([single.rename("judge"), gold.rename("gold")], axis=1, join="inner")
    both["judge"] = both["judge"].where(both["judge"].isin(["0", "1", "2"]))  # unparsed -> missing
    return gold, both


@pytest.fixture(scope="module")
def store(folder, golden_db):
    db = Store(golden_db)  # a SQLite file, then PostgreSQL (tests/golden/conftest.py)
    import_path(folder, store=db, study="s")
    return db


def test_hand_count_from_the_csv(by_hand):
    gold, both = by_hand
    assert len(gold) == 783  # agreed debates (1,620 debates, 837 unresolved)
    assert len(both) == N_EXAMPLES
    assert both["judge"].isna().sum() == N_UNPARSED
    assert (both["judge"] == both["gold"]).sum() == N_EQUAL
    # eq. 2 over all n examples, and over the parsed ones only
    assert example_level_agreement(both["judge"], both["gold"]) == pytest.approx(N_EQUAL / N_EXAMPLES)
    assert N_EQUAL / N_EXAMPLES == pytest.approx(0.8488, abs=5e-5)
    assert example_level_agreement(both["judge"], both["gold"], unparsed="exclude") == pytest.approx(0.8577, abs=5e-5)


def test_claude2_vs_debate_consensus_counts_unparsed_verdicts_as_misses(store):
    judgments = store.verdicts.table("s", include_invalid=True)
    claude = judgments[judgments["judge"] == "scaleeval:claude2"].reset_index(drop=True)
    consensus = judgments[judgments["judge"] == "debate:scaleeval"].reset_index(drop=True)
    result = agreement(claude, consensus)
    assert (result.n, result.unparsed) == (N_EXAMPLES, N_UNPARSED)
    assert result.agreement == pytest.approx(N_EQUAL / N_EXAMPLES)  # 0.8488
    excluded = agreement(claude, consensus, unparsed="exclude")
    assert (excluded.n, excluded.unparsed) == (N_EXAMPLES - N_UNPARSED, N_UNPARSED)
    assert excluded.agreement == pytest.approx(N_EQUAL / (N_EXAMPLES - N_UNPARSED))  # 0.8577
    # Without the unparsed rows (the store's default read) there is nothing to count.
    parsed_only = agreement(store.verdicts.table("s", judges=["scaleeval:claude2"]), consensus)
    assert (parsed_only.n, parsed_only.unparsed) == (N_EXAMPLES - N_UNPARSED, 0)


def test_scaleeval_table_cells_add_up_to_the_same_n(store):
    judgments = store.verdicts.table("s", include_invalid=True)
    single = judgments[judgments["judge"].str.startswith("scaleeval:")].reset_index(drop=True)
    consensus = judgments[judgments["judge"] == "debate:scaleeval"].reset_index(drop=True)
    table = scaleeval_agreement(single, consensus)
    claude = table[table["judge"] == "scaleeval:claude2"]
    assert (claude["n"].sum(), claude["unparsed"].sum()) == (N_EXAMPLES, N_UNPARSED)
    hits = (claude["example_agreement"] * claude["n"]).sum()
    assert hits == pytest.approx(N_EQUAL)
