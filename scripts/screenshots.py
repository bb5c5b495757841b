"""Save the README's screenshots: Home, Leaderboard and Adjudication at 1366x768 on a first run.

Usage (from the repository, after ``make setup``; needs Debian's ``chromium``)::

    .venv/bin/python scripts/screenshots.py [OUT_DIR]     # default: docs/screenshots/

Starts ``streamlit run app.py`` on a new, empty database (so the bundled studies are
seeded exactly as a newcomer's first run seeds them; no key, no network), with the
browser tests' server and Chromium settings (``tests/e2e/e2e_support.py``), and saves
what a 1366x768 window shows:

- ``home.png``: Home, with the gallery of bundled studies;
- ``leaderboard.png``: the PRD Vicuna80 study opened from its Home card, ranked by Peer
  Rank weighted (the paper's reviewer weights in the caption);
- ``adjudication.png``: the sample study's adjudication queue, signed in as ``reviewer``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from e2e_support import CHROMIUM, CHROMIUM_ARGS, ERRORS, Server, open_page, settle, sign_in  # noqa: E402

VIEWPORT = {"width": 1366, "height": 768}
PRD_WEIGHTS = "gpt4 0.488, claude 0.377, vicuna-13b 0.082, gpt35 0.053, bard 0.000"


def shoot(page, path: Path) -> None:
    """The window as it is (1366x768), after the script has finished and the page stopped moving."""
    settle(page, pause_ms=1200)
    if page.locator(ERRORS).count():
        raise SystemExit(f"{path.name}: the page shows an error; not saving it")
    page.screenshot(path=str(path))
    print(f"saved {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else REPO / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    if not Path(CHROMIUM).is_file():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="peerboard-screenshots-") as folder:
        server = Server(Path(folder) / "first-run.sqlite", Path(folder) / "streamlit.log")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    page = browser.new_context(viewport=VIEWPORT).new_page()
                    open_page(page, server, "", "PeerBoard")
                    page.get_by_text("prd-vicuna80").first.wait_for(timeout=60_000)
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
                    browser.close()
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
