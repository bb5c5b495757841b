"""``peercore app``: open the dashboard (``streamlit run app.py``).

Importing this module does not import streamlit (the CLI loads every command group at
start-up); streamlit runs in a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from peercore.cli.common import fail

__all__ = ["app_path", "command"]


def app_path() -> Path:
    """``app.py`` of the checkout peercore was installed from (editable install)."""
    return Path(__file__).resolve().parents[2] / "app.py"


def command(args) -> list[str]:
    """The ``streamlit run`` command line for ``args``."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(app_path()), "--server.port", str(args.port),
           "--server.address", args.address, "--browser.gatherUsageStats", "false"]
    if args.headless:
        cmd += ["--server.headless", "true"]
    return cmd


def _app(args) -> int:
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
