"""Which judgments a number is computed from: :class:`Selection` (applied by :func:`peercore.domain.verdicts.select`)."""

from __future__ import annotations

from dataclasses import dataclass

from peercore.domain.options import KindChoice, RepeatedVotes, parse

__all__ = ["Selection"]


@dataclass(frozen=True)
class Selection:
    """Which judgments a number is computed from.

    Attributes
    ----------
    judges : judge names, or prefixes ending in ``:`` (``human:``); None = no filter.
    kinds : judge kinds (:class:`peercore.domain.options.KindChoice`: ``llm``, ``human``,
        ``gold`` = debate consensus and adjudications, ``debate``, ``adjudicator``,
        ``vote``, ``other``); None = all. With both ``judges`` and ``kinds``, a judgment
        must match both.
    contestants : only battles between these contestants; None = all.
    categories : only questions of these categories (a debate's scenario counts as its
        question's category); None = all.
    criteria : only these criteria (a verdict without one has criterion ``""``); None = all.
    turns : only these MT-Bench turns (a verdict without a turn counts as turn 1); None = all.
    final_only : keep only each judge's last-round verdict on a comparison (a debate
        agent's or discussion reviewer's final verdict, not its initial one); default True.
    repeated_votes : ``majority`` (default) reduces several votes of one judge on one
        comparison to their majority (ties when split evenly), as PRD's human majority;
        ``each`` counts every vote. Either way the result says how many it merged.
    common_contestants : keep only contestants that every chosen judge judged.
    """

    judges: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    contestants: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    criteria: tuple[str, ...] | None = None
    turns: tuple[int, ...] | None = None
    final_only: bool = True
    repeated_votes: str = RepeatedVotes.MAJORITY
    common_contestants: bool = False

    def __post_init__(self) -> None:
        for name in ("judges", "kinds", "contestants", "categories", "criteria", "turns"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, (str, int)):
                    value = (value,)
                object.__setattr__(self, name, tuple(value))
        if self.kinds is not None:
            object.__setattr__(self, "kinds", tuple(parse(KindChoice, k, "kinds").value for k in self.kinds))
        object.__setattr__(self, "repeated_votes", parse(RepeatedVotes, self.repeated_votes, "repeated_votes").value)
