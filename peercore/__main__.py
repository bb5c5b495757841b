"""``python -m peercore`` runs the command line."""

import sys

from peercore.cli import main

sys.exit(main())
