"""How long the Leaderboard page takes to run (AppTest), on 100,000 judgments and on the sample study.

What is timed: one ``AppTest.run()`` of ``pages/leaderboard.py`` through ``app.py``
(navigation, sidebar, the page's default settings: Bradley-Terry with 100 bootstrap
rounds over the LLM reviewers) —

- **cold**: every Streamlit cache cleared first (data and resources: the store and the
  :class:`peercore.study.Study` handles with their memos), so the run reads the study from SQLite,
  validates it and ranks it (what the first visitor after a write waits for);
- **warm**: the same run again (what every later rerun costs: the cached tables).

Studies:

- 100,000 judgments: 10 contestants that are also the 10 LLM reviewers, every ordered
  pair of contestants on 111 questions (10 x 90 x 111 = 99,900 verdicts), outcomes from
  a Bradley-Terry model with known strengths, 10% ties;
- the sample study: ``sample_data/`` when the repository has it, else the synthetic
  study of ``tests/app`` (396 judgments).

Target: the cold run on 100,000 judgments under 2 s.

Run: ``.venv/bin/python benchmarks/app.py [--repeats N]``; writes ``benchmarks/results/app.md``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "app"))
from _common import machine, markdown_table  # noqa: E402

from peercore.judgments import judgments_from_frame  # noqa: E402
from peercore.store import Store  # noqa: E402

TARGET_S = 2.0


def big_study(store: Store, *, models: int = 10, questions: int = 111, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    names = [f"model-{k:02d}" for k in range(models)]
    strength = dict(zip(names, rng.normal(0, 1, models)))
    pairs = list(itertools.permutations(names, 2))
    rows = {"question_id": [], "model_a": [], "model_b": [], "judge": [], "winner": []}
    for q, (a, b), judge in itertools.product(range(questions), pairs, names):
        p = 1 / (1 + np.exp(strength[b] - strength[a]))
        u = rng.random()
        rows["question_id"].append(f"q{q:03d}")
        rows["model_a"].append(a)
        rows["model_b"].append(b)
        rows["judge"].append(f"local:{judge}")
        rows["winner"].append("tie" if u < 0.1 else "model_a" if rng.random() < p else "model_b")
    judgments = judgments_from_frame(pd.DataFrame(rows))
    store.create_study("big", description="100,000 synthetic peer reviews (benchmarks/app.py)")
    store.add_judgments("big", judgments)
    return len(judgments)


def sample_study(store: Store) -> tuple[str, int]:
    from peercore.ui.data import ensure_sample_study

    name = ensure_sample_study(store, ROOT / "sample_data")
    if name is None:
        from app_studies import build_synthetic_study

        name = build_synthetic_study(store)["name"]
    return name, store.summary(name)["judgments"]


def time_page(db: Path, study: str, *, repeats: int) -> tuple[list[float], list[float]]:
    import streamlit as st
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import AppTest

    original = PagesManager.__init__

    def init(self, *args, **kwargs):  # as a server does once app.py has called st.navigation
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init
    os.environ["PEERBOARD_DB"] = str(db)
    cold, warm = [], []
    try:
        for _ in range(repeats):
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
            at.session_state["study"] = study
            at.run()
            at.switch_page("pages/leaderboard.py")
            st.cache_data.clear()
            st.cache_resource.clear()  # the store and the Study handles (with their memos) too
            start = time.perf_counter()
            at.run()
            cold.append(time.perf_counter() - start)
            assert not at.exception, [e.value for e in at.exception]
            assert at.dataframe, "the leaderboard table is missing"
            start = time.perf_counter()
            at.run()
            warm.append(time.perf_counter() - start)
    finally:
        PagesManager.__init__ = original
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "app.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        big_db = Path(folder) / "big.sqlite"
        store = Store(big_db)
        start = time.perf_counter()
        n_big = big_study(store)
        build_s = time.perf_counter() - start
        store.close()
        sample_db = Path(folder) / "sample.sqlite"
        store = Store(sample_db)
        sample_name, n_sample = sample_study(store)
        store.close()
        for label, db, study, n in (("100,000-judgment study", big_db, "big", n_big),
                                    (f"sample study ({sample_name})", sample_db, sample_name, n_sample)):
            cold, warm = time_page(db, study, repeats=args.repeats)
            rows.append([label, f"{n:,}", float(np.median(cold)), float(min(cold)), float(np.median(warm))])
    big_cold = rows[0][2]
    text = "\n".join([
        "# Dashboard benchmark: the Leaderboard page",
        "",
        f"Machine: {machine()}",
        "",
        "One `AppTest.run()` of `pages/leaderboard.py` through `app.py` with the default settings "
        "(Bradley-Terry, 100 bootstrap rounds, the LLM reviewers). Cold = every Streamlit cache cleared "
        f"first (reads SQLite, validates, ranks); warm = the rerun that follows. Median of {args.repeats}.",
        "",
        markdown_table(["study", "judgments", "cold median (s)", "cold best (s)", "warm median (s)"], rows),
        "",
        f"Target: cold run on 100,000 judgments under {TARGET_S:g} s -> "
        f"{'met' if big_cold < TARGET_S else 'NOT met'} ({big_cold:.2f} s).",
        f"(Writing the 100,000 judgments into SQLite took {build_s:.1f} s; not part of the page time.)",
        "",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
