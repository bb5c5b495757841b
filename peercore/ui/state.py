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
# (skips are the annotator's and live in the store: Store.skip_debate)
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
        state.setdefault(key, list(value) if isinstance(value, list) else value)
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
