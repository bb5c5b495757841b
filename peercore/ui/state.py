"""Session-state keys shared across pages, defined once, with their defaults.

Pages read and write ``st.session_state[KEY]`` with the names below; ``app.py`` calls
:func:`init` at the top of every run, which seeds each key with ``setdefault`` (a
value the user chose is never overwritten) and keeps the values of widgets whose
choice must survive a change of page (Streamlit forgets a widget's value when the
page that shows it is not on screen).

No secret ever goes into session state: API keys are read from the environment or
``st.secrets`` at the moment a run is launched.
"""

from __future__ import annotations

import streamlit as st

from peercore import reports
from peercore.app.leaderboard import DEFAULT_BOOTSTRAP, PRELIMINARY_BATTLES
from peercore.domain.options import Method, PeerWeights, parse

# --- shared across pages ----------------------------------------------------------
STUDY = "study"                      # name of the open study (sidebar selectbox)
ANNOTATOR = "annotator"              # adjudicator's name (Adjudication page)

# --- Leaderboard ------------------------------------------------------------------
LB_METHOD = "lb_method"              # label from peercore.reports.LEADERBOARD_METHODS
LB_JUDGES = "lb_judges"              # judges that count (list of names); None = default set
LB_WEIGHT_MODE = "lb_weight_mode"    # Peer Rank weight mode label
LB_BASE = "lb_base"                  # Peer Rank base score: winrate / elo / bt
LB_BOOTSTRAP = "lb_bootstrap"        # bootstrap rounds for 95% intervals
LB_TAB = "lb_tab"                    # open tab (lazy tabs)
LB_CURVE_JUDGES = "lb_curve_judges"  # judges whose Elo curves are overlaid
LB_HEAT_LEFT = "lb_heat_left"        # judge of the left heatmap
LB_HEAT_RIGHT = "lb_heat_right"      # judge of the right heatmap
LB_WHATIF_PREFIX = "lb_whatif::"    # + judge name: the what-if checkbox of that judge
LB_BASELINE = "lb_baseline"          # "Versus a baseline": the baseline model
LB_CATEGORY = "lb_category"          # one question category, or reports.ALL_CATEGORIES
LB_SEARCH = "lb_search"              # text that filters the shown table to matching models and judges
LB_VIEW_STUDY = "lb_view_study"      # the study the Leaderboard's view keys belong to
LB_VIEWS = "lb_views"                # study -> its last Leaderboard view (query parameters) in this session
LB_URL = "lb_url"                    # the view last written to (or read from) the URL's query parameters
LB_ANCHOR = "lb_anchor"              # the table anchored to human labels (PPI++, ``peercore calibrate``) is on
LB_ANCHOR_REFERENCE = "lb_anchor_reference"  # the human labels it is anchored to (a judge name or ``human:``)
URL_STUDY = "url_study"              # the study last read from (or written to) the URL's ``?study=``

# --- Bias -------------------------------------------------------------------------
BIAS_JUDGES = "bias_judges"

# --- Data -------------------------------------------------------------------------
DATA_UPLOAD_VERSION = "data_upload_version"  # bumps to clear the uploader after import

# --- Reviewers & runs -------------------------------------------------------------
RUN_HANDLE = "run_handle"            # the live run (peercore.ui.runs.LiveRun: handle + log), if any
REVIEWERS = "reviewers"              # reviewer configurations (no keys in them)

# --- Discussions & debates --------------------------------------------------------
DEB_FILTER = "deb_filter"
DEB_SELECTED = "deb_selected"

# --- Adjudication -----------------------------------------------------------------
# (skips are the annotator's and live in the store: Store.debates.skip)
ADJ_HISTORY = "adj_history"          # [(debate_id, annotator, token)] decided in this tab, for undo
ADJ_NOTE_VERSION = "adj_note_version"  # bumps to clear the note box after a decision
ADJ_FLASH = "adj_flash"              # one-line confirmation of the last action
ADJ_BLIND = "adj_blind"              # blind mode: agents' verdicts hidden until the decision (on by default)
ADJ_REVEALED = "adj_revealed"        # debate ids whose agents this tab chose to see before deciding
ADJ_LAST = "adj_last"                # the debate this tab decided last (its agents are shown after the decision)
ADJ_SCENARIO = "adj_scenario"        # queue filter: one scenario or "All scenarios"
ADJ_CRITERION = "adj_criterion"      # queue filter: one criterion or "All criteria"

# --- Meta-evaluation / Efficiency ---------------------------------------------------
META_CRITERION = "meta_criterion"   # criterion filter of the ScaleEval tables
EFF_JUDGE = "eff_judge"

DEFAULTS: dict[str, object] = {
    STUDY: None,
    ANNOTATOR: "",
    LB_METHOD: "Bradley-Terry",
    LB_JUDGES: None,
    LB_WEIGHT_MODE: "PRD (5 iterations, min-max)",
    LB_BASE: "Win rate",
    LB_BOOTSTRAP: 100,
    LB_TAB: "Table",
    LB_CURVE_JUDGES: None,
    LB_HEAT_LEFT: None,
    LB_HEAT_RIGHT: None,
    LB_VIEW_STUDY: None,
    LB_VIEWS: {},
    LB_URL: None,
    URL_STUDY: None,
    BIAS_JUDGES: None,
    DATA_UPLOAD_VERSION: 0,
    RUN_HANDLE: None,
    REVIEWERS: [],
    DEB_FILTER: "All",
    DEB_SELECTED: None,
    ADJ_HISTORY: [],
    ADJ_NOTE_VERSION: 0,
    ADJ_FLASH: "",
    ADJ_BLIND: True,
    ADJ_REVEALED: [],
    ADJ_LAST: None,
    ADJ_SCENARIO: "All scenarios",
    ADJ_CRITERION: "All criteria",
    META_CRITERION: "All criteria",
    EFF_JUDGE: None,
}

# Widget-backed keys whose value must survive switching pages.
PERSISTENT = (STUDY, ANNOTATOR, LB_METHOD, LB_WEIGHT_MODE, LB_BASE, LB_BOOTSTRAP, ADJ_BLIND, ADJ_SCENARIO,
              ADJ_CRITERION)


def init() -> None:
    """Seed every key with its default (``setdefault``) and keep persistent widget values."""
    state = st.session_state
    for key, value in DEFAULTS.items():
        state.setdefault(key, list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict)
                         else value)
    for key in PERSISTENT:
        # Re-assigning a widget's own value stops Streamlit from dropping it when the
        # page holding the widget is not rendered (documented "widget clean-up" note).
        state[key] = state[key]


def ensure_frame() -> None:
    """Called first by every page: make sure the run went through ``app.py``.

    With a ``pages/`` folder beside the entry script, Streamlit runs a page file on its
    own (its legacy multipage mode) when a fresh server's first visitor opens a page's
    URL directly, before ``app.py`` ever called ``st.navigation``; the sidebar, the
    study picker and these session keys would then be missing. Streamlit switches that
    mode off for good the first time ``st.navigation`` runs, so this does the same and
    reruns: the rerun goes through ``app.py`` and lands on the same page.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


# --------------------------------------------------------------- the Leaderboard's view
# A view is what the Leaderboard shows (method, judges, category, options) as query
# parameters: ``peercore rank``'s option names and the enum values of
# peercore.domain.options, never the page's labels (``?method=bt&judge=gpt4&control=length``).
# Every way of reaching a study's Leaderboard (Home's card, the sidebar, a shared link)
# goes through :func:`open_leaderboard`, so a study opens on one default view.

DEFAULT_METHOD = "Bradley-Terry"
#: Query parameters that repeat (one value each).
VIEW_LISTS = ("judge", "contestant", "control")
#: The query parameter naming the study a link opens (``?study=NAME``; read by app.py, every page).
STUDY_PARAM = "study"
# Widget keys of the view besides LB_METHOD (cleared before another view is applied, so widgets take their defaults).
_VIEW_KEYS = (LB_WEIGHT_MODE, LB_BASE, "lb_per_shuffle", "lb_poe", LB_BASELINE, "lb_controls", "lb_intervals",
              LB_BOOTSTRAP, LB_JUDGES, LB_CATEGORY, "lb_contestants", "lb_common", "lb_all_rounds", "lb_each_vote",
              "lb_soft", "lb_min_battles", "lb_reweight", "lb_prior", LB_ANCHOR, LB_ANCHOR_REFERENCE)
_TRUE = "1"


BASELINE_METHOD = "Versus a baseline"


def default_method(named: str | None, *, baseline=None) -> str:
    """The method a study's Leaderboard opens on, wherever it is reached (Home's card, the sidebar, a link).

    The one its provenance names; else, when one model takes part in every comparison
    (AlpacaEval's shape: every annotation is against ``gpt4_1106_preview``), the table
    against that baseline, as AlpacaEval shows it; else Bradley-Terry.

    Parameters
    ----------
    named : the ``leaderboard_method`` of the study's provenance (e.g. "Peer Rank weighted"
        for PRD, whose Table 2 is Peer Rank), or None.
    baseline : a callable giving the study's baseline (the rule of
        :func:`peercore.app.leaderboard.selection_baseline`, None when no model is in every
        comparison); called only when ``named`` is not a method. None: not looked for.
    """
    if named in reports.LEADERBOARD_METHODS:
        return named
    if baseline is not None and baseline() is not None:
        return BASELINE_METHOD
    return DEFAULT_METHOD


def view_params(values) -> dict[str, str | list[str]]:
    """The Leaderboard view held in ``values`` (session state) as query parameters (enum values)."""
    label = values.get(LB_METHOD) or DEFAULT_METHOD
    out: dict[str, str | list[str]] = {}
    if label == "Peer Rank weighted":
        out["method"] = reports.BASE_SCORES.get(values.get(LB_BASE), "winrate")
        out["peer_weights"] = reports.WEIGHT_MODES.get(values.get(LB_WEIGHT_MODE), "prd")
        if values.get("lb_per_shuffle") and out["method"] == "elo" and out["peer_weights"] == "prd":
            out["weights_from"] = "elo-per-shuffle"
    elif label == "PoE":
        out["method"] = reports.POE_METHODS.get(values.get("lb_poe"), "poe-gaussian")
    elif label == "Versus a baseline":
        out["method"] = "winrate"
        if values.get(LB_BASELINE):
            out["baseline"] = str(values[LB_BASELINE])
    else:
        out["method"] = reports.BASE_SCORES.get(label, "bt")
    if label == "Bradley-Terry":
        if values.get("lb_controls"):
            out["control"] = [reports.STYLE_CONTROLS[c] for c in values["lb_controls"] if c in reports.STYLE_CONTROLS]
        if reports.INTERVAL_KINDS.get(values.get("lb_intervals")) == "sandwich":
            out["intervals"] = "sandwich"
        if values.get("lb_reweight"):
            out["reweight"] = _TRUE
        if values.get("lb_prior"):
            out["prior"] = f"{reports.WEAK_PRIOR:g}"
    if values.get(LB_JUDGES):
        out["judge"] = [str(j) for j in values[LB_JUDGES]]
    if values.get(LB_CATEGORY) not in (None, reports.ALL_CATEGORIES):
        out["category"] = str(values[LB_CATEGORY])
    if values.get("lb_contestants"):
        out["contestant"] = [str(c) for c in values["lb_contestants"]]
    for key, name in (("lb_common", "common_contestants"), ("lb_all_rounds", "all_rounds"), ("lb_soft", "soft")):
        if values.get(key):
            out[name] = _TRUE
    if values.get("lb_each_vote"):
        out["repeated_votes"] = "each"
    if values.get(LB_BOOTSTRAP) not in (None, DEFAULT_BOOTSTRAP):
        out["bootstrap"] = str(int(values[LB_BOOTSTRAP]))
    if values.get("lb_min_battles") not in (None, PRELIMINARY_BATTLES):
        out["min_battles"] = str(int(values["lb_min_battles"]))
    if values.get(LB_ANCHOR):  # ``peercore calibrate --reference R``'s table
        out["anchor"] = _TRUE
        if values.get(LB_ANCHOR_REFERENCE):
            out["reference"] = str(values[LB_ANCHOR_REFERENCE])
    return out


def view_values(params, method: str) -> dict[str, object]:
    """Session values (widget keys -> the page's labels) of a view given as query parameters.

    What a parameter cannot mean (an unknown method, a number that is none) is left out,
    so the widget keeps its default; ``method`` is the study's default when the
    parameters name none.
    """
    def one(name):
        value = params.get(name)
        return value[-1] if isinstance(value, list) and value else value if isinstance(value, str) else None

    def many(name):
        value = params.get(name)
        return [str(v) for v in value] if isinstance(value, list) else [value] if isinstance(value, str) else []

    def label_of(mapping, code):
        return next((label for label, c in mapping.items() if c == code), None)

    out: dict[str, object] = {LB_METHOD: method}
    try:
        code = parse(Method, one("method"), "method")
        peer = parse(PeerWeights, one("peer_weights"), "peer_weights")
    except ValueError:
        code, peer = None, None
    if code is not None:
        if peer not in (None, PeerWeights.NONE) and label_of(reports.BASE_SCORES, code):
            out.update({LB_METHOD: "Peer Rank weighted", LB_BASE: label_of(reports.BASE_SCORES, code),
                        LB_WEIGHT_MODE: label_of(reports.WEIGHT_MODES, peer)})
            if one("weights_from") == "elo-per-shuffle":
                out["lb_per_shuffle"] = True
        elif code in (Method.POE_GAUSSIAN, Method.POE_BT):
            out.update({LB_METHOD: "PoE", "lb_poe": label_of(reports.POE_METHODS, code)})
        elif code is Method.WINRATE and one("baseline"):
            out.update({LB_METHOD: "Versus a baseline", LB_BASELINE: one("baseline")})
        else:
            out[LB_METHOD] = label_of(reports.BASE_SCORES, code)
    if out[LB_METHOD] == "Bradley-Terry":
        controls = [label_of(reports.STYLE_CONTROLS, c) for c in many("control")]
        if any(controls):
            out["lb_controls"] = [c for c in controls if c]
        if one("intervals") == "sandwich":
            out["lb_intervals"] = label_of(reports.INTERVAL_KINDS, "sandwich")
        out["lb_reweight"] = one("reweight") == _TRUE
        out["lb_prior"] = one("prior") is not None
    if many("judge"):
        out[LB_JUDGES] = many("judge")
    if one("category"):
        out[LB_CATEGORY] = one("category")
    if many("contestant"):
        out["lb_contestants"] = many("contestant")
    for key, name in (("lb_common", "common_contestants"), ("lb_all_rounds", "all_rounds"), ("lb_soft", "soft")):
        out[key] = one(name) == _TRUE
    out["lb_each_vote"] = one("repeated_votes") == "each"
    for key, name in ((LB_BOOTSTRAP, "bootstrap"), ("lb_min_battles", "min_battles")):
        if (one(name) or "").isdigit():
            out[key] = int(one(name))
    out[LB_ANCHOR] = one("anchor") == _TRUE
    if one("anchor") == _TRUE and one("reference"):
        out[LB_ANCHOR_REFERENCE] = one("reference")
    return {key: value for key, value in out.items() if value is not None}


def url_view(query) -> dict[str, str | list[str]]:
    """The query parameters of a URL (``st.query_params``) as :func:`view_params` writes them."""
    return {name: list(query.get_all(name)) if name in VIEW_LISTS else query.get(name) for name in query}


def apply_view(params, method: str) -> None:
    """Make ``params`` (query parameters) the Leaderboard's view; call before the page's widgets."""
    state = st.session_state
    for key in _VIEW_KEYS:
        if key in DEFAULTS:
            state[key] = DEFAULTS[key]
        else:
            state.pop(key, None)
    for key, value in view_values(params, method).items():
        state[key] = value


def keep_valid(key: str, options) -> None:
    """Forget what a restored view chose for widget ``key`` outside ``options`` (a link made on other data).

    A list (a multiselect's choice) keeps its valid items; a single value that is not an
    option is dropped, so the widget takes its default.
    """
    state = st.session_state
    options = list(options)
    if key not in state:
        return
    value = state[key]
    if isinstance(value, list):
        state[key] = [v for v in value if v in options]
    elif value is not None and value not in options:
        del state[key]


def open_leaderboard(study: str, method: str, url=None) -> None:
    """Make the Leaderboard's view the one of ``study``: every path to a study's Leaderboard calls this.

    A shared link's view (``url``, query parameters not written by this session) wins;
    else the view this session last used for the study; else the study's default
    (``method``: :func:`default_method` of its provenance, every other option at its
    default). The link's study (``?study=``) is not part of the view: :func:`open_linked_study`
    has made it the open study already, and a link naming only a study opens that study's view.
    """
    state = st.session_state
    url = dict(url or {})
    view = {name: value for name, value in url.items() if name != STUDY_PARAM}
    if url and url != state.get(LB_URL):
        state[LB_URL] = url
        if view:
            apply_view(view, method)
            state[LB_VIEW_STUDY] = study
            return
    if state.get(LB_VIEW_STUDY) != study:
        apply_view(state.get(LB_VIEWS, {}).get(study, {}), method)
    state[LB_VIEW_STUDY] = study


def remember_view(study: str) -> dict[str, str | list[str]]:
    """Keep the Leaderboard's current view for ``study`` and put it, with the study, in the URL (once it changed).

    Returns the URL's query parameters: ``study`` (:data:`STUDY_PARAM`) and the view.
    """
    state = st.session_state
    view = view_params(state)
    state.setdefault(LB_VIEWS, {})[study] = view
    params = {STUDY_PARAM: study, **view}
    if params != state.get(LB_URL):
        st.query_params.from_dict(params)
        state[LB_URL] = params
        state[URL_STUDY] = study
    return params


def open_linked_study(query, names) -> str | None:
    """Make the study a link names (``?study=NAME``) the open one; called by ``app.py`` before the study picker.

    A link is followed once: a ``study`` parameter this session wrote or already followed
    (:data:`URL_STUDY`) changes nothing, so choosing another study in the sidebar is never
    undone by the URL it left behind.

    Parameters
    ----------
    query : the URL's query parameters (``st.query_params``).
    names : the studies of the database.

    Returns
    -------
    str or None
        The linked name when it is no study of the database (the caller says so; the open
        study stays as it was), else None.
    """
    state = st.session_state
    linked = query.get(STUDY_PARAM)
    if not linked or linked == state.get(URL_STUDY):
        return None
    state[URL_STUDY] = linked
    if linked not in set(names):
        return linked
    state[STUDY] = linked
    return None
