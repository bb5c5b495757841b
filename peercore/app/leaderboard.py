"""Leaderboards: the one ranking the CLI (``peercore rank``), the Leaderboard page and exports compute.

:func:`leaderboard` picks a study's verdicts (:meth:`peercore.app.study.Study.select`),
ranks them with one estimator of :mod:`peercore.ranking` and adds what every view shows:
the rank spread its intervals allow, the preliminary flag, and warnings that a number
can mislead (a mixed selection, a tiny sample, a flagged judge, and what the selection
merged or left out). Options are validated once, by :class:`RankOptions`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from peercore.app.health import flagged_judges
from peercore.app.study import Study
from peercore.domain import verdicts as V
from peercore.domain.options import (Control, Grouping, Intervals, Method, PeerWeights, WeightNormalisation,
                                     WeightsFrom, parse)
from peercore.domain.selection import Selection
from peercore.domain.plain import json_value
from peercore.judges import judge_kind
from peercore.ranking._battles import Battles
from peercore.ranking.bradley_terry import bradley_terry_intervals, rank_spread, sandwich_left_out
from peercore.ranking.peer_rank import fixed_point_weights, notebook_weighted_elo, prd_weights
from peercore.ranking.elo import elo_intervals
from peercore.ranking.winrate import win_rate_intervals
from peercore.ranking.alpacaeval import baseline_win_rates
from peercore.ranking.style import battle_lengths, features_for_controls, style_features
from peercore.ranking.contextual import DEFAULT_REG, contextual_bradley_terry
from peercore.ranking import battle_counts, comparisons_from_judgments, poe_gaussian, poe_scores

__all__ = ["RankOptions", "Ranking", "GroupedRanking", "leaderboard", "leaderboards_by", "rank_selected",
           "DEFAULT_BOOTSTRAP", "DEFAULT_ELO_SHUFFLES", "DEFAULT_LC_ROUNDS", "PRELIMINARY_BATTLES", "TINY_STUDY",
           "mixed_warnings", "default_baseline", "selection_baseline", "LABEL_KINDS", "anchor_judge",
           "label_references", "anchored_method"]

DEFAULT_ELO_SHUFFLES = 100   # Elo: mean over this many random battle orders (CLI and pages alike)
DEFAULT_BOOTSTRAP = 100      # bootstrap rounds of the 95% intervals (CLI and pages alike)
DEFAULT_LC_ROUNDS = 200      # bootstrap rounds (over instructions) of the length-controlled win rate's standard error
PRELIMINARY_BATTLES = 30     # a contestant with fewer battles is marked preliminary
TINY_STUDY = 50              # fewer judgments than this in a ranking: say the numbers are unreliable
_Z95 = 1.959963984540054
_SCORE_LABELS = {Method.WINRATE: "win rate", Method.ELO: "Elo", Method.BT: "Bradley-Terry (Elo scale)",
                 Method.POE_GAUSSIAN: "PoE-Gaussian score", Method.POE_BT: "PoE-BT score"}


@dataclass(frozen=True)
class RankOptions:
    """How a leaderboard ranks (every option checked here, once).

    Attributes
    ----------
    method : :class:`peercore.domain.options.Method` (``bt`` by default).
    peer_weights : ``none``, ``prd`` (PRD's 5 min-max iterations) or ``fixed-point``:
        judges weighted by their own score as contestants (judges that are no contestant
        are left out, said in ``left_out`` and a warning).
    weights_from : the score Peer Rank's weights come from (``winrate`` as PRD's Table 2).
    bootstrap, seed : bootstrap rounds of the 95% intervals (0: none) and the seed.
    elo_shuffles : Elo: mean over this many random battle orders (0: the given order).
    soft : count the judges' probabilities ``p_a`` as fractional wins where given.
    weight_normalisation : Elo with peer weights (PRD Appendix E), ``sum`` or ``mean``.
    baseline : with ``winrate``: AlpacaEval's columns for every model against it.
    controls : with ``bt``: style control (``length``, ``markdown``).
    intervals : Bradley-Terry: ``bootstrap`` or ``sandwich`` sets the ranks.
    reweight : Bradley-Terry: LMArena's :math:`1/\\max(n_{pair}, 50)` battle weights.
    prior : Bradley-Terry: standard deviation (Elo points) of a weak prior on the ratings.
    min_battles : fewer battles than this marks a contestant preliminary.
    style_reg : style control's ridge on arena-rank's scale (None: its default).
    lc_rounds : bootstrap rounds of the length-controlled win rate's standard error.
    """

    method: str = Method.BT
    peer_weights: str = PeerWeights.NONE
    weights_from: str = WeightsFrom.WINRATE
    bootstrap: int = DEFAULT_BOOTSTRAP
    seed: int = 0
    elo_shuffles: int = DEFAULT_ELO_SHUFFLES
    soft: bool = False
    weight_normalisation: str = WeightNormalisation.SUM
    baseline: str | None = None
    controls: tuple[str, ...] = ()
    intervals: str = Intervals.BOOTSTRAP
    reweight: bool = False
    prior: float | None = None
    min_battles: int = PRELIMINARY_BATTLES
    style_reg: float | None = None
    lc_rounds: int = DEFAULT_LC_ROUNDS

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        set_("method", parse(Method, self.method, "method"))
        set_("peer_weights", parse(PeerWeights, self.peer_weights, "peer_weights"))
        set_("weights_from", parse(WeightsFrom, self.weights_from, "weights_from"))
        set_("weight_normalisation", parse(WeightNormalisation, self.weight_normalisation, "weight_normalisation"))
        set_("intervals", parse(Intervals, self.intervals, "intervals"))
        set_("controls", tuple(parse(Control, c, "controls") for c in (self.controls or ())))
        for name in ("bootstrap", "elo_shuffles", "min_battles", "lc_rounds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
        if self.prior is not None and not (self.prior > 0 and math.isfinite(self.prior)):
            raise ValueError(f"prior must be a number > 0, got {self.prior!r}")
        poe = self.method in (Method.POE_GAUSSIAN, Method.POE_BT)
        if poe and self.peer_weights is not PeerWeights.NONE:
            raise ValueError("Product-of-Experts scores take no Peer Rank weights (peer_weights='none')")
        if self.baseline is not None and self.method is not Method.WINRATE:
            raise ValueError(f"a baseline goes with method 'winrate' (AlpacaEval's win rates against it), got method "
                             f"{self.method.value!r}")
        if self.baseline is not None and self.peer_weights is not PeerWeights.NONE:
            raise ValueError("win rates against a baseline take no Peer Rank weights (peer_weights='none')")
        if self.controls and self.method is not Method.BT:
            raise ValueError(f"style control is a Bradley-Terry model (method 'bt'), got method {self.method.value!r}")
        if self.weights_from is WeightsFrom.ELO_PER_SHUFFLE and (
                self.method is not Method.ELO or self.peer_weights is not PeerWeights.PRD or self.controls):
            raise ValueError(f"weights_from {self.weights_from.value!r} is PRD's notebook procedure for weighted Elo: "
                             f"it needs method 'elo' and peer_weights 'prd', got method {self.method.value!r}, "
                             f"peer_weights {self.peer_weights.value!r}")
        if self.method is not Method.BT and (self.intervals is not Intervals.BOOTSTRAP or self.reweight
                                             or self.prior is not None):
            raise ValueError(f"sandwich intervals, reweighting and a prior are Bradley-Terry options (method 'bt'); "
                             f"got method {self.method.value!r}")

    def as_dict(self) -> dict:
        """``intervals, reweight, prior, min_battles`` as a ranking reports them."""
        return {"intervals": self.intervals.value, "reweight": bool(self.reweight), "prior": self.prior,
                "min_battles": int(self.min_battles)}


@dataclass(frozen=True)
class Ranking:
    """A leaderboard and how it was made (what :func:`leaderboard` returns).

    Attributes
    ----------
    table : one row per contestant, best first: ``model, score, rank, ci_low, ci_high,
        battles``, ``rank_worst`` when there are intervals (``rank`` is the best rank the
        intervals allow, the Arena rule; ``rank_worst`` the worst), ``preliminary``
        (fewer battles than ``min_battles``); intervals NaN without bootstrap.
        Bradley-Terry adds ``sandwich_low, sandwich_high`` (the robust interval); style
        control ``plain_score, plain_rank, rank_change``; a baseline AlpacaEval's
        columns ``win_rate, standard_error, discrete_win_rate, n_wins, n_wins_base,
        n_draws, n_total, avg_length, lc_win_rate, lc_standard_error`` (percent).
    method, peer_weights : as asked.
    score_label : what the score is (``win rate``, ``Elo``, ...).
    verdicts : ``hard`` (winners) or ``soft`` (the judges' probabilities as fractional wins).
    judges : the judges whose verdicts were counted.
    n_judgments : verdicts counted.
    weights, history, iterations, converged : Peer Rank's reviewer weights (else None).
    left_out : chosen judges Peer Rank could not weigh (not contestants).
    warnings : sentences about what may mislead, and what the selection merged or left out.
    style : style control's coefficients, else None.
    baseline : the baseline view's description, else None.
    options : ``intervals``, ``reweight``, ``prior``, ``min_battles`` as used.
    notes : what the selection merged or left out, as counts.
    """

    table: pd.DataFrame
    method: str
    peer_weights: str
    score_label: str
    verdicts: str
    judges: tuple[str, ...]
    n_judgments: int
    weights: pd.Series | None = None
    history: pd.DataFrame | None = None
    iterations: int | None = None
    converged: bool | None = None
    left_out: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    style: pd.DataFrame | None = None
    baseline: dict | None = None
    options: dict = field(default_factory=dict)
    notes: V.SelectionNotes = field(default_factory=V.SelectionNotes)

    def to_json(self) -> dict:
        """The JSON the CLI prints (``--format json``) and exports write."""
        rows = [{k: json_value(row[k]) for k in self.table.columns} for _, row in self.table.iterrows()]
        out = {"leaderboard": rows, "method": str(self.method), "peer_weights": str(self.peer_weights),
               "verdicts": self.verdicts, "judgments": int(self.n_judgments), "judges": list(self.judges),
               "weights": None if self.weights is None else {k: float(v) for k, v in self.weights.items()},
               "warnings": list(self.warnings), "options": {k: json_value(v) for k, v in self.options.items()},
               "merged": {"repeated_votes": self.notes.merged_votes, "comparisons": self.notes.merged_comparisons,
                          "earlier_rounds": self.notes.earlier_rounds, "unparsed": self.notes.unparsed}}
        if self.style is not None:
            out["style"] = {str(f): float(v) for f, v in self.style["coefficient"].items()}
            out["style_intervals"] = {str(f): [json_value(lo), json_value(hi)] for f, lo, hi in
                                      zip(self.style.index, self.style["ci_low"], self.style["ci_high"])}
            out["style_probability_shift"] = {str(f): float(v) for f, v in self.style["probability_shift"].items()}
        if self.baseline is not None:
            out["baseline"] = dict(self.baseline)
        return out


# ----------------------------------------------------------------------------- ranking


def leaderboard(study: Study, selection: Selection | None = None, *, progress=None, **options) -> Ranking:
    """The leaderboard of the verdicts ``selection`` picks from ``study``.

    Parameters
    ----------
    study : a stored study or a file (:class:`peercore.app.study.Study`).
    selection : which verdicts count (default: every judge, final verdicts, the
        majority of repeated votes; what it merges is said in the warnings).
    progress : called with the share (0..1) of Bradley-Terry's bootstrap done.
    **options : :class:`RankOptions`' fields.

    Raises
    ------
    ValueError
        On an option out of range, a selection that matches no judgment, or Peer Rank
        with fewer than two judges that are contestants.
    """
    opts = RankOptions(**options)
    return rank_selected(study, study.select(selection), opts, progress=progress)


def rank_selected(study: Study, selected: V.Selected, options: RankOptions, *, progress=None) -> Ranking:
    """Rank verdicts already selected from ``study`` (the body of :func:`leaderboard`)."""
    chosen = selected.verdicts
    if len(chosen) == 0:
        raise ValueError("the selection holds no judgments to rank")
    warnings = selected.notes.messages()
    left_out: list[str] = []
    if options.peer_weights is not PeerWeights.NONE:
        judges = chosen.judges_present()
        aliases = chosen.aliases()
        left_out = [j for j in judges if j not in aliases]
        kept = [j for j in judges if j in aliases]
        if len(kept) < 2:
            raise ValueError(f"Peer Rank needs at least two chosen judges that are also contestants; "
                             f"{len(kept)} of {len(judges)} are ({', '.join(kept) or 'none'}). Mark which "
                             "contestant a judge is on the Studies page")
        if left_out:
            warnings.append(f"Peer Rank weighs reviewers by their own score as contestants, so judges that are no "
                            f"contestant are left out: {', '.join(left_out)}")
            keep = np.array([j in set(kept) for j in chosen.judges], dtype=bool)
            chosen = V.compact(V.take(chosen, keep[chosen.judge]))
    soft = False
    if options.soft and options.baseline is None:
        if (~np.isnan(chosen.p_a)).any():
            soft = True
        else:
            warnings.append("soft verdicts were asked for, but no chosen judge gave probabilities (p_a): hard "
                            "verdicts were used")
    warnings += mixed_warnings(V.contestants_by_judge(chosen))
    judges = tuple(chosen.judges_present())
    if options.baseline is not None:
        ranking = _baseline_ranking(study, chosen, options, judges=judges, warnings=warnings)
    elif options.controls:
        ranking = _style_ranking(study, chosen, options, soft=soft, judges=judges, warnings=warnings)
    elif options.method in (Method.POE_GAUSSIAN, Method.POE_BT):
        frame = V.to_frame(chosen)
        table = poe_table(frame, method=options.method.value.replace("-", "_"))
        ranking = Ranking(table=table, method=options.method, peer_weights=PeerWeights.NONE,
                          score_label=_SCORE_LABELS[options.method],
                          verdicts="soft" if (~np.isnan(chosen.p_a)).any() else "hard", judges=judges,
                          n_judgments=len(chosen))
    else:
        ranking = _scored(chosen, options, soft=soft, judges=judges, progress=progress)
    return _finished(ranking, study=study, n_judgments=len(chosen), judges=judges, warnings=warnings,
                     left_out=left_out, options=options, notes=selected.notes)


def battles_of(chosen: V.Verdicts, *, soft: bool = False) -> Battles:
    """The estimators' view of selected verdicts: contestants, outcome for ``model_a``, judge."""
    return Battles(models=chosen.models, a=chosen.a, b=chosen.b, score_a=V.score_a(chosen, soft=soft),
                   judges=chosen.judges, judge=chosen.judge)


def _peer(battles: Battles, chosen: V.Verdicts, options: RankOptions):
    """Peer Rank's reviewer weights (PRD section 3.1), or None without them."""

    if options.peer_weights is PeerWeights.NONE:
        return None
    make = prd_weights if options.peer_weights is PeerWeights.PRD else fixed_point_weights
    return make(battles, aliases=chosen.aliases(), method=options.weights_from.value,
                elo_shuffles=options.elo_shuffles, seed=options.seed)


def _scored(chosen: V.Verdicts, options: RankOptions, *, soft: bool, judges, progress) -> Ranking:
    """Win rate, Elo or Bradley-Terry with their intervals, Peer Rank weights when asked."""

    battles = battles_of(chosen, soft=soft)
    if options.weights_from is WeightsFrom.ELO_PER_SHUFFLE:
        return _notebook_elo(battles, chosen, options, soft=soft, judges=judges)
    peer = _peer(battles, chosen, options)
    weights = None if peer is None else peer.weights.to_dict()
    if options.method is Method.WINRATE:
        scored = win_rate_intervals(battles, rounds=options.bootstrap, seed=options.seed, weights=weights)
        scored = scored.rename(columns={"win_rate": "score"})
    elif options.method is Method.ELO:
        scored = elo_intervals(battles, rounds=options.bootstrap, seed=options.seed, shuffles=options.elo_shuffles,
                               weights=weights, weight_normalisation=options.weight_normalisation.value)
        scored = scored.rename(columns={"elo": "score"})
    else:
        scored = bradley_terry_intervals(battles, rounds=options.bootstrap, seed=options.seed, weights=weights,
                                         intervals=options.intervals.value, reweight=options.reweight,
                                         prior=options.prior, progress=progress).rename(columns={"rating": "score"})
    # Thousands of models: the sandwich is computed only when asked for; say so (never an empty column silently).
    left_out = sandwich_left_out(len(scored), options.intervals.value) if options.method is Method.BT else None
    columns = ["score", "ci_low", "ci_high", "battles"] + [c for c in ("sandwich_low", "sandwich_high")
                                                          if c in scored.columns]
    table = scored[columns].reset_index().rename(columns={"index": "model"})
    return Ranking(table=table, method=options.method, peer_weights=options.peer_weights,
                   score_label=_SCORE_LABELS[options.method], verdicts="soft" if soft else "hard", judges=judges,
                   n_judgments=len(chosen), weights=None if peer is None else peer.weights,
                   history=None if peer is None else peer.history,
                   iterations=None if peer is None else peer.iterations,
                   converged=None if peer is None else peer.converged, warnings=(left_out,) if left_out else ())


def _notebook_elo(battles: Battles, chosen: V.Verdicts, options: RankOptions, *, soft: bool, judges) -> Ranking:
    """PRD's notebook weighted Elo: weights from Elo inside every shuffle
    (:func:`peercore.ranking.peer_rank.notebook_weighted_elo`, cells 26, 40, 41)."""

    result = notebook_weighted_elo(battles, aliases=chosen.aliases(), shuffles=options.elo_shuffles,
                                   seed=options.seed, rounds=options.bootstrap)
    table = result.table.rename(columns={"elo": "score"})[["score", "ci_low", "ci_high", "battles"]]
    return Ranking(table=table.reset_index().rename(columns={"index": "model"}), method=Method.ELO,
                   peer_weights=PeerWeights.PRD, score_label="Elo (PRD notebook: weights from Elo within each shuffle)",
                   verdicts="soft" if soft else "hard", judges=judges, n_judgments=len(chosen), weights=result.weights,
                   history=result.history, iterations=result.iterations, converged=None)


def _finished(ranking: Ranking, *, study: Study, n_judgments: int, judges, warnings: list[str], left_out,
              options: RankOptions, notes: V.SelectionNotes) -> Ranking:
    """Ranks and the rank spread (once, from the table's intervals), preliminary flags and the warnings."""
    warnings = list(warnings)
    table = ranking.table
    if "rank" not in table.columns:
        low = table["ci_low"].where(table["ci_low"].notna(), table["score"])
        high = table["ci_high"].where(table["ci_high"].notna(), table["score"])
        spread = rank_spread(pd.Series(low.to_numpy(), index=table["model"]),
                             pd.Series(high.to_numpy(), index=table["model"]))
        table = table.assign(rank=spread["rank"].to_numpy(), rank_worst=spread["rank_worst"].to_numpy())
        if table["ci_low"].isna().all():  # no intervals: no rank spread to speak of
            table = table.drop(columns=["rank_worst"])
        table = table.sort_values(["rank", "score", "model"], ascending=[True, False, True], kind="stable")
        first = ["model", "score", "rank", "ci_low", "ci_high", "battles"]
        table = table[first + [c for c in table.columns if c not in first]]
    table = table.astype({"battles": int, "rank": int}).reset_index(drop=True)
    table = table.assign(preliminary=table["battles"] < options.min_battles)
    if n_judgments < TINY_STUDY:
        warnings.append(f"only {n_judgments} judgments: ratings from so few verdicts are unreliable (every "
                        "contestant is preliminary)" + ("" if options.prior is not None or options.method is not Method.BT
                                                         else "; a weak prior (--prior 200) keeps them near 1000"))
    elif table["preliminary"].any():
        few = table.loc[table["preliminary"], "model"].tolist()
        warnings.append(f"{', '.join(map(str, few[:8]))}{' ...' if len(few) > 8 else ''} "
                        f"{'has' if len(few) == 1 else 'have'} fewer than {options.min_battles} battles "
                        "(preliminary)")
    for judge, reason in flagged_judges(study, judges).items():
        warnings.append(f"judge {judge} is flagged as carrying no information ({reason}); try the "
                        "label-probability classifier (--method auto) scored in both orders, or a stronger judge")
    return replace(ranking, table=table, left_out=tuple(left_out), warnings=tuple(ranking.warnings) + tuple(warnings),
                   options=options.as_dict(), notes=notes)


def mixed_warnings(by_judge: Mapping[str, set]) -> list[str]:
    """A warning when some contestants were judged by only some of the chosen judges (their scores rest on others)."""
    judges = sorted(by_judge)
    if len(judges) < 2:
        return []
    everyone = set.union(*by_judge.values())
    common = set.intersection(*by_judge.values())
    partial = sorted(everyone - common)
    if not partial:
        return []
    detail = []
    for model in partial[:4]:
        who = [j for j in judges if model in by_judge[j]]
        detail.append(f"{model} (only by {', '.join(who[:3])}{' ...' if len(who) > 3 else ''})")
    more = f" and {len(partial) - 4} more" if len(partial) > 4 else ""
    return [f"mixed selection: {len(partial)} contestant(s) were judged by only some of the chosen judges: "
            f"{'; '.join(detail)}{more}. Their scores rest on other judges than the rest; rank only the "
            f"{len(common)} contestants every chosen judge judged (--common-contestants, or the page's option)"]


# ------------------------------------------------------------------- baseline, style, PoE


def default_baseline(chosen: V.Verdicts) -> str | None:
    """The baseline of an AlpacaEval-style view: the contestant that takes part in every comparison.

    Among the chosen verdicts, the model present in every one; if several, the one with
    the most battles (then the first by name); None when no model is in every
    comparison (then a user has to say which).
    """
    if len(chosen) == 0:
        return None
    n = chosen.n_models
    battles = np.bincount(chosen.a, minlength=n) + np.bincount(chosen.b, minlength=n)
    everywhere = np.flatnonzero(battles == len(chosen))
    if len(everywhere) == 0:
        return None
    return chosen.models[int(max(everywhere, key=lambda k: (battles[k], -k)))]


def selection_baseline(study: Study, selection: Selection | None = None) -> str | None:
    """:func:`default_baseline` of the verdicts ``selection`` picks from ``study`` (None: ask which).

    The one rule behind the Leaderboard's "Versus a baseline" default and
    ``peercore rank --baseline auto``.
    """
    return default_baseline(study.select(selection).verdicts)


# ------------------------------------------------------------------- anchored to human labels
# The Leaderboard's "Anchor to human labels" (issue 23): one LLM judge's leaderboard corrected with
# people's votes by peercore.app.calibration.calibrated_leaderboard, the table `peercore calibrate` prints.
# These say which judge, which labels and which estimand a view anchors; the numbers are calibration's.

#: Judge kinds whose votes are labels: people (imported human votes, decisions on Adjudication).
LABEL_KINDS = ("human", "adjudicator")
_PREFIXES = {"human": "human:", "adjudicator": "adjudicator:"}
_ANCHORED = {Method.WINRATE: "winrate", Method.BT: "bt"}


def _kinds(study: Study, names) -> dict[str, str]:
    registered = study.kinds()
    return {name: judge_kind(name, registered.get(name)) for name in names}


def anchor_judge(study: Study, judges: Sequence[str]) -> str | None:
    """The judge a leaderboard of ``judges`` anchors to human labels: its one LLM judge, or None.

    Prediction-powered inference corrects one judge's verdicts with the labels
    (:func:`peercore.app.calibration.calibrated_leaderboard`, ``peercore calibrate --judge``);
    with no LLM judge, or several, among ``judges`` there is none to anchor. People and
    debate gold in ``judges`` are allowed beside it (they are not what is corrected).
    """
    llms = [name for name, kind in _kinds(study, judges).items() if kind == "llm"]
    return llms[0] if len(llms) == 1 else None


def label_references(study: Study) -> list[str]:
    """The references an anchored leaderboard can use (``peercore calibrate --reference``): the study's people.

    In order, the first being the default: the human judges (``human:``, or their names
    comma-separated when one is not named so); with decisions on Adjudication too, the
    human judges and the adjudicators together (``human:,adjudicator:``); each human judge
    by name when there are several; the adjudicators (``adjudicator:``, which also counts
    decisions made later), and each by name when there are several. Only kinds of
    :data:`LABEL_KINDS` with a vote in the study (a readable stored vote, or a decision)
    appear; an empty list: the study has no human label (the page says so).
    """
    names = study.rankable_judges()
    kinds = _kinds(study, names)
    people = {kind: sorted(name for name in names if kinds[name] == kind) for kind in LABEL_KINDS}
    together = {kind: _PREFIXES[kind] if all(name.startswith(_PREFIXES[kind]) for name in found) else ",".join(found)
                for kind, found in people.items() if found}
    out: list[str] = []
    for kind, found in people.items():
        if not found:
            continue
        out.append(together[kind])
        if len(out) == 1 and len(together) > 1:  # people together, right after the default
            out.append(",".join(together.values()))
        if len(found) > 1:
            out += found
    return out


def anchored_method(method: str | Method, peer_weights: str | PeerWeights = PeerWeights.NONE) -> str | None:
    """The estimand of an anchored view of a leaderboard ranked by ``method``: ``"winrate"``, ``"bt"`` or None.

    PPI++ anchors win rates (also against a baseline) and Bradley-Terry ratings
    (:data:`peercore.app.calibration.METHODS`); Elo, Peer Rank's weighted scores and PoE
    have no anchored counterpart (None).
    """
    if parse(PeerWeights, peer_weights, "peer_weights") not in (None, PeerWeights.NONE):
        return None
    return _ANCHORED.get(parse(Method, method, "method"))


def _frame(study: Study, chosen: V.Verdicts) -> pd.DataFrame:
    return study.with_extras(V.to_frame(chosen), chosen)


def _answers_for(study: Study) -> pd.DataFrame | None:
    answers = study.answers()
    return answers if len(answers) else None


def _baseline_ranking(study: Study, chosen: V.Verdicts, options: RankOptions, *, judges,
                      warnings: list[str]) -> Ranking:
    """AlpacaEval's columns against ``options.baseline`` (:func:`peercore.ranking.alpacaeval.baseline_win_rates`)."""

    frame = _frame(study, chosen)
    lengths = battle_lengths(frame, _answers_for(study))
    result = baseline_win_rates(frame, baseline=options.baseline, lengths=lengths, lc_rounds=options.lc_rounds,
                                seed=options.seed)
    alpaca = result.table
    # AlpacaEval 2 orders its leaderboard by the length-controlled win rate (the raw one where no row has an LC).
    length_controlled = alpaca["lc_win_rate"].notna().all()
    order, order_se = ("lc_win_rate", "lc_standard_error") if length_controlled else ("win_rate", "standard_error")
    alpaca = alpaca.sort_values([order, "win_rate", "model"], ascending=[False, False, True],
                                kind="stable").reset_index(drop=True)
    score = alpaca["win_rate"]
    half = _Z95 * alpaca["standard_error"].fillna(0.0)
    table = pd.DataFrame({"model": alpaca["model"], "score": score, "ci_low": score - half, "ci_high": score + half,
                          "battles": alpaca["n_total"].astype(int)})
    order_half = _Z95 * alpaca[order_se].fillna(0.0)  # the rank follows the order: its 95% interval sets it
    spread = rank_spread(pd.Series((alpaca[order] - order_half).to_numpy(), index=table["model"]),
                         pd.Series((alpaca[order] + order_half).to_numpy(), index=table["model"]))
    table.insert(2, "rank", spread["rank"].to_numpy())
    table["rank_worst"] = spread["rank_worst"].to_numpy()
    table = pd.concat([table, alpaca.drop(columns=["model"])], axis=1)
    if result.difficulty == "no lengths":
        warnings.append("no answer lengths (import the answers, or give answer_a / answer_b or length_a / length_b "
                        "columns): avg_length and the length-controlled win rate are empty")
    soft = bool((~np.isnan(chosen.p_a)).any())
    return Ranking(table=table.reset_index(drop=True), method=Method.WINRATE, peer_weights=PeerWeights.NONE,
                   score_label=f"win rate vs {options.baseline} (%)", verdicts="soft" if soft else "hard",
                   judges=judges, n_judgments=int(alpaca.loc[alpaca["model"] != options.baseline, "n_total"].sum()),
                   baseline=result.describe())


_NO_ANSWERS = ("style control needs both answers of a battle; none of the chosen battles has them (import the answers, "
               "or give answer_a / answer_b columns)")


def _style_ranking(study: Study, chosen: V.Verdicts, options: RankOptions, *, soft: bool, judges,
                   warnings: list[str]) -> Ranking:
    """Style-controlled Bradley-Terry beside plain Bradley-Terry on the same battles (Chatbot Arena)."""

    controls = tuple(c.value for c in options.controls)
    frame = _frame(study, chosen)
    answers = _answers_for(study)
    given = set(frame.columns)
    if answers is None and not ({"answer_a", "answer_b"} <= given or {"length_a", "length_b"} <= given):
        raise ValueError(_NO_ANSWERS)
    features = style_features(frame, answers, features=features_for_controls(controls))
    known = features.notna().all(axis=1).to_numpy()
    if not known.any():
        raise ValueError(_NO_ANSWERS)
    if not known.all():
        warnings.append(f"{int((~known).sum()):,} of {len(known):,} battles lack an answer's text and are left out of "
                        "both the plain and the style-controlled fit")
        chosen = V.take(chosen, known)
        features = features[known].reset_index(drop=True)
    battles = battles_of(chosen, soft=soft)
    peer = _peer(battles, chosen, options)
    weights = None if peer is None else peer.weights.to_dict()
    kind = options.intervals.value
    rounds = options.bootstrap if options.intervals is Intervals.BOOTSTRAP else 0
    styled = contextual_bradley_terry(battles, features, reg=DEFAULT_REG if options.style_reg is None
                                      else options.style_reg, rounds=rounds, seed=options.seed, intervals=kind,
                                      weights=weights, reweight=options.reweight, prior=options.prior)
    plain = bradley_terry_intervals(battles, rounds=rounds, seed=options.seed, intervals=kind, weights=weights,
                                    reweight=options.reweight, prior=options.prior)
    t = styled.table
    table = pd.DataFrame({"model": t.index, "score": t["rating"].to_numpy(), "rank": t["rank"].to_numpy(),
                          "ci_low": t["ci_low"].to_numpy(), "ci_high": t["ci_high"].to_numpy(),
                          "battles": t["battles"].astype(int).to_numpy(), "sandwich_low": t["sandwich_low"].to_numpy(),
                          "sandwich_high": t["sandwich_high"].to_numpy(), "rank_worst": t["rank_worst"].to_numpy()})
    table["plain_score"] = plain["rating"].reindex(t.index).to_numpy()
    table["plain_rank"] = plain["rank"].reindex(t.index).to_numpy()
    table["rank_change"] = table["plain_rank"] - table["rank"]
    table = table.sort_values(["rank", "score", "model"], ascending=[True, False, True], kind="stable")
    return Ranking(table=table.reset_index(drop=True), method=Method.BT, peer_weights=options.peer_weights,
                   score_label=f"Bradley-Terry, style-controlled ({' + '.join(controls)})",
                   verdicts="soft" if soft else "hard", judges=judges, n_judgments=len(chosen),
                   weights=None if peer is None else peer.weights, style=styled.coefficients,
                   history=None if peer is None else peer.history,
                   iterations=None if peer is None else peer.iterations,
                   converged=None if peer is None else peer.converged)


def poe_table(judgments: pd.DataFrame, *, method: str = "poe_gaussian", debias: bool = False) -> pd.DataFrame:
    """A ranked table for the Product-of-Experts scores (Liusie et al.).

    PoE-Gaussian gets 95% intervals from its posterior: score +- 1.96 sd of
    :math:`s_i - \\bar s`, i.e. of the centred covariance :math:`P \\Sigma P` with
    :math:`P = I - \\mathbf 1 \\mathbf 1^T / N`, with the expert variance
    :math:`\\sigma^2` estimated by the residual mean square
    :math:`\\lVert \\mu - W s \\rVert^2 / (K - N + 1)`. PoE-BT has no intervals.

    Returns
    -------
    DataFrame ``model, score, ci_low, ci_high, battles`` (ranks come from :func:`leaderboard`).
    """

    if method == "poe_gaussian":
        comparisons = comparisons_from_judgments(judgments)
        fit = poe_gaussian(comparisons, debias=debias)
        n, k = comparisons.n, len(comparisons)
        beta = float(np.mean(comparisons.p)) if debias and k else 0.5
        residual = (comparisons.p - beta) - (fit.scores[comparisons.i] - fit.scores[comparisons.j])
        sigma2 = float(residual @ residual) / max(k - n + 1, 1)
        centre = np.eye(n) - 1.0 / n
        sd = np.sqrt(np.clip(np.diag(centre @ fit.covariance @ centre), 0.0, None) * sigma2)
        models = list(comparisons.candidates)
        score = pd.Series(fit.scores, index=models)
        low = pd.Series(fit.scores - _Z95 * sd, index=models)
        high = pd.Series(fit.scores + _Z95 * sd, index=models)
    else:
        score = poe_scores(judgments, method=method, debias=debias)
        score.index = list(score.index)
        low = high = pd.Series(np.nan, index=score.index)
    counts = battle_counts(judgments).sum(axis=1)
    return pd.DataFrame({"model": score.index, "score": score.to_numpy(), "ci_low": low.to_numpy(),
                         "ci_high": high.to_numpy(), "battles": counts.reindex(score.index).to_numpy()})


# ------------------------------------------------------------------------------ grouped


@dataclass(frozen=True)
class GroupedRanking:
    """Leaderboards of one selection split by question category, criterion or turn (:func:`leaderboards_by`).

    Attributes
    ----------
    by : ``category``, ``criterion`` or ``turn``.
    rankings : group -> :class:`Ranking` (groups in the order asked, else most judgments first).
    counts : indexed by group: ``judgments`` and ``contestants`` counted in it.
    errors : group -> why it could not be ranked (e.g. one contestant only).
    warnings : what the selection merged or left out, before it was split.
    """

    by: str
    rankings: dict
    counts: pd.DataFrame
    errors: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"by": str(self.by), "groups": {str(g): r.to_json() for g, r in self.rankings.items()},
                "counts": {str(g): {k: int(v) for k, v in row.items()} for g, row in self.counts.iterrows()},
                "errors": {str(g): e for g, e in self.errors.items()}, "warnings": list(self.warnings)}


def group_of(chosen: V.Verdicts, by: str) -> tuple[np.ndarray, list[str]]:
    """Each verdict's group (an index into the returned names): category, criterion or turn.

    A verdict without a criterion is in ``"(none)"``; without a turn, in turn ``"1"``.
    """
    by = parse(Grouping, by, "by")
    if by is Grouping.CATEGORY:
        return chosen.question_category[chosen.question], list(chosen.categories)
    if by is Grouping.CRITERION:
        return chosen.criterion, [c or V.NO_CATEGORY for c in chosen.criteria]
    turn = np.where(chosen.turn == 0, 1, chosen.turn)
    values = np.unique(turn)
    return np.searchsorted(values, turn), [str(int(t)) for t in values]


def leaderboards_by(study: Study, selection: Selection | None = None, *, by: str = "category",
                    groups: Sequence | None = None, **options) -> GroupedRanking:
    """One leaderboard per question category, criterion or turn, side by side.

    Parameters
    ----------
    selection : the verdicts (its own category / criterion / turn filter still applies).
    by : ``category`` (a question's category, or its debates' scenario), ``criterion`` or ``turn``.
    groups : which values of ``by`` (default: all, most judgments first).
    **options : :class:`RankOptions`' fields (the same in every group).

    Raises
    ------
    ValueError
        If ``by`` is unknown, a requested group has no judgment, or no group could be ranked.
    """
    opts = RankOptions(**options)
    selected = study.select(selection)
    chosen = selected.verdicts
    labels, names = group_of(chosen, by)
    sizes = np.bincount(labels, minlength=len(names)) if len(labels) else np.zeros(len(names), dtype=np.int64)
    present = {names[k]: int(sizes[k]) for k in np.flatnonzero(sizes)}
    order = sorted(present, key=lambda g: (-present[g], g)) if groups is None else [str(g) for g in groups]
    missing = [g for g in order if g not in present]
    if missing:
        raise ValueError(f"{by} {missing} has no judgment in the selection; {by}s are {sorted(present)}")
    rankings, errors, counts = {}, {}, []
    index = {name: k for k, name in enumerate(names)}
    for group in order:
        part = V.compact(V.take(chosen, labels == index[group]))
        counts.append((group, len(part), len(part.models_present())))
        try:
            rankings[group] = rank_selected(study, V.Selected(part, V.SelectionNotes()), opts)
        except ValueError as error:
            errors[group] = str(error)
    if not rankings:
        raise ValueError(f"no {by} could be ranked: " + "; ".join(f"{g}: {e}" for g, e in errors.items()))
    table = pd.DataFrame(counts, columns=[str(by), "judgments", "contestants"]).set_index(str(by))
    return GroupedRanking(by=str(by), rankings=rankings, counts=table, errors=errors,
                          warnings=tuple(selected.notes.messages()))
