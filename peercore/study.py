"""The application layer: one :class:`Study` over the store that the CLI, the dashboard and exports share.

Everything that decides *which* judgments a number is computed from lives here, once:

* **judge kinds** come from the store (the kind each judge was registered with; a name's
  prefix, ``human:`` or ``debate:``, only when it was never registered);
* **one alias rule** says which contestant a judge is (:func:`peercore.judges.model_of`:
  the stored alias, else the judge's own name, its base name without a variant suffix,
  or the model after ``backend:``);
* **the gold set** (ScaleEval): per debate panel, the consensus of the debates its
  agents settled plus the human adjudications of the others;
* **judgment selection** (:class:`Selection`): judges by name, prefix (``human:``) or
  kind; contestants; question categories; criteria; turns; by default only each debate
  agent's and discussion reviewer's *final* verdict (its initial one is the same judge
  judging the same pair again); repeated votes of one judge on one comparison reduced
  to their majority (PRD's human majority);
* **warnings** that a number can mislead: contestants judged by only some of the chosen
  judges (a mixed selection), tiny samples, flagged judges.

``peercore rank --study``, the Leaderboard page and ``peercore export --what
leaderboard`` call :meth:`Study.leaderboard` with the same defaults, so they show the
same table (a test compares them); ``peercore agree`` and the Meta-evaluation page call
:meth:`Study.agreement`, which never compares a judge with its own votes.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from peercore.judges import base_name, model_of
from peercore.judges import fingerprint as judge_fingerprint
from peercore.judgments import COLUMNS, concat, empty_judgments, judgments_from_frame
from peercore.ranking._battles import SOFT_COLUMN
from peercore.ranking.bradley_terry import rank_spread
from peercore.ranking.leaderboard import _ranked  # the one table layout of every ranking method
from peercore.ranking.peer_rank import PER_SHUFFLE, notebook_weighted_elo

__all__ = [
    "Study", "Selection", "Ranking", "RANK_METHODS", "PEER_WEIGHT_MODES", "KINDS", "KIND_LABELS", "GOLD_KINDS",
    "DEFAULT_ELO_SHUFFLES", "DEFAULT_BOOTSTRAP", "DEFAULT_LC_ROUNDS", "PRELIMINARY_BATTLES", "GROUPINGS", "TINY_STUDY", "gold_judgments", "with_gold", "final_verdicts",
    "majority_of_votes", "poe_table", "select", "rank", "agreement_table", "aliases_of",
]

RANK_METHODS = ("winrate", "elo", "bt", "poe-gaussian", "poe-bt")
PEER_WEIGHT_MODES = ("none", "prd", "fixed-point")
KINDS = ("llm", "human", "debate", "adjudicator", "vote", "other")
GOLD_KINDS = ("debate", "adjudicator")
KIND_LABELS = {"llm": "LLM reviewers", "human": "Humans", "debate": "Debate gold", "adjudicator": "Debate gold",
               "vote": "Derived votes", "other": "Other judges"}
# Kind names accepted in a selection: the store's kinds, plus "gold" for debate + adjudicator.
_KIND_CHOICES = {"llm": ("llm",), "human": ("human",), "gold": GOLD_KINDS, "debate": ("debate",),
                 "adjudicator": ("adjudicator",), "vote": ("vote",), "other": ("other",)}
DEFAULT_ELO_SHUFFLES = 100   # Elo: mean over this many random battle orders (CLI and pages alike)
DEFAULT_BOOTSTRAP = 100      # bootstrap rounds of the 95% intervals (CLI and pages alike)
DEFAULT_LC_ROUNDS = 200      # bootstrap rounds (over instructions) of the length-controlled win rate's standard error
PRELIMINARY_BATTLES = 30     # a contestant with fewer battles is marked preliminary
TINY_STUDY = 50              # fewer judgments than this in a ranking: say the numbers are unreliable
CONSENSUS = "debate:consensus"  # the panel of debates whose panel is not recorded
_SELECTIONS_KEPT = 4  # selected judgment tables a Study keeps per revision (each may be a million rows)
_Z95 = 1.959963984540054


# ----------------------------------------------------------------------------- selection


@dataclass(frozen=True)
class Selection:
    """Which judgments a number is computed from.

    Attributes
    ----------
    judges : judge names, or prefixes ending in ``:`` (``human:``); None = no filter.
    kinds : judge kinds (``llm``, ``human``, ``gold`` = debate consensus and
        adjudications, ``debate``, ``adjudicator``, ``vote``, ``other``); None = all.
        With both ``judges`` and ``kinds``, a judgment must match both.
    contestants : only battles between these contestants; None = all.
    categories : only questions of these categories (a debate's scenario counts as its
        question's category); None = all.
    criteria : only these criteria (a verdict without one has criterion ``""``); None = all.
    turns : only these MT-Bench turns (a verdict without a turn counts as turn 1); None = all.
    final_only : keep only each judge's last-round verdict on a comparison (a debate
        agent's or discussion reviewer's final verdict, not its initial one); default True.
    repeated_votes : ``"majority"`` (default) reduces several votes of one judge on one
        comparison to their majority (ties when split evenly), as PRD's human majority;
        ``"each"`` counts every vote.
    common_contestants : keep only contestants that every chosen judge judged.
    """

    judges: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    contestants: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    criteria: tuple[str, ...] | None = None
    turns: tuple[int, ...] | None = None
    final_only: bool = True
    repeated_votes: str = "majority"
    common_contestants: bool = False

    def __post_init__(self) -> None:
        for name in ("judges", "kinds", "contestants", "categories", "criteria", "turns"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, str):
                    value = (value,)
                object.__setattr__(self, name, tuple(value))
        if self.kinds is not None:
            unknown = [k for k in self.kinds if k not in _KIND_CHOICES]
            if unknown:
                raise ValueError(f"kinds must be among {tuple(_KIND_CHOICES)}, got {unknown}")
        if self.repeated_votes not in ("majority", "each"):
            raise ValueError(f"repeated_votes must be 'majority' or 'each', got {self.repeated_votes!r}")


@dataclass(frozen=True)
class Ranking:
    """A leaderboard and how it was made (what :meth:`Study.leaderboard` returns).

    Attributes
    ----------
    table : one row per contestant, best first: ``model, score, rank, ci_low, ci_high,
        battles``, ``rank_worst`` when there are intervals (``rank`` is the best rank the
        intervals allow, the Arena rule; ``rank_worst`` the worst), ``preliminary`` (fewer battles than
        ``min_battles``, by default :data:`PRELIMINARY_BATTLES`); intervals NaN without
        bootstrap. Bradley-Terry adds ``sandwich_low, sandwich_high`` (the robust
        interval); style control ``plain_score, plain_rank, rank_change`` (plain
        Bradley-Terry on the same battles; ``rank_change`` > 0: the model rises once
        style is controlled); a baseline AlpacaEval's columns ``win_rate,
        standard_error, discrete_win_rate, n_wins, n_wins_base, n_draws, n_total,
        avg_length, lc_win_rate, lc_standard_error`` (percent).
    method, peer_weights : as asked.
    score_label : what the score is (``win rate``, ``Elo``, ...).
    verdicts : ``"hard"`` (winners) or ``"soft"`` (the judges' probabilities ``p_a``
        as fractional wins where given).
    judges : the judges whose verdicts were counted.
    n_judgments : verdicts counted.
    weights, history, iterations, converged : Peer Rank's reviewer weights (else None).
    left_out : chosen judges Peer Rank could not weigh (not contestants).
    warnings : sentences about what may mislead (mixed selections, tiny samples).
    style : style control's coefficients (feature -> ``coefficient`` in Elo points,
        intervals, ``probability_shift``), else None.
    baseline : the baseline view's description (``baseline``, ``difficulty``: how the
        instruction difficulty was had, ``lc_standard_error``: how it was computed).
    options : ``intervals``, ``reweight``, ``prior``, ``min_battles`` as used.
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

    def to_json(self) -> dict:
        """The JSON the CLI prints (``--format json``) and exports write.

        Style control adds ``"style": {feature: coefficient in Elo points}`` and
        ``"style_intervals"``; a baseline adds ``"baseline"`` (its description).
        """
        rows = [{k: _plain(row[k]) for k in self.table.columns} for _, row in self.table.iterrows()]
        out = {"leaderboard": rows, "method": self.method, "peer_weights": self.peer_weights,
               "verdicts": self.verdicts, "judgments": int(self.n_judgments), "judges": list(self.judges),
               "weights": None if self.weights is None else {k: float(v) for k, v in self.weights.items()},
               "warnings": list(self.warnings), "options": {k: _plain(v) for k, v in self.options.items()}}
        if self.style is not None:
            out["style"] = {str(f): float(v) for f, v in self.style["coefficient"].items()}
            out["style_intervals"] = {str(f): [_plain(lo), _plain(hi)] for f, lo, hi in
                                      zip(self.style.index, self.style["ci_low"], self.style["ci_high"])}
            out["style_probability_shift"] = {str(f): float(v) for f, v in self.style["probability_shift"].items()}
        if self.baseline is not None:
            out["baseline"] = dict(self.baseline)
        return out


def _plain(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


# --------------------------------------------------------------------------------- study


class Study:
    """One study of a :class:`peercore.store.Store`, as the CLI, the dashboard and exports see it.

    Parameters
    ----------
    store : the store.
    name : the study's name (StoreError listing the studies if it is missing).

    Examples
    --------
    >>> study = Study(Store(path), "prd")                                   # doctest: +SKIP
    >>> study.leaderboard(Selection(kinds=("llm",)), method="winrate").table  # doctest: +SKIP
    """

    def __init__(self, store, name: str) -> None:
        store.study_id(name)  # raises with the list of studies when missing
        self.store = store
        self.name = name
        self._cache: dict = {}
        self._locks: dict = {}

    # -------------------------------------------------------------------- the store

    @property
    def revision(self) -> int:
        return self.store.revision(self.name)

    def _memo(self, key, make):
        stamp = self.revision
        entry = self._cache.get(key)
        if entry is None or entry[0] != stamp:
            # One computation per key at a time: a page's script and its background job (the
            # Leaderboard's bootstrap) ask for the same tallies at once; the second waits for the first.
            with self._locks.setdefault(key, threading.RLock()):
                entry = self._cache.get(key)
                if entry is None or entry[0] != stamp:
                    entry = (stamp, make())
                    self._cache[key] = entry
        return entry[1]

    def _all_judgments(self) -> pd.DataFrame:
        """Every stored verdict, unparsed replies included (``valid``, ``raw``, ``vote``): read once per revision.

        The valid verdicts, the health check and the meta-evaluation's table are all cut
        from this one frame (one read of a million rows instead of three), read column by
        column (:func:`peercore.aggregates.read_verdicts`, the frame ``Store.judgments`` gives).
        """
        from peercore import aggregates

        return self._memo("all_judgments", lambda: aggregates.read_verdicts(self.store, self.name,
                                                                               include_invalid=True, with_vote=True))

    def stored_judgments(self) -> pd.DataFrame:
        """The study's valid verdicts as stored (canonical, plus ``vote``)."""
        def make():
            frame = self._all_judgments()
            valid = frame["valid"].to_numpy() == 1
            if not valid.all():
                frame = frame[valid].reset_index(drop=True)
            out = frame.drop(columns=["valid", "raw"])
            out["winner"] = out["winner"].astype(frame["winner"].dtype)
            return out
        return self._memo("judgments", make)

    def verdict_counts(self) -> pd.DataFrame:
        """Verdicts per judge, pair and validity, counted in the store (:func:`peercore.aggregates.verdict_counts`)."""
        from peercore import aggregates

        return self._memo("verdict_counts", lambda: aggregates.verdict_counts(self.store, self.name,
                                                                               tally=self.verdict_tally()))

    def verdict_tally(self) -> pd.DataFrame:
        """Verdicts per judge, ordered pair, validity and winner, counted in the store
        (:func:`peercore.aggregates.verdict_tally`; one index scan, no verdict read)."""
        from peercore import aggregates

        return self._memo("verdict_tally", lambda: aggregates.verdict_tally(self.store, self.name))

    def _filled(self) -> set[str]:
        """The optional verdict columns the study has ever filled (:func:`peercore.aggregates.filled_columns`),
        with ``vote`` and ``round`` only when some verdict has a non-zero one (:func:`~peercore.aggregates.column_used`)."""
        from peercore import aggregates

        def make():
            filled = aggregates.filled_columns(self.store, self.name)
            return {c for c in filled if c not in ("vote", "round") or aggregates.column_used(self.store, self.name, c)}
        return self._memo("filled", make)

    def has_probabilities(self) -> bool:
        """Whether any valid stored verdict carries ``p_a`` (counted in the store)."""
        from peercore import aggregates

        def make():
            loaded = self._loaded()
            if loaded is not None:
                return bool(loaded.loc[loaded["valid"].to_numpy() == 1, "p_a"].notna().any())
            return aggregates.has_probabilities(self.store, self.name, counts=self._fresh("verdict_counts"))
        return self._memo("has_p", make)

    def judges(self) -> pd.DataFrame:
        """Every judge: ``name, kind, origin, base, model_alias`` (the one alias rule), ``n_judgments``,
        ``n_invalid``, ``settings``."""
        def make():
            frame = self._judge_rows()
            aliases = self.aliases()
            return frame.assign(model_alias=[aliases.get(n) for n in frame["name"]])
        return self._memo("judges", make)

    def _judge_rows(self) -> pd.DataFrame:
        """:meth:`Store.judges`; from the verdict counts when this revision's are in hand (no second scan)."""
        from peercore import aggregates

        def make():
            counts = self._fresh("verdict_counts")
            loaded = self._loaded()
            if counts is None and loaded is not None:  # verdicts per judge from the table in hand
                counts = loaded.groupby([loaded["judge"].astype(str), loaded["valid"]], observed=True).size()
                counts = counts.rename("n").reset_index()
            if counts is None:  # from the store's tally (an index scan; every page needs it anyway)
                counts = self.verdict_counts()
            return aggregates.judges(self.store, self.name, counts=counts)
        return self._memo("judge_rows", make)

    def _fresh(self, key):
        """What the memo ``key`` holds for this revision, or None (nothing is computed)."""
        entry = self._cache.get(key)
        return entry[1] if entry is not None and entry[0] == self.revision else None

    def kinds(self) -> dict[str, str]:
        """judge -> kind, from the store (registered kind, else the name's prefix)."""
        frame = self._judge_rows()
        out = dict(zip(frame["name"], frame["kind"]))
        for judge in self.gold()["judge"].unique():
            out.setdefault(judge, "adjudicator" if judge.startswith("adjudicator:") else "debate")
        return out

    def contestants(self) -> list[str]:
        """Every contestant: in a verdict or with an answer."""
        from peercore import aggregates

        def make():
            loaded = self._loaded()
            if loaded is None:  # counted in the store: no need to read every verdict for a list of names
                return aggregates.contestants(self.store, self.name, counts=self.verdict_counts())
            valid = loaded[loaded["valid"].to_numpy() == 1]
            names = set(pd.unique(valid["model_a"])) | set(pd.unique(valid["model_b"]))
            return sorted(map(str, names | aggregates.answer_models(self.store, self.name)))
        return self._memo("contestants", make)

    def _loaded(self) -> pd.DataFrame | None:
        """Every stored verdict if this revision's table has been read already, else None (nothing is read)."""
        return self._fresh("all_judgments")

    def aliases(self) -> dict[str, str]:
        """judge -> the contestant it is (:func:`peercore.judges.model_of`, one rule everywhere)."""
        def make():
            stored = self.store.judge_aliases(self.name)
            names = self._judge_rows()["name"]
            contestants = self.contestants()
            out = {}
            for judge in names:
                model = model_of(judge, contestants, stored)
                if model is not None:
                    out[judge] = model
            return out
        return self._memo("aliases", make)

    def judge_families(self) -> dict[str, str]:
        """judge -> the judge it is apart from its criterion (ScaleEval Table 5 rows).

        Runs of one configuration under varied criteria (``helpfulness``,
        ``helpfulness/gibberish`` ...) are distinct judges (a judge is its whole
        configuration, criterion included); for the criteria-variation table they are
        one judge read under several rubrics. The family is named after its shortest
        member name (the plain one, when it exists).
        """
        def make():
            frame = self._judge_rows()
            keys: dict[str, str] = {}
            for name, settings in zip(frame["name"], frame["settings"]):
                if settings:
                    rest = {k: v for k, v in settings.items() if k not in ("criterion", "rubric_version")}
                    keys[name] = judge_fingerprint(rest)
            members: dict[str, list[str]] = {}
            for name, key in keys.items():
                members.setdefault(key, []).append(name)
            return {name: min(members[key], key=lambda n: (len(n), n)) for name, key in keys.items()}
        return self._memo("families", make)

    def counts(self) -> dict[str, int]:
        """The study's counts, one definition for every page and command.

        ``judgments`` counts valid verdicts; ``invalid_judgments`` the replies kept
        with no readable verdict (shown as "+N unparsed"); the rest as
        :meth:`peercore.store.Store.summary`.
        """
        from peercore import aggregates

        return self._memo("counts", lambda: aggregates.summary(self.store, self.name, counts=self.verdict_counts()))

    # ---------------------------------------------------------------------- gold

    def panels(self) -> list[str]:
        """The debate panels (consensus judges), most debates first."""
        debates = self._debates()
        debates = debates[debates["kind"] == "debate"]
        if len(debates) == 0:
            return []
        counts = debates["panel"].replace("", CONSENSUS).value_counts()
        return sorted(counts.index, key=lambda p: (-counts[p], p))

    def _debates(self) -> pd.DataFrame:
        return self._memo("debates", lambda: self.store.debates(self.name))

    def gold(self, panel: str | None = None) -> pd.DataFrame:
        """The ScaleEval gold set as canonical judgments (:func:`gold_judgments`), of one panel or all."""
        def make():
            return gold_judgments(self._debates(), self.store.adjudications(self.name))
        gold = self._memo("gold", make)
        if panel is None:
            return gold
        debates = self._debates()
        ids = set(debates.loc[debates["panel"].replace("", CONSENSUS) == panel, "id"])
        return gold[gold["debate_id"].isin(ids)].reset_index(drop=True)

    def rankable(self) -> pd.DataFrame:
        """Stored verdicts plus the gold rows not stored as verdicts (:func:`with_gold`)."""
        return self._memo("rankable", lambda: with_gold(self.stored_judgments(), self.gold()))

    def rankable_judges(self) -> list[str]:
        """The judges of :meth:`rankable` (sorted), from the store's counts: no verdict is read.

        The judges of valid stored verdicts plus the gold judges :func:`with_gold` adds.
        """
        def make():
            loaded = self._fresh("rankable")
            if loaded is not None:
                return sorted(map(str, pd.unique(loaded["judge"])))
            tally = self.verdict_tally()
            stored = set(tally.loc[tally["valid"].to_numpy() == 1, "judge"].astype(str))
            return sorted(stored | self._gold_extra_judges(stored))
        return self._memo("rankable_judges", make)

    def _gold_extra_judges(self, stored: set[str]) -> set[str]:
        """The gold judges :func:`with_gold` adds to verdicts whose judges are ``stored``."""
        gold = set(self.gold()["judge"].astype(str)) - stored
        if any(j.startswith("debate:") for j in stored):
            gold.discard(CONSENSUS)
        return gold

    # ----------------------------------------------------------------- selection

    def judgments(self, selection: Selection | None = None, *, include_invalid: bool = False) -> pd.DataFrame:
        """The judgments a selection picks (canonical; ``valid``/``raw`` added with ``include_invalid``).

        Raises
        ------
        ValueError
            If a judge name or prefix matches no judge (the judges are listed).
        """
        selection = selection or Selection()
        key = ("selected", selection, include_invalid)
        stamp = self.revision
        entry = self._cache.get(key)
        if entry is not None and entry[0] == stamp:
            self._cache[key] = self._cache.pop(key)  # most recently used last
            return entry[1]
        out = self._judgments(selection, include_invalid=include_invalid)
        self._cache[key] = (stamp, out)
        selected = [k for k in self._cache if isinstance(k, tuple) and k and k[0] == "selected"]
        for old in selected[:-_SELECTIONS_KEPT]:  # a few selections per study, not every one ever asked
            del self._cache[old]
        return out

    def _judgments(self, selection: Selection, *, include_invalid: bool) -> pd.DataFrame:
        if include_invalid:
            frame = self._all_judgments()
            gold = self.gold()
            if len(gold):
                extra = with_gold(frame[list(COLUMNS) + ["vote"]], gold)
                extra = extra[~extra["judge"].isin(set(frame["judge"]))]
                frame = pd.concat([frame, extra.assign(valid=1, raw=None)], ignore_index=True)
        else:
            frame = self.rankable()
        return self._select(frame, selection)

    def _select(self, frame: pd.DataFrame, selection: Selection) -> pd.DataFrame:
        groups = self.question_groups() if selection.categories is not None else None
        if selection.repeated_votes == "majority" and "vote" in frame.columns and not self._may_repeat():
            # No judge voted twice on one comparison: the majority of each judge's votes is its
            # one vote, so skip grouping a million rows to find that out (same rows, same order).
            out = select(frame, replace(selection, repeated_votes="each"), kinds=self.kinds(), groups=groups)
            return out.drop(columns=["vote"])
        # The store numbers every repeat of a comparison (vote > 0); gold rows are not numbered.
        return select(frame, selection, kinds=self.kinds(), groups=groups, numbered_votes=len(self.gold()) == 0)

    def _may_repeat(self) -> bool:
        """Whether a judge may hold several votes on one comparison (stored repeated votes, or gold rows)."""
        from peercore import aggregates

        return self._memo("may_repeat", lambda: "vote" in self._filled() or len(self.gold()) > 0)

    def question_groups(self) -> dict[str, str]:
        """question_id -> its category, or its debates' scenario; ``"(none)"`` when unknown."""
        def make():
            out: dict[str, str] = {}
            questions = self.store.questions(self.name)
            for qid, category in zip(questions["question_id"], questions["category"]):
                out[str(qid)] = category or "(none)"
            debates = self._debates()
            for qid, scenario in zip(debates["question_id"], debates["scenario"]):
                if scenario:
                    out[str(qid)] = scenario
            return out
        return self._memo("groups", make)

    # ----------------------------------------------------------------- rankings

    def leaderboard(self, selection: Selection | None = None, *, method: str = "bt", peer_weights: str = "none",
                    weights_from: str = "winrate", bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                    elo_shuffles: int = DEFAULT_ELO_SHUFFLES, soft: bool = False,
                    weight_normalisation: str = "sum", baseline: str | None = None, controls: Sequence[str] = (),
                    intervals: str = "bootstrap", reweight: bool = False, prior: float | None = None,
                    min_battles: int = PRELIMINARY_BATTLES, style_reg: float | None = None,
                    lc_rounds: int = DEFAULT_LC_ROUNDS, progress=None) -> Ranking:
        """A leaderboard from the selected judgments.

        Parameters
        ----------
        selection : which judgments count (default: every judge, final verdicts,
            majority of repeated votes).
        method : ``winrate`` (PRD eq. 1), ``elo`` (PRD; mean over ``elo_shuffles``
            orders), ``bt`` (Bradley-Terry on the Elo scale, Chatbot Arena),
            ``poe-gaussian`` / ``poe-bt`` (Liusie et al. Product of Experts).
        peer_weights : ``none``, ``prd`` (PRD's 5 min-max iterations) or
            ``fixed-point``: judges weighted by their own score as contestants; judges
            that are no contestant are left out (said in ``left_out`` and a warning).
        weights_from : the score Peer Rank's weights come from (``winrate``, as PRD's
            Table 2 for its weighted win rates; ``elo``; ``bt``), or with ``method="elo"``
            and ``peer_weights="prd"``, ``elo-per-shuffle``: PRD's notebook procedure for
            the weighted Elo (weights from Elo recomputed inside every shuffle, cells 40-41).
        bootstrap, seed : bootstrap rounds for 95% intervals (default 100, as the page; 0 = none)
            and the seed.
        soft : count the judges' probabilities ``p_a`` as fractional wins where given.
        weight_normalisation : Elo with peer weights (PRD Appendix E), ``sum`` or ``mean``.
        baseline : with ``method="winrate"``: AlpacaEval's columns for every model
            against this model, including the length-controlled win rate from the
            stored answers' lengths (:func:`peercore.ranking.alpacaeval.baseline_win_rates`).
        controls : with ``method="bt"``: style control (``length``, ``markdown``) from the
            stored answers (:mod:`peercore.ranking.contextual`), beside plain
            Bradley-Terry on the same battles.
        intervals : Bradley-Terry: ``bootstrap`` (default) or ``sandwich`` (robust), the
            interval that sets the ranks; the sandwich interval is always reported.
        reweight : Bradley-Terry: LMArena's :math:`1/\\max(n_{pair}, 50)` battle weights.
        prior : Bradley-Terry: standard deviation (Elo points) of a weak prior on the
            ratings, e.g. 200.
        min_battles : fewer battles than this marks a contestant preliminary.
        style_reg : style control's ridge on arena-rank's scale (default
            :data:`peercore.ranking.contextual.DEFAULT_REG`).
        lc_rounds : bootstrap rounds of the length-controlled win rate's standard error.
        progress : called with the share (0..1) of Bradley-Terry's bootstrap done (the
            dashboard's background job shows it); other methods do not call it.

        Raises
        ------
        ValueError
            On an unknown method, a selection that matches no judgment, Peer Rank
            with fewer than two judges that are contestants, or an option the method
            does not take.
        """
        selection = selection or Selection()
        if method == "bt" and peer_weights == "none" and not soft and baseline is None and not controls \
                and not reweight:
            # Bradley-Terry and its bootstrap depend on the battles only through their pair tally:
            # counted in the store, the million verdicts need not be read (same table, same intervals).
            tallied = self._memo(("tallied", selection), lambda: self._tallied_battles(selection))
            if tallied is not None:
                battles, warnings = tallied
                judges = [battles.judges[k] for k in np.unique(battles.judge)]
                flagged = self.flagged_judges(judges) if len(battles) else {}
                return rank_battles(battles, mixed_warnings=warnings, bootstrap=bootstrap, seed=seed,
                                    flagged=flagged, intervals=intervals, prior=prior, min_battles=min_battles,
                                    progress=progress)
        chosen = self.judgments(selection)
        flagged = self.flagged_judges(chosen["judge"].unique()) if len(chosen) else {}
        answers = self._memo("answers", lambda: self.store.answers(self.name)) if (baseline or controls) else None
        return rank(chosen, method=method, peer_weights=peer_weights, weights_from=weights_from,
                    aliases=self.aliases(), bootstrap=bootstrap, seed=seed, elo_shuffles=elo_shuffles, soft=soft,
                    weight_normalisation=weight_normalisation, flagged=flagged, baseline=baseline,
                    controls=controls, answers=answers, intervals=intervals, reweight=reweight, prior=prior,
                    min_battles=min_battles, style_reg=style_reg, lc_rounds=lc_rounds, progress=progress)

    def _tallied_battles(self, selection: Selection):
        """The battles ``selection`` picks, built from the store's pair tally, and the mixed-selection warnings;
        None when the selection needs the verdicts themselves.

        The tally answers when the selection filters by judge, kind and contestants only,
        no chosen judge is gold (debate consensus, adjudications: not stored as verdicts),
        and neither final verdicts nor majorities of repeated votes change anything (no
        stored debate rounds, no stored repeated votes). The battles are then the rows
        :meth:`judgments` would return, in another order, which Bradley-Terry and its
        bootstrap do not see (they work on the pair table and its sorted categories).

        Raises
        ------
        ValueError
            As :meth:`judgments`: a judge name or prefix that matches no judge.
        """
        from peercore.ranking._battles import CountedBattles

        filled = self._filled()
        if selection.categories is not None or selection.criteria is not None or selection.turns is not None:
            return None
        if "round" in filled and selection.final_only:
            return None
        tally = self.verdict_tally()
        tally = tally[tally["valid"].to_numpy() == 1]
        if "vote" in filled and selection.repeated_votes != "each":
            tally = self._majority_tally(tally)
        stored = set(tally["judge"].astype(str))
        names = pd.Series(sorted(stored | self._gold_extra_judges(stored)), dtype=object)
        keep = np.ones(len(names), dtype=bool)
        if selection.judges is not None:
            keep &= _judge_mask(names, selection.judges)
        if selection.kinds is not None:
            kinds = self.kinds()
            wanted = {k for choice in selection.kinds for k in _KIND_CHOICES[choice]}
            keep &= np.array([kinds.get(j, _prefix_kind(j)) in wanted for j in names], dtype=bool)
        chosen = set(names[keep])
        if chosen - stored:  # a gold judge: its rows are not in the store's verdicts
            return None
        rows = tally[tally["judge"].isin(chosen).to_numpy()]
        if selection.contestants is not None:
            allowed = set(selection.contestants)
            rows = rows[(rows["model_a"].isin(allowed) & rows["model_b"].isin(allowed)).to_numpy()]
        if selection.common_contestants and rows["judge"].nunique() >= 2:
            seen = [set(g["model_a"]) | set(g["model_b"]) for _, g in rows.groupby("judge", sort=False)]
            common = set.intersection(*seen)
            rows = rows[(rows["model_a"].isin(common) & rows["model_b"].isin(common)).to_numpy()]
        if len(rows) == 0:
            return CountedBattles((), np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0), (),
                                  np.zeros(0, np.intp), np.zeros(0, np.int64)), []
        judge_code, judges = pd.factorize(rows["judge"].astype(str), sort=True)
        both = pd.factorize(pd.concat([rows["model_a"], rows["model_b"]], ignore_index=True).astype(str), sort=True)
        models = [str(m) for m in both[1]]
        a, b = both[0][:len(rows)], both[0][len(rows):]
        per_judge = {}
        for k, name in enumerate(judges):
            mine = judge_code == k
            per_judge[str(name)] = {models[m] for m in np.unique(np.concatenate([a[mine], b[mine]]))}
        score = rows["winner"].map({"model_a": 1.0, "tie": 0.5, "model_b": 0.0}).to_numpy(dtype=float)
        battles = CountedBattles(models=tuple(models), a=a.astype(np.intp), b=b.astype(np.intp), score_a=score,
                                 judges=tuple(str(j) for j in judges), judge=judge_code.astype(np.intp),
                                 count=rows["n"].to_numpy(dtype=np.int64))
        warnings = _mixed_warnings(per_judge)
        return battles, warnings

    def position_and_swap(self, selection: Selection):
        """Position bias and swap consistency of the selected verdicts, from the store's counts and codes.

        ``(position, swap)``: :func:`peercore.bias.position_bias` and
        :func:`peercore.tallies.swap_consistency` of :meth:`judgments` ``(selection)``,
        computed from the majority-adjusted pair tally and the verdicts' integer codes
        (:func:`peercore.aggregates.verdict_codes`) without building the million-row
        table. None when the selection filters more than judges and kinds, or a chosen
        judge gave probabilities (``mean_p_a``), or the study has debate rounds: then
        compute from :meth:`judgments`.
        """
        from peercore import aggregates, bias, tallies

        if selection.contestants is not None or selection.common_contestants:
            return None
        tallied = self._memo(("tallied", selection), lambda: self._tallied_battles(selection))
        if tallied is None or len(tallied[0]) == 0:
            return None
        battles = tallied[0]
        chosen = [battles.judges[k] for k in np.unique(battles.judge)]
        tally = self.verdict_tally()
        if tally.loc[tally["judge"].isin(chosen).to_numpy(), "n_p"].sum() > 0:
            return None
        winner = np.where(battles.score_a == 1.0, "model_a", np.where(battles.score_a == 0.0, "model_b", "tie"))
        counts = pd.DataFrame({"judge": np.asarray(battles.judges, dtype=object)[battles.judge], "winner": winner,
                               "n": battles.count})
        position = bias.position_bias_from_counts(counts)
        codes = self._memo("verdict_codes", lambda: aggregates.verdict_codes(self.store, self.name))
        if codes is None:
            return None
        labels = self.store._labels(self.store.study_id(self.name))
        names = {int(code): str(text) for code, text in zip(labels.code.values(), labels.code.keys())}
        wanted = np.zeros(max(names, default=0) + 1, dtype=bool)
        wanted[[code for code, text in names.items() if text in set(chosen)]] = True
        keep = wanted[codes["judge"]]
        rows = {k: v[keep] for k, v in codes.items()}
        if selection.repeated_votes == "majority" and (rows["vote"] != 0).any():
            rows = _majority_codes(rows)
        order = sorted(names, key=lambda c: names[c])  # contestants numbered in the order of their names
        rank = np.zeros(len(wanted), dtype=np.int64)
        rank[order] = np.arange(len(order))
        judge_order = sorted(chosen)
        judge_index = np.zeros(len(wanted), dtype=np.int64)
        for k, name in enumerate(judge_order):
            judge_index[[c for c, t in names.items() if t == name]] = k
        swap = tallies.swap_consistency_from_codes(rows["question"], rank[rows["model_a"]], rank[rows["model_b"]],
                                                   judge_index[rows["judge"]], judge_order, rows["turn"],
                                                   rows["criterion"], rows["winner"])
        return position, swap

    def _majority_tally(self, tally: pd.DataFrame) -> pd.DataFrame:
        """The valid tally once each comparison's repeated votes count as their majority (:func:`majority_of_votes`).

        Only comparisons with repeated votes change (:func:`peercore.aggregates.repeated_votes`):
        their votes leave the tally and their majority (model_a, model_b or a tie when
        split evenly) enters it once.
        """
        from peercore import aggregates

        votes = self._memo("repeated_votes", lambda: aggregates.repeated_votes(self.store, self.name))
        votes = votes[votes.groupby("group")["group"].transform("size").to_numpy() > 1]
        if len(votes) == 0:
            return tally
        score = votes["winner"].map(_VOTE).to_numpy(dtype=float)
        total = pd.Series(score).groupby(votes["group"].to_numpy()).sum()
        first = votes.drop_duplicates("group").set_index("group")
        majority = first.assign(winner=np.where(total.reindex(first.index).to_numpy() > 0, "model_a",
                                                np.where(total.reindex(first.index).to_numpy() < 0, "model_b", "tie")))
        key = ["judge", "model_a", "model_b", "winner"]
        delta = pd.concat([votes[key].assign(d=-1), majority[key].assign(d=1)], ignore_index=True)
        delta = delta.astype({c: object for c in key}).groupby(key)["d"].sum()
        merged = tally.astype({c: object for c in key}).set_index(key)["n"]
        merged = merged.add(delta, fill_value=0)
        merged = merged[merged > 0].astype("int64").rename("n").reset_index()
        return merged.assign(valid=1)

    def leaderboards_by(self, selection: Selection | None = None, *, by: str = "category",
                        groups: Sequence | None = None, **options) -> "GroupedRanking":
        """One leaderboard per question category, criterion or turn, side by side (:func:`rank_by`).

        Parameters
        ----------
        selection : the judgments (its own ``categories`` / ``criteria`` / ``turns``
            filter still applies).
        by : ``category`` (a question's category, or its debates' scenario), ``criterion``
            or ``turn``.
        groups : which values of ``by`` (default: all, most judgments first).
        **options : as :meth:`leaderboard`.
        """
        selection = selection or Selection()
        chosen = self.judgments(selection)
        flagged = self.flagged_judges(chosen["judge"].unique()) if len(chosen) else {}
        if options.get("baseline") or options.get("controls"):
            options = dict(options, answers=self._memo("answers", lambda: self.store.answers(self.name)))
        return rank_by(chosen, by=by, groups=groups, question_groups=self.question_groups(), aliases=self.aliases(),
                       flagged=flagged, **options)

    # ----------------------------------------------------------------- judges' health

    def health(self, judges: Iterable[str] | None = None) -> pd.DataFrame:
        """:func:`peercore.bias.judge_health` of the study's LLM judges (or of ``judges``), invalid replies counted."""
        from peercore.bias import judge_health

        def make():
            kinds = self.kinds()
            if "round" not in self._filled():  # no debate rounds: every reply is final, the counts say it all
                from peercore.bias import judge_health_from_counts

                tally = self.verdict_tally()
                judge = tally["judge"].astype(str)
                is_llm = {j: kinds.get(j, _prefix_kind(j)) == "llm" for j in pd.unique(judge)}
                counts = tally[judge.map(is_llm).to_numpy(dtype=bool)]
                counts = counts.groupby(["judge", "valid", "winner"], dropna=False, sort=False)["n"].sum().reset_index()
                return judge_health_from_counts(counts)
            frame = self._all_judgments().drop(columns=["vote"])
            judge = frame["judge"].astype(str)
            is_llm = {j: kinds.get(j, _prefix_kind(j)) == "llm" for j in pd.unique(judge)}
            keep = judge.map(is_llm).to_numpy(dtype=bool)
            frame = frame[keep] if not keep.all() else frame
            frame = final_verdicts(frame.reset_index(drop=True)) if len(frame) else frame
            return judge_health(frame) if len(frame) else judge_health(frame.iloc[:0])
        table = self._memo("health", make)
        if judges is not None:
            table = table[table.index.isin(list(judges))]
        return table

    def flagged_judges(self, judges: Iterable[str] | None = None) -> dict[str, str]:
        """judge -> why it is flagged as carrying no information (:meth:`health`)."""
        table = self.health(judges)
        return {j: r for j, r, f in zip(table.index, table["reasons"], table["flagged"]) if f}

    # --------------------------------------------------------------- agreement

    def agreement(self, judge: str, reference: str, *, ties: str = "include", reference_mode: str = "majority",
                  unparsed: str = "miss", final_only: bool = True) -> pd.DataFrame:
        """Each judge ``judge`` names (a name, or a prefix ending in ``:``) against ``reference``.

        The reference never holds the judge's own verdicts (leave-one-out, as FastChat's
        human agreement does): with ``--judge human:expert_0 --reference human:`` the
        expert is compared with the *other* experts only, and ``--judge human:
        --reference human:`` gives each annotator's agreement with the rest.
        Unparsed judge verdicts count as misses by default (ScaleEval eq. 2).

        Returns
        -------
        DataFrame
            Indexed by judge: ``n``, ``agreement``, ``cohen_kappa``, ``fleiss_kappa``
            (the pair of judge and reference as two raters, as PRD Table 3 reports),
            ``unparsed``, ``reference_votes`` (median number of reference votes per
            matched comparison).

        Raises
        ------
        ValueError
            If ``judge`` or ``reference`` matches no judge.
        """
        everything = self.judgments(Selection(final_only=final_only, repeated_votes="each"), include_invalid=True)
        return agreement_table(everything, judge, reference, ties=ties, reference_mode=reference_mode,
                               unparsed=unparsed)


    def alpha(self, raters: Sequence[str], *, rounds: int = 1000, seed: int = 0, final_only: bool = True):
        """Krippendorff's alpha among the judges ``raters`` names (names, or prefixes ending in ``:``).

        Every vote counts (a rater's repeated votes on a presentation become its
        majority there), unparsed replies are left out; see
        :func:`peercore.agreement.krippendorff_alpha`.
        """
        from peercore.agreement import krippendorff_alpha

        chosen = self.judgments(Selection(judges=tuple(raters), final_only=final_only, repeated_votes="each"))
        return krippendorff_alpha(chosen, rounds=rounds, seed=seed)

    def judge_bias(self, selection: Selection | None = None, *, families: Mapping[str, str] | None = None,
                   level: float = 0.95):
        """The judge-bias model of the selected judges (:func:`peercore.bias.judge_bias_model`).

        Aliases are the study's (one rule); answer lengths come from the stored answers
        (no length term when the study has none).
        """
        from peercore.bias import judge_bias_model
        from peercore.ranking.style import battle_lengths

        selection = selection or Selection()
        answers = self._memo("answers", lambda: self.store.answers(self.name))
        if len(answers) == 0:  # no length term: the model sees battles only through their counts
            tallied = self._memo(("tallied", selection), lambda: self._tallied_battles(selection))
            if tallied is not None:
                battles = tallied[0]
                if len(battles) == 0:
                    raise ValueError("the selection holds no judgments")
                judges = {battles.judges[k] for k in np.unique(battles.judge)}
                aliases = {j: m for j, m in self.aliases().items() if j in judges}
                return judge_bias_model(battles, aliases=aliases, families=families, lengths=None, level=level)
        chosen = self.judgments(selection)
        if len(chosen) == 0:
            raise ValueError("the selection holds no judgments")
        lengths = battle_lengths(chosen, answers) if len(answers) else None
        if lengths is not None and lengths.isna().all(axis=None):
            lengths = None
        judges = set(map(str, pd.unique(chosen["judge"])))
        aliases = {j: m for j, m in self.aliases().items() if j in judges}
        return judge_bias_model(chosen, aliases=aliases, families=families, lengths=lengths, level=level)


# --------------------------------------------------------------------- pure helpers


def select(judgments: pd.DataFrame, selection: Selection, *, kinds: Mapping[str, str] | None = None,
           groups: Mapping[str, str] | None = None, numbered_votes: bool = False) -> pd.DataFrame:
    """The rows of a judgment table a :class:`Selection` picks (what :meth:`Study.judgments` does).

    Parameters
    ----------
    judgments : canonical judgments (optionally with ``vote``, ``valid``, ``raw``).
    selection : the selection.
    kinds : judge -> kind (from the store); judges missing from it take their name's
        prefix (``human:``, ``debate:``, ``adjudicator:``, ``vote:``, else ``llm``).
    groups : question_id -> category, for ``selection.categories``.
    numbered_votes : every repeated vote on a comparison has a non-zero ``vote`` (the
        store's numbering), so only comparisons with such a vote are grouped
        (:func:`majority_of_votes`); the result is the same.

    Raises
    ------
    ValueError
        If a judge name or prefix matches no judge (the judges are listed).
    """
    kinds = kinds or {}
    frame = judgments
    keep = np.ones(len(frame), dtype=bool)
    judge = frame["judge"].astype(str)
    if selection.judges is not None:
        keep &= _judge_mask(judge, selection.judges)
    if selection.kinds is not None:
        wanted = {k for choice in selection.kinds for k in _KIND_CHOICES[choice]}
        chosen_kind = {j: kinds.get(j, _prefix_kind(j)) in wanted for j in pd.unique(judge)}
        keep &= judge.map(chosen_kind).to_numpy(dtype=bool)
    if selection.contestants is not None:
        names = set(selection.contestants)
        keep &= (frame["model_a"].isin(names) & frame["model_b"].isin(names)).to_numpy(dtype=bool)
    if selection.categories is not None:
        keep &= group_labels(frame, "category", groups).isin(set(selection.categories)).to_numpy(dtype=bool)
    if selection.criteria is not None:
        keep &= frame["criterion"].fillna("").isin(set(selection.criteria)).to_numpy(dtype=bool)
    if selection.turns is not None:
        keep &= frame["turn"].fillna(1).astype(int).isin(set(selection.turns)).to_numpy(dtype=bool)
    out = frame[keep].reset_index(drop=True) if not keep.all() else frame
    if selection.final_only:
        out = final_verdicts(out)
    if selection.repeated_votes == "majority":
        out = majority_of_votes(out, numbered_votes=numbered_votes)
    if selection.common_contestants:
        out = _common_contestants(out)
    return out


def rank(chosen: pd.DataFrame, *, method: str = "bt", peer_weights: str = "none", weights_from: str = "winrate",
         aliases: Mapping[str, str] | None = None, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0,
         elo_shuffles: int = DEFAULT_ELO_SHUFFLES, soft: bool = False, weight_normalisation: str = "sum",
         flagged: Mapping[str, str] | None = None, baseline: str | None = None, controls: Sequence[str] = (),
         answers: pd.DataFrame | None = None, intervals: str = "bootstrap", reweight: bool = False,
         prior: float | None = None, min_battles: int = PRELIMINARY_BATTLES, style_reg: float | None = None,
         lc_rounds: int = DEFAULT_LC_ROUNDS, progress=None) -> Ranking:
    """Rank the contestants of already selected judgments (:meth:`Study.leaderboard` without the store).

    Parameters are those of :meth:`Study.leaderboard`; ``aliases`` (judge -> contestant)
    are needed by Peer Rank, ``flagged`` (judge -> reason) adds the health warnings,
    ``answers`` (``question_id, model, answer[, turn]``) give the answers' texts for
    style control and the baseline view's lengths (a judgment file's ``answer_a`` /
    ``answer_b`` or ``length_a`` / ``length_b`` columns are used instead when present).

    Raises
    ------
    ValueError
        On an unknown method, no judgments, Peer Rank with fewer than two judges that
        are contestants (named), an option the method does not take, or style control
        without answers.
    """
    _check_rank_options(method, peer_weights, baseline, controls, intervals, reweight, prior, min_battles)
    if weights_from == PER_SHUFFLE and (method != "elo" or peer_weights != "prd" or controls):
        raise ValueError(f"weights_from {PER_SHUFFLE!r} is PRD's notebook procedure for weighted Elo: it needs method "
                         f"'elo' and peer_weights 'prd', got method {method!r}, peer_weights {peer_weights!r}")
    if len(chosen) == 0:
        raise ValueError("the selection holds no judgments to rank")
    aliases = dict(aliases or {})
    warnings: list[str] = []
    left_out: list[str] = []
    if peer_weights != "none":
        judges = sorted(chosen["judge"].unique())
        left_out = [j for j in judges if j not in aliases]
        kept = [j for j in judges if j in aliases]
        if len(kept) < 2:
            raise ValueError(f"Peer Rank needs at least two chosen judges that are also contestants; "
                             f"{len(kept)} of {len(judges)} are ({', '.join(kept) or 'none'}). Mark which "
                             "contestant a judge is on the Studies page")
        if left_out:
            warnings.append(f"Peer Rank weighs reviewers by their own score as contestants, so judges that are no "
                            f"contestant are left out: {', '.join(left_out)}")
            chosen = chosen[chosen["judge"].isin(kept)].reset_index(drop=True)
    verdicts = "hard"
    if soft and baseline is None:
        if chosen["p_a"].notna().any():
            chosen = chosen.assign(**{SOFT_COLUMN: chosen["p_a"]})
            verdicts = "soft"
        else:
            warnings.append("soft verdicts were asked for, but no chosen judge gave probabilities (p_a): hard "
                            "verdicts were used")
    warnings += _mixed_selection_warnings(chosen)
    judges = tuple(sorted(chosen["judge"].unique()))
    options = {"intervals": intervals, "reweight": bool(reweight), "prior": prior, "min_battles": int(min_battles)}
    if baseline is not None:
        ranking = _baseline_ranking(chosen, baseline=baseline, answers=answers, lc_rounds=lc_rounds, seed=seed,
                                    judges=judges, warnings=warnings)
    elif controls:
        ranking = _style_ranking(chosen, controls=tuple(controls), answers=answers, bootstrap=bootstrap, seed=seed,
                                 intervals=intervals, reweight=reweight, prior=prior, style_reg=style_reg,
                                 verdicts=verdicts, judges=judges, warnings=warnings, peer_weights=peer_weights,
                                 aliases=aliases, weights_from=weights_from, elo_shuffles=elo_shuffles)
    elif weights_from == PER_SHUFFLE:
        ranking = _per_shuffle_elo_ranking(chosen, aliases=aliases, bootstrap=bootstrap, seed=seed,
                                           elo_shuffles=elo_shuffles, verdicts=verdicts, judges=judges)
    elif method.startswith("poe"):
        table = poe_table(chosen, method=method.replace("-", "_"))
        label = {"poe-gaussian": "PoE-Gaussian score", "poe-bt": "PoE-BT score"}[method]
        ranking = Ranking(table=table, method=method, peer_weights="none", score_label=label,
                          verdicts="soft" if chosen["p_a"].notna().any() else "hard", judges=judges,
                          n_judgments=len(chosen))
    else:
        from peercore.ranking.leaderboard import leaderboard

        board = leaderboard(chosen, method=method, peer_weights=peer_weights, aliases=aliases, bootstrap=bootstrap,
                            seed=seed, elo_shuffles=elo_shuffles, weight_normalisation=weight_normalisation,
                            weights_from=weights_from, **({"intervals": intervals, "reweight": reweight,
                                                           "prior": prior, "progress": progress}
                                                          if method == "bt" else {}))
        peer = board.peer_rank
        label = {"winrate": "win rate", "elo": "Elo", "bt": "Bradley-Terry (Elo scale)"}[method]
        ranking = Ranking(table=board.table, method=method, peer_weights=peer_weights, score_label=label,
                          verdicts=verdicts, judges=judges, n_judgments=board.n_judgments, weights=board.weights,
                          warnings=board.notes,
                          history=None if peer is None else peer.history,
                          iterations=None if peer is None else peer.iterations,
                          converged=None if peer is None else peer.converged)
    return _finished(ranking, n_judgments=len(chosen), judges=judges, warnings=warnings, left_out=left_out,
                     options=options, method=method, prior=prior, min_battles=min_battles, flagged=flagged)


def rank_battles(battles, *, mixed_warnings: Sequence[str] = (), bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                 flagged: Mapping[str, str] | None = None, intervals: str = "bootstrap", prior: float | None = None,
                 min_battles: int = PRELIMINARY_BATTLES, progress=None) -> Ranking:
    """:func:`rank` with ``method="bt"`` (no Peer Rank weights, hard verdicts, no reweighting) on encoded battles.

    What :meth:`Study.leaderboard` computes from the store's pair tally
    (:meth:`Study._tallied_battles`) instead of the selected verdicts: Bradley-Terry,
    its bootstrap and its sandwich intervals see battles only through their pair
    table, so the table, ranks, intervals and warnings are those of :func:`rank` on the
    same verdicts. ``mixed_warnings`` are :func:`_mixed_selection_warnings` of them.
    """
    from peercore.ranking.leaderboard import leaderboard

    _check_rank_options("bt", "none", None, (), intervals, False, prior, min_battles)
    if len(battles) == 0:
        raise ValueError("the selection holds no judgments to rank")
    judges = tuple(battles.judges[k] for k in np.unique(battles.judge))
    board = leaderboard(battles, method="bt", bootstrap=bootstrap, seed=seed, intervals=intervals, prior=prior,
                        progress=progress)
    ranking = Ranking(table=board.table, method="bt", peer_weights="none", score_label="Bradley-Terry (Elo scale)",
                      verdicts="hard", judges=judges, n_judgments=board.n_judgments, weights=None, warnings=board.notes)
    options = {"intervals": intervals, "reweight": False, "prior": prior, "min_battles": int(min_battles)}
    return _finished(ranking, n_judgments=len(battles), judges=judges, warnings=list(mixed_warnings), left_out=[],
                     options=options, method="bt", prior=prior, min_battles=min_battles, flagged=flagged)


def _finished(ranking: Ranking, *, n_judgments: int, judges, warnings: list[str], left_out, options: dict,
              method: str, prior, min_battles: int, flagged) -> Ranking:
    """The end of :func:`rank`: rank spread, preliminary flags and the warnings."""
    warnings = list(warnings)
    if "rank_worst" not in ranking.table.columns and ranking.table["ci_low"].notna().any():
        table = ranking.table
        low = table["ci_low"].where(table["ci_low"].notna(), table["score"])
        high = table["ci_high"].where(table["ci_high"].notna(), table["score"])
        ranking = replace(ranking, table=table.assign(rank_worst=rank_spread(low, high)["rank_worst"].to_numpy()))
    table = ranking.table.assign(preliminary=ranking.table["battles"] < min_battles)
    if n_judgments < TINY_STUDY:
        warnings.append(f"only {n_judgments} judgments: ratings from so few verdicts are unreliable (every "
                        "contestant is preliminary)" + ("" if prior is not None or method != "bt" else
                                                         "; a weak prior (--prior 200) keeps them near 1000"))
    elif table["preliminary"].any():
        few = table.loc[table["preliminary"], "model"].tolist()
        warnings.append(f"{', '.join(map(str, few[:8]))}{' ...' if len(few) > 8 else ''} "
                        f"{'has' if len(few) == 1 else 'have'} fewer than {min_battles} battles "
                        "(preliminary)")
    for judge, reason in (flagged or {}).items():
        if judge in judges:
            warnings.append(f"judge {judge} is flagged as carrying no information ({reason}); try the "
                            "label-probability classifier (--method auto) scored in both orders, or a stronger judge")
    return replace(ranking, table=table, left_out=tuple(left_out), warnings=tuple(ranking.warnings) + tuple(warnings),
                   options=options)


GROUPINGS = ("category", "criterion", "turn")


@dataclass(frozen=True)
class GroupedRanking:
    """Leaderboards of one selection split by question category, criterion or turn (:func:`rank_by`).

    Attributes
    ----------
    by : ``category``, ``criterion`` or ``turn``.
    rankings : group -> :class:`Ranking` (groups in the order asked, else most judgments first).
    counts : indexed by group: ``judgments`` and ``contestants`` counted in it.
    errors : group -> why it could not be ranked (e.g. one contestant only).
    """

    by: str
    rankings: dict
    counts: pd.DataFrame
    errors: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"by": self.by, "groups": {str(g): r.to_json() for g, r in self.rankings.items()},
                "counts": {str(g): {k: int(v) for k, v in row.items()} for g, row in self.counts.iterrows()},
                "errors": {str(g): e for g, e in self.errors.items()}}


def group_labels(judgments: pd.DataFrame, by: str, question_groups: Mapping[str, str] | None = None) -> pd.Series:
    """The group of every judgment: its question's category, its criterion or its turn (as text).

    A category comes from ``question_groups`` (question_id -> category, a study's), else
    from a ``category`` column (a file's); ``"(none)"`` when unknown. A verdict without a
    criterion is in ``"(none)"``; without a turn, in turn ``"1"``.

    Raises
    ------
    ValueError
        If ``by`` is not one of :data:`GROUPINGS`.
    """
    if by not in GROUPINGS:
        raise ValueError(f"by must be one of {GROUPINGS}, got {by!r}")
    if by == "category":
        if question_groups:
            qid = judgments["question_id"].astype(str)
            unique = pd.unique(qid)
            lookup = {q: question_groups.get(q, "(none)") for q in unique}
            return qid.map(lookup).astype(str)
        if "category" in judgments.columns:
            return judgments["category"].astype(object).where(judgments["category"].notna(), "(none)").astype(str)
        return pd.Series("(none)", index=judgments.index)
    if by == "criterion":
        return judgments["criterion"].astype(object).where(judgments["criterion"].fillna("") != "", "(none)").astype(str)
    return judgments["turn"].fillna(1).astype(int).astype(str)


def rank_by(chosen: pd.DataFrame, *, by: str = "category", groups: Sequence | None = None,
            question_groups: Mapping[str, str] | None = None, **options) -> GroupedRanking:
    """:func:`rank` separately within each group of :func:`group_labels` (leaderboards side by side).

    Parameters
    ----------
    chosen : the selected judgments.
    by, question_groups : see :func:`group_labels`.
    groups : which groups (as text; default all, most judgments first).
    **options : as :func:`rank` (the same method and options in every group).

    Raises
    ------
    ValueError
        If ``by`` is unknown, a requested group has no judgment, or no group could be ranked.
    """
    labels = group_labels(chosen, by, question_groups)
    sizes = labels.value_counts()
    order = sorted(sizes.index, key=lambda g: (-sizes[g], g)) if groups is None else [str(g) for g in groups]
    missing = [g for g in order if g not in sizes.index]
    if missing:
        raise ValueError(f"{by} {missing} has no judgment in the selection; {by}s are {sorted(sizes.index)}")
    rankings, errors, counts = {}, {}, []
    for group in order:
        part = chosen[(labels == group).to_numpy()].reset_index(drop=True)
        contestants = len(set(part["model_a"]) | set(part["model_b"]))
        counts.append((group, len(part), contestants))
        try:
            rankings[group] = rank(part, **options)
        except ValueError as error:
            errors[group] = str(error)
    if not rankings:
        raise ValueError(f"no {by} could be ranked: " + "; ".join(f"{g}: {e}" for g, e in errors.items()))
    table = pd.DataFrame(counts, columns=[by, "judgments", "contestants"]).set_index(by)
    return GroupedRanking(by=by, rankings=rankings, counts=table, errors=errors)


def _check_rank_options(method, peer_weights, baseline, controls, intervals, reweight, prior, min_battles) -> None:
    from peercore.ranking.bradley_terry import INTERVALS
    from peercore.ranking.style import CONTROLS

    if method not in RANK_METHODS:
        raise ValueError(f"method must be one of {RANK_METHODS}, got {method!r}")
    if peer_weights not in PEER_WEIGHT_MODES:
        raise ValueError(f"peer_weights must be one of {PEER_WEIGHT_MODES}, got {peer_weights!r}")
    if method.startswith("poe") and peer_weights != "none":
        raise ValueError("Product-of-Experts scores take no Peer Rank weights (peer_weights='none')")
    if intervals not in INTERVALS:
        raise ValueError(f"intervals must be one of {INTERVALS}, got {intervals!r}")
    if baseline is not None and method != "winrate":
        raise ValueError(f"a baseline goes with method 'winrate' (AlpacaEval's win rates against it), got method "
                         f"{method!r}")
    if baseline is not None and peer_weights != "none":
        raise ValueError("win rates against a baseline take no Peer Rank weights (peer_weights='none')")
    unknown = [c for c in controls if c not in CONTROLS]
    if unknown:
        raise ValueError(f"controls must be among {tuple(CONTROLS)}, got {unknown}")
    if controls and method != "bt":
        raise ValueError(f"style control is a Bradley-Terry model (method 'bt'), got method {method!r}")
    if method != "bt" and (intervals != "bootstrap" or reweight or prior is not None):
        raise ValueError(f"sandwich intervals, reweighting and a prior are Bradley-Terry options (method 'bt'); got "
                         f"method {method!r}")
    if isinstance(min_battles, bool) or not isinstance(min_battles, (int, np.integer)) or min_battles < 0:
        raise ValueError(f"min_battles must be a whole number >= 0, got {min_battles!r}")


def _baseline_ranking(chosen: pd.DataFrame, *, baseline: str, answers, lc_rounds: int, seed: int, judges,
                      warnings: list[str]) -> Ranking:
    """AlpacaEval's columns against ``baseline`` (:func:`peercore.ranking.alpacaeval.baseline_win_rates`)."""
    from peercore.ranking.alpacaeval import baseline_win_rates
    from peercore.ranking.style import battle_lengths

    lengths = battle_lengths(chosen, answers)
    result = baseline_win_rates(chosen, baseline=baseline, lengths=lengths, lc_rounds=lc_rounds, seed=seed)
    alpaca = result.table
    score = alpaca["win_rate"]
    half = _Z95 * alpaca["standard_error"].fillna(0.0)
    table = pd.DataFrame({"model": alpaca["model"], "score": score, "ci_low": score - half, "ci_high": score + half,
                          "battles": alpaca["n_total"].astype(int)})
    spread = rank_spread(table["ci_low"], table["ci_high"])
    table.insert(2, "rank", spread["rank"].to_numpy())
    table["rank_worst"] = spread["rank_worst"].to_numpy()
    table = pd.concat([table, alpaca.drop(columns=["model"])], axis=1)
    if result.difficulty == "no lengths":
        warnings.append("no answer lengths (import the answers, or give answer_a / answer_b or length_a / length_b "
                        "columns): avg_length and the length-controlled win rate are empty")
    soft = bool(chosen["p_a"].notna().any())
    return Ranking(table=table.reset_index(drop=True), method="winrate", peer_weights="none",
                   score_label=f"win rate vs {baseline} (%)", verdicts="soft" if soft else "hard", judges=judges,
                   n_judgments=int(alpaca.loc[alpaca["model"] != baseline, "n_total"].sum()),
                   baseline=result.describe())


def _per_shuffle_elo_ranking(chosen: pd.DataFrame, *, aliases, bootstrap: int, seed: int, elo_shuffles: int, verdicts,
                             judges) -> Ranking:
    """PRD's notebook weighted Elo: weights from Elo inside every shuffle
    (:func:`peercore.ranking.peer_rank.notebook_weighted_elo`), ranked as the other methods."""
    result = notebook_weighted_elo(chosen, aliases=aliases, shuffles=elo_shuffles, seed=seed, rounds=bootstrap)
    return Ranking(table=_ranked(result.table.rename(columns={"elo": "score"})), method="elo", peer_weights="prd",
                   score_label="Elo (PRD notebook: weights from Elo within each shuffle)", verdicts=verdicts,
                   judges=judges, n_judgments=len(chosen), weights=result.weights, history=result.history,
                   iterations=result.iterations, converged=None)


def _style_ranking(chosen: pd.DataFrame, *, controls, answers, bootstrap, seed, intervals, reweight, prior, style_reg,
                   verdicts, judges, warnings: list[str], peer_weights, aliases, weights_from, elo_shuffles) -> Ranking:
    """Style-controlled Bradley-Terry beside plain Bradley-Terry on the same battles (Chatbot Arena)."""
    from peercore.ranking._battles import encode
    from peercore.ranking.bradley_terry import bradley_terry_intervals
    from peercore.ranking.contextual import DEFAULT_REG, contextual_bradley_terry
    from peercore.ranking.style import features_for_controls, style_features

    names = features_for_controls(controls)
    features = style_features(chosen, answers, features=names)
    known = features.notna().all(axis=1).to_numpy()
    if not known.any():
        raise ValueError("style control needs both answers of a battle; none of the chosen battles has them (import "
                         "the answers, or give answer_a / answer_b columns)")
    if not known.all():
        warnings.append(f"{int((~known).sum()):,} of {len(known):,} battles lack an answer's text and are left out of "
                        "both the plain and the style-controlled fit")
        chosen = chosen[known].reset_index(drop=True)
        features = features[known].reset_index(drop=True)
    weights = None
    peer = None
    if peer_weights != "none":
        from peercore.ranking.peer_rank import fixed_point_weights, prd_weights

        make = prd_weights if peer_weights == "prd" else fixed_point_weights
        peer = make(chosen, aliases=aliases, method=weights_from, elo_shuffles=elo_shuffles, seed=seed)
        weights = peer.weights.to_dict()
    battles = encode(chosen)  # encoded once for both fits
    kind = "bootstrap" if intervals == "bootstrap" else "sandwich"
    styled = contextual_bradley_terry(battles, features, reg=DEFAULT_REG if style_reg is None else style_reg,
                                      rounds=bootstrap if kind == "bootstrap" else 0, seed=seed, intervals=kind,
                                      weights=weights, reweight=reweight, prior=prior)
    plain = bradley_terry_intervals(battles, rounds=bootstrap if kind == "bootstrap" else 0, seed=seed,
                                    intervals=kind, weights=weights, reweight=reweight, prior=prior)
    t = styled.table
    table = pd.DataFrame({"model": t.index, "score": t["rating"].to_numpy(), "rank": t["rank"].to_numpy(),
                          "ci_low": t["ci_low"].to_numpy(), "ci_high": t["ci_high"].to_numpy(),
                          "battles": t["battles"].astype(int).to_numpy(), "sandwich_low": t["sandwich_low"].to_numpy(),
                          "sandwich_high": t["sandwich_high"].to_numpy(), "rank_worst": t["rank_worst"].to_numpy()})
    table["plain_score"] = plain["rating"].reindex(t.index).to_numpy()
    table["plain_rank"] = plain["rank"].reindex(t.index).to_numpy()
    table["rank_change"] = table["plain_rank"] - table["rank"]
    table = table.sort_values(["rank", "score", "model"], ascending=[True, False, True], kind="stable")
    label = f"Bradley-Terry, style-controlled ({' + '.join(controls)})"
    return Ranking(table=table.reset_index(drop=True), method="bt", peer_weights=peer_weights, score_label=label,
                   verdicts=verdicts, judges=judges, n_judgments=len(chosen),
                   weights=None if peer is None else peer.weights, style=styled.coefficients,
                   history=None if peer is None else peer.history,
                   iterations=None if peer is None else peer.iterations,
                   converged=None if peer is None else peer.converged)


def agreement_table(judgments: pd.DataFrame, judge: str, reference: str, *, ties: str = "include",
                    reference_mode: str = "majority", unparsed: str = "miss") -> pd.DataFrame:
    """Each judge matching ``judge`` against the reference judges, never against its own votes.

    See :meth:`Study.agreement`; ``judgments`` may carry ``valid`` (0 = unparsed reply).

    Raises
    ------
    ValueError
        If ``judge`` or ``reference`` matches no judge.
    """
    from peercore.agreement import agreement, match_reference

    if "valid" not in judgments.columns:
        judgments = judgments.assign(valid=judgments["winner"].notna().astype(int))
    names = judgments["judge"].astype(str)
    judged = judgments[_judge_mask(names, [judge])]
    references = judgments[_judge_mask(names, [reference])]
    references = references[references["valid"] == 1]
    if len(references) == 0:
        raise ValueError(f"reference {reference!r} has no readable verdict")
    rows = []
    for name in sorted(judged["judge"].unique()):
        own = judged[judged["judge"] == name]
        others = references[references["judge"] != name]  # leave-one-out
        if len(others) == 0:
            rows.append((name, 0, math.nan, math.nan, math.nan, 0, 0.0))
            continue
        result = agreement(own, others[list(COLUMNS)], ties=ties, reference_mode=reference_mode, unparsed=unparsed)
        pairs = match_reference(own[list(COLUMNS)], others[list(COLUMNS)], reference_mode="votes")
        votes = pairs.groupby(["question_id", "model_a", "model_b"], dropna=False, sort=False).size() \
            if len(pairs) else pd.Series(dtype=int)
        rows.append((name, result.n, result.agreement, result.cohen_kappa, result.fleiss_kappa, result.unparsed,
                     float(np.median(votes)) if len(votes) else 0.0))
    return pd.DataFrame(rows, columns=["judge", "n", "agreement", "cohen_kappa", "fleiss_kappa", "unparsed",
                                       "reference_votes"]).set_index("judge")


def aliases_of(judgments: pd.DataFrame, stored: Mapping[str, str] | None = None) -> dict[str, str]:
    """judge -> contestant for the judges of a table that are contestants (:func:`peercore.judges.model_of`)."""
    contestants = {str(m) for m in pd.unique(judgments["model_a"])} | {str(m) for m in pd.unique(judgments["model_b"])}
    out = {}
    for judge in (str(j) for j in pd.unique(judgments["judge"])):
        model = model_of(judge, contestants, stored)
        if model is not None:
            out[judge] = model
    return out


def _prefix_kind(name: str) -> str:
    prefix = name.split(":", 1)[0] if ":" in name else ""
    return prefix if prefix in ("human", "debate", "adjudicator", "vote") else "llm"


def _judge_mask(judge: pd.Series, names: Sequence[str]) -> np.ndarray:
    """Rows whose judge is one of ``names`` (a name ending in ``:`` is a prefix).

    Raises
    ------
    ValueError
        If a name or prefix matches no judge (the judges present are listed).
    """
    keep = np.zeros(len(judge), dtype=bool)
    for name in names:
        match = (judge.str.startswith(name) if name.endswith(":") else judge == name).to_numpy(dtype=bool)
        if not match.any():
            raise ValueError(f"judge {name!r} matches no judge; judges are {sorted(judge.unique())}")
        keep |= match
    return keep


def final_verdicts(judgments: pd.DataFrame) -> pd.DataFrame:
    """Each judge's last-round verdicts on each comparison (debates and discussions).

    A debate agent gives an initial verdict (round empty) and, after the debate, a final
    one (round = the last round); a PRD reviewer likewise before and after a
    discussion. Counting both counts one judge twice on one pair. Rows are grouped by
    (question_id, model_a, model_b, judge, criterion, turn) and only those of the
    highest round are kept; judgments without rounds are all kept.
    """
    if len(judgments) == 0 or judgments["round"].isna().all():
        return judgments
    rounds = judgments["round"].fillna(0).astype("int64")
    keys = [judgments[c].astype(str).fillna("") for c in ("question_id", "model_a", "model_b", "judge")]
    keys += [judgments["criterion"].fillna("").astype(str), judgments["turn"].fillna(0).astype("int64").astype(str)]
    group = pd.Series(list(zip(*keys)), index=judgments.index)
    top = rounds.groupby(group).transform("max")
    return judgments[(rounds == top).to_numpy()].reset_index(drop=True)


_VOTE = {"model_a": 1, "tie": 0, "model_b": -1}


def majority_of_votes(judgments: pd.DataFrame, *, numbered_votes: bool = False) -> pd.DataFrame:
    """One verdict per judge and comparison: the majority of its repeated votes (PRD's human majority).

    Votes of one judge on the same (question_id, model_a, model_b, criterion, turn,
    round) are combined: the winner with more votes wins, a tie when split evenly
    (ties count 0); ``p_a`` is their mean. Judgments without repeated votes come back
    unchanged (the ``vote`` column, if any, is dropped); extra columns (a file's answer
    texts) are kept from the first vote.
    """
    frame = judgments.drop(columns=["vote"], errors="ignore")
    if len(frame) == 0:
        return frame
    key = ["question_id", "model_a", "model_b", "judge", "criterion", "turn", "round"]
    if numbered_votes and "vote" in judgments.columns:
        # With ``numbered_votes`` (the store numbers each repeat of a comparison 1, 2, ...) a comparison
        # can repeat only on a question where some vote is non-zero: group those rows, the rest are single.
        vote = pd.to_numeric(judgments["vote"], errors="coerce").fillna(0).to_numpy()
        questions = judgments["question_id"].iloc[np.flatnonzero(vote != 0)].unique()
        maybe = judgments["question_id"].isin(questions).to_numpy(dtype=bool)
        group = np.arange(len(frame), dtype=np.int64)
        if maybe.any():
            rows = np.flatnonzero(maybe)
            group[rows] = len(frame) + _row_groups(frame.iloc[rows], key)
        group = pd.factorize(group)[0].astype(np.int64)
    else:
        group = _row_groups(frame, key)
    sizes = np.bincount(group)
    duplicated = sizes[group] > 1
    if not duplicated.any():
        return frame
    repeated_rows = np.flatnonzero(duplicated)
    repeated_group = group[repeated_rows]
    score = frame["winner"].iloc[repeated_rows].map(_VOTE).to_numpy(dtype=float)
    n_groups = len(sizes)
    total = np.bincount(repeated_group, score, minlength=n_groups)
    p = frame["p_a"].to_numpy(dtype=float)[repeated_rows]
    given = ~np.isnan(p)
    p_sum = np.bincount(repeated_group[given], p[given], minlength=n_groups)
    p_count = np.bincount(repeated_group[given], minlength=n_groups)
    first_mask = ~pd.Series(repeated_group).duplicated(keep="first").to_numpy()
    if frame.index.is_monotonic_increasing and set(frame.columns) >= set(COLUMNS):
        return _keep_first_votes(frame, duplicated, first_mask, repeated_group, total, p_sum, p_count)
    single, repeated = frame[~duplicated], frame[duplicated]
    first = repeated[first_mask].copy()
    first_group = repeated_group[first_mask]
    votes = total[first_group]
    first["winner"] = np.where(votes > 0, "model_a", np.where(votes < 0, "model_b", "tie"))
    with np.errstate(invalid="ignore", divide="ignore"):
        first["p_a"] = np.where(p_count[first_group] > 0, p_sum[first_group] / np.maximum(p_count[first_group], 1),
                                np.nan)
    first["rationale"] = pd.array([None] * len(first), dtype="str")
    out = pd.concat([single, first]).sort_index(kind="stable")
    if not set(out.columns) >= set(COLUMNS):
        return out.reset_index(drop=True)
    extras = [c for c in out.columns if c not in COLUMNS]
    canonical = concat([out[list(COLUMNS)]])
    for column in extras:
        canonical[column] = out[column].to_numpy()
    return canonical


def _keep_first_votes(frame, duplicated, first_mask, repeated_group, total, p_sum, p_count) -> pd.DataFrame:
    """:func:`majority_of_votes`'s result in one pass: every row that is a single vote or a first vote, in order,
    the first votes given their group's majority winner, mean ``p_a`` and no rationale.

    The same frame as concatenating singles and first votes and sorting them back by
    index (which is the row order when the index increases), with one take instead of
    four over a million rows.
    """
    repeated_rows = np.flatnonzero(duplicated)
    first_rows = repeated_rows[first_mask]
    keep = ~duplicated
    keep[first_rows] = True
    kept_rows = np.flatnonzero(keep)
    out = frame.iloc[kept_rows]
    canonical = concat([out[list(COLUMNS)]])
    at = np.searchsorted(kept_rows, first_rows)
    first_group = repeated_group[first_mask]
    votes = total[first_group]
    winner = canonical["winner"].to_numpy(dtype=object, na_value=None)
    winner[at] = np.where(votes > 0, "model_a", np.where(votes < 0, "model_b", "tie"))
    p_a = canonical["p_a"].to_numpy(dtype=float, copy=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_a[at] = np.where(p_count[first_group] > 0, p_sum[first_group] / np.maximum(p_count[first_group], 1), np.nan)
    rationale = canonical["rationale"].to_numpy(dtype=object, na_value=None)
    rationale[at] = None
    canonical["winner"] = pd.array(winner, dtype=canonical["winner"].dtype)
    canonical["p_a"] = p_a
    canonical["rationale"] = pd.array(rationale, dtype=canonical["rationale"].dtype)
    for column in [c for c in out.columns if c not in COLUMNS]:
        canonical[column] = out[column].to_numpy()
    return canonical


def _majority_codes(rows: dict) -> dict:
    """:func:`majority_of_votes` on integer columns (:func:`peercore.aggregates.verdict_codes`): each comparison's
    repeated votes become one row (the first) with their majority winner.

    Only questions where some vote is non-zero (the store numbers each repeat) can hold
    a repeated comparison: the other rows are kept as they are, and come first (the
    order of the rows is not kept; swap consistency does not depend on it).
    """
    maybe = np.isin(rows["question"], np.unique(rows["question"][rows["vote"] != 0]))
    if not maybe.any():
        return rows
    at = np.flatnonzero(maybe)
    frame = pd.DataFrame({c: rows[c][at] for c in ("question", "model_a", "model_b", "judge", "criterion", "turn",
                                                    "round")})
    group = pd.factorize(_row_groups(frame, list(frame.columns)))[0].astype(np.int64)
    sizes = np.bincount(group)
    score = np.array([1, -1, 0], dtype=np.int64)[rows["winner"][at]]  # model_a, model_b, tie
    total = np.bincount(group, score, minlength=len(sizes))
    first = at[~pd.Series(group).duplicated(keep="first").to_numpy()]
    first_group = group[np.searchsorted(at, first)]
    votes = total[first_group]
    winner = np.where(sizes[first_group] > 1, np.where(votes > 0, 0, np.where(votes < 0, 1, 2)), rows["winner"][first])
    out = {k: np.concatenate([v[~maybe], v[first]]) for k, v in rows.items()}
    out["winner"] = np.concatenate([rows["winner"][~maybe], winner])
    return out


def _row_groups(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """An integer id per distinct combination of ``columns`` (missing values are a value).

    Ids are unique per combination and lie in ``[0, len(frame))`` (not necessarily
    contiguous). Column by column, rows whose combination so far is already unique are
    settled and the next columns are read only for the rest: in a million-row log where
    a question and a pair tell almost every verdict apart, the later columns cost
    nothing.
    """
    n = len(frame)
    out = np.full(n, -1, dtype=np.int64)
    active = np.arange(n)  # rows whose combination so far is shared with another row
    combined = np.zeros(n, dtype=np.int64)  # their ids so far (aligned with active)
    settled = 0
    for column in columns:
        values = frame[column] if len(active) == n else frame[column].iloc[active]
        codes = pd.factorize(values, use_na_sentinel=True)[0].astype(np.int64) + 1
        combined = pd.factorize(combined * (int(codes.max(initial=0)) + 1) + codes)[0].astype(np.int64)
        sizes = np.bincount(combined) if len(combined) else np.zeros(0, dtype=np.int64)
        alone = sizes[combined] == 1
        if alone.any():
            out[active[alone]] = settled + np.arange(int(alone.sum()))
            settled += int(alone.sum())
            active, combined = active[~alone], combined[~alone]
            if len(active):
                combined = pd.factorize(combined)[0].astype(np.int64)
        if len(active) == 0:
            break
    if len(active):
        out[active] = settled + combined
    return out


def _common_contestants(judgments: pd.DataFrame) -> pd.DataFrame:
    judges = judgments["judge"].unique()
    if len(judges) < 2:
        return judgments
    seen = [set(judgments.loc[judgments["judge"] == j, "model_a"]) | set(judgments.loc[judgments["judge"] == j, "model_b"])
            for j in judges]
    common = set.intersection(*seen)
    keep = judgments["model_a"].isin(common) & judgments["model_b"].isin(common)
    return judgments[keep.to_numpy()].reset_index(drop=True)


def _mixed_selection_warnings(judgments: pd.DataFrame) -> list[str]:
    """Contestants judged by only some of the chosen judges: their scores are not comparable."""
    judges = sorted(judgments["judge"].unique())
    if len(judges) < 2:
        return []
    by_judge = {j: set(judgments.loc[judgments["judge"] == j, "model_a"]) | set(judgments.loc[judgments["judge"] == j, "model_b"])
                for j in judges}
    return _mixed_warnings(by_judge)


def _mixed_warnings(by_judge: Mapping[str, set]) -> list[str]:
    """:func:`_mixed_selection_warnings` from each chosen judge's set of contestants."""
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


# ------------------------------------------------------------------------------- gold


def gold_judgments(debates: pd.DataFrame, adjudications: pd.DataFrame) -> pd.DataFrame:
    """The ScaleEval gold set as canonical judgments, with the ``debate_id`` each row comes from.

    * every debate (``kind == "debate"``) that ended in agreement gives one row, judged
      by its panel (``debate:<name>``; ``debate:consensus`` when no panel is recorded),
      winner = the consensus;
    * every human adjudication gives one row, judge ``adjudicator:<annotator>``;
    * a debate imported as already ``adjudicated`` with a consensus but no stored
      decision gives one row, judge ``adjudicator:imported``.

    Gold is per panel: :meth:`Study.gold` picks one panel's rows by ``debate_id``.
    """
    rows, ids = [], []
    if len(debates):
        kind = debates["kind"] if "kind" in debates.columns else pd.Series("debate", index=debates.index)
        panel = debates["panel"] if "panel" in debates.columns else pd.Series("", index=debates.index)
        decided = set(adjudications["debate_id"]) if len(adjudications) else set()
        for row, is_debate, owner in zip(debates.itertuples(index=False), (kind == "debate").tolist(), panel.tolist()):
            if not is_debate or row.consensus is None or (isinstance(row.consensus, float) and math.isnan(row.consensus)):
                continue
            if row.status == "agreed":
                judge = owner or CONSENSUS
            elif row.status == "adjudicated" and row.id not in decided:
                judge = "adjudicator:imported"
            else:
                continue
            rows.append(_gold_row(row, judge, row.consensus))
            ids.append(int(row.id))
    for row in adjudications.itertuples(index=False):
        rows.append(_gold_row(row, f"adjudicator:{row.annotator}", row.verdict))
        ids.append(int(row.debate_id))
    if not rows:
        return empty_judgments().assign(debate_id=pd.Series([], dtype="int64"))
    out = judgments_from_frame(pd.DataFrame(rows), source="gold set")
    return out.assign(debate_id=np.asarray(ids, dtype=np.int64))


def _gold_row(row, judge: str, winner: str) -> dict:
    return {
        "question_id": row.question_id, "model_a": row.model_a, "model_b": row.model_b, "judge": judge,
        "winner": winner, "criterion": (row.criterion or None) if isinstance(row.criterion, str) else None,
    }


def with_gold(stored: pd.DataFrame, gold: pd.DataFrame) -> pd.DataFrame:
    """The stored verdicts plus the gold rows a ranking can count as judges.

    Adjudications are always added (they live only in the adjudication table). A
    panel's derived consensus rows are added only when that panel's consensus is not
    stored as verdicts already (debate runs and debate-table imports store theirs), and
    the consensus of debates with no recorded panel only when no debate judge is stored,
    so a debate is never counted twice.
    """
    if len(gold) == 0:
        return stored
    extra = gold[~gold["judge"].isin(set(stored["judge"]))]
    if stored["judge"].astype(str).str.startswith("debate:").any():
        # Debates with no recorded panel: their consensus is the stored debate judge's (older imports).
        extra = extra[extra["judge"] != CONSENSUS]
    extra = extra[list(COLUMNS)]
    if len(extra) == 0:
        return stored
    if "vote" in stored.columns:
        extra = extra.assign(vote=0)
        return pd.concat([stored, extra], ignore_index=True)
    return concat([stored[list(COLUMNS)], extra])


# -------------------------------------------------------------------------- PoE table


def poe_table(judgments: pd.DataFrame, *, method: str = "poe_gaussian", debias: bool = False) -> pd.DataFrame:
    """A ranked table like :meth:`Study.leaderboard` for the Product-of-Experts scores (Liusie et al.).

    PoE-Gaussian gets 95% intervals from its posterior: score +- 1.96 sd of
    :math:`s_i - \\bar s`, i.e. of the centred covariance :math:`P \\Sigma P` with
    :math:`P = I - \\mathbf 1 \\mathbf 1^T / N`, with the expert variance
    :math:`\\sigma^2` estimated by the residual mean square
    :math:`\\lVert \\mu - W s \\rVert^2 / (K - N + 1)`. PoE-BT has no intervals. Ranks
    follow the Arena rule on the interval (or on the score when there is none).

    Returns
    -------
    DataFrame ``model, score, rank, ci_low, ci_high, battles``, best first.
    """
    from peercore.ranking import arena_ranks, battle_counts, comparisons_from_judgments, poe_gaussian, poe_scores

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
    ranks = arena_ranks(low.where(low.notna(), score), high.where(high.notna(), score))
    table = pd.DataFrame({
        "model": score.index, "score": score.to_numpy(), "rank": ranks.reindex(score.index).to_numpy(),
        "ci_low": low.to_numpy(), "ci_high": high.to_numpy(), "battles": counts.reindex(score.index).to_numpy(),
    })
    table = table.sort_values(["rank", "score", "model"], ascending=[True, False, True], kind="stable")
    return table.astype({"battles": int, "rank": int}).reset_index(drop=True)
