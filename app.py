"""PeerBoard: the picture frame. Navigation, the study picker and nothing else.

Run with ``streamlit run app.py`` (or ``peercore app``). The database is
``$PEERBOARD_DB``, a SQLite file or a ``postgresql://`` URL (default: a SQLite file in
the per-user data folder); an empty database gets the
bundled studies from ``sample_data/`` on first run (the sample, and each subfolder with its
own ``provenance.json``: PRD Vicuna80, TopicalChat), with no key and no network, and opens on
the sample (``$PEERBOARD_SAMPLE_DATA`` names another folder; set it empty for none). The menu is
drawn first, so a first start shows the frame and the import's progress, not a blank page. A link's
``?study=NAME`` opens that study (:func:`peercore.ui.state.open_linked_study`).
"""

from pathlib import Path

import streamlit as st

from peercore.store import StoreError
from peercore.ui import access, data, safe, state

st.set_page_config(page_title="PeerBoard", page_icon=str(Path(__file__).parent / "peercore" / "ui" / "peerboard.svg"), layout="wide")
state.init()
try:
    database = data.store()
except StoreError as exc:  # a wrong $PEERBOARD_DB, a PostgreSQL server down: say so (its password never shown)
    st.error(f"The database could not be opened: {safe.md(str(exc))}", icon=":material/database:")
    st.stop()
access.gate(database)  # with login configured, nothing of a study before sign-in and a role (issue 20)

PAGES = {
    "": [
        st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("pages/studies.py", title="Studies", icon=":material/folder_open:"),
    ],
    "Rank": [
        st.Page("pages/leaderboard.py", title="Leaderboard", icon=":material/leaderboard:"),
        st.Page("pages/bias.py", title="Bias", icon=":material/balance:"),
        st.Page("pages/efficiency.py", title="Efficiency", icon=":material/speed:"),
    ],
    "Collect": [
        st.Page("pages/data.py", title="Data", icon=":material/upload_file:"),
        st.Page("pages/reviewers.py", title="Reviewers & runs", icon=":material/smart_toy:"),
    ],
    "Judge the judges": [
        st.Page("pages/debates.py", title="Discussions & debates", icon=":material/forum:"),
        st.Page("pages/adjudication.py", title="Adjudication", icon=":material/gavel:"),
        st.Page("pages/meta_evaluation.py", title="Meta-evaluation", icon=":material/fact_check:"),
        st.Page("pages/nlg.py", title="NLG assessment", icon=":material/chat:"),
    ],
}

page = st.navigation(PAGES)  # the frame first: the menu is drawn while a first start prepares the studies
preparing = st.empty()
data.ensure_sample_study(database, data.sample_folder(Path(__file__).parent / "sample_data"),
                         progress=lambda done, total, what: preparing.progress(
                             done / total, text=f"First start: preparing the bundled studies ({safe.md(what)}, "
                                                f"file {min(done + 1, total)} of {total})…"))
preparing.empty()
names = data.studies()["name"].tolist()
if st.session_state.get(state.STUDY) is None and data.SAMPLE_STUDY in set(names):
    st.session_state[state.STUDY] = data.SAMPLE_STUDY  # the sample opens first, whatever sorts before it
# A shared link (?study=NAME, e.g. a Leaderboard view) opens its study; a name the database lacks is said, not failed.
if (unknown := state.open_linked_study(st.query_params, names)) is not None:
    shown = st.session_state.get(state.STUDY) if st.session_state.get(state.STUDY) in names else next(iter(names), None)
    st.warning(f"The link names study {safe.code(unknown)}, which is not a study you can open here; showing "
               f"{safe.code(shown) if shown else 'no study'} instead.", icon=":material/link_off:")
data.sidebar_study_picker()
page.run()
