"""Thousands of models through ``peercore rank`` (issue 17, item 5).

Before: ``peercore rank FILE --method bt`` built a rows x models dense incidence matrix
for the bootstrap and models x models Hessians, sandwiches and rank tables, and
``--method winrate`` a battles x models dense matrix per bootstrap product; at 10,000
models they took 19.5 GB and 8.2 GB. Memory must grow with battles plus models.

The test measures what the command allocates with ``tracemalloc`` (numpy reports its
array memory there), on 3,000 models and 30,000 battles: a single dense 3,000 x 3,000
float matrix is 72 MB and the old bootstrap's incidence 720 MB; the command now needs a
few tens of MB, mostly the bootstrap's bounded chunks. No timing is asserted
(``benchmarks/many_models.py`` has the times at 10,000 models and a million battles).
"""

from __future__ import annotations

import io
import tracemalloc

import pandas as pd
import pytest

from peerboard_testing import arena_judgments
from peercore.cli import main

N_MODELS, N_BATTLES = 3000, 30_000
PEAK_BYTES = 300e6  # before: over 1.4 GB (bt: the 720 MB incidence; winrate: 720 MB battles x models products)


@pytest.fixture(scope="module")
def many_models_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("many") / "judgments.csv"
    arena_judgments(N_MODELS, N_BATTLES, seed=17)[["question_id", "model_a", "model_b", "judge", "winner"]].to_csv(
        path, index=False)
    return path


def _rank(path, method: str, capsys) -> tuple[pd.DataFrame, str, int]:
    """``peercore rank FILE --method METHOD --format csv`` (default 100 bootstrap rounds): table, stderr, peak bytes."""
    capsys.readouterr()
    tracemalloc.start()
    try:
        code = main(["rank", str(path), "--method", method, "--format", "csv"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out, err = capsys.readouterr()
    assert code == 0, err
    return pd.read_csv(io.StringIO(out)), err, peak


@pytest.mark.parametrize("method", ["bt", "winrate"])
def test_rank_of_3000_models_allocates_no_models_squared_arrays(many_models_file, method, capsys):
    table, err, peak = _rank(many_models_file, method, capsys)
    assert len(table) == N_MODELS
    assert table["ci_low"].notna().all() and (table["ci_low"] <= table["score"]).all()
    assert (table["rank"] <= table["rank_worst"]).all()
    assert peak < PEAK_BYTES, f"peercore rank --method {method} allocated {peak / 1e6:.0f} MB at its peak"
    if method == "bt":  # the sandwich needs a 3,000 x 3,000 covariance: not computed unless asked, and said so
        assert table["sandwich_low"].isna().all()
        assert "sandwich intervals were not computed for 3,000 models" in err
        assert "--intervals sandwich" in err
