"""``peercore app``: open the dashboard (``streamlit run app.py``).

Importing this module does not import streamlit (the CLI loads every command group at
start-up); streamlit runs in a child process.

Bound to an address other than this machine's with no sign-in configured (no ``[auth]``
in ``.streamlit/secrets.toml``), the command warns on stderr that anyone who can reach the
port may do everything (issue 20; :func:`exposure_warning`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from peercore.cli.common import fail

__all__ = ["app_path", "command", "secrets_files", "login_configured", "exposure_warning"]

#: Addresses that only this machine can reach.
LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")


def secrets_files(app_folder: Path) -> list[Path]:
    """Where Streamlit reads ``secrets.toml`` for the app in ``app_folder``: the user's, then the app's."""
    return [Path.home() / ".streamlit" / "secrets.toml", Path(app_folder) / ".streamlit" / "secrets.toml"]


def login_configured(paths) -> bool:
    """Whether one of the ``secrets.toml`` files at ``paths`` holds an ``[auth]`` table (Streamlit's login).

    Only the table's presence is read: no value of the file is kept or shown. A file that
    is missing or not valid TOML counts as no login (Streamlit would not start one either).
    """
    for path in paths:
        try:
            with open(path, "rb") as handle:
                if isinstance(tomllib.load(handle).get("auth"), dict):
                    return True
        except (OSError, tomllib.TOMLDecodeError):
            continue
    return False


def exposure_warning(address: str, *, login: bool) -> str | None:
    """The warning ``peercore app`` prints when the dashboard is open to others with nobody signed in; else None.

    Parameters
    ----------
    address : the ``--address`` the server binds.
    login : whether Streamlit's login is configured (:func:`login_configured`).
    """
    if login or str(address).strip().lower() in LOOPBACK:
        return None
    return (f"peercore: warning: the dashboard listens on {address} and no sign-in is configured (no [auth] in "
            ".streamlit/secrets.toml): nobody is signed in, and anyone who can reach the port may do everything "
            "(read, import, delete studies, launch runs on the server's API keys). See docs/TEAM.md.")


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
    warning = exposure_warning(args.address, login=login_configured(secrets_files(app_path().parent)))
    if warning:
        print(warning, file=sys.stderr)
    env = dict(os.environ)
    if args.db:  # a postgresql:// URL as given (cli.main checked it); a file path made absolute
        env["PEERBOARD_DB"] = args.db if isinstance(args.db, str) else str(Path(args.db).expanduser().resolve())
    try:
        return subprocess.call(command(args), cwd=app_path().parent, env=env)
    except KeyboardInterrupt:
        return 0
