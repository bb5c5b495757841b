"""Position bias over decisive verdicts and over all comparisons (Liusie et al. 2024, eq. 8; issue 22, item 3).

Liusie, Manakul & Gales, "LLM Comparative Assessment" (EACL 2024), section 6, eq. 8:
P(A) = (1/N) sum 1[verdict = A], over all N comparisons. PeerBoard's ``p_first`` divides by the
decisive (non-tie) verdicts, which is what the judge health check reads; ``p_first_all`` is eq. 8.
They differ for a judge that ties: PRD's GPT-4 reviewer (Vicuna80, 1,600 reviews, 240 ties) chose the
first answer in 848 reviews: 848 / 1360 = 0.624 decisive, 848 / 1600 = 0.530 over all.
"""

from __future__ import annotations

import json

import pytest

from peercore.cli import main
from peercore.io.importer import import_path
from peercore.store import Store

pytestmark = pytest.mark.golden


def test_peercore_bias_json_has_both_shares(prd_folder, tmp_path, capsys):
    db = str(tmp_path / "prd.sqlite")
    import_path(prd_folder, store=Store(db), study="prd")
    assert main(["bias", "--study", "prd", "--db", db, "--format", "json"]) == 0
    table = json.loads(capsys.readouterr().out)
    gpt4 = table["gpt4"]
    assert (gpt4["n"], gpt4["n_decisive"]) == (1600, 1360)
    assert gpt4["p_first"] == pytest.approx(848 / 1360) and round(gpt4["p_first"], 3) == 0.624
    assert gpt4["p_first_all"] == pytest.approx(848 / 1600) and round(gpt4["p_first_all"], 3) == 0.530
    for judge, row in table.items():  # eq. 8 = decisive share x (1 - tie rate), for every judge
        assert row["p_first_all"] == pytest.approx(row["p_first"] * (1 - row["tie_rate"])), judge
    assert main(["bias", "--study", "prd", "--db", db]) == 0
    assert "p_first_all" in capsys.readouterr().out
