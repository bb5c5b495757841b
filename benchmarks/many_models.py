"""``peercore rank`` on 10,000 models and 1,000,000 battles, before and after issue 17 item 5, in one run.

Synthetic Arena-style log (``ranking.synthetic_arena_log``): 10,000 models with N(0, 1)
strengths, 1,000,000 battles between uniformly random pairs (nearly every battle a pair of
its own), 10% ties, one judge; written once as Parquet. Each side runs, as a fresh process, the commands the issue
names with their defaults:

- ``peercore rank FILE --method bt --format csv`` (Bradley-Terry, 100 bootstrap rounds),
- ``peercore rank FILE --method winrate --format csv`` (win rates, 100 bootstrap rounds),

and reports wall time, CPU time (user + system) and peak RSS (``os.wait4``). "Before" is
the package at ``--before`` (default: the commit before this work), "after" the one at
``--after`` (default ``HEAD``; ``worktree`` for this checkout as it is), each extracted with
``git archive`` into a temporary folder. The before side needed 19.5 GB
at 10,000 models on a 23 GB machine: so as not to starve a shared machine it runs under an
address-space cap (``--cap-gb``, lowered to leave 4 GB of the memory available) and a
time limit (``--timeout``), and the table says when it hit either. Targets (issue 17): under
2 GB and 30 s for each command after.

Run: ``.venv/bin/python benchmarks/many_models.py [--models 10000 --battles 1000000]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, markdown_table  # noqa: E402
from ranking import synthetic_arena_log  # noqa: E402

from peercore.judgments import REQUIRED_COLUMNS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "b073a9e"  # main before issue 17 item 5 (dense models x models matrices)
RESULT = ROOT / "benchmarks" / "results" / "many_models.md"


def checkout(revision: str, folder: Path) -> Path:
    """The tree of ``revision`` (``git archive``; the repository is only read)."""
    folder.mkdir(parents=True)
    archive = folder / "tree.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", revision], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "tree", filter="data")
    return folder / "tree"


def available_gb() -> float:
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1e6
    return 0.0


def run(tree: Path, argv: list[str], *, cap_bytes: int | None, timeout: float) -> dict:
    """One command as a fresh process: wall and CPU seconds, peak RSS, exit status, last stderr line."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}

    def limit():
        if cap_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    start = time.perf_counter()
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        process = subprocess.Popen([sys.executable, "-m", "peercore", *argv], cwd=tree, env=env, stdout=out,
                                   stderr=err, preexec_fn=limit)
        timed_out = False
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                timed_out = True
                break
            time.sleep(0.2)
        wall = time.perf_counter() - start
        err.seek(0)
        lines = [line for line in err.read().decode(errors="replace").splitlines() if line.strip()]
        out.seek(0)
        rows = max(len(out.read().splitlines()) - 1, 0)
    code = os.waitstatus_to_exitcode(status)
    if timed_out:
        outcome = f"stopped at the {timeout:.0f} s limit"
    elif code != 0:
        name, _, message = (lines[-1] if lines else f"exit status {code}").partition(": ")
        outcome = f"failed: {name.rsplit('.', 1)[-1]}" + (f" ({message[:60]})" if message else "")
    else:
        outcome = f"ok, {rows:,} models"
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_gb": usage.ru_maxrss / 1e6,
            "outcome": outcome}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--before", default=BEFORE, help="git revision of the before side (default %(default)s)")
    parser.add_argument("--after", default="HEAD", help="git revision of the after side, or 'worktree'")
    parser.add_argument("--cap-gb", type=float, default=12.0, help="address-space cap of the before side")
    parser.add_argument("--timeout", type=float, default=900.0, help="time limit of each before command (s)")
    parser.add_argument("--skip-before", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        log = folder / "judgments.parquet"
        synthetic_arena_log(n_models=args.models, n_battles=args.battles)[list(REQUIRED_COLUMNS)].to_parquet(
            log, index=False)
        after = ROOT if args.after == "worktree" else checkout(args.after, folder / "after")
        revision = args.after if args.after == "worktree" else subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", args.after], capture_output=True, text=True).stdout.strip()
        sides = [(f"after ({revision})", after, None, 3600.0)]
        if not args.skip_before:
            cap = min(args.cap_gb, available_gb() - 4.0)
            sides.insert(0, (f"before ({args.before})", checkout(args.before, folder / "before"), int(cap * 1e9),
                             args.timeout))
        load = os.getloadavg()
        rows = []
        for method in ("bt", "winrate"):
            for name, tree, cap_bytes, timeout in sides:
                result = run(tree, ["rank", str(log), "--method", method, "--format", "csv"], cap_bytes=cap_bytes,
                             timeout=timeout)
                cap_text = f" (cap {cap_bytes / 1e9:.1f} GB)" if cap_bytes else ""
                rows.append([f"`rank --method {method}`", name + cap_text, round(result["wall"], 1),
                             round(result["cpu"], 1), round(result["rss_gb"], 2), result["outcome"]])
                print(rows[-1], flush=True)
        load_after = os.getloadavg()
    table = markdown_table(["command (default 100 bootstrap rounds)", "code", "wall s", "CPU s (user+sys)",
                            "peak RSS GB", "outcome"], rows)
    text = (f"# `peercore rank` on {args.models:,} models and {args.battles:,} battles\n\n"
            f"`benchmarks/many_models.py` (issue 17, item 5). {machine()}; load average "
            f"{load[0]:.1f} at the start, {load_after[0]:.1f} at the end (a shared machine: wall times move with "
            f"the load, CPU times much less).\n\nTargets: under 2 GB and 30 s per command.\n\n{table}\n")
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
