"""peercore never imports streamlit (only peercore.ui may)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_peercore_does_not_load_streamlit():
    code = (
        "import sys, importlib, pkgutil, peercore\n"
        "names = [m.name for m in pkgutil.walk_packages(peercore.__path__, 'peercore.') if not m.name.startswith('peercore.ui')]\n"
        "for name in names: importlib.import_module(name)\n"
        "assert len(names) > 5, names\n"
        "print('streamlit' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
