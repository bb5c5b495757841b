"""peercore: rank LLMs by peer review and meta-evaluate LLM judges.

The maths, I/O, storage and LLM calls behind the PeerBoard dashboard. Nothing here
imports streamlit (except :mod:`peercore.ui`).

The flat API below is the canonical judgment table (:mod:`peercore.judgments`) and the
error hierarchy; the use cases are :mod:`peercore.app`, the estimators
:mod:`peercore.ranking`, :mod:`peercore.position`, :mod:`peercore.bias` and
:mod:`peercore.agreement`, the store :mod:`peercore.store`.
"""

from __future__ import annotations

import importlib

from peercore.errors import ConvergenceError, JudgmentError, PeercoreError

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

_FROM_JUDGMENTS = ("COLUMNS", "judgments_from_frame", "mirror")


def __getattr__(name: str):
    """The judgment table's names, imported on first use: ``import peercore`` (and so ``peercore --help``)
    does not load pandas."""
    if name in _FROM_JUDGMENTS:
        return getattr(importlib.import_module("peercore.judgments"), name)
    if name == "read_judgments":
        return importlib.import_module("peercore.io.canonical").read_judgments
    raise AttributeError(f"module 'peercore' has no attribute {name!r}")
