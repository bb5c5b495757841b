"""``peercore app``: open the dashboard (``streamlit run app.py``).

Importing this module does not import streamlit (the CLI loads every command group at
start-up); streamlit runs in a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from peercore.cli import add_db_option

__all__ = ["add_commands", "app_path"]


def app_path() -> Path:
    """``app.py`` of the checkout peercore was installed from (editable install)."""
    return Path(__file__).resolve().parents[2] / "app.py"


def add_commands(subparsers) -> None:
    app = subparsers.add_parser("app", help="open the PeerBoard dashboard in the browser (streamlit run app.py)")
    add_db_option(app)
    app.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    app.add_argument("--address", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    app.add_argument("--headless", action="store_true", help="do not open a browser window")
    app.set_defaults(handler=_app)


def command(args) -> list[str]:
    """The ``streamlit run`` command line for ``args``."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(app_path()), "--server.port", str(args.port),
           "--server.address", args.address, "--browser.gatherUsageStats", "false"]
    if args.headless:
        cmd += ["--server.headless", "true"]
    return cmd


def _app(args) -> int:
    from peercore.cli import fail

    if not app_path().is_file():
        return fail(f"{app_path()} not found: `peercore app` runs from a PeerBoard checkout "
                    "(pip install -e .); otherwise run `streamlit run app.py` there")
    env = dict(os.environ)
    if args.db:  # a postgresql:// URL as given (cli.main checked it); a file path made absolute
        env["PEERBOARD_DB"] = args.db if isinstance(args.db, str) else str(Path(args.db).expanduser().resolve())
    try:
        return subprocess.call(command(args), cwd=app_path().parent, env=env)
    except KeyboardInterrupt:
        return 0
