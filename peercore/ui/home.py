"""Home page helpers: which studies the gallery shows, and how a card words its counts."""

from __future__ import annotations

import pandas as pd

from peercore.ui import data

DESCRIPTION_CHARS = 140
BUNDLED = "bundled sample"


def ready_studies(studies: pd.DataFrame) -> list[dict]:
    """The studies worth opening (some judgment stored): bundled first (the sample leading), then by name.

    Each card: ``name``, ``description`` (one line, at most :data:`DESCRIPTION_CHARS`),
    ``counts`` (:meth:`peercore.store.Store.summary`), ``bundled`` (seeded from
    ``sample_data/``) and ``method``: the Leaderboard method its provenance names
    (``leaderboard_method``), or None.
    """
    db = data.db_path()
    cards = []
    for name, rev, description, source in zip(studies["name"], studies["revision"], studies["description"],
                                              studies["source"]):
        counts = data.summary(db, name, int(rev))
        if counts["judgments"] == 0:
            continue
        source = source if isinstance(source, dict) else {}
        cards.append({"name": name, "description": one_line(description), "counts": counts,
                      "bundled": source.get("kind") == BUNDLED,
                      "method": source.get("leaderboard_method")})
    cards.sort(key=lambda c: (not c["bundled"], c["name"] != data.SAMPLE_STUDY, c["name"]))
    return cards


def one_line(description: object) -> str:
    """The description on one line, cut with an ellipsis after :data:`DESCRIPTION_CHARS` characters."""
    text = " ".join(str(description or "").split())
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1].rstrip() + "…"


def counts_line(counts: dict) -> str:
    """``80 questions · 5 models · 9,760 judgments · 1,760 human votes`` (zero counts left out)."""
    parts = [plural(counts["questions"], "question"), plural(counts["contestants"], "model"),
             plural(counts["judgments"], "judgment"), plural(counts["human_votes"], "human vote"),
             plural(counts["open_adjudications"], "debate") + " to adjudicate"]
    if counts["invalid_judgments"]:
        parts[2] += f" (+{counts['invalid_judgments']:,} unparsed)"
    return " · ".join(part for part in parts if part and not part.startswith(" "))


def plural(count: int, noun: str) -> str:
    """``"3 models"``, ``"1 model"``, ``""`` for none."""
    return "" if not count else f"{count:,} {noun}" + ("" if count == 1 else "s")
