"""``peercore app`` builds the streamlit command without importing streamlit."""

from __future__ import annotations

import subprocess
import sys

from peercore.cli import build_parser


def test_app_command_runs_streamlit_on_app_py():
    from peercore.cli.dashboard import app_path, command

    args = build_parser().parse_args(["app", "--port", "8777", "--headless"])
    cmd = command(args)
    assert cmd[1:4] == ["-m", "streamlit", "run"]
    assert cmd[4] == str(app_path()) and app_path().is_file()
    assert cmd[cmd.index("--server.port") + 1] == "8777"
    assert "--server.headless" in cmd
    assert args.address == "127.0.0.1"  # this machine only, unless asked


def test_loading_the_cli_does_not_import_streamlit():
    code = "import sys, peercore.cli as c; c.build_parser(); print('streamlit' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
