"""How long each dashboard page takes to open at Arena scale (AppTest), before and after, cold and warm.

What is timed: ``AppTest.run()`` of one page through ``app.py`` with the page's default
settings, each page in a **new Python process** (a subprocess per page and study):

- **cold**: the page's first run in that process (both trees byte-compiled first, as a
  deployed server has them: see ``_common.compile_tree``): empty Streamlit caches, the study read
  from SQLite and everything computed (what the first visitor after a restart or a
  write waits for); the process has imported Streamlit and the test harness (a server
  has), not PeerBoard, pandas or plotly (the first run imports them);
- **warm**: the run that follows in the same process (every later rerun);
- **peak memory**: the subprocess's peak resident set (``resource.getrusage``,
  ``ru_maxrss``) after both runs, Streamlit's own ~200 MB included.

Pages: Studies (home), Leaderboard, Bias, Efficiency, Meta-evaluation (issue 12).

Studies (the Chatbot Arena shape): 100 contestants, **one judge** (``arena``), battles
between uniformly random pairs (strengths ~ N(0, 1), Bradley-Terry outcomes, 10% ties),
each prompt judged in ``--per-prompt`` battles (default 10, so the Efficiency page has
questions with three or more candidates to sub-sample); 100,000 and 1,000,000 judgments.

Before and after: the same pages of the code at ``--before`` (default: the commit this
work started from) are extracted with ``git archive`` into a temporary folder and run
on the same databases in the same run, so machine load affects both alike.

Targets (issue 12): every page cold under 3 s and warm under 1 s at 1,000,000
judgments; peak memory under 1.5 GB.

Run: ``.venv/bin/python benchmarks/app.py [--sizes 100000 1000000] [--before REF]``;
writes ``benchmarks/results/app.md``. One page at a time (2 shared cores are enough).
Profile one page: ``.venv/bin/python benchmarks/app.py --profile efficiency --sizes 1000000``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
BEFORE_REF = "a6b4876"  # main before the read model (issue 18); d5a4680 before the store-side aggregates is in git history of app.md
PAGES = {"studies": "Studies (home)", "leaderboard": "Leaderboard", "bias": "Bias", "efficiency": "Efficiency",
         "meta_evaluation": "Meta-evaluation"}
COLD_TARGET_S, WARM_TARGET_S, MEMORY_TARGET_MB = 3.0, 1.0, 1536


# ------------------------------------------------------------------------------ studies


SHAPES = {"arena": "arena", "human": "human:crowd"}  # shape -> the one judge label


def arena_judgments(n: int, *, models: int = 100, per_prompt: int = 10, tie_rate: float = 0.10, seed: int = 0,
                    judge: str = "arena"):
    """``n`` canonical judgments in the Chatbot Arena shape (one judge), ``per_prompt`` battles per prompt."""
    import numpy as np
    import pandas as pd
    from scipy.special import expit

    from peercore.judgments import judgments_from_frame

    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    tie = rng.random(n) < tie_rate
    a_wins = rng.random(n) < expit(strength[a] - strength[b])
    names = np.array([f"model-{k:03d}" for k in range(models)])
    return judgments_from_frame(pd.DataFrame({
        "question_id": pd.Series(np.arange(n) // per_prompt).map("p{:07d}".format),
        "model_a": names[a], "model_b": names[b], "judge": judge,
        "winner": np.where(tie, "tie", np.where(a_wins, "model_a", "model_b")),
    }))


def build_study(path: Path, n: int, *, per_prompt: int, root: Path = ROOT, judge: str = "arena") -> float:
    """Write the study ``arena`` into a new database with the code of ``root``; seconds taken.

    Each tree (before, after) writes its own database: the schema may have moved on.
    """
    if root != ROOT or "peercore" not in sys.modules:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--build", str(root), str(path), str(n),
                               str(per_prompt), judge], capture_output=True, text=True, cwd=root, check=True)
        return float(done.stdout.strip().splitlines()[-1])
    from peercore.store import Store

    start = time.perf_counter()
    store = Store(path)
    description, judgments = f"{n:,} synthetic Arena battles (benchmarks/app.py)", arena_judgments(n, per_prompt=per_prompt, judge=judge)
    if hasattr(store, "create_study"):  # a tree from before the store's facades (a6b4876, issue 18's "before")
        store.create_study("arena", description=description)
        store.add_judgments("arena", judgments)
    else:
        store.studies.create("arena", description=description)
        store.verdicts.add("arena", judgments)
    store.close()
    return time.perf_counter() - start


# ------------------------------------------------------------------- one page (child)


def run_page(root: Path, db: Path, study: str, page: str, *, profile: Path | None = None) -> dict:
    """Cold and warm AppTest runs of one page in this (fresh) process; the child's side."""
    import resource

    os.chdir(root)
    sys.path.insert(0, str(root))
    os.environ["PEERBOARD_DB"] = str(db)
    os.environ["PEERBOARD_SAMPLE_DATA"] = ""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import AppTest

    original = PagesManager.__init__

    def init(self, *args, **kwargs):  # as a server does once app.py has called st.navigation
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init
    at = AppTest.from_file(str(root / "app.py"), default_timeout=900)
    at.session_state["study"] = study
    at.switch_page(f"pages/{page}.py")
    profilers = []
    if profile is not None:  # the script runs in its own thread: profile the threads the run starts
        import cProfile
        import threading

        def start_profiler(frame, event, arg):
            sys.setprofile(None)
            profilers.append(cProfile.Profile())
            profilers[-1].enable()

        threading.setprofile(start_profiler)
    start = time.perf_counter()
    at.run()
    cold = time.perf_counter() - start
    if profile is not None:
        import pstats

        threading.setprofile(None)
        for profiler in profilers:
            profiler.create_stats()
        pstats.Stats(*profilers).dump_stats(str(profile))
    errors = [str(e.value)[:300] for e in at.exception]
    partial = bool(at.get("progress"))
    opened = start = time.perf_counter()
    at.run()
    warm = time.perf_counter() - start
    errors += [str(e.value)[:300] for e in at.exception]
    out = {"cold": cold, "warm": warm, "errors": errors, "title": [t.value for t in at.title][:1],
           "dataframes": len(at.dataframe), "charts": len(at.get("plotly_chart")),
           "info": [str(i.value)[:200] for i in at.info][:3]}
    out["partial"] = partial
    if page in ("efficiency", "leaderboard"):
        # The curves (the bootstrap) may still run in the background: rerun until the page shows no progress bar.
        complete = None
        for _ in range(600):
            if not at.get("progress"):
                complete = time.perf_counter() - opened  # since the cold run returned
                break
            time.sleep(0.5)
            at.run()
        out["complete_after"] = complete
        out["captions"] = [str(c.value)[:200] for c in at.caption][:8]
    import peercore  # imported by the runs: check it is the tree being measured

    assert Path(peercore.__file__).resolve().is_relative_to(root.resolve()), peercore.__file__
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


IMPORTS = "import peercore.ui.data, peercore.charts, peercore.reports, plotly.graph_objects"


def import_seconds(root: Path) -> float:
    """Seconds a new process (Streamlit already imported) takes to import what every page imports."""
    code = (f"import sys, time; sys.path.insert(0, {str(root)!r}); import streamlit; t = time.perf_counter(); "
            f"{IMPORTS}; print(time.perf_counter() - t)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    return float(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else float("nan")


def measure(root: Path, db: Path, study: str, page: str, *, timeout: float) -> dict:
    """:func:`run_page` in a subprocess (so that every page starts cold)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(root), str(db), study, page]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=root)
    except subprocess.TimeoutExpired:
        return {"cold": float("nan"), "warm": float("nan"), "peak_mb": float("nan"), "errors": [f"timed out ({timeout:.0f} s)"]}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        return {"cold": float("nan"), "warm": float("nan"), "peak_mb": float("nan"),
                "errors": [done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"]}
    return json.loads(lines[-1])


# ----------------------------------------------------------------------------- report


def _checkout(ref: str, folder: Path) -> Path:
    """The tree of ``ref`` extracted into ``folder`` (git archive: the shared checkout is not touched)."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _seconds(value) -> str:
    return "—" if value is None or value != value else f"{value:.2f}"


def _ratio(before, after) -> str:
    if before is None or after is None or before != before or after != after or after <= 0:
        return "—"
    return f"{before / after:.1f}x"


def report(results: dict, *, sizes: list[int], before_ref: str, build: dict, per_prompt: int, judge: str = "arena",
           after_ref: str | None = None, imports: dict | None = None, repeats: int = 1) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import machine, markdown_table

    header = ["judgments", "page", "cold before (s)", "cold after (s)", "cold speed-up", "warm before (s)",
              "warm after (s)", "peak MB before", "peak MB after", "targets (after)"]
    rows, notes, misses = [], [], []
    for n in sizes:
        for page, label in PAGES.items():
            b, a = results[("before", n, page)], results[("after", n, page)]
            met = (a["cold"] < COLD_TARGET_S and a["warm"] < WARM_TARGET_S and a["peak_mb"] < MEMORY_TARGET_MB
                   and not a.get("errors"))
            if n == max(sizes) and not met:
                misses.append(f"{label} at {n:,}")
            rows.append([f"{n:,}", label, _seconds(b["cold"]), _seconds(a["cold"]), _ratio(b["cold"], a["cold"]),
                         _seconds(b["warm"]), _seconds(a["warm"]), f"{b['peak_mb']:.0f}" if b["peak_mb"] == b["peak_mb"] else "—",
                         f"{a['peak_mb']:.0f}" if a["peak_mb"] == a["peak_mb"] else "—", "met" if met else "not met"])
            for side, value in (("before", b), ("after", a)):
                if value.get("errors"):
                    notes.append(f"- {label}, {n:,}, {side}: {'; '.join(value['errors'])}")
            if page == "efficiency" and a.get("partial") and a.get("complete_after") is not None:
                notes.append(f"- Efficiency, {n:,}, after: the page opened with a partial curve; the whole curve was "
                              f"drawn {a['complete_after']:.1f} s after the cold run returned (background thread).")
            if page == "leaderboard" and a.get("partial") and a.get("complete_after") is not None:
                notes.append(f"- Leaderboard, {n:,}, after: the page opened with the point estimate and the bootstrap's "
                              f"progress; the intervals were drawn {a['complete_after']:.1f} s after the cold run "
                              "returned (background thread).")
    lines = [
        "# Dashboard benchmark: every page at Arena scale, before and after",
        "",
        f"Machine: {machine()}; shared with other jobs while measured (load varies).",
        "",
        f"Study: the Chatbot Arena shape: 100 contestants, one judge (`{judge}`), battles between uniformly random "
        f"pairs, 10% ties, {per_prompt:,} battles per prompt. Each page's cold run is the first `AppTest.run()` of the page in a "
        "new Python process (empty caches; PeerBoard, pandas and plotly imported by that run, from bytecode compiled beforehand as a deployed server has it); warm = the next run "
        "in the same process; peak MB = the process's peak resident set (`ru_maxrss`, Streamlit's own ~200 MB "
        f"included); {'one process' if repeats == 1 else f'median of {repeats} processes'} per page and side. "
        "Before = the code at "
        f"`{before_ref}` (main before this work), after = "
        f"{f'the code at `{after_ref}`' if after_ref else 'the working tree'}; each writes its own copy of the "
        "study (same rows) and both are measured in the same run, page by page.",
        "",
        markdown_table(header, rows),
        "",
        f"Targets at {max(sizes):,} judgments: cold < {COLD_TARGET_S:g} s, warm < {WARM_TARGET_S:g} s, "
        f"peak < {MEMORY_TARGET_MB / 1024:g} GB -> " + ("all met." if not misses else f"not met for: {', '.join(misses)}."),
        "",
        (f"Part of every cold run is importing PeerBoard, pandas, scipy, statsmodels and plotly: "
         f"{_seconds(imports.get('before'))} s before, {_seconds(imports.get('after'))} s after, measured alone in a "
         "new process." if imports else ""),
        "",
        "Writing each study into SQLite (not part of any page time): "
        + ", ".join(f"{n:,}: {s:.1f} s" for n, s in build.items()) + ".",
    ]
    if notes:
        lines += ["", "Notes:", *notes]
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--build":
        root, path, n, per_prompt, judge = sys.argv[2:7]
        sys.path.insert(0, root)
        import peercore

        assert Path(peercore.__file__).resolve().is_relative_to(Path(root).resolve()), peercore.__file__
        print(build_study(Path(path), int(n), per_prompt=int(per_prompt), root=ROOT, judge=judge))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        root, db, study, page = sys.argv[2:6]
        profile = Path(sys.argv[6]) if len(sys.argv) > 6 else None
        print(json.dumps(run_page(Path(root), Path(db), study, page, profile=profile)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--pages", nargs="+", default=list(PAGES), choices=list(PAGES))
    parser.add_argument("--before", default=BEFORE_REF, help="git ref of the 'before' code (default %(default)s)")
    parser.add_argument("--after", default=None, help="git ref of the 'after' code (default: this working tree)")
    parser.add_argument("--per-prompt", type=int, default=10)
    parser.add_argument("--shape", choices=list(SHAPES), default="arena",
                        help="arena: judge 'arena', --per-prompt battles per prompt; human: one 'human:crowd' judge "
                             "label over 500 question ids (issue 18's shape: the count fast path gave up on it)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per page and process")
    parser.add_argument("--repeats", type=int, default=1, help="processes per page and side (the median is kept)")
    parser.add_argument("--profile", choices=list(PAGES), help="cProfile the cold run of this page (after only)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "app.md")
    args = parser.parse_args()
    judge = SHAPES[args.shape]
    if args.shape == "human":
        args.per_prompt = max(1, max(args.sizes) // 500)
        if args.out == ROOT / "benchmarks" / "results" / "app.md":
            args.out = ROOT / "benchmarks" / "results" / "app_human.md"
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        build = {}
        trees = {"before": _checkout(args.before, folder / "before"),
                 "after": _checkout(args.after, folder / "after") if args.after else ROOT}
        if args.profile:
            trees = {"after": ROOT}
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _common import compile_tree

        for root in trees.values():  # as deployed: bytecode cached (see _common.compile_tree)
            compile_tree(root)
        for n in args.sizes:
            for side, root in trees.items():
                (folder / f"db-{side}").mkdir(exist_ok=True)
                seconds = build_study(folder / f"db-{side}" / f"arena-{n}.sqlite", n, per_prompt=args.per_prompt, root=root,
                                      judge=judge)
                build[n] = seconds if side == "after" else build.get(n, seconds)
                print(f"{side}: built {n:,} judgments in {seconds:.1f} s", flush=True)
        if args.profile:
            for n in args.sizes:
                stats = folder / f"{args.profile}-{n}.prof"
                subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(ROOT),
                                str(folder / "db-after" / f"arena-{n}.sqlite"), "arena", args.profile, str(stats)],
                               check=True)
                import pstats

                pstats.Stats(str(stats)).sort_stats("cumulative").print_stats(40)
            return
        results = {}
        imports = {side: import_seconds(root) for side, root in trees.items()}
        print(f"imports alone: {imports}", flush=True)
        for n in args.sizes:
            for page in args.pages:
                for side, root in trees.items():
                    runs = [measure(root, folder / f"db-{side}" / f"arena-{n}.sqlite", "arena", page,
                                    timeout=args.timeout) for _ in range(args.repeats)]
                    value = dict(runs[0])
                    for key_ in ("cold", "warm", "peak_mb"):
                        value[key_] = float(median([r[key_] for r in runs]))
                    results[(side, n, page)] = value
                    print(f"{n:>9,} {page:<16} {side:<6} cold {_seconds(value['cold'])} s, warm "
                          f"{_seconds(value['warm'])} s, peak {value['peak_mb']:.0f} MB {value.get('errors') or ''}",
                          flush=True)
    if args.pages != list(PAGES):
        return
    text = report(results, sizes=args.sizes, before_ref=args.before, build=build, per_prompt=args.per_prompt, judge=judge,
                  after_ref=args.after, imports=imports, repeats=args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
