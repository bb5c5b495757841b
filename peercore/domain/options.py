"""Every choice a user makes, as an enum: one list for the CLI's choices, the application
layer's arguments and the dashboard's labels (which live in :mod:`peercore.ui` only).

The members are :class:`enum.StrEnum`: a member equals its value (``Method.BT == "bt"``),
so JSON, cache keys and older callers passing strings see plain text. :func:`parse`
turns user input into a member, naming the parameter and the value it refuses.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "Method", "PeerWeights", "WeightsFrom", "WeightNormalisation", "Intervals", "Kind", "KindChoice", "Ties",
    "ReferenceMode", "Unparsed", "RepeatedVotes", "Grouping", "Control", "OrderPolicy", "parse", "values",
]


class Method(StrEnum):
    """How a leaderboard scores contestants."""

    WINRATE = "winrate"            # PRD eq. 1
    ELO = "elo"                    # PRD (online Elo, mean over shuffles)
    BT = "bt"                      # Bradley-Terry on the Elo scale (Chatbot Arena)
    POE_GAUSSIAN = "poe-gaussian"  # Liusie et al., Product of Experts (Gaussian)
    POE_BT = "poe-bt"              # Liusie et al., Product of Experts (soft Bradley-Terry)


class PeerWeights(StrEnum):
    """Whether and how reviewers are weighted by their own score as contestants (PRD Peer Rank)."""

    NONE = "none"
    PRD = "prd"                  # the paper's 5 min-max iterations
    FIXED_POINT = "fixed-point"  # iterated to convergence, no reviewer zeroed


class WeightsFrom(StrEnum):
    """The score Peer Rank's reviewer weights come from."""

    WINRATE = "winrate"
    ELO = "elo"
    BT = "bt"
    # PRD's notebook (cells 26, 40, 41): with method elo and peer weights prd, the weights come
    # from Elo recomputed inside every shuffle (Table 2's "All (weighted)" Elo).
    ELO_PER_SHUFFLE = "elo-per-shuffle"


class WeightNormalisation(StrEnum):
    """How Peer Rank weights scale a weighted Elo update (PRD Appendix E)."""

    SUM = "sum"
    MEAN = "mean"


class Intervals(StrEnum):
    """Which Bradley-Terry interval sets the ranks."""

    BOOTSTRAP = "bootstrap"
    SANDWICH = "sandwich"


class Kind(StrEnum):
    """What a judge is (stored with the judge; a name's prefix when it was never registered)."""

    LLM = "llm"
    HUMAN = "human"
    DEBATE = "debate"            # a debate panel's consensus (ScaleEval)
    ADJUDICATOR = "adjudicator"  # a human decision on an unresolved debate
    VOTE = "vote"                # a verdict derived from other judges (a weighted vote)
    OTHER = "other"


class KindChoice(StrEnum):
    """The kinds a selection may name: every :class:`Kind`, and ``gold`` for debate + adjudicator."""

    LLM = "llm"
    HUMAN = "human"
    GOLD = "gold"
    DEBATE = "debate"
    ADJUDICATOR = "adjudicator"
    VOTE = "vote"
    OTHER = "other"

    def kinds(self) -> tuple[Kind, ...]:
        """The stored kinds this choice stands for."""
        if self is KindChoice.GOLD:
            return (Kind.DEBATE, Kind.ADJUDICATOR)
        return (Kind(self.value),)


class Ties(StrEnum):
    INCLUDE = "include"  # MT-Bench "w/ tie", PRD
    EXCLUDE = "exclude"  # MT-Bench "w/o tie"


class ReferenceMode(StrEnum):
    MAJORITY = "majority"  # the reference's majority per comparison (PRD Table 3)
    VOTES = "votes"        # every reference vote (MT-Bench, FastChat compute_agreement.py)


class Unparsed(StrEnum):
    MISS = "miss"        # an unparsed reply is a disagreement (ScaleEval eq. 2)
    EXCLUDE = "exclude"  # left out of n


class RepeatedVotes(StrEnum):
    MAJORITY = "majority"  # several votes of one judge on one comparison count as their majority
    EACH = "each"          # every vote counts


class Grouping(StrEnum):
    CATEGORY = "category"
    CRITERION = "criterion"
    TURN = "turn"


class Control(StrEnum):
    """Style features a Bradley-Terry fit can control for (Chatbot Arena's style control)."""

    LENGTH = "length"
    MARKDOWN = "markdown"


class OrderPolicy(StrEnum):
    """What an import records about the display order of a file's verdicts.

    ``auto``: what the format knows; for a canonical file, a pair of models a judge saw
    in both orientations has a known order, a pair seen in one orientation only an
    unknown one. ``known``: ``model_a`` is the answer the judge saw first, everywhere.
    ``unknown``: the file does not say which answer was shown first.
    """

    AUTO = "auto"
    KNOWN = "known"
    UNKNOWN = "unknown"


def values(enum: type[StrEnum]) -> tuple[str, ...]:
    """The values of an enum, in definition order (argparse ``choices``)."""
    return tuple(member.value for member in enum)


def parse(enum: type[StrEnum], value, name: str):
    """``value`` as a member of ``enum``; None stays None.

    Raises
    ------
    ValueError
        Naming the parameter, the value received and the values allowed.
    """
    if value is None or isinstance(value, enum):
        return value
    try:
        return enum(value)
    except ValueError:
        raise ValueError(f"{name} must be one of {values(enum)}, got {value!r}") from None
