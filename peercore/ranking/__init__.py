"""Ranking estimators, one module per estimator (flat re-exports here).

- :mod:`~peercore.ranking.winrate`: win rates and pairwise matrices (PRD eq. 1)
- :mod:`~peercore.ranking.elo`: online Elo and Elo curves (PRD; Chatbot Arena)
- :mod:`~peercore.ranking.bradley_terry`: BT maximum likelihood, bootstrap, Arena ranks
- :mod:`~peercore.ranking.peer_rank`: Peer Rank reviewer weights (PRD)
- :mod:`~peercore.ranking.poe`: Product-of-Experts scores (Liusie et al.)
- :mod:`~peercore.ranking.selection`: which comparisons to make (random ... greedy)
- :mod:`~peercore.ranking.core`: the one solver every Bradley-Terry-type estimator uses
- :mod:`~peercore.ranking.contextual`: style-controlled (contextual) Bradley-Terry (Chatbot Arena)
- :mod:`~peercore.ranking.style`: style features of two answers (length, Markdown)
- :mod:`~peercore.ranking.alpacaeval`: win rates against a baseline and the length-controlled win rate

The function ``bradley_terry`` shares its module's name, so the package attribute is
the function; reach module internals with
``from peercore.ranking.bradley_terry import ...``.
"""

from peercore.ranking.alpacaeval import BaselineTable, baseline_win_rates
from peercore.ranking.bradley_terry import arena_ranks, bradley_terry, bradley_terry_intervals, pair_table, rank_spread
from peercore.ranking.contextual import ContextualFit, contextual_bradley_terry
from peercore.ranking.style import answer_style, style_features
from peercore.ranking.elo import WEIGHT_NORMALISATIONS, elo_intervals, elo_ratings, elo_trajectory, elo_update
from peercore.ranking.peer_rank import PeerRankResult, fixed_point_weights, prd_weights, resolve_aliases
from peercore.ranking.poe import (
    Comparisons,
    GaussianPoE,
    average_probability,
    bradley_terry_hard,
    comparisons_from_judgments,
    poe_bradley_terry,
    poe_gaussian,
    poe_scores,
    win_ratio,
)
from peercore.ranking.selection import (
    GreedySelector,
    select_greedy,
    select_no_repeat,
    select_random,
    select_symmetric,
)
from peercore.ranking.winrate import battle_counts, pairwise_win_fraction, win_rate_intervals, win_rates

__all__ = [
    "BaselineTable", "ContextualFit", "answer_style", "baseline_win_rates", "contextual_bradley_terry", "rank_spread",
    "style_features",
    "Comparisons", "GaussianPoE", "GreedySelector", "PeerRankResult", "WEIGHT_NORMALISATIONS",
    "arena_ranks", "average_probability", "battle_counts", "bradley_terry", "bradley_terry_hard",
    "bradley_terry_intervals", "comparisons_from_judgments", "elo_intervals", "elo_ratings",
    "elo_trajectory", "elo_update", "fixed_point_weights", "pair_table",
    "pairwise_win_fraction", "poe_bradley_terry", "poe_gaussian", "poe_scores", "prd_weights",
    "resolve_aliases", "select_greedy", "select_no_repeat", "select_random",
    "select_symmetric", "win_rate_intervals", "win_rates", "win_ratio",
]
