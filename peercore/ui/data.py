"""The store behind the dashboard, first-run seeding, and cached loaders.

Caching rules (STYLE.md):

- :func:`store` is ``st.cache_resource`` keyed on the database path (a PostgreSQL URL
  without its password). That is safe
  because a :class:`peercore.store.Store` object never shares a connection
  between threads: it opens one connection per thread on first use (Streamlit runs
  each session's script in its own thread) and a PostgreSQL connection closes when
  its thread ends. :func:`study` is the other cached
  resource: the :class:`peercore.app.Study` handle (the application layer the CLI
  and the exports use too) of one study of that store; it holds no connection, only
  memos of what it read, each stamped with the study's revision.
- Every DataFrame and every computed table is ``st.cache_data`` keyed on
  ``(db path, study, store.studies.revision(study), options...)``. Any write to a study bumps
  its revision, so the next run misses the cache and reads fresh data; two sessions
  looking at the same revision share the entry.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import streamlit as st

from peercore import app, reports
from peercore.app.access import Actor, configure_judges
from peercore.app.efficiency import POOLED, efficiency_codes, efficiency_result, efficiency_verdicts
from peercore.app.efficiency import efficiency_judges as _efficiency_judges
from peercore.app.leaderboard import DEFAULT_BOOTSTRAP, PRELIMINARY_BATTLES
from peercore.app.study import Study
from peercore.domain.selection import Selection
from peercore.efficiency import summarise
from peercore.io.detect import DATA_SUFFIXES, detect_format
from peercore.io.export import table_bytes
from peercore.io.importer import import_path
from peercore.locations import default_db_path, is_postgres_url, redact_url
from peercore.ranking import battle_counts, pairwise_win_fraction
from peercore.store import Store
from peercore.ui import safe, state

SAMPLE_STUDY = "sample"


# ------------------------------------------------------------------------------ store

def db_path() -> str:
    """The database the app uses (``$PEERBOARD_DB`` or the per-user default), as shown
    and as the first part of every cache key: a SQLite file's path, or a
    ``postgresql://`` URL without its password (which stays out of keys and screens)."""
    return _shown(default_db_path())


def _shown(location) -> str:
    """A database location as shown and keyed: a file's path, or a URL without its password."""
    return redact_url(location) if isinstance(location, str) else str(location)


def database_label(name: str) -> str:
    """A short label for the sidebar: the file's name, or ``database on host`` for PostgreSQL."""
    if not is_postgres_url(name):
        return Path(name).name
    parts = urlsplit(name)
    return f"{parts.path.lstrip('/') or parts.username or 'postgres'} on {parts.hostname or 'localhost'}"


@st.cache_resource(show_spinner=False)
def _store(path: str) -> Store:
    """The store :func:`db_path` names: ``path`` is the cache key, without the URL's password,
    so the location (password included) is read again from where db_path() read it."""
    location = default_db_path()
    return Store(location if _shown(location) == path else path)


def store() -> Store:
    """The :class:`Store` of :func:`db_path` (one object per process; one connection per thread)."""
    return _store(db_path())

ENV_SAMPLE = "PEERBOARD_SAMPLE_DATA"
_SEEDING = threading.Lock()


def sample_folder(default: Path) -> Path | None:
    """The sample study's folder: ``$PEERBOARD_SAMPLE_DATA`` if set (empty = no sample), else ``default``."""
    import os

    if ENV_SAMPLE in os.environ:
        value = os.environ[ENV_SAMPLE].strip()
        return Path(value).expanduser() if value else None
    return default

_FIRST = {"questions": 0, "fastchat-questions": 0, "qa": 0, "usr": 0, "answers": 1, "fastchat-answers": 1,
          "prd-answers": 1}
PROVENANCE = "provenance.json"  # how the sample was made: recorded as the study's source, not imported
SAMPLE_DESCRIPTION = ("Shipped with PeerBoard: 12 questions answered and peer-reviewed by small local models, human "
                      "votes, and a ScaleEval debate panel to adjudicate.")


def ensure_sample_study(db: Store, folder: str | Path | None, *,
                        progress: Callable[[int, int, str], None] | None = None) -> str | None:
    """Import the bundled sample study into an empty database; return its name.

    Does nothing (returns None) when the database already holds a study, or ``folder``
    holds no data file. Every data file of the folder (CSV, JSONL, JSON, Parquet ...) is
    imported with :func:`peercore.io.importer.import_path` (format detected per file,
    questions first so that answers find them), all in one transaction, into the study
    named in ``provenance.json`` (default ``sample``); that file's facts become the
    study's provenance. Writes are idempotent (natural keys) and serialised in this
    process, so sessions opening at once do not duplicate data.

    A subfolder holding its own ``provenance.json`` is a further bundled study, seeded in
    the same transaction after the sample (``sample_data/prd_vicuna80/``: PRD's 80
    questions, 5 models, 8,000 LLM reviews and 1,760 human votes, whose Peer Rank weights
    reproduce the paper; ``sample_data/topicalchat/``: the TopicalChat USR ratings with the
    offline judge's comparisons and absolute scores, which the NLG assessment page opens
    on). The sample is still the study returned, and the one the app opens on.

    ``progress(done, total, study)`` is called before each file is imported (``done`` files
    of ``total`` so far) and once at the end (``done == total``), for a first start to show.
    """
    if folder is None:
        return None
    folder = Path(folder)
    if not folder.is_dir() or len(db.studies.table()):
        return None

    plan = _bundle_plan(folder, default=SAMPLE_STUDY, description=SAMPLE_DESCRIPTION)
    if plan is None:
        return None
    extras = [p for p in (_bundle_plan(sub, default=sub.name) for sub in sorted(folder.iterdir())
                          if sub.is_dir() and (sub / PROVENANCE).is_file()) if p is not None]
    with _SEEDING:
        if len(db.studies.table()):
            return None
        studies = [plan, *extras]
        total, done = sum(len(files) for *_, files in studies), 0
        with db.transaction():
            for name, description, source, files in studies:
                db.studies.create(name, description=description, source=source, exist_ok=True)
                for path, fmt in files:
                    if progress is not None:
                        progress(done, total, name)
                    import_path(path, store=db, study=name, format=fmt)
                    done += 1
            if progress is not None:
                progress(total, total, plan[0])
    return plan[0]


def _bundle_plan(folder: Path, *, default: str, description: str | None = None):
    """``(study, description, source, [(file, format), ...])`` of a bundled folder, or None without data."""
    files = sorted(p for p in folder.iterdir()
                   if p.is_file() and p.suffix.lower() in DATA_SUFFIXES and p.name.lower() != PROVENANCE)
    if not files:
        return None
    facts = {}
    if (folder / PROVENANCE).is_file():
        facts = json.loads((folder / PROVENANCE).read_text(encoding="utf-8"))
    name = facts.get("study") or default
    source = {"kind": "bundled sample", "folder": folder.name,
              **{k: v for k, v in facts.items() if isinstance(v, (str, int, float)) and k not in ("study",
                                                                                                    "description")}}
    if isinstance(facts.get("models"), dict):
        source["models"] = ", ".join(facts["models"])
    formats = {path: detect_format(path) for path in files}
    ordered = sorted(files, key=lambda p: (_FIRST.get(formats[p], 2), p.name))
    return name, description or str(facts.get("description", "")), source, [(p, formats[p]) for p in ordered]


# ---------------------------------------------------------------------- cached tables

def revision(study: str) -> int:
    """The study's cache stamp (changes with every write)."""
    return store().studies.revision(study)


def key(study: str) -> tuple[str, str, int]:
    """``(db path, study, revision)``: the first arguments of every cached loader."""
    return db_path(), study, revision(study)


@st.cache_data(show_spinner=False, max_entries=64)
def summary(db: str, study: str, rev: int) -> dict:
    """The study's counts (:meth:`peercore.app.study.Study.counts`)."""
    return dict(_study(db, study).counts())


#: Session key: the studies this session may read (None: all), set by :func:`peercore.ui.access.gate`
#: on every run of ``app.py`` before any page reads a study.
READABLE = "access_readable_studies"


def studies() -> pd.DataFrame:
    """Every study this session may read (name, description, created_at, revision, source).

    Never cached, it is one small query. With login configured, a study the signed-in
    person holds no role in is left out (the list :func:`peercore.ui.access.gate` keeps
    under :data:`READABLE`): the picker, the Studies page and every page that lists
    studies never name it.
    """
    frame = store().studies.table()
    keep = st.session_state.get(READABLE)
    if keep is None:
        return frame
    return frame[frame["name"].isin(set(keep))].reset_index(drop=True)


@st.cache_resource(show_spinner=False)
def _study(path: str, name: str) -> Study:
    return Study(_store(path), name)


def study(db: str, name: str) -> Study:
    """The :class:`peercore.app.Study` of ``name`` (one handle per process; its memos follow the revision)."""
    return _study(db, name)


def judgments(db: str, study_: str, rev: int) -> pd.DataFrame:
    """The study's readable stored verdicts as a canonical table (decoded from the read model, not cached twice)."""
    return study(db, study_).judgments(Selection(final_only=False, repeated_votes="each"))


@st.cache_data(show_spinner=False, max_entries=16)
def judges(db: str, study_: str, rev: int) -> pd.DataFrame:
    """Every judge with its kind, origin, base name, alias (the one rule) and counts (:meth:`Study.judges`)."""
    return study(db, study_).judges()


@st.cache_data(show_spinner=False, max_entries=16)
def kinds(db: str, study_: str, rev: int) -> dict[str, str]:
    """judge -> kind, from the store (:meth:`Study.kinds`)."""
    return study(db, study_).kinds()


@st.cache_data(show_spinner=False, max_entries=16)
def aliases(db: str, study_: str, rev: int) -> dict[str, str]:
    """judge -> the contestant it is (:meth:`Study.aliases`, the rule the CLI uses too)."""
    return study(db, study_).aliases()


@st.cache_data(show_spinner=False, max_entries=16)
def questions(db: str, study_: str, rev: int) -> pd.DataFrame:
    return _store(db).questions.table(study_)


@st.cache_data(show_spinner=False, max_entries=16)
def answers(db: str, study_: str, rev: int) -> pd.DataFrame:
    return _store(db).questions.answers(study_)


@st.cache_data(show_spinner=False, max_entries=16)
def debates(db: str, study_: str, rev: int) -> pd.DataFrame:
    return _store(db).debates.table(study_, label_requests=False)


@st.cache_data(show_spinner=False, max_entries=16)
def turns(db: str, study_: str, rev: int) -> pd.DataFrame:
    return _store(db).debates.turns(debates(db, study_, rev)["id"].tolist())


@st.cache_data(show_spinner=False, max_entries=16)
def adjudications(db: str, study_: str, rev: int) -> pd.DataFrame:
    return _store(db).debates.adjudications(study_)


@st.cache_data(show_spinner=False, max_entries=16)
def runs(db: str, study_: str, rev: int) -> pd.DataFrame:
    return _store(db).runs.table(study_)


@st.cache_data(show_spinner=False, max_entries=16)
def panels(db: str, study_: str, rev: int) -> list[str]:
    """The study's debate panels, most debates first (:meth:`Study.panels`)."""
    return study(db, study_).panels()


@st.cache_data(show_spinner=False, max_entries=16)
def gold(db: str, study_: str, rev: int, panel: str | None = None) -> pd.DataFrame:
    """One panel's (or every panel's) ScaleEval gold set: debate consensus + adjudications (:meth:`Study.gold`)."""
    return study(db, study_).gold(panel)


@st.cache_data(show_spinner=False, max_entries=16)
def judge_names(db: str, study_: str, rev: int) -> list[str]:
    """Every judge a ranking can count (stored verdicts and gold), sorted with variants after their model."""
    names = study(db, study_).rankable_judges()  # from the store's counts: no verdict is read
    return sorted(names, key=lambda n: (reports.judge_label(n).split(" · ")[0], n))


@st.cache_data(show_spinner=False, max_entries=16)
def has_probabilities(db: str, study_: str, rev: int) -> bool:
    """Whether any stored verdict carries p_a (the leaderboard then offers soft verdicts); counted in the store."""
    return study(db, study_).has_probabilities()


# ------------------------------------------------------------------ computed (cached)

def selected(db: str, study_: str, rev: int, selection: Selection) -> pd.DataFrame:
    """The judgments a selection picks (:meth:`Study.judgments`, which keeps the last few selections per revision)."""
    return study(db, study_).judgments(selection)


@st.cache_data(show_spinner=False, max_entries=64)
def ranked(db: str, study_: str, rev: int, selection: Selection, method: str, peer: str, *,
           bootstrap: int = DEFAULT_BOOTSTRAP, soft: bool = False, weights_from: str = "winrate",
           baseline: str | None = None, controls: tuple[str, ...] = (), intervals: str = "bootstrap",
           reweight: bool = False, prior: float | None = None, min_battles: int = PRELIMINARY_BATTLES):
    """:func:`peercore.app.leaderboard` (``peercore rank --study`` computes the same)."""
    return app.leaderboard(study(db, study_), selection, method=method, peer_weights=peer, bootstrap=bootstrap,
                           seed=0, soft=soft, weights_from=weights_from, baseline=baseline, controls=tuple(controls),
                           intervals=intervals, reweight=reweight, prior=prior, min_battles=min_battles)


def page_warnings(warnings: Sequence[str], notes, options: dict[str, str]) -> list[str]:
    """A result's warnings, what its selection merged or left out (``notes``, a
    :class:`peercore.domain.verdicts.SelectionNotes`) worded with the page's ``options``
    (e.g. a checkbox's label) instead of the CLI's flags."""
    cli = set(notes.messages())
    return [*notes.messages(options=options), *(w for w in warnings if w not in cli)]

RANKING_QUICK_ROWS = 50_000  # up to this many valid verdicts the page waits for the bootstrap (a second or so)


class RankingJob:
    """A leaderboard with bootstrap intervals computed in a background thread (the Leaderboard page's).

    At Arena scale the bootstrap rounds take seconds: the page shows the point estimate
    at once (:func:`ranked` with no bootstrap) with this job's progress, and the whole
    table when it is done. ``result`` is what :func:`ranked` returns for the same
    arguments (one :meth:`Study.leaderboard` call); ``error`` the exception it raised.
    The page :meth:`start` s it once the point estimate is computed, so that the two do not
    share the machine's cores (at a million verdicts on two cores the point estimate took
    half a second longer beside the bootstrap).
    """

    def __init__(self, compute, *, quick: bool) -> None:
        self.fraction = 0.0
        self.result = None
        self.error: Exception | None = None
        self.quick = quick
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(compute,), name="peerboard-ranking", daemon=True)
        self._starting = threading.Lock()

    def start(self) -> "RankingJob":
        """Start the computation (once; later calls do nothing)."""
        with self._starting:
            if self._thread.ident is None:  # not started yet
                self._thread.start()
        return self

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, seconds: float | None) -> bool:
        """Wait up to ``seconds`` (None: until done; starting it if need be); whether the result is there."""
        self.start()
        return self._done.wait(seconds)

    def _progress(self, fraction: float) -> None:
        self.fraction = max(self.fraction, float(fraction))

    def _run(self, compute) -> None:
        try:
            self.result = compute(self._progress)
            self.fraction = 1.0
        except Exception as error:  # shown on the page (a ValueError: settings that cannot rank)
            self.error = error
        finally:
            self._done.set()


@st.cache_resource(show_spinner=False, max_entries=32)
def _ranking_job(db: str, study_: str, rev: int, selection: Selection, method: str, peer: str, bootstrap: int,
                 soft: bool, baseline: str | None, controls: tuple[str, ...], intervals: str, reweight: bool,
                 prior: float | None, min_battles: int, quick: bool) -> RankingJob:
    handle = study(db, study_)

    def compute(progress):
        return app.leaderboard(handle, selection, method=method, peer_weights=peer, bootstrap=bootstrap, seed=0,
                               soft=soft, weights_from="winrate", baseline=baseline, controls=tuple(controls),
                               intervals=intervals, reweight=reweight, prior=prior, min_battles=min_battles,
                               progress=progress)

    return RankingJob(compute, quick=quick)


def ranking_job(db: str, study_: str, rev: int, selection: Selection, method: str, peer: str, *,
                bootstrap: int = DEFAULT_BOOTSTRAP, soft: bool = False, baseline: str | None = None,
                controls: tuple[str, ...] = (), intervals: str = "bootstrap", reweight: bool = False,
                prior: float | None = None, min_battles: int = PRELIMINARY_BATTLES) -> RankingJob | None:
    """The background job of a leaderboard's bootstrap, or None when there is none to wait for.

    None when the ranking has no bootstrap (no rounds, sandwich intervals, PoE, against a
    baseline) or the study is small (up to :data:`RANKING_QUICK_ROWS` valid verdicts: the
    page computes it at once, as before). One job per settings and study revision,
    shared by every session of the process.
    """
    if bootstrap <= 0 or method not in ("winrate", "elo", "bt") or baseline is not None or intervals != "bootstrap":
        return None
    if summary(db, study_, rev)["judgments"] <= RANKING_QUICK_ROWS:
        return None
    return _ranking_job(db, study_, rev, selection, method, peer, int(bootstrap), bool(soft), baseline,
                        tuple(controls), intervals, bool(reweight), prior, int(min_battles), False)


@st.cache_data(show_spinner=False, max_entries=16)
def has_answers(db: str, study_: str, rev: int) -> bool:
    """Whether the study stores answers' texts (style control and length terms need them)."""
    return bool(len(answers(db, study_, rev)))


@st.cache_data(show_spinner=False, max_entries=32)
def ranked_by(db: str, study_: str, rev: int, selection: Selection, by: str, groups: tuple[str, ...] | None,
              method: str, peer: str, *, bootstrap: int = DEFAULT_BOOTSTRAP, soft: bool = False):
    """:func:`peercore.app.leaderboards_by` (``peercore rank --study ... --by``): one leaderboard per group."""
    return app.leaderboards_by(study(db, study_), selection, by=by, groups=groups, method=method, peer_weights=peer,
                               bootstrap=bootstrap, seed=0, soft=soft)


@st.cache_data(show_spinner=False, max_entries=32)
def bias_model(db: str, study_: str, rev: int, selection: Selection, families: tuple[tuple[str, str], ...] = ()):
    """:func:`peercore.app.judge_bias` (``peercore bias --study ... --model``) with a model -> family map."""
    return app.judge_bias(study(db, study_), selection, families=dict(families))


def family_frame(db: str, study_: str, rev: int) -> pd.DataFrame:
    """The Bias page's editable model -> family table (every contestant its own family to start with)."""
    names = contestants(db, study_, rev)
    return pd.DataFrame({"model": names, "family": names})


def family_pairs(edited: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """The edited families as sorted (model, family) pairs, only where a family differs from the model."""
    pairs = []
    for model, family in zip(edited["model"], edited["family"]):
        family = str(family).strip() if isinstance(family, str) else ""
        if family and family != model:
            pairs.append((str(model), family))
    return tuple(sorted(pairs))


@st.cache_data(show_spinner=False, max_entries=32)
def alpha_rows(db: str, study_: str, rev: int, judges_: tuple[str, ...]) -> pd.DataFrame:
    """Krippendorff's alpha among the chosen judges, and among its humans and its LLM judges (two or more each)."""
    kind = kinds(db, study_, rev)
    groups = {"all chosen judges": list(judges_),
              "annotators (humans)": [j for j in judges_ if kind.get(j) == "human"],
              "LLM judges": [j for j in judges_ if kind.get(j, "llm") == "llm"]}
    frames = []
    for label, members in groups.items():
        if len(members) < 2 or (label != "all chosen judges" and len(members) == len(judges_)):
            continue
        try:
            result = alpha(db, study_, rev, tuple(members))
        except ValueError:
            continue
        frames.append(reports.alpha_display(result).assign(judges=label))
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out[["judges"] + [c for c in out.columns if c != "judges"]]


@st.cache_data(show_spinner=False, max_entries=32)
def alpha(db: str, study_: str, rev: int, raters: tuple[str, ...], rounds: int = 1000):
    """:func:`peercore.app.alpha` (``peercore agree --study ... --alpha``): Krippendorff's alpha among ``raters``."""
    return app.alpha(study(db, study_), raters, rounds=rounds, seed=0)


@st.cache_data(show_spinner=False, max_entries=32)
def peer_weights(db: str, study_: str, rev: int, selection: Selection, peer: str, base: str) -> dict:
    """Peer Rank weights of the chosen judges that are contestants (the weights tab)."""
    alias = aliases(db, study_, rev)
    chosen = selection.judges or ()
    reviewers = [j for j in chosen if j in alias]
    if len(reviewers) < 2:
        return dict(reviewers=reviewers, weights=None, history=None, iterations=None)
    from dataclasses import replace

    board = app.leaderboard(study(db, study_), replace(selection, judges=tuple(reviewers)), method=base,
                            peer_weights=peer, bootstrap=0)
    return dict(reviewers=reviewers, weights=board.weights, history=board.history, iterations=board.iterations)


@st.cache_data(show_spinner=False, max_entries=32)
def elo_curves(db: str, study_: str, rev: int, selection: Selection, judges_: tuple[str, ...],
               models: tuple[str, ...] | None = None) -> pd.DataFrame:
    """:func:`peercore.reports.elo_curves` of the chosen judges, for ``models`` only (the ones the chart draws)."""
    return reports.elo_curves(selected(db, study_, rev, selection), judges_, models=models)


@st.cache_data(show_spinner=False, max_entries=64)
def heatmap(db: str, study_: str, rev: int, selection: Selection, judge: str,
            models: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Pairwise win fractions of one judge's battles; ``models``: only these, in this order (a few of thousands)."""
    frame = selected(db, study_, rev, selection)
    return pairwise_win_fraction(frame[frame["judge"] == judge], models=models)


@st.cache_data(show_spinner=False, max_entries=32)
def counts(db: str, study_: str, rev: int, selection: Selection, models: tuple[str, ...] | None = None) -> pd.DataFrame:
    return battle_counts(selected(db, study_, rev, selection), models=models)


@st.cache_data(show_spinner=False, max_entries=16)
def health(db: str, study_: str, rev: int) -> pd.DataFrame:
    """Each LLM judge's health (:func:`peercore.app.health`): position bias, identical and unparsed verdicts, flag."""
    return app.health(study(db, study_))


def flagged(db: str, study_: str, rev: int, judges_) -> dict[str, tuple[str, str]]:
    """judge -> (why it carries no information, what to try), for the chosen judges that are flagged."""
    table = health(db, study_, rev)
    table = table[table.index.isin(list(judges_)) & table["flagged"]]
    return {j: (r, f) for j, r, f in zip(table.index, table["reasons"], table["fix"])}


def show_flags(db: str, study_: str, rev: int, judges_) -> None:
    """A warning on the page for every chosen judge the health check flags (with the fix to try)."""
    for judge, (reason, fix) in flagged(db, study_, rev, judges_).items():
        st.warning(f"Judge {safe.code(judge)} carries no information: {safe.md(reason)}. Try: {safe.md(fix)}.",
                   icon=":material/report:")


@st.cache_data(show_spinner=False, max_entries=32)
def bias_tables(db: str, study_: str, rev: int, selection: Selection):
    """The Bias page's tables (:func:`peercore.app.bias_report`: what ``peercore bias`` prints)."""
    return app.bias_report(study(db, study_), selection)


@st.cache_data(show_spinner=False, max_entries=16)
def discussion_bias(db: str, study_: str, rev: int) -> pd.DataFrame | None:
    """Position bias of the speakers' first and last verdicts in debates and discussions (:func:`peercore.app.discussion_bias`)."""
    return app.discussion_bias(study(db, study_))


# ------------------------------------------------------------------- page furniture

def sidebar_study_picker() -> None:
    """The study selectbox in the sidebar (on every page), bound to ``state.STUDY``."""
    names = studies()["name"].tolist()
    if st.session_state.get(state.STUDY) not in names:
        st.session_state[state.STUDY] = names[0] if names else None
    with st.sidebar:
        if names:
            st.selectbox("Study", names, key=state.STUDY, help="Every page shows this study.")
        else:
            st.caption("No study yet.")
        st.caption(f"Database: {safe.code(database_label(db_path()))}", help=safe.md(db_path()))


def current_study() -> str:
    """The open study's name; stops the page with a hint when there is none."""
    study = st.session_state.get(state.STUDY)
    if not study:
        st.info("There is no study yet. Create one on **Studies**, then import judgments on **Data**.")
        st.page_link("pages/studies.py", label="Go to Studies", icon=":material/folder_open:")
        st.stop()
    return study


# ------------------------------------------------------------------ Studies helpers

def studies_overview(frame: pd.DataFrame) -> pd.DataFrame:
    """Every study with its main counts (cached per study revision)."""
    rows = []
    for name, rev, description in zip(frame["name"], frame["revision"], frame["description"]):
        counts = summary(db_path(), name, int(rev))
        rows.append({"study": name, "judgments": reports.judgment_count(counts), "contestants": counts["contestants"],
                     "judges": counts["judges"], "debates": counts["debates"],
                     "open adjudications": counts["open_adjudications"], "description": description})
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False, max_entries=16)
def contestants(db: str, study_: str, rev: int) -> list[str]:
    """Every contestant: in a verdict or with an answer (:meth:`Study.contestants`)."""
    return study(db, study_).contestants()


def judge_editor_frame(db: str, study: str, rev: int) -> pd.DataFrame:
    """Judges with their kind, contestant alias (the one alias rule), origin and configuration, for the editor."""
    frame = judges(db, study, rev)
    return pd.DataFrame({
        "name": frame["name"], "kind": frame["kind"],
        "model_alias": [a if isinstance(a, str) else "" for a in frame["model_alias"]],
        "verdicts": frame["n_judgments"].astype(int), "unparsed": frame["n_invalid"].astype(int),
        "origin": frame["origin"], "model": frame["base"],
        "configuration": [reports.settings_text(s) for s in frame["settings"]],
    })


def save_judges(study: str, edited: pd.DataFrame, actor: Actor) -> int:
    """Store each judge's kind and alias (an empty alias stores none); nothing else about a judge changes.

    :func:`peercore.app.access.configure_judges` for ``actor`` (needs the editor role;
    raises :class:`peercore.errors.AccessDenied` otherwise, nothing written); returns how
    many judges changed.
    """
    return configure_judges(store(), actor, study, edited.to_dict("records"))


# --------------------------------------------------------------- Leaderboard helpers

def judges_or_stop(db: str, study: str, rev: int, *, choice_key: str) -> tuple[list[str], dict[str, list[str]]]:
    """The study's judges and their groups, with the judge multiselect ``choice_key`` seeded.

    A study without judgments gets a pointer to the pages that add some, and the page stops.
    """
    all_judges = judge_names(db, study, rev)
    if not all_judges:
        st.info("This study has no judgments yet. Import some on **Data** or run reviewers on **Reviewers & runs**.")
        st.stop()
    groups = reports.judge_groups(all_judges, kinds(db, study, rev))
    seed_judge_choice(choice_key, all_judges, groups)
    return all_judges, groups


def seed_judge_choice(key_: str, all_judges: list[str], groups: dict[str, list[str]]) -> None:
    """Give a judge multiselect its default (LLM reviewers, else all) or drop judges that vanished."""
    current = st.session_state.get(key_)
    if current is None or not set(current) <= set(all_judges) or not current:
        st.session_state[key_] = list(groups.get("LLM reviewers") or all_judges)


def apply_quick_pick(key_: str, pick_key: str, all_judges: list[str], groups: dict[str, list[str]]) -> None:
    """Callback of the "Quick pick" pills: replace the judge choice with a whole group."""
    pick = st.session_state.get(pick_key)
    if pick:
        st.session_state[key_] = list(all_judges if pick == "All judges" else groups[pick])
    st.session_state[pick_key] = None


def seed_list_choice(key_: str, options: list[str], *, limit: int) -> None:
    """Default a multiselect to the first ``limit`` options, keeping a valid earlier choice."""
    current = st.session_state.get(key_)
    if current is None or not set(current) <= set(options):
        st.session_state[key_] = list(options[:limit])


def seed_single_choice(key_: str, options: list[str], index: int) -> None:
    """Default a selectbox to ``options[index]`` (or the last), keeping a valid earlier choice."""
    if st.session_state.get(key_) not in options and options:
        st.session_state[key_] = options[min(index, len(options) - 1)]


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """CSV for a download button, cells a spreadsheet would run as formulas neutralised (peercore.io.export)."""
    return table_bytes(frame, format="csv")


# ---------------------------------------------------------------------- Bias helpers


# ------------------------------------------------------------------- Debate helpers

_BADGES = {"model_a": ":blue-badge[Submission 1]", "model_b": ":orange-badge[Submission 2]", "tie": ":gray-badge[Tie]"}
_STATUS_BADGES = {"agreed": ":green-badge[agreed]", "unresolved": ":red-badge[unresolved]",
                  "adjudicated": ":violet-badge[adjudicated]"}


def verdict_badge(verdict, *, prefix: str | None = None) -> str:
    """A coloured Markdown badge for a verdict (1 / 2 / tie / none); any other stored value is escaped inside a gray one.

    ``prefix`` is PeerBoard's own word (e.g. "consensus"), written as Markdown.
    """
    if verdict is None or (isinstance(verdict, float) and pd.isna(verdict)):
        return "" if prefix else ":red-badge[no verdict]"
    badge = _BADGES.get(str(verdict)) or f":gray-badge[{safe.md(verdict)}]"
    return badge.replace("[", f"[{prefix}: ", 1) if prefix else badge


def name_md(name: str) -> str:
    """A judge, model or speaker name as inline code inside PeerBoard's Markdown (:func:`safe.code`).

    Nothing in it is Markdown: no e-mail autolink (``x.5-coder-1.5b@agent-t0.7a``), no
    badge, image or link, whatever the name holds.
    """
    return safe.code(name)


def status_badge(status: str) -> str:
    """A coloured badge for a debate status; any other stored value is escaped inside a gray one."""
    return _STATUS_BADGES.get(status) or f":gray-badge[{safe.md(status)}]"


@st.cache_data(show_spinner=False, max_entries=16)
def debate_overview(db: str, study: str, rev: int) -> pd.DataFrame:
    return reports.debate_overview(debates(db, study, rev), turns(db, study, rev), adjudications(db, study, rev))


def question_text(db: str, study: str, rev: int, question_id: str) -> str | None:
    """The question's stored text (untrusted: show it with :func:`safe.text`), None when not stored."""
    frame = questions(db, study, rev)
    match = frame.loc[frame["question_id"] == str(question_id), "text"]
    return match.iloc[0] if len(match) else None


def answer_text(db: str, study: str, rev: int, question_id: str, model: str) -> str | None:
    """The model's answer, turns separated by a blank line (untrusted: :func:`safe.text`), None when not stored."""
    frame = answers(db, study, rev)
    match = frame[(frame["question_id"] == str(question_id)) & (frame["model"] == model)]
    if len(match) == 0:
        return None
    return "\n\n".join(match.sort_values("turn")["answer"])

# Adjudication helpers (queue, decisions, skips, undo, blind mode, agreement) live in
# peercore/ui/adjudication.py.


# ---------------------------------------------------------- Meta-evaluation helpers

ACCURACY_METRICS = {"accuracy": "accuracy (with ties)", "accuracy_without_ties": "accuracy (without ties)",
                    "cohen_kappa": "Cohen's kappa", "fleiss_kappa": "Fleiss' kappa"}


@st.cache_data(show_spinner=False, max_entries=16)
def meta_evaluation(db: str, study_: str, rev: int, panel: str | None = None, reference_mode: str = "majority"):
    """Everything the Meta-evaluation page shows (:func:`peercore.app.meta_evaluation`, ``peercore agree``'s numbers)."""
    return app.meta_evaluation(study(db, study_), panel=panel, reference_mode=reference_mode)


def scaleeval_pivots(table: pd.DataFrame, criterion: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    example, system = reports.scaleeval_pivots(table, criterion)
    return example.round(3), system.round(3)


# ----------------------------------------------------------------- Efficiency helpers

EFFICIENCY_METHODS = {"win_ratio": "win ratio", "bt": "Bradley-Terry", "avg_prob": "average probability",
                      "poe_bt": "PoE-BT", "poe_gaussian": "PoE-Gaussian"}
EFFICIENCY_REFERENCES = {"self": "each scorer on all comparisons", **{k: f"{v} on all comparisons"
                                                                      for k, v in EFFICIENCY_METHODS.items()}}


@st.cache_data(show_spinner=False, max_entries=16)
def efficiency_judges(db: str, study: str, rev: int) -> dict[str, str]:
    """judge -> label for the judges whose verdicts can rank a question's answers, best default first.

    Which judges qualify and in which order is :func:`peercore.app.efficiency.efficiency_judges`;
    this only words the labels ("all LLM reviewers pooled" last when there are several).
    """
    table = _efficiency_judges(_study(db, study))
    labels = {}
    for judge, row in table.iterrows():
        if judge == POOLED:
            labels[POOLED] = f"all LLM reviewers pooled ({int(row['questions'])})"
            continue
        labels[judge] = (f"{judge} ({int(row['questions'])} questions"
                         f"{', with probabilities' if row['with_probabilities'] else ''}"
                         f"{'; flagged by the health check' if row['flagged'] else ''})")
    return labels

EFFICIENCY_WAIT_S = 1.0  # how long a page run waits for curves that should be quick before it shows progress
EFFICIENCY_QUICK_ROWS = 20_000  # a judge with more verdicts than this: the page shows progress at once
EFFICIENCY_SHARE = 0.9   # the takeaway: comparisons needed to reach this share of the full-set correlation


class EfficiencyJob:
    """The Efficiency page's curves, computed in a background thread with progress and a partial result.

    One job per (study revision, judge, options), shared by every session of the process
    (:func:`efficiency_job`). ``fraction`` (0..1) and ``partial`` (the result of the
    strategies finished so far, same shape as ``result``) advance as the thread works;
    ``result`` is the whole result, ``error`` the message if it failed. The numbers are
    those of :func:`peercore.efficiency.efficiency_curve` called at once (seed 0).
    """

    def __init__(self, rows, methods: tuple[str, ...], repeats: int, max_questions: int,
                 reference: str, *, n_rows: int | None = None) -> None:
        """``rows``: the judge's verdicts, or a function that reads them (then in the thread, and
        ``n_rows`` says how many there are, to decide whether the page waits for the result)."""
        self.fraction = 0.0
        self.partial: dict | None = None
        self.result: dict | None = None
        self.error: str | None = None
        self._done = threading.Event()
        self._started = time.monotonic()
        n_rows = len(rows) if n_rows is None else n_rows
        self.quick = n_rows <= EFFICIENCY_QUICK_ROWS  # worth waiting a moment for (small studies: at once)
        self._thread = threading.Thread(target=self._run, args=(rows, methods, repeats, max_questions, reference),
                                        name="peerboard-efficiency", daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, seconds: float | None) -> bool:
        """Wait for the whole result until ``seconds`` after the job started (None: until done); whether it is there.

        Counted from the start, not from the call: the first run of a page waits a
        little (small studies then show the whole result at once), its reruns do not.
        """
        if seconds is None:
            return self._done.wait()
        return self._done.wait(max(0.0, self._started + seconds - time.monotonic()))

    def _run(self, rows, methods, repeats, max_questions, reference) -> None:
        try:
            rows = rows() if callable(rows) else rows  # read here, not in the page's run
            facts: dict = {}

            def progress(fraction: float, curve: pd.DataFrame) -> None:
                self.fraction = fraction
                if len(curve) and fraction < 1.0:
                    self.partial = {**_efficiency_tables(curve, methods), **facts}

            result = efficiency_result(rows, methods=methods, repeats=repeats, max_questions=max_questions,
                                       reference=reference, progress=progress, facts=facts)
            self.result = {**_efficiency_tables(result["curve"], methods),
                           **{k: v for k, v in result.items() if k not in ("curve", "summary")}}
            self.fraction = 1.0
        except Exception as error:  # shown on the page; the thread must not die silently
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self._done.set()


@st.cache_resource(show_spinner=False, max_entries=16)
def _efficiency_job(db: str, study: str, rev: int, judge: str, methods: tuple[str, ...], repeats: int,
                    max_questions: int, reference: str, _rows, _n_rows: int) -> EfficiencyJob:
    return EfficiencyJob(_rows, methods, repeats, max_questions, reference, n_rows=_n_rows)


def efficiency_job(db: str, study: str, rev: int, judge: str, methods: tuple[str, ...], repeats: int,
                   max_questions: int, reference: str) -> EfficiencyJob:
    """The (started or finished) background job of the Efficiency page's curves for these settings.

    ``judge`` is a judge name or :data:`POOLED` (every LLM judge's verdicts together).
    """
    handle = _study(db, study)
    table = handle.verdicts()
    chosen = efficiency_codes(table, judge)
    n_rows = int(np.count_nonzero(chosen[table.judge] & (table.winner >= 0)))
    return _efficiency_job(db, study, rev, judge, tuple(methods), int(repeats), int(max_questions), reference,
                           lambda: efficiency_verdicts(handle, judge, max_questions=int(max_questions)), n_rows)


@st.cache_data(show_spinner=False, max_entries=32)
def efficiency(db: str, study: str, rev: int, judge: str, methods: tuple[str, ...], repeats: int,
               max_questions: int, reference: str) -> dict:
    """The Efficiency page's whole result, waiting for its job (:func:`efficiency_job`)."""
    job = efficiency_job(db, study, rev, judge, methods, repeats, max_questions, reference)
    job.wait(None)
    if job.error:
        raise RuntimeError(job.error)
    return job.result


def _efficiency_tables(curve: pd.DataFrame, methods: tuple[str, ...]) -> dict:
    """``summary`` (named scorers) and the page's ``table`` of a curve (finished strategies only)."""
    summary = summarise(curve)
    named = summary.assign(method=summary["method"].map(EFFICIENCY_METHODS))
    table = named.assign(cell=[f"{m:.3f} [{lo:.2f}, {hi:.2f}]" for m, lo, hi in zip(named["median"], named["low"], named["high"])])
    table = table.pivot_table(index=["strategy", "k"], columns="method", values="cell", aggfunc="first").reset_index()
    table.columns.name = None
    table = table.sort_values(["strategy", "k"], key=lambda c: c.map({"random": 0, "greedy": 1}) if c.name == "strategy" else c)
    table = table[["strategy", "k", *[EFFICIENCY_METHODS[m] for m in methods]]].reset_index(drop=True)
    return {"summary": named, "table": table}

_STRATEGY_WORDS = {"greedy": "greedy selection", "random": "random order"}


def efficiency_takeaway(summary: pd.DataFrame, *, share: float = EFFICIENCY_SHARE) -> str | None:
    """The Efficiency page's takeaway in one sentence (Markdown), or None when the curves say nothing.

    For each scorer the *full-set correlation* is its median correlation with the most
    comparisons measured (the whole question); the sentence names the scorer that
    reaches ``share`` of it with the fewest comparisons per question under greedy
    selection (else random order), and what the other strategy needs, e.g. "With greedy
    selection, PoE-Gaussian reaches 0.9 of its full-set correlation (0.95) with 4
    comparisons per question; random order needs 9."

    Parameters
    ----------
    summary : :func:`peercore.efficiency.summarise` output (``strategy, method, k, median``).
    share : the share of the full-set correlation to reach.
    """
    if len(summary) == 0:
        return None
    best = None
    for method, rows in summary.groupby("method", sort=False):
        top = rows["k"].max()
        full = float(rows.loc[rows["k"] == top, "median"].max())
        if not full > 0:
            continue
        needs = {}
        for strategy, group in rows.groupby("strategy", sort=False):
            reached = group.loc[group["median"] >= share * full - 1e-12, "k"]
            needs[strategy] = (int(reached.min()) if len(reached) else None, int(group["k"].max()))
        lead = "greedy" if "greedy" in needs else next(iter(needs))
        if needs[lead][0] is None:
            continue
        rank = (needs[lead][0], -full, str(method))
        if best is None or rank < best[0]:
            best = (rank, method, full, lead, needs)
    if best is None:
        return None
    _, method, full, lead, needs = best
    k = needs[lead][0]
    sentence = (f"With {_STRATEGY_WORDS.get(lead, lead)}, **{method}** reaches {share:g} of its full-set correlation "
                f"({full:.2f}) with **{k}** comparison{'s' if k != 1 else ''} per question")
    for strategy, (other, largest) in needs.items():
        if strategy == lead:
            continue
        word = _STRATEGY_WORDS.get(strategy, strategy)
        sentence += (f"; {word} needs **{other}**" if other is not None
                     else f"; {word} does not reach it within {largest}")
    return sentence + "."


# ----------------------------------------------------------------- prompts (cached)

@st.cache_data(show_spinner=False, max_entries=16)
def imports_log(db: str, study: str, rev: int) -> pd.DataFrame:
    """The study's import records (source, format, checksum, counts), oldest first."""
    return _store(db).studies.imports(study)
