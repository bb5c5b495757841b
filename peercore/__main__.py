"""``python -m peercore`` runs the command line."""

import sys

from peercore.cli import main

if __name__ == "__main__":
    sys.exit(main())
