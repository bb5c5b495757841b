"""Importing a 1,000,000-battle Chatbot Arena log into the store, and reading it back.

Synthetic log (the idea of ``ranking.py``'s ``synthetic_arena_log``): 100 models,
1,000,000 battles between uniformly random pairs, outcomes from a Bradley-Terry model,
10% ties of which a third ``tie (bothbad)``; 5,000 voters; random 16-hex question ids
(as Arena's are); every field an Arena ``clean_battle`` record has that the store
uses, plus ``anony``, ``language`` and ``tstamp``. Written as JSONL (~190 MB).

Side by side, on the same file:

- bare pandas read: ``pd.read_json(path, lines=True)`` (the default engine) and
  ``pd.read_json(path, lines=True, engine="pyarrow")``;
- peercore import: ``peercore.io.import_path`` into a fresh database (detect the format,
  parse, validate, check, write in one transaction, record provenance), i.e. what
  ``peercore import`` does;
- peercore read-back: ``Store.verdicts.table(study)``, the canonical DataFrame.

Target (issue 3): import and read-back each at most 3x the bare read.

For the record of why the store looks the way it does, the same million verdicts also go
through the version-1 schema this change replaced (names as text, ``IN (...)`` checks,
an index on (study, judge), full re-validation on read), re-created here from
migration 1: ``--skip-v1`` leaves it out. Wall seconds and CPU seconds of this process
are both reported: the machine is shared, and CPU seconds move less with its load.

Run: ``.venv/bin/python benchmarks/io.py [--repeats N] [--battles N]``.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, markdown_table  # noqa: E402

from peercore.io.importer import import_path  # noqa: E402
from peercore.judgments import judgments_from_frame  # noqa: E402
from peercore.store import Store
from peercore.store.legacy import LEGACY  # noqa: E402
from peercore.store.schema import statements  # noqa: E402

N_MODELS, N_BATTLES, N_VOTERS, TIE_RATE = 100, 1_000_000, 5_000, 0.10


def synthetic_arena_file(path: Path, *, n_battles: int = N_BATTLES, n_models: int = N_MODELS, seed: int = 0) -> None:
    """Write an Arena-format JSONL battle log (see the module docstring)."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, n_models)
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    tie = rng.random(n_battles) < TIE_RATE
    bothbad = rng.random(n_battles) < 1 / 3
    a_wins = rng.random(n_battles) < expit(strength[a] - strength[b])
    names = np.array([f"model-{k:03d}" for k in range(n_models)], dtype=object)
    frame = pd.DataFrame({
        "question_id": [f"{x:016x}" for x in rng.integers(0, 2**63, n_battles)],
        "model_a": names[a], "model_b": names[b],
        "winner": np.where(tie, np.where(bothbad, "tie (bothbad)", "tie"), np.where(a_wins, "model_a", "model_b")),
        "judge": np.array([f"arena_user_{k}" for k in range(N_VOTERS)], dtype=object)[rng.integers(0, N_VOTERS, n_battles)],
        "turn": rng.integers(1, 4, n_battles),
        "anony": rng.random(n_battles) < 0.9,
        "language": np.array(["English", "Chinese", "German", "Spanish", "French"])[rng.integers(0, 5, n_battles)],
        "tstamp": 1.7e9 + np.sort(rng.random(n_battles)) * 3e7,
    })
    frame.to_json(path, orient="records", lines=True)


def _timed(fn, repeats: int):
    """(median wall seconds, median CPU seconds of this process, last result)."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return float(np.median(walls)), float(np.median(cpus)), result


class VersionOneStore:
    """The judgments table and write / read paths of schema version 1 (before integer codes)."""

    def __init__(self, path: Path) -> None:
        self.connection = sqlite3.connect(path, isolation_level=None)
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"):
            self.connection.execute(f"PRAGMA {pragma}")
        self.connection.execute("BEGIN")
        for statement in statements(LEGACY[0][2]):
            self.connection.execute(statement)
        self.connection.execute("INSERT INTO studies (id, name, created_at) VALUES (1, 'arena', 'now')")
        self.connection.execute("COMMIT")

    def add_judgments(self, judgments: pd.DataFrame) -> None:
        frame = judgments_from_frame(judgments)
        key = ["question_id", "model_a", "model_b", "judge"]
        vote = frame.groupby(key, sort=False).cumcount().to_numpy()
        n = len(frame)
        rows = zip([1] * n, frame["question_id"], frame["model_a"], frame["model_b"], frame["judge"], [""] * n,
                   frame["turn"].fillna(0).astype(int), [0] * n, vote.tolist(), frame["winner"], [None] * n, [None] * n,
                   [1] * n, [None] * n, [None] * n, ["now"] * n)
        self.connection.execute("BEGIN IMMEDIATE")
        self.connection.executemany(
            "INSERT OR IGNORE INTO judgments (study_id, question_id, model_a, model_b, judge, criterion, turn, round, "
            "vote, winner, p_a, rationale, valid, raw, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, ?, ?)", rows)
        self.connection.execute("COMMIT")

    def judgments(self) -> pd.DataFrame:
        frame = pd.read_sql_query(
            "SELECT question_id, model_a, model_b, judge, winner, p_a, criterion, turn, round, rationale "
            "FROM judgments WHERE study_id = 1 AND valid = 1 ORDER BY id", self.connection)
        frame["criterion"] = frame["criterion"].replace("", np.nan)
        for column in ("turn", "round"):
            frame[column] = frame[column].where(frame[column] != 0)
        return judgments_from_frame(frame)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--battles", type=int, default=N_BATTLES)
    parser.add_argument("--skip-v1", action="store_true", help="leave out the version-1 schema")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        log = tmp / "arena_battles.jsonl"
        synthetic_arena_file(log, n_battles=args.battles)
        size_mb = log.stat().st_size / 1e6

        bare_default = _timed(lambda: pd.read_json(log, lines=True), 1)
        bare_arrow = _timed(lambda: pd.read_json(log, lines=True, engine="pyarrow"), args.repeats)
        frame = bare_arrow[2]

        counter = iter(range(1000))

        def import_once():
            store = Store(tmp / f"db{next(counter)}.sqlite")
            report = import_path(log, store=store, study="arena")
            return store, report

        imported = _timed(import_once, args.repeats)
        store, report = imported[2]
        read_back = _timed(lambda: store.verdicts.table("arena"), args.repeats)
        judgments = read_back[2]

        def insert_once():
            other = Store(tmp / f"db{next(counter)}.sqlite")
            other.studies.create("arena")
            return other.verdicts.add("arena", judgments)

        inserted = _timed(insert_once, args.repeats)

        assert report.counts["judgments"].added == args.battles, report.counts
        assert len(judgments) == len(frame) == args.battles
        assert (judgments["model_a"].to_numpy() == frame["model_a"].to_numpy()).all()
        winners = frame["winner"].replace({"tie (bothbad)": "tie"}).to_numpy()
        assert (judgments["winner"].to_numpy() == winners).all()
        db_mb = store.path.stat().st_size / 1e6
        old = None
        if not args.skip_v1:
            v1 = VersionOneStore(tmp / "v1.sqlite")
            old = (_timed(lambda: v1.add_judgments(judgments), 1), _timed(v1.judgments, 1))
            pd.testing.assert_frame_equal(old[1][2], judgments)

    print(f"# I/O benchmark\n\nMachine: {machine()}\n")
    print(f"Synthetic Arena battle log: {args.battles:,} battles, {N_MODELS} models, {N_VOTERS:,} voters, "
          f"JSONL {size_mb:,.0f} MB (database after import: {db_mb:,.0f} MB). Medians of {args.repeats} runs "
          "(the default-engine read and the version-1 rows once).\n")
    base, arrow = bare_default[0], bare_arrow[0]
    rows = [
        ["bare `pd.read_json(lines=True)` (default engine)", *bare_default[:2], 1.0, base / arrow],
        ["bare `pd.read_json(lines=True, engine=\"pyarrow\")`", *bare_arrow[:2], arrow / base, 1.0],
        ["peercore import into a fresh store (detect, parse, check, write)", *imported[:2], imported[0] / base,
         imported[0] / arrow],
        ["peercore read-back `Store.verdicts.table()`", *read_back[:2], read_back[0] / base, read_back[0] / arrow],
        ["  of which: `Store.verdicts.add()` of the canonical frame", *inserted[:2], inserted[0] / base,
         inserted[0] / arrow],
    ]
    if old is not None:
        rows += [
            ["version-1 schema: insert the canonical frame", *old[0][:2], old[0][0] / base, old[0][0] / arrow],
            ["version-1 schema: read back", *old[1][:2], old[1][0] / base, old[1][0] / arrow],
        ]
    print(markdown_table(["step", "wall s", "CPU s", "x default-engine read", "x pyarrow-engine read"], rows))
    for name, seconds in (("import", imported[0]), ("read-back", read_back[0])):
        print(f"\nTarget {name} <= 3x the bare read: vs the default engine "
              f"{'met' if seconds <= 3 * base else 'NOT met'} ({seconds / base:.2f}x); "
              f"vs the pyarrow engine {'met' if seconds <= 3 * arrow else 'NOT met'} ({seconds / arrow:.2f}x).", end="")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
