"""Which comparisons to make: N candidates, a budget of K comparisons.

Liusie, Manakul, Gales (2024), "LLM Comparative Assessment" (EACL): random, no-repeat
and symmetric selection. Liusie, Raina, Fathullah, Gales (2024), "Efficient LLM
Comparative Assessment: a Product of Experts Framework" (EMNLP): greedy selection that
maximises the information the Gaussian product of experts gains from each comparison.

Every function returns a (K, 2) int array of ordered pairs ``(i, j)``: candidate ``i``
is shown first. Feed them to a judge, then to :mod:`peercore.ranking.poe` as
``Comparisons(candidates, pairs[:, 0], pairs[:, 1], p)``. Randomness always comes from
an explicit ``rng: numpy.random.Generator``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "GreedySelector",
    "MAX_COVER_DRAWS",
    "ORDERS",
    "select_random",
    "select_no_repeat",
    "select_symmetric",
    "select_greedy",
]

DEFAULT_RIDGE = 1e-6
MAX_COVER_DRAWS = 100_000  # redraws of a random selection before cover=True gives up
ORDERS: tuple[str, ...] = ("random", "sorted", "both")
# Pairs whose criterion is within this relative distance of the best count as tied.
_TIE_RTOL = 1e-9


def select_random(n: int, k: int, *, rng: np.random.Generator, cover: bool = False) -> np.ndarray:
    """K distinct ordered pairs drawn uniformly, without replacement, from the N(N-1) pairs ``i != j``.

    Random selection of Liusie, Manakul & Gales (2024), "LLM Comparative Assessment",
    section 3.4: K of the N(N-1) possible comparisons :math:`(x_i, x_j)`, ``i`` shown
    first, sampled at random. Every ordered pair is drawn at most once, so exactly K
    comparisons come back; (i, j) and (j, i) are different comparisons, so both orders
    of one unordered pair may be drawn (use :func:`select_no_repeat` to forbid that).
    Every K-subset of the N(N-1) ordered pairs is equally likely; the rows come in
    random order.

    **Every candidate compared** (``cover=True``). A plain random subset may leave a
    candidate out, which then has no score. The Product-of-Experts paper's protocol
    (Liusie, Raina, Fathullah, Gales 2024, EMNLP; the authors' ``generate_random_mask``,
    ``PoE_analysis/utils.py``) redraws until every candidate is shown first at least
    once and second at least once; ``cover=True`` does the same, so the K-subset is
    uniform among those that cover every candidate in both positions. That needs
    ``k >= n``; when a covering draw is rare (K close to N) the draws give up after
    :data:`MAX_COVER_DRAWS` and say so.

    Parameters
    ----------
    n : number of candidates N.
    k : number of comparisons K, at most N(N-1).
    rng : source of randomness.
    cover : redraw until every candidate is shown first and second at least once.

    Returns
    -------
    (K, 2) int array of distinct ordered pairs.

    Raises
    ------
    ValueError
        If ``n`` or ``k`` is negative or not an integer, ``k > 0`` with ``n < 2``, or
        ``k`` exceeds the N(N-1) ordered pairs (the value and the maximum are quoted);
        with ``cover``, if ``k < n`` or no covering draw came in
        :data:`MAX_COVER_DRAWS`.
    """
    n, k = _check_sizes(n, k)
    _check_rng(rng)
    total = n * (n - 1)
    if k > total:
        raise ValueError(f"k={k} exceeds the n(n-1)={total} distinct ordered pairs of n={n} candidates")
    if k == 0:
        return _empty()

    def draw() -> np.ndarray:
        code = rng.choice(total, size=k, replace=False)
        first, second = np.divmod(code, n - 1)
        second += second >= first  # skip i itself: code -> (i, j != i)
        return np.column_stack([first, second]).astype(np.intp)

    if not cover:
        return draw()
    return _covering(draw, n, k, minimum=n, both_positions=True, what="random selection")


def select_no_repeat(n: int, k: int, *, rng: np.random.Generator) -> np.ndarray:
    """K distinct unordered pairs, each made in one order only, chosen uniformly without replacement.

    No-repeat selection of Liusie, Manakul & Gales (2024), "LLM Comparative
    Assessment", section 3.4: "if :math:`(x_i, x_j)` is selected then
    :math:`(x_j, x_i)` will not be selected". K of the N(N-1)/2 unordered pairs
    :math:`\\{i, j\\}` are drawn uniformly without replacement; the order in which each
    is shown is then decided by a fair coin from ``rng`` (random orientation, so on
    average half the pairs show the lower index first). Because each pair is seen in
    one order only, a no-repeat set cannot measure position bias (that needs
    :func:`select_symmetric`).

    Parameters
    ----------
    n : number of candidates N.
    k : number of comparisons K, at most N(N-1)/2.
    rng : source of randomness (pair choice and orientation).

    Returns
    -------
    (K, 2) int array; no unordered pair appears twice, in either order. The rows come
    in random order.

    Raises
    ------
    ValueError
        If ``k`` exceeds the N(N-1)/2 unordered pairs (the value and the maximum are
        quoted), and as :func:`select_random`.
    """
    n, k = _check_sizes(n, k)
    _check_rng(rng)
    total = n * (n - 1) // 2
    if k > total:
        raise ValueError(
            f"k={k} exceeds the n(n-1)/2={total} unordered pairs of n={n} candidates "
            "(no-repeat selection makes each pair in one order only)"
        )
    if k == 0:
        return _empty()
    upper_i, upper_j = np.triu_indices(n, 1)
    code = rng.choice(total, size=k, replace=False)
    pairs = np.column_stack([upper_i[code], upper_j[code]])
    flip = rng.random(k) < 0.5
    pairs[flip] = pairs[flip, ::-1]
    return pairs.astype(np.intp)


def select_symmetric(n: int, k: int, *, rng: np.random.Generator, cover: bool = False) -> np.ndarray:
    """K // 2 distinct unordered pairs, each made in both orders (EACL 2024, symmetric).

    An odd ``k`` is rounded down to the even ``k - 1``: the returned array has
    ``2 * (k // 2)`` rows. Rows ``2t`` and ``2t + 1`` are ``(i, j)`` and ``(j, i)`` with
    ``i < j``; the unordered pairs come in random order. A symmetric set lets position
    bias cancel and is what position-bias measurement needs. ``cover=True`` redraws
    until every candidate is in a pair (the PoE authors' ``generate_symmetric_random_mask``;
    see :func:`select_random`); it needs ``k // 2 >= ceil(n / 2)``.

    Raises
    ------
    ValueError
        If ``k`` exceeds the N(N-1) ordered pairs, and as :func:`select_random`.
    """
    n, k = _check_sizes(n, k)
    _check_rng(rng)
    total = n * (n - 1)
    if k > total:
        raise ValueError(f"k={k} exceeds the n(n-1)={total} ordered pairs of n={n} candidates")
    m = k // 2
    if m == 0:
        return _empty()
    upper_i, upper_j = np.triu_indices(n, 1)

    def draw() -> np.ndarray:
        code = rng.choice(len(upper_i), size=m, replace=False)
        lo, hi = upper_i[code], upper_j[code]
        return np.column_stack([np.column_stack([lo, hi]), np.column_stack([hi, lo])]).reshape(-1, 2).astype(np.intp)

    if not cover:
        return draw()
    return _covering(draw, n, k, minimum=2 * math.ceil(n / 2), both_positions=False, what="symmetric selection")


class GreedySelector:
    """Greedy information-maximising comparison selection for the Gaussian PoE.

    Keeps :math:`A = (\\tilde W^T \\tilde W + \\epsilon I)^{-1}`, where the rows of
    :math:`\\tilde W` are the anchoring row :math:`\\tfrac1N \\mathbf 1^T` (as in
    :func:`peercore.ranking.poe.poe_gaussian`) and one row :math:`e_i - e_j` per
    comparison made so far. :math:`\\sigma^2 A` is the posterior covariance of the
    Gaussian PoE scores under an extra, weak N(0, sigma^2 / epsilon) prior on each score.

    The next comparison is the unordered pair not yet chosen that maximises

    .. math:: A_{ii} + A_{jj} - 2 A_{ij} = w^T A w, \\qquad w = e_i - e_j,

    the posterior variance of :math:`s_i - s_j` (in units of sigma^2). Adding :math:`w`
    multiplies :math:`\\det(\\tilde W^T \\tilde W + \\epsilon I)` by :math:`1 + w^T A w`,
    so this is the greedy D-optimal / maximum-information-gain choice (Liusie et al.
    2024, comparison selection). :math:`A` is then updated by Sherman-Morrison:

    .. math:: A \\leftarrow A - \\frac{A w w^T A}{1 + w^T A w}

    **Initialisation.** :math:`A` must exist before any comparison is made, so the
    ridge :math:`\\epsilon I` (``ridge``, default 1e-6) is added; the paper's code
    instead starts from a fixed chain 0-1-2-...-(N-1). With the ridge every pair starts
    tied (criterion 2/epsilon), ties are broken uniformly at random with ``rng``, and
    the first picks connect the comparison graph in a balanced way (pairs in different
    components have variance ~ 2/epsilon, so they always win until the graph is
    connected). Neither the anchoring row nor the ridge changes the choices otherwise:
    :math:`w \\perp \\mathbf 1`, and epsilon is far below the graph's connectivity.

    The selection is non-adaptive: it never needs the judge's probabilities.
    Each step costs O(N^2); memory is O(N^2).

    Parameters
    ----------
    n : number of candidates.
    rng : source of randomness for tie-breaking and orientation.
    ridge : epsilon > 0.

    Attributes
    ----------
    A : (N, N) current :math:`(\\tilde W^T \\tilde W + \\epsilon I)^{-1}` (read-only view).
    pairs : (M, 2) the pairs added so far, in order (as given to :meth:`add`).
    """

    def __init__(self, n: int, *, rng: np.random.Generator, ridge: float = DEFAULT_RIDGE) -> None:
        n, _ = _check_sizes(n, 0)
        _check_rng(rng)
        if isinstance(ridge, bool) or not (isinstance(ridge, numbers.Real) and math.isfinite(ridge) and ridge > 0):
            raise ValueError(f"ridge must be a positive finite number, got {ridge!r}")
        self.n = n
        self.ridge = float(ridge)
        self._rng = rng
        # (11'/n^2 + eps I)^-1: eigenvalue 1/eps off the ones direction, 1/(1/n + eps) on it.
        self._a = np.eye(n) / self.ridge
        if n:
            self._a += (1.0 / (1.0 / n + self.ridge) - 1.0 / self.ridge) / n
        self._available = np.triu(np.ones((n, n), dtype=bool), 1)
        self._pairs: list[tuple[int, int]] = []

    @property
    def A(self) -> np.ndarray:
        view = self._a.view()
        view.setflags(write=False)
        return view

    @property
    def pairs(self) -> np.ndarray:
        return np.array(self._pairs, dtype=np.intp).reshape(-1, 2)

    @property
    def remaining(self) -> int:
        """Number of unordered pairs not chosen yet."""
        return int(self._available.sum())

    def criterion(self) -> np.ndarray:
        """(N, N) matrix of :math:`A_{ii} + A_{jj} - 2A_{ij}` (the variance of s_i - s_j / sigma^2)."""
        d = np.diag(self._a)
        return d[:, None] + d[None, :] - 2.0 * self._a

    def next_pair(self) -> tuple[int, int]:
        """The best unordered pair ``(i, j)``, ``i < j``, not chosen yet (ties at random).

        Raises
        ------
        ValueError
            If every unordered pair has been chosen.
        """
        if not self._available.any():
            raise ValueError(f"all n(n-1)/2={self.n * (self.n - 1) // 2} unordered pairs have been chosen")
        value = np.where(self._available, self.criterion(), -np.inf)
        best = value.max()
        tied = np.flatnonzero(value >= best - _TIE_RTOL * abs(best))
        code = tied[self._rng.integers(len(tied))] if len(tied) > 1 else tied[0]
        i, j = divmod(int(code), self.n)
        return i, j

    def add(self, i: int, j: int) -> None:
        """Record the comparison of i and j (either order) and update A (Sherman-Morrison).

        A pair may be added more than once (e.g. to seed the selector with comparisons
        already made); it is then no longer offered by :meth:`next_pair`.
        """
        i, j = int(i), int(j)
        if not (0 <= i < self.n and 0 <= j < self.n) or i == j:
            raise ValueError(f"({i}, {j}) is not a pair of distinct candidates in 0..{self.n - 1}")
        a_w = self._a[:, i] - self._a[:, j]  # A w
        gain = a_w[i] - a_w[j]  # w' A w
        self._a -= np.outer(a_w, a_w) / (1.0 + gain)
        self._a = 0.5 * (self._a + self._a.T)
        lo, hi = min(i, j), max(i, j)
        self._available[lo, hi] = False
        self._pairs.append((i, j))

    def select(self, k: int, *, order: str = "random") -> np.ndarray:
        """Choose and add ``k`` more comparisons; returns them as a (k, 2) array.

        Parameters
        ----------
        k : number of comparisons. With ``order="both"`` an odd ``k`` is rounded down:
            ``k // 2`` unordered pairs are chosen and each is returned in both orders.
        order : orientation of each chosen unordered pair: ``"random"`` (first-shown
            candidate by a fair coin from ``rng``), ``"sorted"`` (lower index first) or
            ``"both"`` (both orders, adjacent rows).

        Raises
        ------
        ValueError
            If ``order`` is unknown, or ``k`` exceeds the unordered pairs left
            (``2 *`` that with ``order="both"``).
        """
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        _, k = _check_sizes(self.n, k)
        m = k // 2 if order == "both" else k
        if m > self.remaining:
            raise ValueError(
                f"k={k} needs {m} new unordered pairs but only {self.remaining} of the "
                f"n(n-1)/2={self.n * (self.n - 1) // 2} are left"
            )
        chosen = []
        for _ in range(m):
            i, j = self.next_pair()
            self.add(i, j)
            chosen.append((i, j))
        pairs = np.array(chosen, dtype=np.intp).reshape(-1, 2)
        if order == "random":
            flip = self._rng.random(m) < 0.5
            pairs[flip] = pairs[flip, ::-1]
        elif order == "both":
            pairs = np.column_stack([pairs, pairs[:, ::-1]]).reshape(-1, 2)
        return pairs


def select_greedy(
    n: int,
    k: int,
    *,
    rng: np.random.Generator,
    order: str = "random",
    ridge: float = DEFAULT_RIDGE,
) -> np.ndarray:
    """K comparisons chosen greedily to maximise the Gaussian-PoE information gain.

    Each step takes the unordered pair not yet chosen with the largest posterior
    variance of :math:`s_i - s_j`, :math:`A_{ii} + A_{jj} - 2A_{ij}` with
    :math:`A = (\\tilde W^T \\tilde W + \\epsilon I)^{-1}` updated by Sherman-Morrison
    (Liusie et al. 2024; see :class:`GreedySelector` for the initialisation).

    Parameters
    ----------
    n, k : number of candidates and of comparisons (at most N(N-1)/2 unordered pairs,
        or N(N-1) comparisons with ``order="both"``).
    rng : breaks ties between equally informative pairs and draws orientations.
    order : ``"random"``, ``"sorted"`` or ``"both"`` (see :meth:`GreedySelector.select`).
    ridge : epsilon of the initial :math:`\\epsilon I`.

    Returns
    -------
    (k, 2) int array of ordered pairs (``2 * (k // 2)`` rows with ``order="both"``).

    Raises
    ------
    ValueError
        If a parameter is out of range (the value is quoted).
    """
    n, k = _check_sizes(n, k)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    cap = n * (n - 1) if order == "both" else n * (n - 1) // 2
    if k > cap:
        unit = "ordered pairs" if order == "both" else "unordered pairs"
        raise ValueError(f"k={k} exceeds the {cap} {unit} of n={n} candidates (order={order!r})")
    return GreedySelector(n, rng=rng, ridge=ridge).select(k, order=order)


# ------------------------------------------------------------------------------ helpers


def _covering(draw, n: int, k: int, *, minimum: int, both_positions: bool, what: str) -> np.ndarray:
    """Redraw ``draw()`` until every candidate is compared (first and second, if ``both_positions``)."""
    if k < minimum:
        raise ValueError(f"k={k} comparisons cannot compare every one of n={n} candidates with {what} "
                         f"(cover=True needs k >= {minimum})")
    for _ in range(MAX_COVER_DRAWS):
        pairs = draw()
        first, second = np.bincount(pairs[:, 0], minlength=n), np.bincount(pairs[:, 1], minlength=n)
        covered = (first > 0) & (second > 0) if both_positions else (first + second) > 0
        if covered.all():
            return pairs
    raise ValueError(f"no draw of k={k} comparisons among n={n} candidates compared every candidate in "
                     f"{MAX_COVER_DRAWS:,} tries ({what}, cover=True); give a larger k")


def _check_sizes(n, k) -> tuple[int, int]:
    for name, value in (("n", n), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    n, k = int(n), int(k)
    if k > 0 and n < 2:
        raise ValueError(f"need at least 2 candidates to compare, got n={n} (with k={k})")
    return n, k


def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(0)), got {type(rng).__name__}"
        )


def _empty() -> np.ndarray:
    return np.zeros((0, 2), dtype=np.intp)
