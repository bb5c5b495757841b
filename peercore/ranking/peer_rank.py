"""Peer Rank reviewer weights (PRD, Li, Patel & Du 2023, section 3.1 and Algorithm 1).

Every contestant is also a reviewer. A reviewer's weight is derived from how well it
does *as a contestant*; reviews are then re-weighted and the scores recomputed:

.. math:: w^{(k+1)} = \\mathrm{normalise}\\big(\\mathrm{score}(\\,\\cdot\\,; w^{(k)})\\big)

PRD runs this for a fixed 5 iterations with min-max scaling then sum-to-one, which
sets the weakest reviewer's weight to exactly 0. :func:`fixed_point_weights` iterates
to a true fixed point instead, with a normalisation that keeps every reviewer.

Within an iteration every review counts :math:`w_r / \\bar w` (Algorithm 1; the PRD
notebook's ``get_norm(weights, div_factor=mean)`` in ``compute_winrates`` and
``compute_elo``, cells 17 and 26). :func:`notebook_weighted_elo` is the notebook's
"All (weighted)" Elo (cells 40-41), which recomputes the weights from Elo inside every
shuffle of the battles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from peercore.errors import ConvergenceError
from peercore.ranking._battles import Battles, as_battles
from peercore.ranking.bradley_terry import DEFAULT_L2, PairTable, _fit, _orient
from peercore.ranking.elo import _batch_size, _run_replicas, _run_shuffled

__all__ = ["PeerRankResult", "NotebookElo", "prd_weights", "fixed_point_weights", "notebook_weighted_elo",
           "resolve_aliases", "METHODS", "NORMALISATIONS", "PER_SHUFFLE"]

METHODS = ("winrate", "elo", "bt")
NORMALISATIONS = ("minmax", "softmax", "proportional")
# Where weighted Elo's reviewer weights come from when the PRD notebook's procedure is asked
# for: Elo recomputed inside every shuffle (``--weights-from elo-per-shuffle``).
PER_SHUFFLE = "elo-per-shuffle"


@dataclass(frozen=True)
class PeerRankResult:
    """Outcome of a Peer Rank weight iteration.

    Attributes
    ----------
    weights : judge -> weight, summing to 1.
    history : weights after each iteration (row 0 = the uniform start), judges as columns.
    scores : contestant scores under the final weights (win rate, Elo or BT rating).
    iterations : iterations run.
    converged : whether the last change was below ``tol``.
    change : max absolute weight change in the last iteration.
    method, normalisation : what was computed.
    """

    weights: pd.Series
    history: pd.DataFrame
    scores: pd.Series
    iterations: int
    converged: bool
    change: float
    method: str
    normalisation: str


def resolve_aliases(judges, models, aliases: Mapping[str, str] | None = None) -> dict[str, str]:
    """Map each judge to the contestant it is.

    A judge maps to ``aliases[judge]`` when given, else to a contestant with the same
    name, else to the contestant named after the provider prefix (``openai:gpt-4o`` ->
    ``gpt-4o``).

    Raises
    ------
    ValueError
        Naming the judges that are not contestants (Peer Rank needs every reviewer to
        be a contestant), or an alias that names no contestant.
    """
    aliases = dict(aliases or {})
    models = set(models)
    resolved, unknown = {}, []
    for judge in judges:
        target = aliases.get(judge)
        if target is None:
            if judge in models:
                target = judge
            elif ":" in judge and judge.split(":", 1)[1] in models:
                target = judge.split(":", 1)[1]
        if target is None:
            unknown.append(judge)
        elif target not in models:
            raise ValueError(f"alias {judge!r} -> {target!r} names no contestant; contestants are {sorted(models)}")
        else:
            resolved[judge] = target
    if unknown:
        raise ValueError(
            f"judge(s) {sorted(unknown)} are not contestants, so Peer Rank cannot weight them; "
            "pass aliases={judge: model} or leave them out"
        )
    return resolved


def prd_weights(
    judgments: pd.DataFrame,
    *,
    aliases: Mapping[str, str] | None = None,
    method: str = "winrate",
    iterations: int = 5,
    elo_shuffles: int = 100,
    seed: int = 0,
) -> PeerRankResult:
    """Reviewer weights exactly as the PRD paper computes them.

    Starting from equal weights, repeat ``iterations`` times (PRD: 5):

    .. math:: s_r = \\mathrm{score}_{\\text{model}(r)}(w), \\quad
              w_r = \\frac{\\tilde s_r}{\\sum_q \\tilde s_q}, \\quad
              \\tilde s_r = \\frac{s_r - \\min s}{\\max s - \\min s}

    where the score is the win rate (PRD), online Elo or Bradley-Terry of the reviewer
    as a contestant, computed with every review weighted by :math:`w_r / \\bar w`. The
    weakest reviewer gets weight 0. On the PRD Vicuna80 data this gives GPT-4 0.488,
    Claude 0.377, Vicuna 0.082, GPT-3.5 0.053, Bard 0.000 (PRD Table 2 notebook).

    Parameters
    ----------
    judgments : canonical judgment table; every judge must be a contestant.
    aliases : judge -> contestant, see :func:`resolve_aliases`.
    method : ``"winrate"``, ``"elo"`` (mean over ``elo_shuffles`` orders from ``seed``)
        or ``"bt"``. Within the iteration every review is weighted by
        :math:`w_r / \\bar w` (Algorithm 1), whatever the method.
    iterations : number of re-weighting rounds.
    elo_shuffles : Elo only: R >= 1 random battle orders drawn from ``seed``, or 0 for
        one pass over the battles in the given (stored) order.
    seed : seed of ``numpy.random.default_rng`` for the Elo shuffles.

    Returns
    -------
    PeerRankResult with ``normalisation="minmax"``.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations!r}")
    problem = _Problem.build(judgments, aliases=aliases, method=method, elo_shuffles=elo_shuffles, seed=seed)
    return problem.iterate(normalisation="minmax", temperature=None, tol=0.0, max_iter=iterations,
                           damping=0.0, raise_on_cap=False)


def fixed_point_weights(
    judgments: pd.DataFrame,
    *,
    aliases: Mapping[str, str] | None = None,
    method: str = "winrate",
    normalisation: str = "softmax",
    temperature: float = 0.2,
    tol: float = 1e-9,
    max_iter: int = 500,
    damping: float = 0.0,
    elo_shuffles: int = 100,
    seed: int = 0,
) -> PeerRankResult:
    """Peer Rank weights at a true fixed point :math:`w = \\mathrm{normalise}(\\mathrm{score}(w))`.

    Normalisations (:math:`s_r` = strength of reviewer r as a contestant on a 0-1
    scale: its win rate, or for Elo/BT its expected score against the other
    contestants, :math:`\\frac{1}{n-1}\\sum_{m \\ne r} (1 + 10^{(R_m - R_r)/400})^{-1}`):

    - ``"softmax"``: :math:`w_r \\propto \\exp(s_r / T)`; every reviewer keeps a positive
      weight, and T (``temperature``) sets how much better reviewers count more.
    - ``"proportional"``: :math:`w_r \\propto s_r`.
    - ``"minmax"``: PRD's rule (zeroes the weakest; may oscillate, then raises).

    Parameters
    ----------
    tol : stop when no weight moves by more than ``tol``.
    max_iter : iteration cap.
    damping : in [0, 1): :math:`w \\leftarrow (1-d)\\,F(w) + d\\,w`, to calm oscillation.
    Other parameters as in :func:`prd_weights`.

    Raises
    ------
    ConvergenceError
        With the iteration count, if ``max_iter`` is reached first.
    """
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping!r}")
    if tol <= 0:
        raise ValueError(f"tol must be positive, got {tol!r}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
    problem = _Problem.build(judgments, aliases=aliases, method=method, elo_shuffles=elo_shuffles, seed=seed)
    return problem.iterate(normalisation=normalisation, temperature=temperature, tol=tol,
                           max_iter=max_iter, damping=damping, raise_on_cap=True)


@dataclass(frozen=True)
class NotebookElo:
    """What :func:`notebook_weighted_elo` returns.

    Attributes
    ----------
    table : indexed by model (``model``): ``elo`` (the mean over shuffles of the last
        round's ratings), ``ci_low``, ``ci_high`` (bootstrap percentiles, NaN without
        rounds) and ``battles``.
    weights : judge -> the notebook's returned weights (min-max of the last round's
        Elo, summing to 1), averaged over shuffles.
    history : the mean weights after each round, row 0 the uniform start (judges as
        columns), as :attr:`PeerRankResult.history`.
    iterations, shuffles : rounds of Elo per shuffle; shuffles averaged.
    """

    table: pd.DataFrame
    weights: pd.Series
    history: pd.DataFrame
    iterations: int
    shuffles: int


def notebook_weighted_elo(
    judgments: pd.DataFrame,
    *,
    aliases: Mapping[str, str] | None = None,
    iterations: int = 5,
    shuffles: int = 100,
    seed: int = 0,
    rounds: int = 0,
    level: float = 0.95,
) -> NotebookElo:
    """PRD's "All (weighted)" Elo exactly as the notebook computes it (bcdnlp/PRD
    ``peer_rank/peer_ranking.ipynb``, cells 26, 40 and 41).

    For each shuffle (a random order of the reviews, ``normal_elo``, cell 40), with
    weights :math:`w^{(0)} = 1`:

    .. math:: R^{(t)} = \\mathrm{Elo}\\big(\\text{order};\\; K \\cdot w^{(t-1)}_r / \\bar w^{(t-1)}\\big),
              \\qquad w^{(t)}_r = \\frac{\\tilde R^{(t)}_r}{\\sum_q \\tilde R^{(t)}_q},
              \\quad \\tilde R_r = \\frac{R_r - \\min R}{\\max R - \\min R}

    for t = 1 ... ``iterations`` (5), where :math:`R_r` is the rating of the contestant
    reviewer r is (K = 32, scale 400, base 10, start 1000; ``compute_elo``, cell 26,
    rescales the weights to :math:`w / \\bar w`, Algorithm 1). The shuffle's score is
    :math:`R^{(5)}`; the result is its mean over ``shuffles`` shuffles (cell 41). The
    weights are thus recomputed from Elo **inside every shuffle**, in that shuffle's
    order; fixed weights averaged over shuffles
    (``prd_weights(method="elo")``) zero the weakest reviewer in every shuffle instead.
    On PRD's Vicuna80 reviews, 1000 shuffles give about 1213 / 1123 / 917 / 895 / 853
    for GPT-4 / Claude / Vicuna / GPT-3.5 / Bard (PRD Table 2: 1213 / 1125 / 912 / 894
    / 856).

    Parameters
    ----------
    judgments : canonical judgment table; every judge must be a contestant.
    aliases : judge -> contestant, see :func:`resolve_aliases`.
    iterations : rounds of Elo per shuffle (the notebook: 5).
    shuffles : R >= 1 random orders drawn from ``seed`` (``numpy.random.default_rng``),
        or 0 for one pass in the given order.
    seed : seed of the shuffles (and, spawned from it, of the bootstrap).
    rounds : bootstrap rounds for the intervals (0 = none). Each round draws the
        reviews with replacement, in random order, and runs the whole procedure once
        (as :func:`peercore.ranking.elo.elo_intervals` runs plain Elo once).
    level : the intervals' confidence level.

    Returns
    -------
    NotebookElo

    Raises
    ------
    ValueError
        On empty judgments, a judge that is no contestant, or an option out of range
        (the value is quoted).
    """
    for name, value, low in (("iterations", iterations, 1), ("shuffles", shuffles, 0), ("rounds", rounds, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    problem = _Problem.build(judgments, aliases=aliases, method="winrate", elo_shuffles=0, seed=seed)
    battles, n = problem.battles, len(problem.battles)
    if shuffles == 0:
        ratings, weights, history = _notebook_rounds(problem, np.arange(n)[None, :], iterations)
    else:
        rng = np.random.default_rng(seed)
        parts, done = [], 0
        while done < shuffles:
            batch = min(_batch_size(n), shuffles - done)
            parts.append(_notebook_rounds(problem, np.argsort(rng.random((batch, n)), axis=1), iterations))
            done += batch
        ratings, weights, history = (np.concatenate([part[k] for part in parts]) for k in range(3))
    low = high = np.full(battles.n_models, np.nan)
    if rounds:
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        samples, done = [], 0
        while done < rounds:
            batch = min(_batch_size(n), rounds - done)
            samples.append(_notebook_rounds(problem, rng.integers(0, n, size=(batch, n)), iterations)[0])
            done += batch
        alpha = (1.0 - level) / 2.0
        low, high = np.quantile(np.concatenate(samples), [alpha, 1.0 - alpha], axis=0)
    played = np.bincount(battles.a, minlength=battles.n_models) + np.bincount(battles.b, minlength=battles.n_models)
    models = pd.Index(battles.models, name="model")
    judges = pd.Index(battles.judges, name="judge")
    table = pd.DataFrame({"elo": ratings.mean(axis=0), "ci_low": low, "ci_high": high, "battles": played}, index=models)
    return NotebookElo(table=table, weights=pd.Series(weights.mean(axis=0), index=judges, name="weight"),
                       history=pd.DataFrame(history.mean(axis=0), columns=judges).rename_axis("iteration"),
                       iterations=int(iterations), shuffles=int(shuffles))


def _notebook_rounds(problem: "_Problem", sequences: np.ndarray, iterations: int):
    """The notebook's ``normal_elo`` on R battle sequences at once.

    Returns (R, models) ratings of the last round, (R, judges) the weights computed from
    them, and (R, iterations + 1, judges) the weights after each round (uniform first).
    """
    battles = problem.battles
    replicas, judges = len(sequences), len(battles.judges)
    weights = np.ones((replicas, judges))
    history = [np.full((replicas, judges), 1.0 / judges)]
    checkpoint = np.array([sequences.shape[1]])
    for _ in range(iterations):
        multiplier = (weights / weights.mean(axis=1, keepdims=True))[:, battles.judge]
        ratings = _run_replicas(battles, multiplier, sequences, checkpoint, k=32.0, scale=400.0, base=10.0,
                                initial=1000.0)
        weights = np.apply_along_axis(_minmax_sum_to_one, 1, ratings[:, problem.reviewer_model])
        history.append(weights)
    return ratings, weights, np.stack(history, axis=1)


# ---------------------------------------------------------------------------- engine


@dataclass
class _Problem:
    """Judgments encoded once; each iteration only re-weights rows."""

    battles: Battles
    reviewer_model: np.ndarray  # judge index -> contestant index
    method: str
    orders: np.ndarray | None  # Elo shuffles
    pair_of_battle: np.ndarray | None  # BT aggregation
    pair_i: np.ndarray | None
    pair_j: np.ndarray | None
    score_lo: np.ndarray | None

    @classmethod
    def build(cls, judgments, *, aliases, method, elo_shuffles, seed) -> "_Problem":
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        battles = as_battles(judgments)
        if len(battles) == 0:
            raise ValueError("judgments is empty; Peer Rank needs reviews")
        mapping = resolve_aliases(battles.judges, battles.models, aliases)
        model_index = {m: k for k, m in enumerate(battles.models)}
        reviewer_model = np.array([model_index[mapping[j]] for j in battles.judges], dtype=np.intp)
        orders = pair_of_battle = pair_i = pair_j = score_lo = None
        if isinstance(elo_shuffles, bool) or not isinstance(elo_shuffles, (int, np.integer)) or elo_shuffles < 0:
            raise ValueError(f"elo_shuffles must be an integer >= 0 (0 = the given order, one pass), got {elo_shuffles!r}")
        if method == "elo":
            if elo_shuffles == 0:
                orders = np.arange(len(battles))[None, :]  # one pass in the given order
            else:
                rng = np.random.default_rng(seed)
                orders = np.argsort(rng.random((elo_shuffles, len(battles))), axis=1)
        if method == "bt":
            n = battles.n_models
            lo, hi, score_lo = _orient(battles.a, battles.b, battles.score_a)
            keys, pair_of_battle = np.unique(lo * n + hi, return_inverse=True)
            pair_i, pair_j = keys // n, keys % n
        return cls(battles, reviewer_model, method, orders, pair_of_battle, pair_i, pair_j, score_lo)

    def scores(self, judge_weights: np.ndarray) -> np.ndarray:
        """Contestant scores with each row weighted by w_judge / mean(w)."""
        mean = judge_weights.mean()
        row = judge_weights[self.battles.judge] / mean
        b, n = self.battles, self.battles.n_models
        if self.method == "winrate":
            won = np.bincount(b.a, row * b.score_a, minlength=n) + np.bincount(b.b, row * (1 - b.score_a), minlength=n)
            played = np.bincount(b.a, minlength=n) + np.bincount(b.b, minlength=n)
            return won / played
        if self.method == "elo":
            checkpoint = np.array([len(b)])
            total = _run_shuffled(b, row, self.orders, checkpoint, k=32.0, scale=400.0, base=10.0, initial=1000.0)
            return total[0] / len(self.orders)
        wins = np.bincount(self.pair_of_battle, row * self.score_lo, minlength=len(self.pair_i))
        games = np.bincount(self.pair_of_battle, row, minlength=len(self.pair_i))
        theta = _fit(PairTable(b.models, self.pair_i, self.pair_j, wins, games), l2=DEFAULT_L2, tol=1e-10, max_iter=200)
        return 1000.0 + (theta - theta.mean()) * 400.0 / math.log(10.0)

    def strength(self, scores: np.ndarray) -> np.ndarray:
        """Scores on a 0-1 scale: win rate, or expected score against the field."""
        if self.method == "winrate":
            return scores
        n = len(scores)
        expected = 1.0 / (1.0 + 10.0 ** ((scores[None, :] - scores[:, None]) / 400.0))
        np.fill_diagonal(expected, 0.0)
        return expected.sum(axis=1) / max(n - 1, 1)

    def iterate(self, *, normalisation, temperature, tol, max_iter, damping, raise_on_cap) -> PeerRankResult:
        judges = self.battles.judges
        weights = np.full(len(judges), 1.0 / len(judges))
        history = [weights]
        change = np.inf
        for iteration in range(1, max_iter + 1):
            contestant_scores = self.scores(weights)
            own = contestant_scores[self.reviewer_model]
            if normalisation == "minmax":
                new = _minmax_sum_to_one(own)
            else:
                own = self.strength(contestant_scores)[self.reviewer_model]
                new = _softmax(own, temperature) if normalisation == "softmax" else _proportional(own)
            new = (1.0 - damping) * new + damping * weights
            change = float(np.max(np.abs(new - weights)))
            weights = new
            history.append(weights)
            if change < tol:
                break
        converged = change < tol
        if raise_on_cap and not converged:
            raise ConvergenceError(f"Peer Rank ({self.method}, {normalisation})", iterations=max_iter, change=change, tol=tol)
        final_scores = self.scores(weights)
        index = pd.Index(judges, name="judge")
        return PeerRankResult(
            weights=pd.Series(weights, index=index, name="weight"),
            history=pd.DataFrame(history, columns=index).rename_axis("iteration"),
            scores=pd.Series(final_scores, index=pd.Index(self.battles.models, name="model"), name=self.method),
            iterations=len(history) - 1,
            converged=converged,
            change=change,
            method=self.method,
            normalisation=normalisation,
        )


def _minmax_sum_to_one(values: np.ndarray) -> np.ndarray:
    spread = values.max() - values.min()
    if spread == 0:
        return np.full(len(values), 1.0 / len(values))
    scaled = (values - values.min()) / spread
    return scaled / scaled.sum()


def _softmax(values: np.ndarray, temperature: float) -> np.ndarray:
    z = (values - values.max()) / temperature
    e = np.exp(z)
    return e / e.sum()


def _proportional(values: np.ndarray) -> np.ndarray:
    total = values.sum()
    if total <= 0:
        return np.full(len(values), 1.0 / len(values))
    return values / total
