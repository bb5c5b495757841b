"""One call from judgments to a ranked table: what the CLI and the dashboard show.

Picks the judges, optionally derives Peer Rank weights for them, scores the
contestants with the chosen method, adds bootstrap intervals and the Arena rank.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from peercore.ranking.bradley_terry import INTERVALS, bradley_terry_intervals, rank_spread, sandwich_left_out
from peercore.ranking.elo import WEIGHT_NORMALISATIONS, elo_intervals
from peercore.ranking.peer_rank import PeerRankResult, fixed_point_weights, prd_weights
from peercore.ranking.winrate import win_rate_intervals

__all__ = ["Leaderboard", "leaderboard", "select_judges", "RANK_METHODS", "PEER_WEIGHT_MODES"]

RANK_METHODS = ("winrate", "elo", "bt")
PEER_WEIGHT_MODES = ("none", "prd", "fixed-point")
LEADERBOARD_COLUMNS = ("model", "score", "rank", "ci_low", "ci_high", "battles")
# Bradley-Terry adds its robust interval; every method the worst rank its intervals allow.
EXTRA_COLUMNS = ("sandwich_low", "sandwich_high", "rank_worst")


@dataclass(frozen=True)
class Leaderboard:
    """A ranked table plus how it was made.

    Attributes
    ----------
    table : one row per model, best first, columns ``model, score, rank, ci_low,
        ci_high, battles`` (intervals NaN without bootstrap), then, when there are
        intervals, ``rank_worst`` (the worst rank they allow; ``rank`` is the best) and, for Bradley-Terry,
        ``sandwich_low, sandwich_high`` (the robust interval).
    method : ``winrate``, ``elo`` or ``bt``.
    weights : judge -> Peer Rank weight, or None when reviews count equally.
    peer_rank : the full Peer Rank result (weight history), or None.
    n_judgments : how many judgments (rows) were counted.
    notes : what the table leaves out and why (e.g. the sandwich interval of thousands of
        models, :func:`peercore.ranking.bradley_terry.sandwich_left_out`).
    """

    table: pd.DataFrame
    method: str
    weights: pd.Series | None
    peer_rank: PeerRankResult | None
    n_judgments: int = 0
    notes: tuple[str, ...] = ()


def select_judges(judgments: pd.DataFrame, judges: Iterable[str] | None) -> pd.DataFrame:
    """Rows whose judge is one of ``judges``; a name ending in ``:`` is a prefix (``human:``).

    Raises
    ------
    ValueError
        If a name or prefix matches no judge (the judges present are listed).
    """
    if judges is None:
        return judgments
    judges = list(judges)
    present = pd.unique(judgments["judge"].to_numpy(dtype=object))
    keep = np.zeros(len(judgments), dtype=bool)
    column = judgments["judge"]
    for name in judges:
        match = column.str.startswith(name) if name.endswith(":") else column == name
        match = match.to_numpy(dtype=bool)
        if not match.any():
            raise ValueError(f"judge {name!r} matches no judge; judges are {sorted(present)}")
        keep |= match
    return judgments[keep].reset_index(drop=True)


def leaderboard(
    judgments: pd.DataFrame,
    *,
    method: str = "bt",
    judges: Iterable[str] | None = None,
    peer_weights: str = "none",
    aliases: Mapping[str, str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    elo_shuffles: int = 100,
    temperature: float = 0.2,
    weight_normalisation: str = "sum",
    weights_from: str | None = None,
    intervals: str = "bootstrap",
    reweight: bool = False,
    prior: float | None = None,
    progress=None,
) -> Leaderboard:
    """Rank contestants from judgments.

    Parameters
    ----------
    judgments : canonical judgment table.
    method : ``"winrate"`` (PRD eq. 1), ``"elo"`` (online, mean over ``elo_shuffles``
        random orders, or one pass in the given order with ``elo_shuffles=0``) or
        ``"bt"`` (Bradley-Terry on the Elo scale, Arena).
    judges : which judges count (names, or prefixes ending in ``:``); default all.
    peer_weights : ``"none"``, ``"prd"`` (PRD's 5 min-max iterations) or
        ``"fixed-point"`` (softmax with ``temperature``); both need every selected
        judge to be a contestant (see ``aliases``).
    bootstrap : rounds of bootstrap for the intervals (0 = none).
    seed : seed for shuffles and bootstrap.
    elo_shuffles : Elo: R random battle orders (0 = the given order, one pass), for
        the scores and for Elo-based Peer Rank weights.
    temperature : softmax temperature of ``peer_weights="fixed-point"``.
    weight_normalisation : Elo with peer weights: how the reviewer weights scale each
        update (PRD Appendix E), ``"sum"`` (default; weights summing to 1, what PRD's
        Table 2 weighted Elo used) or ``"mean"`` (Algorithm 1's W / mean(W)); see
        :func:`peercore.ranking.elo.elo_ratings`. Win rate and Bradley-Terry always
        weight rows by W / mean(W).
    weights_from : the score Peer Rank derives reviewer weights from (``"winrate"``,
        ``"elo"``, ``"bt"``); default the ranking ``method``. PRD's Table 2 ranks by
        weighted Elo with weights derived from win rates (``method="elo",
        weights_from="winrate"``).
    intervals, reweight, prior : Bradley-Terry only: which interval sets the ranks
        (``"bootstrap"`` or ``"sandwich"``), LMArena's :math:`1/\\max(n_{pair}, 50)`
        reweighting, and a weak prior's standard deviation in Elo points (see
        :func:`peercore.ranking.bradley_terry.bradley_terry_intervals`).
    progress : Bradley-Terry only: called with the share of bootstrap rounds done.

    Returns
    -------
    Leaderboard
    """
    if method not in RANK_METHODS:
        raise ValueError(f"method must be one of {RANK_METHODS}, got {method!r}")
    if peer_weights not in PEER_WEIGHT_MODES:
        raise ValueError(f"peer_weights must be one of {PEER_WEIGHT_MODES}, got {peer_weights!r}")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be >= 0, got {bootstrap!r}")
    if intervals not in INTERVALS:
        raise ValueError(f"intervals must be one of {INTERVALS}, got {intervals!r}")
    if method != "bt" and (intervals != "bootstrap" or reweight or prior is not None or progress is not None):
        raise ValueError(f"sandwich intervals, reweighting and a prior are Bradley-Terry options (method 'bt'); "
                         f"got method {method!r}")
    if weight_normalisation not in WEIGHT_NORMALISATIONS:
        raise ValueError(f"weight_normalisation must be one of {WEIGHT_NORMALISATIONS}, got {weight_normalisation!r}")
    chosen = select_judges(judgments, judges)
    if len(chosen) == 0:
        raise ValueError("no judgments to rank")
    source = method if weights_from is None else weights_from
    if source not in RANK_METHODS:
        raise ValueError(f"weights_from must be one of {RANK_METHODS}, got {weights_from!r}")
    peer = None
    if peer_weights == "prd":
        peer = prd_weights(chosen, aliases=aliases, method=source, elo_shuffles=elo_shuffles, seed=seed)
    elif peer_weights == "fixed-point":
        peer = fixed_point_weights(chosen, aliases=aliases, method=source, temperature=temperature,
                                   elo_shuffles=elo_shuffles, seed=seed)
    weights = None if peer is None else peer.weights.to_dict()
    if method == "winrate":
        scored = win_rate_intervals(chosen, rounds=bootstrap, seed=seed, weights=weights).rename(columns={"win_rate": "score"})
    elif method == "elo":
        scored = elo_intervals(chosen, rounds=bootstrap, seed=seed, shuffles=elo_shuffles, weights=weights,
                               weight_normalisation=weight_normalisation).rename(columns={"elo": "score"})
    else:
        scored = bradley_terry_intervals(chosen, rounds=bootstrap, seed=seed, weights=weights, intervals=intervals,
                                         reweight=reweight, prior=prior, progress=progress
                                         ).rename(columns={"rating": "score"})
    table = _ranked(scored)
    notes = (sandwich_left_out(len(table), intervals),) if method == "bt" else ()
    return Leaderboard(table=table, method=method, weights=None if peer is None else peer.weights, peer_rank=peer,
                       n_judgments=len(chosen), notes=tuple(note for note in notes if note))


def _ranked(scored: pd.DataFrame) -> pd.DataFrame:
    low = scored["ci_low"].where(scored["ci_low"].notna(), scored["score"])
    high = scored["ci_high"].where(scored["ci_high"].notna(), scored["score"])
    spread = rank_spread(low, high)
    out = scored.assign(rank=spread["rank"].to_numpy(), rank_worst=spread["rank_worst"].to_numpy())
    out = out.reset_index().rename(columns={"index": "model"})
    out = out.sort_values(["rank", "score", "model"], ascending=[True, False, True], kind="stable")
    out["battles"] = out["battles"].astype(int)
    if scored["ci_low"].isna().all():  # no intervals (no bootstrap): no rank spread to speak of
        out = out.drop(columns=["rank_worst"])
    columns = list(LEADERBOARD_COLUMNS) + [c for c in EXTRA_COLUMNS if c in out.columns]
    return out[columns].reset_index(drop=True)
