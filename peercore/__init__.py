"""peercore: rank LLMs by peer review and meta-evaluate LLM judges.

The maths, I/O, storage and LLM calls behind the PeerBoard dashboard. Nothing here
imports streamlit (except :mod:`peercore.ui`).
"""

from peercore.errors import ConvergenceError, JudgmentError, PeercoreError
from peercore.judgments import COLUMNS, judgments_from_frame, mirror, read_judgments

__version__ = "0.1.0"

__all__ = [
    "COLUMNS",
    "ConvergenceError",
    "JudgmentError",
    "PeercoreError",
    "judgments_from_frame",
    "mirror",
    "read_judgments",
    "__version__",
]
