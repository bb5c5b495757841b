"""One study as every use case sees it: the read model and what is known about its judges and questions.

A :class:`Study` is either a study in a :class:`peercore.store.Store` (read once per
database revision) or a judgment file (:meth:`Study.from_frame`, read once). Either way
it gives the same things:

* :meth:`Study.verdicts`, the read model (:class:`peercore.domain.verdicts.Verdicts`):
  every verdict, readable or not, plus the ScaleEval gold set derived from the study's
  debates and adjudications (:func:`gold_judgments`, :func:`gold_to_add`), with the
  judges' kinds and contestants and the questions' categories;
* :meth:`Study.select`, the one way a number's verdicts are chosen
  (:func:`peercore.domain.verdicts.select`), kept for the last few selections;
* the judge table, the counts, the gold set, the answers, debates and runs.

Every use case in :mod:`peercore.app` takes a Study; the CLI, the dashboard and exports
call those use cases, so they show the same numbers.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping

import numpy as np
import pandas as pd

from peercore.domain import verdicts as V
from peercore.domain.options import OrderPolicy
from peercore.domain.selection import Selection
from peercore.judges import base_name, judge_kind
from peercore.judges import fingerprint as judge_fingerprint
from peercore.judgments import COLUMNS, empty_judgments, judgments_from_frame
from peercore.reports import run_costs
from peercore.store.verdict_reader import read_verdicts

__all__ = ["Study", "CONSENSUS", "gold_judgments", "gold_to_add"]

CONSENSUS = "debate:consensus"  # the panel of debates whose panel is not recorded
_SELECTIONS_KEPT = 4  # selections a Study keeps per revision (each may hold a million verdicts)
_EMPTY_DEBATES = pd.DataFrame(columns=["id", "question_id", "model_a", "model_b", "criterion", "scenario", "kind",
                                       "panel", "status", "consensus"])
_EMPTY_ADJUDICATIONS = pd.DataFrame(columns=["debate_id", "annotator", "verdict", "note", "created_at"])


class Study:
    """A study of a :class:`peercore.store.Store`, or a judgment file, as the use cases see it.

    Parameters
    ----------
    store : the store (None for a file: use :meth:`from_frame`).
    name : the study's name (a StoreError listing the studies if it is missing).
    """

    def __init__(self, store, name: str) -> None:
        if store is not None:
            store.studies.study_id(name)  # raises with the list of studies when missing
        self.store = store
        self.name = name
        self._cache: dict = {}
        self._locks: dict = {}
        self._file: dict | None = None

    @classmethod
    def from_frame(cls, judgments: pd.DataFrame, *, name: str = "file", order: str = OrderPolicy.AUTO,
                   extras: pd.DataFrame | None = None, answers: pd.DataFrame | None = None) -> "Study":
        """A judgment table as a study (what ``peercore rank FILE`` ranks).

        Parameters
        ----------
        judgments : canonical judgments (``valid``, ``vote``, ``order_known`` used when present).
        order : what ``model_a`` means where the table has no ``order_known`` column
            (:class:`peercore.domain.options.OrderPolicy`).
        extras : optional columns aligned with the rows (``answer_a``, ``answer_b``,
            ``length_a``, ``length_b``, ``category``): the answers' texts or lengths of
            each battle, the question's category.
        answers : ``question_id, model, answer[, turn]`` when known.
        """
        study = cls(None, name)
        study._file = {"judgments": judgments, "order": order, "extras": extras, "answers": answers}
        return study

    # --------------------------------------------------------------------- caching

    @property
    def revision(self) -> int:
        """The study's cache stamp: changes with every write (0 for a file)."""
        return 0 if self.store is None else self.store.studies.revision(self.name)

    def cached(self, key, make):
        """``make()`` once per revision (one computation per key at a time, across threads)."""
        stamp = self.revision
        entry = self._cache.get(key)
        if entry is None or entry[0] != stamp:
            with self._locks.setdefault(key, threading.RLock()):
                entry = self._cache.get(key)
                if entry is None or entry[0] != stamp:
                    entry = (stamp, make())
                    self._cache[key] = entry
        return entry[1]

    # -------------------------------------------------------------------- the model

    def verdicts(self) -> V.Verdicts:
        """Every verdict (readable or not) and the gold set's, encoded once per revision."""
        return self.cached("verdicts", self._read)

    def _read(self) -> V.Verdicts:
        registry = self.registry()
        kinds = dict(zip(registry["name"], registry["kind"]))
        aliases = {n: a for n, a in zip(registry["name"], registry["model_alias"]) if isinstance(a, str) and a}
        if self._file is not None:
            extras = self._file["extras"]
            categories = None
            if extras is not None and "category" in extras.columns:
                categories = {str(q): str(c) for q, c in zip(self._file["judgments"]["question_id"], extras["category"])
                              if isinstance(c, str) and c}
            stored = V.from_frame(self._file["judgments"], kinds=kinds, aliases=aliases, categories=categories,
                                  contestants=self.answer_models(), order=self._file["order"])
        else:
            stored = read_verdicts(self.store, self.name, kinds=kinds, aliases=aliases,
                                   categories=self.question_groups(), contestants=self.answer_models())
        extra = gold_to_add(stored.judges_present(), self.gold())
        if len(extra) == 0:
            return stored
        gold = V.from_frame(extra.assign(row=-1), kinds=kinds, aliases=aliases, categories=self.question_groups(),
                            order=OrderPolicy.KNOWN)
        return V.concat(stored, gold)

    def select(self, selection: Selection | None = None, *, include_invalid: bool = False) -> V.Selected:
        """The verdicts ``selection`` picks and what it merged or left out (:func:`peercore.domain.verdicts.select`).

        The last few selections are kept per revision.

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
        out = V.select(self.verdicts(), selection, include_invalid=include_invalid)
        self._cache[key] = (stamp, out)
        selected = [k for k in self._cache if isinstance(k, tuple) and k and k[0] == "selected"]
        for old in selected[:-_SELECTIONS_KEPT]:
            del self._cache[old]
        return out

    def judgments(self, selection: Selection | None = None, *, include_invalid: bool = False) -> pd.DataFrame:
        """The canonical table of what ``selection`` picks (``valid`` added with ``include_invalid``).

        For the estimators that take a table; the choice itself is :meth:`select`'s.
        A file's extra columns (answer texts or lengths) come along.
        """
        chosen = self.select(selection, include_invalid=include_invalid).verdicts
        frame = V.to_frame(chosen, include_invalid=include_invalid,
                           extras=("valid",) if include_invalid else ())
        return self.with_extras(frame, chosen)

    def has_extras(self) -> bool:
        """Whether the study is a file with columns beyond the canonical ones (answer texts, lengths)."""
        return self._file is not None and self._file["extras"] is not None

    def with_extras(self, frame: pd.DataFrame, chosen: V.Verdicts) -> pd.DataFrame:
        """``frame`` (decoded from ``chosen``) with a file's extra columns of the same rows."""
        if self._file is None or self._file["extras"] is None:
            return frame
        extras = self._file["extras"]
        rows = chosen.row
        known = rows >= 0
        out = frame.copy()
        for column in extras.columns:
            if column == "category":
                continue
            values = extras[column].to_numpy(dtype=object)
            out[column] = np.where(known, values[np.where(known, rows, 0)], None) if len(rows) else []
        return out

    # ------------------------------------------------------------------- registry

    def registry(self) -> pd.DataFrame:
        """The judges registered in the store: ``name, kind, model_alias, origin, settings`` (empty for a file)."""
        if self.store is None:
            return pd.DataFrame({"name": pd.Series([], dtype=object), "kind": pd.Series([], dtype=object),
                                 "model_alias": pd.Series([], dtype=object), "origin": pd.Series([], dtype=object),
                                 "settings": pd.Series([], dtype=object)})
        return self.cached("registry", lambda: self.store.judges.registry(self.name))

    def kinds(self) -> dict[str, str]:
        """judge -> kind (:func:`peercore.judges.judge_kind`: as registered, else the name's prefix)."""
        return self.verdicts().kinds() | {n: k for n, k in zip(self.registry()["name"], self.registry()["kind"])}

    def aliases(self) -> dict[str, str]:
        """judge -> the contestant it is (:func:`peercore.judges.model_of`, one rule everywhere)."""
        return self.verdicts().aliases()

    def judges(self) -> pd.DataFrame:
        """Every judge with stored verdicts or registered: ``name, kind, model_alias`` (the one alias rule),
        ``n_judgments`` (readable verdicts), ``n_invalid``, ``origin``, ``base``, ``settings``."""
        def make():
            table = self.verdicts()
            stored = table.row >= 0
            size = len(table.judges)
            valid = np.bincount(table.judge[stored & (table.winner >= 0)], minlength=size)
            invalid = np.bincount(table.judge[stored & (table.winner < 0)], minlength=size)
            counted = {j: (int(valid[k]), int(invalid[k])) for k, j in enumerate(table.judges) if valid[k] or invalid[k]}
            registry = self.registry().set_index("name") if len(self.registry()) else None
            names = sorted(set(counted) | (set(registry.index) if registry is not None else set()))
            aliases = self.aliases()
            kinds = self.kinds()
            rows = []
            for name in names:
                known = registry is not None and name in registry.index
                settings = registry.at[name, "settings"] if known else {}
                rows.append({"name": name, "kind": kinds.get(name) or judge_kind(name), "model_alias": aliases.get(name),
                             "n_judgments": counted.get(name, (0, 0))[0], "n_invalid": counted.get(name, (0, 0))[1],
                             "origin": registry.at[name, "origin"] if known else "import", "base": base_name(name),
                             "settings": settings if isinstance(settings, dict) else json.loads(settings or "{}")})
            return pd.DataFrame(rows, columns=["name", "kind", "model_alias", "n_judgments", "n_invalid", "origin",
                                               "base", "settings"])
        return self.cached("judges", make)

    def rankable_judges(self) -> list[str]:
        """Every judge a ranking can count (a readable stored verdict, or gold), sorted."""
        table = self.verdicts()
        return sorted(table.judges_present(table.winner >= 0))

    def judge_families(self) -> dict[str, str]:
        """judge -> the judge it is apart from its criterion (ScaleEval Table 5 rows).

        Runs of one configuration under varied criteria are distinct judges (a judge is
        its whole configuration, criterion included); for the criteria-variation table
        they are one judge read under several rubrics, named after the shortest member.
        """
        def make():
            frame = self.judges()
            keys: dict[str, str] = {}
            for name, settings in zip(frame["name"], frame["settings"]):
                if settings:
                    rest = {k: v for k, v in settings.items() if k not in ("criterion", "rubric_version")}
                    keys[name] = judge_fingerprint(rest)
            members: dict[str, list[str]] = {}
            for name, key in keys.items():
                members.setdefault(key, []).append(name)
            return {name: min(members[key], key=lambda n: (len(n), n)) for name, key in keys.items()}
        return self.cached("families", make)

    def contestants(self) -> list[str]:
        """Every contestant: in a readable verdict or with an answer."""
        def make():
            table = self.verdicts()
            readable = V.take(table, (table.winner >= 0) & (table.row >= 0))
            return sorted(set(readable.models_present()) | self.answer_models())
        return self.cached("contestants", make)

    def has_probabilities(self) -> bool:
        """Whether any readable verdict carries ``p_a``."""
        table = self.verdicts()
        return bool((~np.isnan(table.p_a[table.winner >= 0])).any())

    def counts(self) -> dict[str, int]:
        """The study's counts, one definition for every page and command.

        ``judgments`` counts readable stored verdicts, ``invalid_judgments`` the replies
        kept with no readable verdict (shown as "+N unparsed"), ``human_votes`` the
        readable verdicts of judges of kind ``human``; the other records are counted in
        the store.
        """
        def make():
            table = self.verdicts()
            stored = table.row >= 0
            readable = stored & (table.winner >= 0)
            human = np.array([k == "human" for k in table.judge_kinds], dtype=bool)
            counted = {
                "contestants": len(self.contestants()),
                "judges": len(table.judges_present(stored)),
                "judgments": int(readable.sum()),
                "invalid_judgments": int((stored & (table.winner < 0)).sum()),
                "human_votes": int((readable & human[table.judge]).sum()) if len(table) else 0,
            }
            if self.store is None:
                return counted
            return {**self.store.studies.record_counts(self.name), **counted}
        return self.cached("counts", make)

    # ------------------------------------------------------------ what else it holds

    def question_groups(self) -> dict[str, str]:
        """question_id -> its category, or its debates' scenario (the stored questions and debates)."""
        if self.store is None:
            return {}

        def make():
            out: dict[str, str] = {}
            questions = self.store.questions.table(self.name)
            for qid, category in zip(questions["question_id"], questions["category"]):
                out[str(qid)] = category or V.NO_CATEGORY
            debates = self.debates()
            for qid, scenario in zip(debates["question_id"], debates["scenario"]):
                if scenario:
                    out[str(qid)] = scenario
            return out
        return self.cached("groups", make)

    def answers(self) -> pd.DataFrame:
        """The stored answers ``question_id, model, answer, turn`` (a file's when given)."""
        if self.store is None:
            answers = self._file["answers"]
            return answers if answers is not None else pd.DataFrame(columns=["question_id", "model", "answer", "turn"])
        return self.cached("answers", lambda: self.store.questions.answers(self.name))

    def answer_models(self) -> set[str]:
        """The models with a stored answer (their texts are not read)."""
        if self.store is None:
            answers = self._file["answers"]
            return set() if answers is None else {str(m) for m in answers["model"]}
        return self.cached("answer_models", lambda: self.store.questions.answer_models(self.name))

    def questions(self) -> pd.DataFrame:
        if self.store is None:
            return pd.DataFrame(columns=["question_id", "text", "category", "reference"])
        return self.cached("questions", lambda: self.store.questions.table(self.name))

    def debates(self) -> pd.DataFrame:
        if self.store is None:
            return _EMPTY_DEBATES.copy()
        return self.cached("debates", lambda: self.store.debates.table(self.name, label_requests=False))

    def adjudications(self) -> pd.DataFrame:
        if self.store is None:
            return _EMPTY_ADJUDICATIONS.copy()
        return self.cached("adjudications", lambda: self.store.debates.adjudications(self.name))

    def runs(self) -> pd.DataFrame:
        if self.store is None:
            return pd.DataFrame(columns=["id", "cost_usd"])
        return self.cached("runs", lambda: self.store.runs.table(self.name))

    def run_configs(self) -> dict:
        """run id -> the configuration the run recorded (the judges it names), once per revision."""
        if self.store is None:
            return {}
        return self.cached("run_configs", lambda: {run_id: self.store.runs.get(run_id)["config"]
                                                   for run_id in self.runs()["id"]})

    def run_costs(self) -> pd.Series:
        """judge -> cost in USD of the study's runs (:func:`peercore.reports.run_costs`: each run's cost
        split over the judges it names); empty without runs."""
        runs = self.runs()
        return run_costs(self.run_configs(), dict(zip(runs["id"], runs["cost_usd"].astype(float))))

    # ------------------------------------------------------------------------ gold

    def panels(self) -> list[str]:
        """The debate panels (consensus judges), most debates first."""
        debates = self.debates()
        debates = debates[debates["kind"] == "debate"]
        if len(debates) == 0:
            return []
        counts = debates["panel"].replace("", CONSENSUS).value_counts()
        return sorted(counts.index, key=lambda p: (-counts[p], p))

    def gold(self, panel: str | None = None) -> pd.DataFrame:
        """The ScaleEval gold set as canonical judgments (:func:`gold_judgments`), of one panel or all."""
        gold = self.cached("gold", lambda: gold_judgments(self.debates(), self.adjudications()))
        if panel is None:
            return gold
        debates = self.debates()
        ids = set(debates.loc[debates["panel"].replace("", CONSENSUS) == panel, "id"])
        return gold[gold["debate_id"].isin(ids)].reset_index(drop=True)


# --------------------------------------------------------------------------------- gold


def gold_judgments(debates: pd.DataFrame, adjudications: pd.DataFrame) -> pd.DataFrame:
    """The ScaleEval gold set as canonical judgments, with the ``debate_id`` each row comes from.

    * every debate (``kind == "debate"``) that ended in agreement gives one row, judged
      by its panel (``debate:<name>``; ``debate:consensus`` when no panel is recorded),
      winner = the consensus;
    * every human adjudication (of a debate or a label request) gives one row, judge
      ``adjudicator:<annotator>``;
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
    turn = getattr(row, "turn", None)  # a label request's turn; a debate has none
    return {
        "question_id": row.question_id, "model_a": row.model_a, "model_b": row.model_b, "judge": judge,
        "winner": winner, "criterion": (row.criterion or None) if isinstance(row.criterion, str) else None,
        "turn": None if turn is None or pd.isna(turn) else int(turn),
    }


def gold_to_add(stored_judges, gold: pd.DataFrame) -> pd.DataFrame:
    """The gold rows a ranking counts beside the stored verdicts of ``stored_judges``.

    Adjudications are always added (they live only in the adjudication table). A
    panel's derived consensus rows are added only when that panel's consensus is not
    stored as verdicts already (debate runs and debate-table imports store theirs), and
    the consensus of debates with no recorded panel only when no debate judge is stored,
    so a debate is never counted twice.
    """
    if len(gold) == 0:
        return gold[list(COLUMNS)]
    stored = set(map(str, stored_judges))
    extra = gold[~gold["judge"].isin(stored)]
    if any(j.startswith("debate:") for j in stored):
        extra = extra[extra["judge"] != CONSENSUS]
    return extra[list(COLUMNS)].reset_index(drop=True)

