"""Position effects of judges, from the read model: position bias, swap consistency and the health check.

Each number here has one implementation, on integer codes (:class:`peercore.domain.verdicts.Verdicts`);
:mod:`peercore.bias` gives the same functions for a judgment table by encoding it first.

What the order of a verdict means
---------------------------------
Position statistics read ``model_a`` as the answer the judge saw first. They use only
verdicts whose order the source recorded (``order_known``) and, for each judge, only the
pairs of models it judged in **both** orientations (a pair always shown one way round
confounds position with the models' quality): Liusie et al.'s symmetric set. A judge
with no such verdict gets no position statistic and a sentence saying why
(``position_note``), never a flag.

* Position bias: Liusie, Manakul & Gales, "LLM Comparative Assessment", EACL 2024,
  section 6 (Table 4; eq. 8 for the share over all comparisons).
* Swap consistency: Zheng et al., "Judging LLM-as-a-Judge with MT-Bench and Chatbot
  Arena", 2023, section 3.3, Table 2.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from peercore.domain import verdicts as V

__all__ = [
    "position_bias", "swap_consistency", "judge_health", "position_rows", "ORDER_UNKNOWN", "ONE_ORIENTATION",
    "HEALTH_MAX_SHARE", "HEALTH_INTERVAL", "HEALTH_MAX_INVALID", "HEALTH_MIN_DECISIVE", "wilson", "check_level",
]

# A judge carries no information when (the rules are the product's):
HEALTH_MAX_SHARE = 0.90      # one position takes more than this share of its decisive verdicts,
HEALTH_INTERVAL = (0.2, 0.8)  # or its position-bias interval lies wholly outside this range,
HEALTH_MAX_INVALID = 0.20    # or more than this share of its replies held no readable verdict.
HEALTH_MIN_DECISIVE = 10     # the share rule needs at least this many decisive verdicts.

ORDER_UNKNOWN = ("the order in which its answers were shown is unknown (the source does not record it: AlpacaEval "
                 "randomises it, many files fix or sort the pair's orientation); import with --order known if "
                 "model_a is the answer the judge saw first")
ONE_ORIENTATION = ("no pair of models was judged in both orders, so position cannot be told apart from the models' "
                   "quality")


def position_rows(verdicts: V.Verdicts) -> np.ndarray:
    """The verdicts position statistics may use: readable, order known, on a pair its judge saw both ways round."""
    usable = (verdicts.winner >= 0) & verdicts.order_known
    if not usable.any():
        return usable
    judge, a, b = verdicts.judge[usable], verdicts.a[usable], verdicts.b[usable]
    codes = V.group_ids([judge, np.minimum(a, b), np.maximum(a, b)], sorted_ids=True)  # one per (judge, pair)
    forward = a < b
    cells = int(codes.max()) + 1
    both = (np.bincount(codes[forward], minlength=cells) > 0) & (np.bincount(codes[~forward], minlength=cells) > 0)
    out = np.zeros(len(verdicts), dtype=bool)
    out[np.flatnonzero(usable)[both[codes]]] = True
    return out


def _silence(verdicts: V.Verdicts, rows: np.ndarray) -> dict[int, str]:
    """judge code -> why it has no position statistic (readable verdicts but none usable)."""
    size = len(verdicts.judges)
    readable = np.bincount(verdicts.judge[verdicts.winner >= 0], minlength=size)
    known = np.bincount(verdicts.judge[(verdicts.winner >= 0) & verdicts.order_known], minlength=size)
    used = np.bincount(verdicts.judge[rows], minlength=size)
    out = {}
    for k in range(size):
        if readable[k] and not used[k]:
            out[k] = ORDER_UNKNOWN if not known[k] else ONE_ORIENTATION
    return out


def position_bias(verdicts: V.Verdicts, *, level: float = 0.95, rows: np.ndarray | None = None) -> pd.DataFrame:
    """How often each judge picks the answer shown first (Liusie et al. 2024, section 6, Table 4).

    .. math:: P(\\text{first}) = \\frac{\\#\\{\\text{first chosen}\\}}{\\#\\{\\text{decisive}\\}},
              \\qquad P_{\\text{all}}(\\text{first}) = \\frac{\\#\\{\\text{first chosen}\\}}{N}

    ``p_first`` divides by the decisive verdicts (ties left out; what the health check
    reads), with a Wilson score interval; ``p_first_all`` by all N comparisons, as
    Liusie et al.'s eq. 8 does. Only the verdicts of :func:`position_rows` count; on
    them an unbiased judge has :math:`P(\\text{first}) = 0.5`.

    Returns
    -------
    DataFrame
        Indexed by every judge with a readable verdict (sorted): ``n`` (verdicts used),
        ``n_decisive``, ``p_first``, ``ci_low``, ``ci_high``, ``p_first_all``,
        ``tie_rate``, ``mean_p_a`` (NaN when the judge gave no ``p_a``),
        ``order_unknown`` (readable verdicts left out: order unknown or a pair seen one
        way round) and ``position_note`` (why a judge has no statistic, else '').

    ``rows`` is :func:`position_rows` of ``verdicts`` when the caller has it already.
    """
    check_level(level)
    rows = position_rows(verdicts) if rows is None else rows
    size = len(verdicts.judges)
    judge = verdicts.judge[rows]
    winner = verdicts.winner[rows]
    n = np.bincount(judge, minlength=size)
    n_first = np.bincount(judge[winner == V.WINNER_A], minlength=size)
    n_decisive = n - np.bincount(judge[winner == V.TIE], minlength=size)
    p = verdicts.p_a[rows]
    given = ~np.isnan(p)
    p_sum = np.bincount(judge[given], p[given], minlength=size)
    p_count = np.bincount(judge[given], minlength=size)
    readable = np.bincount(verdicts.judge[verdicts.winner >= 0], minlength=size)
    ci_low, ci_high = wilson(n_first, n_decisive, level)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = pd.DataFrame({
            "n": n, "n_decisive": n_decisive,
            "p_first": np.where(n_decisive > 0, n_first / np.maximum(n_decisive, 1), np.nan),
            "ci_low": ci_low, "ci_high": ci_high,
            "p_first_all": np.where(n > 0, n_first / np.maximum(n, 1), np.nan),
            "tie_rate": np.where(n > 0, 1.0 - n_decisive / np.maximum(n, 1), np.nan),
            "mean_p_a": np.where(p_count > 0, p_sum / np.maximum(p_count, 1), np.nan),
            "order_unknown": readable - n,
        }, index=pd.Index(verdicts.judges, name="judge"))
    silence = _silence(verdicts, rows)
    out["position_note"] = [silence.get(k, "") for k in range(size)]
    out = out[readable > 0]
    return out.astype({"n": "int64", "n_decisive": "int64", "order_unknown": "int64"})


def swap_consistency(verdicts: V.Verdicts) -> pd.DataFrame:
    """Whether each judge picks the same winner when the two answers swap places (MT-Bench, Table 2).

    Two verdicts pair when one judge judged the same question, turn and criterion in
    both orders, both with a known order. Write each verdict by position, +1 first,
    0 tie, -1 second: the pair is *consistent* when :math:`v_{AB} = -v_{BA}`; an
    inconsistent pair leans to the sign of :math:`v_{AB} + v_{BA}` ("first, first" and
    "first, tie" favour the first position), so the three shares sum to 1. Every
    verdict in one order pairs with every verdict in the other (repeats, rounds): for a
    key with :math:`F_v` verdicts ``v`` in one order and :math:`B_w` in the other, the
    pairs are :math:`\\sum_{v, w} F_v B_w`.

    Returns
    -------
    DataFrame
        Indexed by every judge with a readable verdict (sorted): ``n_pairs``,
        ``consistent``, ``inconsistent_first``, ``inconsistent_second`` (shares of
        ``n_pairs``, NaN when it is 0) and ``position_note`` (why a judge has no pair).
    """
    rows = (verdicts.winner >= 0) & verdicts.order_known
    size = len(verdicts.judges)
    part = V.take(verdicts, rows)
    forward = part.a < part.b
    key = V.group_ids([part.question, np.minimum(part.a, part.b), np.maximum(part.a, part.b), part.judge, part.turn,
                       part.criterion], sorted_ids=True)
    vote = np.array([0, 2, 1], dtype=np.int64)[part.winner]  # model_a -> +1 (0), model_b -> -1 (2), tie -> 0 (1)
    n_keys = int(key.max(initial=-1)) + 1
    # Only a key judged in both orders forms pairs: count the verdicts of those keys alone.
    both = (np.bincount(key * 2 + ~forward, minlength=2 * n_keys).reshape(n_keys, 2) > 0).all(axis=1)
    paired = both[key]
    key = (np.cumsum(both) - 1)[key[paired]]
    forward, vote, judge = forward[paired], vote[paired], part.judge[paired]
    n_keys = int(both.sum())
    cells = np.bincount((key * 2 + ~forward) * 3 + vote, minlength=6 * n_keys).reshape(n_keys, 2, 3)
    fwd, bwd = cells[:, 0, :], cells[:, 1, :]
    plus, tie, minus = 0, 1, 2
    consistent = fwd[:, plus] * bwd[:, minus] + fwd[:, tie] * bwd[:, tie] + fwd[:, minus] * bwd[:, plus]
    first = fwd[:, plus] * bwd[:, plus] + fwd[:, plus] * bwd[:, tie] + fwd[:, tie] * bwd[:, plus]
    second = fwd[:, minus] * bwd[:, minus] + fwd[:, minus] * bwd[:, tie] + fwd[:, tie] * bwd[:, minus]
    owner = np.zeros(n_keys, dtype=np.int64)
    owner[key] = judge
    counts = np.stack([np.bincount(owner, c.astype(float), minlength=size) for c in (consistent, first, second)], 1)
    n_pairs = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = counts / np.where(n_pairs > 0, n_pairs, np.nan)[:, None]
    out = pd.DataFrame({"n_pairs": n_pairs.astype(np.int64), "consistent": shares[:, 0],
                        "inconsistent_first": shares[:, 1], "inconsistent_second": shares[:, 2]},
                       index=pd.Index(verdicts.judges, name="judge"))
    known = np.bincount(part.judge, minlength=size)
    readable = np.bincount(verdicts.judge[verdicts.winner >= 0], minlength=size)
    out["position_note"] = ["" if n_pairs[k] else (ORDER_UNKNOWN if not known[k] else
                                                    "no comparison was judged in both orders")
                            for k in range(size)]
    return out[readable > 0]


def judge_health(verdicts: V.Verdicts, *, level: float = 0.95) -> pd.DataFrame:
    """Whether each judge's verdicts carry information: position bias, identical verdicts, unparsed replies.

    A judge is *flagged* when any of these holds:

    * one position takes more than 90% of its decisive verdicts (with at least 10 of them);
    * its position-bias interval (Wilson, ``level``) lies wholly outside [0.2, 0.8];
    * more than 20% of its replies held no readable verdict.

    The first two read :func:`position_bias` (verdicts of a known order, pairs seen both
    ways round); a judge whose order is unknown is checked on its unparsed replies only,
    and ``position_note`` says why. A judge that answers the same label whatever the
    order (the 1.5B offline judge through the verdict prompt said "second" 40 times out
    of 40) is flagged by the first two rules.

    Parameters
    ----------
    verdicts : every reply of the judges to check, readable or not.

    Returns
    -------
    DataFrame
        Indexed by judge: ``n`` (replies), ``n_invalid``, ``invalid_share``,
        ``n_decisive``, ``p_first``, ``ci_low``, ``ci_high``, ``identical_share`` (share
        of the most frequent verdict among those position statistics use),
        ``position_note``, ``flagged`` (bool), ``reasons`` (sentence, '' when healthy)
        and ``fix`` (what to try).
    """
    size = len(verdicts.judges)
    replies = np.bincount(verdicts.judge, minlength=size)
    invalid = np.bincount(verdicts.judge[verdicts.winner < 0], minlength=size)
    index = pd.Index(verdicts.judges, name="judge")
    out = pd.DataFrame({"n": replies, "n_invalid": invalid}, index=index).astype("int64")
    with np.errstate(invalid="ignore", divide="ignore"):
        out["invalid_share"] = out["n_invalid"] / out["n"]
    rows = position_rows(verdicts)
    position = position_bias(verdicts, level=level, rows=rows).reindex(index)
    out["n_decisive"] = position["n_decisive"].fillna(0).astype("int64")
    for column in ("p_first", "ci_low", "ci_high"):
        out[column] = position[column].astype(float)
    by_winner = np.bincount(verdicts.judge[rows].astype(np.int64) * 3 + verdicts.winner[rows],
                            minlength=3 * size).reshape(size, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["identical_share"] = np.where(by_winner.sum(1) > 0, by_winner.max(1) / np.maximum(by_winner.sum(1), 1),
                                          np.nan)
    out["position_note"] = position["position_note"].fillna("").astype(str)
    reasons, fixes = [], []
    for row in out.itertuples():
        why, fix = [], []
        p = row.p_first
        if row.n_decisive >= HEALTH_MIN_DECISIVE and (p > HEALTH_MAX_SHARE or p < 1 - HEALTH_MAX_SHARE):
            side = "first" if p > 0.5 else "second"
            why.append(f"the {side} answer won {max(p, 1 - p):.0%} of its {int(row.n_decisive)} decisive verdicts")
        elif row.ci_low > HEALTH_INTERVAL[1] or row.ci_high < HEALTH_INTERVAL[0]:
            why.append(f"its position bias P(first) = {p:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}] lies outside "
                       f"[{HEALTH_INTERVAL[0]}, {HEALTH_INTERVAL[1]}]")
        if why:
            fix.append("use the label-probability classifier (--method auto, the default for local models) and score "
                       "both orders, or a stronger judge")
        if row.invalid_share > HEALTH_MAX_INVALID:
            why.append(f"{row.invalid_share:.0%} of its {int(row.n)} replies held no readable verdict")
            fix.append("raise --max-tokens, use a template that puts the verdict first, or the classifier")
        reasons.append("; ".join(why))
        fixes.append("; ".join(fix))
    out["flagged"] = [bool(r) for r in reasons]
    out["reasons"] = reasons
    out["fix"] = fixes
    return out[replies > 0]


def check_level(level: float) -> None:
    """Raise ValueError unless ``level`` is a number in (0, 1)."""
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")


def wilson(count, nobs, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for ``count`` successes in ``nobs`` trials; NaN where nobs is 0.

    The closed form (Wilson 1927) that ``statsmodels.stats.proportion.proportion_confint(...,
    method="wilson")`` computes, written out because importing that module (and
    ``scipy.stats`` with it) cost 0.8 s of the Bias page's first run; a unit test checks the
    two agree to 1e-12.
    """
    from scipy.special import ndtri  # scipy.special is loaded by peercore.ranking anyway

    count, nobs = np.asarray(count, dtype=float), np.asarray(nobs, dtype=float)
    low, high = np.full(count.shape, np.nan), np.full(count.shape, np.nan)
    seen = nobs > 0
    if seen.any():
        k, n = count[seen], nobs[seen]
        z = ndtri(1.0 - (1.0 - level) / 2.0)
        share, z2 = k / n, z * z
        denominator = 1.0 + z2 / n
        centre = (share + z2 / (2.0 * n)) / denominator
        half_width = z * np.sqrt(share * (1.0 - share) / n + z2 / (4.0 * n * n)) / denominator
        low[seen], high[seen] = centre - half_width, centre + half_width
    return low, high
