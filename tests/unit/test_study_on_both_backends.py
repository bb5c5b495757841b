"""The application layer on PostgreSQL: the same study gives the same numbers on both store backends (issue 13).

The bundled sample studies (``sample_data``, seeded as the dashboard seeds them) and, when
``../shared/data`` is present, the PRD import (``peercore import``'s :func:`import_path`)
are written into a SQLite file and into a PostgreSQL schema; every
:class:`peercore.study.Study` reading (stored judgments, tallies, rankable judgments,
leaderboards of every method with fixed bootstrap seeds, leaderboards by group, judges'
agreement and health, the judge-bias model, position bias and swap consistency) must be
identical: same frames, dtypes and row order, compared exactly. The store-side aggregates
(:mod:`peercore.aggregates`) are compared on random studies with odd text (``NA``, empty
strings, quotes, commas, new lines) that the PostgreSQL path reads through ``COPY``.

PostgreSQL comes from the session's throwaway cluster (tests/conftest.py): skipped
without its server programs, failed when PEERBOARD_REQUIRE_PG=1.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from peerboard_testing import shared_data_dir
from peercore import aggregates
from peercore.store import Store
from peercore.study import RANK_METHODS, Selection, Study

REPO = Path(__file__).resolve().parents[2]


def _same(a, b, where: str = "") -> None:
    """Exact equality of two results: frames (dtypes, order), arrays, dataclasses, named tuples, dicts, floats."""
    assert type(a) is type(b), f"{where}: {type(a)} vs {type(b)}"
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=where)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_exact=True, obj=where)
    elif isinstance(a, pd.Index):
        pd.testing.assert_index_equal(a, b, exact=True, obj=where)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, tuple) and hasattr(a, "_asdict"):
        _same(a._asdict(), b._asdict(), where)
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} vs {list(b)}"
        for key in a:
            _same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{k}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def _outcome(make):
    """``make()``, or the error it raised (type and message), so that both backends must fail alike."""
    try:
        return make()
    except ValueError as exc:
        return ("error", type(exc).__name__, str(exc))


def _readings(store: Store, name: str, *, light: bool = False) -> dict:
    """Everything the CLI and the pages read from one study through :class:`Study` (fixed seeds).

    Every ranking method on all judges; Bradley-Terry and win rates on the LLM and the
    human judges. ``light``: all judges only, one judge's agreement, no grouped
    leaderboards and no Krippendorff's alpha.
    """
    study = Study(store, name)
    out = {"stored_judgments": study.stored_judgments(), "verdict_tally": study.verdict_tally(),
           "verdict_counts": study.verdict_counts(), "counts": study.counts(), "judges": study.judges(),
           "contestants": study.contestants(), "kinds": study.kinds(), "aliases": study.aliases(),
           "rankable": study.rankable(), "rankable_judges": study.rankable_judges(),
           "every_judgment": study.judgments(Selection(final_only=False, repeated_votes="each"), include_invalid=True),
           "health": study.health()}
    kinds = set(out["kinds"].values())
    selections = {"all": Selection()}
    if not light:
        selections.update({kind: Selection(kinds=(kind,)) for kind in ("llm", "human") if kind in kinds})
    for label, selection in selections.items():
        for method in RANK_METHODS if label == "all" else ("bt", "winrate"):
            out[f"leaderboard {label} {method}"] = _outcome(lambda: Study(store, name).leaderboard(
                selection, method=method, bootstrap=20, seed=3, elo_shuffles=2))
        out[f"peer rank {label}"] = _outcome(lambda: Study(store, name).leaderboard(
            selection, method="winrate", peer_weights="prd", bootstrap=0))
        if not light and label == "all":
            out[f"by category {label}"] = _outcome(lambda: study.leaderboards_by(selection, by="category",
                                                                                   method="bt", bootstrap=10, seed=1))
        out[f"judge bias {label}"] = _outcome(lambda: study.judge_bias(selection))
        out[f"position and swap {label}"] = _outcome(lambda: study.position_and_swap(selection))
    judges = out["rankable_judges"]
    reference = "human:" if "human" in kinds else (judges[-1] if judges else None)
    for judge in judges[:1 if light else 2]:
        if reference is not None:
            out[f"agreement {judge}"] = _outcome(lambda: study.agreement(judge, reference))
    if len(judges) >= 2 and not light:
        out["alpha"] = _outcome(lambda: study.alpha(judges[:2], rounds=10, seed=2))
    return out


def _compare_studies(sqlite_store: Store, pg_store: Store, *, light: bool = False) -> int:
    names = list(sqlite_store.studies()["name"])
    assert names and names == list(pg_store.studies()["name"])
    compared = 0
    for name in names:
        here, there = _readings(sqlite_store, name, light=light), _readings(pg_store, name, light=light)
        assert list(here) == list(there)
        for key in here:
            _same(here[key], there[key], f"{name}: {key}")
            compared += 1
        assert len(here["stored_judgments"]) == sqlite_store.summary(name)["judgments"]
    return compared


@pytest.fixture(scope="module")
def sample_stores(tmp_path_factory, new_pg_url):
    """The bundled sample studies seeded into a SQLite file and into a PostgreSQL schema."""
    from peercore.ui.data import ensure_sample_study

    stores = (Store(tmp_path_factory.mktemp("both") / "sample.sqlite"), Store(new_pg_url()))
    for store in stores:
        assert ensure_sample_study(store, REPO / "sample_data") is not None
    yield stores
    for store in stores:
        store.close()


@pytest.mark.slow
def test_the_sample_studies_read_the_same_on_sqlite_and_postgresql(sample_stores):
    sqlite_store, pg_store = sample_stores
    assert pg_store.url is not None and sqlite_store.url is None
    compared = _compare_studies(sqlite_store, pg_store)
    assert compared > 50
    # the comparison is not vacuous: leaderboards exist and the PRD sample has human votes
    ranking = Study(pg_store, "sample").leaderboard(method="bt", bootstrap=20, seed=3)
    assert len(ranking.table) >= 2 and ranking.table["ci_low"].notna().all()


@pytest.mark.slow
def test_the_prd_import_reads_the_same_on_sqlite_and_postgresql(tmp_path, new_pg_url):
    folder = shared_data_dir() / "prd_vicuna80"
    if not folder.is_dir():
        pytest.skip(f"real dataset {folder} is not present")
    from peercore.io.importer import import_path

    stores = (Store(tmp_path / "prd.sqlite"), Store(new_pg_url()))
    try:
        reports = [import_path(folder, store=store, study="prd") for store in stores]
        _same(reports[0].counts, reports[1].counts, "import counts")
        assert _compare_studies(*stores, light=True) > 15
        assert Study(stores[1], "prd").counts()["human_votes"] > 0
    finally:
        for store in stores:
            store.close()


# ------------------------------------------------------------- the aggregates themselves

ODD_QUESTIONS = ["NA", "null", "NaN", "a,b", 'say "hi"', "two\nlines", "naïve é ✓", "\\N", "q-plain"]


def _odd_study(store: Store, rng: np.random.Generator) -> None:
    """Verdicts with every optional column, texts CSV and NULL handling could confuse, repeated votes, rounds."""
    from test_aggregates import _random_study

    _random_study(store, "s", rng, votes=True)
    models, judges = ["m0", "m1", "m2", "m3"], ["gpt", "human:ann", "NA"]
    rows = []
    for k in range(300):
        a, b = rng.choice(len(models), 2, replace=False)
        bad = rng.random() < 0.1
        rows.append({"question_id": ODD_QUESTIONS[k % len(ODD_QUESTIONS)] + ("" if k < 9 else f"#{k}"),
                     "model_a": models[a], "model_b": models[b], "judge": judges[k % 3],
                     "winner": None if bad else str(rng.choice(["model_a", "model_b", "tie"])),
                     "p_a": float(rng.random()) if rng.random() < 0.5 and not bad else np.nan,
                     "criterion": ["", "helpful", "NA"][k % 3] or None, "turn": int(k % 2) + 1,
                     "round": int(k % 3), "vote": int(k % 4 == 0),
                     "rationale": [None, "", "NULL", "because, \"x\"\nso"][k % 4],
                     "raw": "unparsed, \"raw\"\ntext" if bad else None, "valid": 0 if bad else 1})
    store.create_study("odd")
    store.add_judgments("odd", pd.DataFrame(rows))
    store.create_study("empty")


@pytest.mark.parametrize("seed", [0, 1])
def test_every_aggregate_is_the_same_on_both_backends(tmp_path, pg_url, seed):
    stores = (Store(tmp_path / "agg.sqlite"), Store(pg_url))
    for store in stores:
        _odd_study(store, np.random.default_rng(seed))
    for name in ("s", "odd", "empty"):
        for function in ("filled_columns", "verdict_codes", "repeated_votes", "questions_with_three_candidates",
                         "verdict_counts", "verdict_tally", "answer_models", "contestants", "has_probabilities",
                         "summary", "judges"):
            here, there = (getattr(aggregates, function)(store, name) for store in stores)
            _same(here, there, f"{name}: {function}")
        for column in ("vote", "round", "turn", "criterion"):
            assert aggregates.column_used(stores[0], name, column) == aggregates.column_used(stores[1], name, column)
        for include_invalid in (False, True):
            for with_vote in (False, True):
                here, there = (aggregates.read_verdicts(store, name, include_invalid=include_invalid,
                                                        with_vote=with_vote) for store in stores)
                _same(here, there, f"{name}: read_verdicts({include_invalid}, {with_vote})")
                # and both equal the store's row-by-row read
                _same(there, stores[1].judgments(name, include_invalid=include_invalid, with_vote=with_vote),
                      f"{name}: Store.judgments")
    odd = aggregates.read_verdicts(stores[1], "odd", include_invalid=True)
    assert set(ODD_QUESTIONS) <= set(odd["question_id"])  # "NA", "null", "NaN" stay texts, not NULL
    assert int(odd["rationale"].isna().sum()) == 75  # every fourth of the 300 rows has none; "" is a text
    assert set(odd["rationale"].dropna()) == {"", "NULL", "because, \"x\"\nso"}
    assert aggregates.verdict_codes(stores[1], "empty") is None
    for store in stores:
        store.close()


def test_the_postgresql_reads_take_no_sqlite_sql(pg_url, monkeypatch):
    """The column reads on PostgreSQL go through COPY (no group_concat reached the server)."""
    from peercore import db

    store = Store(pg_url)
    _odd_study(store, np.random.default_rng(5))
    copied = []
    read = db.read_arrow
    monkeypatch.setattr(db, "read_arrow", lambda c, select, columns: copied.append(select) or read(c, select, columns))
    aggregates.read_verdicts(store, "odd", include_invalid=True, with_vote=True)
    aggregates.verdict_codes(store, "odd")
    assert len(copied) == 2 and all("ORDER BY id" in s and "group_concat" not in s for s in copied)
    store.close()
