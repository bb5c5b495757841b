"""Save the README's screenshots, and with ``--all`` every page of three studies at two screen sizes.

Usage (from the repository, after ``make setup``; needs Debian's ``chromium``)::

    .venv/bin/python scripts/screenshots.py [OUT_DIR]                # the README's three (docs/screenshots/)
    .venv/bin/python scripts/screenshots.py --all docs/screenshots/pages/   # and every page
    .venv/bin/python scripts/screenshots.py --all DIR --no-readme    # every page only

Each starts ``streamlit run app.py`` on a new database of its own (no key, no network),
with the browser tests' server and Chromium settings (``tests/e2e/e2e_support.py``).

The README's three show what a 1366x768 window shows on a first run (the bundled studies
seeded exactly as a newcomer's first start seeds them):

- ``home.png``: Home, with the gallery of bundled studies;
- ``leaderboard.png``: the PRD Vicuna80 study opened from its Home card, ranked by Peer
  Rank weighted (the paper's reviewer weights in the caption);
- ``adjudication.png``: the sample study's adjudication queue, signed in as ``reviewer``.

``--all DIR`` saves every page of the navigation (:data:`PAGES`), whole (the window grown
to the page's length), at 1366x768 and 1920x1080, for three studies: the bundled
``sample``, ``prd-vicuna80``, and ``alpacaeval``, made by importing an AlpacaEval
annotations folder with ``peercore import`` before the server starts (:func:`alpaca_folder`:
four models against ``gpt4_1106_preview``, the published preferences and answer lengths
of ``tests/data/alpacaeval``). Files are named ``<study>-<page>-<width>.jpg`` (JPEG,
quality 80: the 66 pictures stay near 15 MB). Adjudication is shown signed in as
``reviewer``. A page showing an error box is saved all the same and listed at the end
(exit status 1), so that a broken page is seen, not skipped; ``--study NAME`` (repeatable)
takes the pictures of that study only.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO))

from e2e_support import (CHROMIUM, CHROMIUM_ARGS, ERRORS, Server, open_page, settle, sign_in,  # noqa: E402
                         wait_for_charts)

VIEWPORT = {"width": 1366, "height": 768}
SIZES = ({"width": 1366, "height": 768}, {"width": 1920, "height": 1080})
SKELETONS = "[data-testid=stSkeleton], [data-testid=stSkeletonElement]"
PRD_WEIGHTS = "gpt4 0.488, claude 0.377, vicuna-13b 0.082, gpt35 0.053, bard 0.000"

#: The navigation of app.py: (file name part, menu entry, the page's title).
PAGES = (("home", "Home", "PeerBoard"), ("studies", "Studies", "Studies"), ("leaderboard", "Leaderboard", "Leaderboard"),
         ("bias", "Bias", "Bias"), ("efficiency", "Efficiency", "Efficiency"), ("data", "Data", "Data"),
         ("reviewers", "Reviewers & runs", "Reviewers & runs"),
         ("debates", "Discussions & debates", "Discussions & debates"), ("adjudication", "Adjudication", "Adjudication"),
         ("meta_evaluation", "Meta-evaluation", "Meta-evaluation"), ("nlg", "NLG assessment", "NLG assessment"))
#: The studies ``--all`` shows: the bundled sample, the bundled PRD Vicuna80, an imported AlpacaEval folder.
STUDIES = ("sample", "prd-vicuna80", "alpacaeval")

ALPACA_TABLE = REPO / "tests" / "data" / "alpacaeval" / "weighted_alpaca_eval_gpt4_turbo.csv.gz"
ALPACA_BASELINE = "gpt4_1106_preview"
ALPACA_ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
#: Four published models (the issue's example of a wrong default baseline was four such files).
ALPACA_MODELS = ("claude-2.1", "FuseChat-Llama-3.2-3B-Instruct", "gpt-3.5-turbo-1106", "vicuna-13b-v1.5")


def shoot(page, path: Path) -> None:
    """The window as it is (1366x768), after the script has finished and the page stopped moving."""
    settle(page, pause_ms=1200)
    if page.locator(ERRORS).count():
        raise SystemExit(f"{path.name}: the page shows an error; not saving it")
    page.screenshot(path=str(path))
    print(f"saved {_shown(path)}")


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


def readme_pictures(browser, out: Path, folder: Path) -> None:
    """Home, Leaderboard (PRD by Peer Rank) and Adjudication at 1366x768 on a first run, into ``out``."""
    server = Server(folder / "first-run.sqlite", folder / "streamlit-first-run.log")
    try:
        page = browser.new_context(viewport=VIEWPORT).new_page()
        open_page(page, server, "", "PeerBoard")
        page.get_by_text("prd-vicuna80").first.wait_for(timeout=240_000)  # a first start imports the studies
        shoot(page, out / "home.png")

        page.locator(".st-key-home_open--prd-vicuna80 button").first.click()  # the PRD card's button
        page.get_by_role("heading", name="Leaderboard", level=1).wait_for(timeout=60_000)
        page.get_by_text(PRD_WEIGHTS).first.wait_for(timeout=60_000)
        shoot(page, out / "leaderboard.png")

        page = browser.new_context(viewport=VIEWPORT).new_page()  # a new session: the sample study
        open_page(page, server, "adjudication", "Adjudication")
        sign_in(page, "reviewer")
        shoot(page, out / "adjudication.png")
    finally:
        server.stop()


# ------------------------------------------------------------------ --all: every page of three studies


def alpaca_folder(folder: Path, models=ALPACA_MODELS) -> Path:
    """An AlpacaEval results folder, ``<model>/annotations.json`` per model against the baseline.

    Made from ``tests/data/alpacaeval`` (the published preferences and the characters of
    both answers of AlpacaEval 2's 805 instructions, texts dropped): each record keeps its
    published ``question_id`` and ``preference``; the instruction and the answers are
    placeholders of the published lengths (the texts are not in the repository).
    """
    root = folder / "alpacaeval"
    with gzip.open(ALPACA_TABLE, "rt", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for model in models:
        records = []
        for number, row in enumerate(rows, start=1):
            if not row.get(f"preference:{model}"):
                continue
            records.append({
                "question_id": row["question_id"], "instruction": f"AlpacaEval instruction {number} ({row['question_id']})",
                "output_1": _filler(f"{ALPACA_BASELINE} on instruction {number}.", int(row["length_1"])),
                "generator_1": ALPACA_BASELINE,
                "output_2": _filler(f"{model} on instruction {number}.", int(row[f"length:{model}"])),
                "generator_2": model, "annotator": ALPACA_ANNOTATOR, "preference": float(row[f"preference:{model}"]),
            })
        (root / model).mkdir(parents=True, exist_ok=True)
        (root / model / "annotations.json").write_text(json.dumps(records), encoding="utf-8")
    return root


def _filler(head: str, length: int) -> str:
    """A placeholder answer of exactly ``length`` characters, starting with ``head``."""
    text = head + " " + "lorem ipsum dolor sit amet " * (length // 27 + 2)
    return text[:max(length, 1)]


def prepare_database(db: Path, folder: Path) -> None:
    """The bundled studies (as a first start seeds them), then the AlpacaEval folder through ``peercore import``."""
    from streamlit import logger

    logger.set_log_level("error")  # its caches warn that no app runs in this process: none does
    from peercore.store import Store
    from peercore.ui.data import ensure_sample_study, sample_folder

    store = Store(db)
    ensure_sample_study(store, sample_folder(REPO / "sample_data"))
    store.close()
    subprocess.run([str(Path(sys.executable).parent / "peercore"), "import", str(alpaca_folder(folder)),
                    "--study", "alpacaeval", "--db", str(db)], check=True, cwd=REPO,
                   env={**os.environ, "PEERBOARD_DB": str(db)})


def choose_study(page, study: str) -> None:
    """Pick ``study`` in the sidebar's Study box (the session keeps it from page to page)."""
    box = page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").filter(has_text="Study").first
    box.click()
    page.get_by_role("option", name=study, exact=True).click()
    settle(page)


def go_to(page, entry: str, title: str) -> None:
    """Open a page from the sidebar's menu, the session (and its study) kept."""
    nav = page.locator("[data-testid=stSidebarNav]")
    link = nav.locator("a", has_text=entry).first
    if not link.count() and nav.get_by_role("button", name="View more").count():
        nav.get_by_role("button", name="View more").click()
    link.click()
    page.get_by_role("heading", name=title, level=1).wait_for(timeout=120_000)
    settle(page, pause_ms=1200)


def sign_in_if_queued(page) -> None:
    """Sign in as ``reviewer`` on Adjudication; a study without a debate waiting shows its empty queue."""
    box = page.get_by_role("textbox", name="Annotator")
    box.fill("reviewer")
    box.press("Enter")
    settle(page)
    page.locator("h3", has_text="Debate #").or_(page.get_by_text("No debate is waiting")).first.wait_for(
        timeout=60_000)
    settle(page)


def whole_page(page, path: Path, size: dict) -> None:
    """The page at ``size``'s width, the window grown to the page's whole length, as JPEG (quality 80)."""
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], "
                           "[data-testid=stMainBlockContainer]')].map(e => e.scrollHeight), 0)")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(int(height) + 80, 8000))})
    settle(page, pause_ms=800)
    try:  # a grey placeholder stands where an element is still being drawn
        page.wait_for_function(f"() => !document.querySelector('{SKELETONS}')", timeout=60_000)
        wait_for_charts(page, timeout_ms=30_000)
    except Exception:  # noqa: BLE001 - an element that never draws is what the picture must show
        print(f"  {path.name}: an element or a chart was still not drawn")
    page.screenshot(path=str(path), type="jpeg", quality=80, full_page=True)
    page.set_viewport_size(size)
    print(f"saved {_shown(path)}")


def every_page(browser, out: Path, folder: Path, studies=STUDIES) -> list[str]:
    """Every page of ``studies`` at both :data:`SIZES` into ``out``; returns the pictures showing a problem.

    A page that shows an error box, or does not open (its title never appears), is saved
    as it stands and listed; the next page is opened all the same.
    """
    db = folder / "pages.sqlite"
    prepare_database(db, folder)
    server = Server(db, folder / "streamlit-pages.log")
    problems = []
    try:
        for study in studies:
            for size in SIZES:
                context = browser.new_context(viewport=size)
                try:
                    page = context.new_page()
                    try:
                        open_page(page, server, "", "PeerBoard")
                        choose_study(page, study)
                    except Exception as error:  # noqa: BLE001 - say which study could not be opened, go on
                        problems.append(f"{study} at {size['width']}: not opened ({type(error).__name__})")
                        continue
                    for name, entry, title in PAGES:
                        path = out / f"{study}-{name}-{size['width']}.jpg"
                        try:
                            go_to(page, entry, title)
                            if name == "adjudication" and page.get_by_role("textbox", name="Annotator").count():
                                sign_in_if_queued(page)
                            if name == "efficiency":  # its curves are computed in the background: wait for them
                                page.get_by_text("Computing the curves in the background").wait_for(
                                    state="detached", timeout=300_000)
                                settle(page)
                        except Exception as error:  # noqa: BLE001 - the picture shows what the page did instead
                            problems.append(f"{path.name}: {title} did not finish opening ({type(error).__name__})")
                        try:
                            whole_page(page, path, size)
                        except Exception as error:  # noqa: BLE001 - a page too slow to settle: say so, go on
                            problems.append(f"{path.name}: not saved, the page did not settle ({type(error).__name__})")
                            page.set_viewport_size(size)
                            continue
                        if page.locator(ERRORS).count():
                            problems.append(f"{path.name}: " + " | ".join(page.locator(ERRORS).all_inner_texts())[:300])
                finally:
                    context.close()
    finally:
        server.stop()
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=REPO / "docs" / "screenshots",
                        help="folder of the README's three pictures (default: docs/screenshots/)")
    parser.add_argument("--all", dest="every", type=Path, metavar="DIR",
                        help="also save every page of three studies at 1366x768 and 1920x1080 into DIR")
    parser.add_argument("--no-readme", action="store_true", help="with --all: leave the README's pictures alone")
    parser.add_argument("--study", action="append", choices=STUDIES, help="with --all: only this study (repeatable)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).is_file():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="peerboard-screenshots-") as folder, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            if not (args.every and args.no_readme):
                args.out.mkdir(parents=True, exist_ok=True)
                readme_pictures(browser, args.out, Path(folder))
            if args.every:
                args.every.mkdir(parents=True, exist_ok=True)
                errors = every_page(browser, args.every, Path(folder), studies=args.study or STUDIES)
        finally:
            browser.close()
    for line in errors:
        print(f"problem: {line}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
