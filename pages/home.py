"""Home: what PeerBoard is, the ready studies to open, and what to do next.

A gallery of the studies that hold judgments (the bundled ones first: the sample, PRD
Vicuna80, TopicalChat), each with its counts and the one-line description its provenance
gives, and a button that opens the study on the Leaderboard (with the method its
provenance names, e.g. Peer Rank for PRD, else Bradley-Terry: :func:`peercore.ui.state.default_method`,
the same default the sidebar's way to the Leaderboard gives). Below, links to import data, launch a review
and adjudicate (with the number of debates waiting in the open study). Study names and
descriptions are untrusted text (:mod:`peercore.ui.safe`).
"""

import streamlit as st

from peercore import reports
from peercore.app.leaderboard import selection_baseline
from peercore.ui import data, safe, state
from peercore.ui.home import counts_line, ready_studies

GALLERY_SIZE = 6


def open_study(name: str, named: str | None) -> None:
    """Button callback: make ``name`` the open study, its Leaderboard on the view the sidebar would open too."""
    st.session_state[state.STUDY] = name
    method = state.default_method(named, baseline=lambda: selection_baseline(data.study(data.db_path(), name)))
    state.open_leaderboard(name, method)


def study_card(card: dict, *, is_open: bool) -> bool:
    """One study of the gallery; True when its button was clicked."""
    with st.container(border=True):
        status = [word for word, on in (("bundled", card["bundled"]), ("open now", is_open)) if on]
        st.markdown(f"**{safe.md(card['name'])}**" + "".join(f" · {word}" for word in status))
        st.caption(counts_line(card["counts"]))
        st.caption(safe.md(card["description"]) or "No description recorded.")
        # The one default the Leaderboard page also uses (state.default_method), found when the card is opened.
        named = card["method"] if card["method"] in reports.LEADERBOARD_METHODS else None
        return st.button("Open leaderboard", key=f"home_open::{card['name']}", on_click=open_study,
                         args=(card["name"], named), width="stretch", type="primary" if is_open else "secondary",
                         help=f"Opens this study on the Leaderboard, ranked by {named}." if named else
                         "Opens this study on the Leaderboard, on its default view (against the baseline when one "
                         "model is in every comparison, as AlpacaEval shows it; else Bradley-Terry).")


state.ensure_frame()
st.title("PeerBoard")
st.markdown("**Rank LLMs by peer review, and check whether LLM judges can be trusted.** Import judgments or let "
            "models review each other's answers; rank them by win rate, Elo, Bradley-Terry or Peer Rank; measure "
            "each judge's biases; settle the debates the judges could not agree on.")

# ------------------------------------------------------------------ ready studies
st.subheader("Open a ready study")
all_studies = data.studies()
current = st.session_state.get(state.STUDY)
cards = ready_studies(all_studies)
if cards:
    shown = cards[:GALLERY_SIZE]
    columns = st.columns(min(len(shown), 3))
    for number, card in enumerate(shown):
        with columns[number % len(columns)]:
            if study_card(card, is_open=card["name"] == current):
                st.switch_page("pages/leaderboard.py")
    if len(cards) > GALLERY_SIZE:
        st.caption(f"{len(cards) - GALLERY_SIZE} more on **Studies**.")
else:
    st.info("No study holds judgments yet: import yours below, or create a study on **Studies**.")

# --------------------------------------------------------------------- next steps
st.subheader("Or start from your own")
waiting = 0
if current and current in set(all_studies["name"]):
    db, _, rev = data.key(current)
    waiting = int(data.summary(db, current, rev)["open_adjudications"])
imports, review, adjudicate = st.columns(3)
with imports:
    st.page_link("pages/data.py", label="Import your data", icon=":material/upload_file:")
    st.caption("Judgments, answers or a peer tool's files (FastChat MT-Bench, Chatbot Arena, AlpacaEval, PRD, "
               "ScaleEval); errors name the row and field.")
with review:
    st.page_link("pages/reviewers.py", label="Launch a review", icon=":material/smart_toy:")
    st.caption("Let OpenAI, Anthropic, OpenAI-compatible or local models answer and review each other, with an "
               "estimate of the calls first.")
with adjudicate:
    where = f" in {safe.md(current)}" if current else ""
    label = f"Adjudicate: {waiting:,} debate(s) waiting{where}" if waiting else "Adjudicate"
    st.page_link("pages/adjudication.py", label=label, icon=":material/gavel:")
    st.caption("Decide the debates the judge agents could not settle; your decisions become the gold set "
               "Meta-evaluation scores every judge against." if waiting else
               f"No debate waits{where}; a ScaleEval debate run or import fills the queue.")
st.page_link("pages/studies.py", label="All studies: create, open or delete one", icon=":material/folder_open:")
