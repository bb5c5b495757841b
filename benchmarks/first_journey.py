"""A newcomer's first minutes, timed (issue 21): empty database -> leaderboard -> judge health -> a decision.

The steps are the browser test's (``tests/e2e/journeys.py``): ``streamlit run app.py``
on an empty database, Chromium at 1366x768, Home with the bundled studies (the first
start imports them), the PRD Vicuna80 leaderboard from its Home card, Judge health on
Bias, a sample debate decided with the keyboard. Time is measured from the first page
request to each step's last element on screen (the app's time plus the browser's).
Goal: under 90 s on a quiet machine. Writes ``benchmarks/results/first_journey.md``.

Usage::

    .venv/bin/python benchmarks/first_journey.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "benchmarks"))

from _common import machine  # noqa: E402
from e2e_support import CHROMIUM, CHROMIUM_ARGS, Server  # noqa: E402
from journeys import first_journey  # noqa: E402

GOAL_S = 90.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    runs = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory(prefix="peerboard-journey-") as folder:
                    server = Server(Path(folder) / "empty.sqlite", Path(folder) / "streamlit.log")
                    try:
                        seen = first_journey(browser, server)
                    finally:
                        server.stop()
                if seen["errors"] or seen["elsewhere"]:
                    raise SystemExit(f"the journey went wrong: {seen['errors']} {seen['elsewhere']}")
                runs.append(seen["steps"])
                print(seen["steps"], flush=True)
        finally:
            browser.close()
    names = [name for name, _ in runs[0]]
    rows = ["| step | " + " | ".join(f"run {k + 1} (s)" for k in range(len(runs))) + " | median (s) |",
            "|---|" + "---|" * (len(runs) + 1)]
    for k, name in enumerate(names):
        times = [run[k][1] for run in runs]
        rows.append(f"| {name} | " + " | ".join(f"{t:.1f}" for t in times) + f" | {statistics.median(times):.1f} |")
    total = statistics.median(run[-1][1] for run in runs)
    load = os.getloadavg()[0]
    text = "\n".join([
        "# A newcomer's first minutes (issue 21)", "",
        f"Machine: {machine()}; load average at the end {load:.1f}.", "",
        "Empty database -> Home (first start imports the bundled studies) -> PRD leaderboard by Peer Rank -> "
        "Judge health on Bias -> a sample debate decided with the keyboard; Chromium 1366x768; times are "
        "cumulative from the first request. No request left 127.0.0.1 in any run.", "",
        *rows, "",
        f"Whole journey (median): {total:.1f} s; goal under {GOAL_S:.0f} s on a quiet machine: "
        f"{'met' if total < GOAL_S else 'not met'}.", "",
        "Command: `.venv/bin/python benchmarks/first_journey.py --repeats " + str(args.repeats) + "`", ""])
    out = REPO / "benchmarks" / "results" / "first_journey.md"
    out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
