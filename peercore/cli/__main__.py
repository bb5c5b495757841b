"""``python -m peercore.cli`` runs the command line (as ``python -m peercore`` does)."""

import sys

from peercore.cli import main

if __name__ == "__main__":
    sys.exit(main())
