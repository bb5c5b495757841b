"""Values as JSON writes them (the CLI's ``--format json``, exports, the use cases' ``to_json``)."""

from __future__ import annotations

import math

__all__ = ["json_value"]


def json_value(value):
    """numpy scalars as Python numbers; None, NaN and infinities as None (JSON's null)."""
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
