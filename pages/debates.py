"""Discussions & debates: every transcript turn by turn, who changed their mind, who led."""

import streamlit as st

from peercore import charts, reports
from peercore.ui import data, safe, state, tables
from peercore.ui import debates as debates_ui

state.ensure_frame()
st.title("Discussions & debates")
study = data.current_study()
db, _, rev = data.key(study)
debates = data.debate_overview(db, study, rev)
if len(debates) == 0:
    st.info("This study has no debates or discussions yet. Run a **discussion** (PRD: two reviewers talk a "
            "verdict over) or a **debate** (ScaleEval: several judge agents) on **Reviewers & runs**, "
            "or import ScaleEval / PRD results on **Data**.")
    st.stop()
turns = data.turns(db, study, rev)

cells = st.columns(5)
for cell, (label, value) in zip(cells, reports.debate_metrics(debates)):
    cell.metric(label, value)

# ------------------------------------------------------------------- opinions
stored_debates = data.debates(db, study, rev)
st.subheader("Opinion altering and holding")
st.caption("PRD section 5: a turn counts only when the other reviewer disagreed with the speaker's opinion at "
           "that point: the speaker *held* it or *altered* it. Changes made after both had agreed are counted "
           "apart; reviewers who agree throughout hold nothing.")
counts = reports.opinion_counts(stored_debates, turns)
st.plotly_chart(charts.opinion_chart(reports.opinion_chart_rows(counts), title=None), key="deb_opinion_chart")
opinion_all = st.toggle("Every column", key="deb_opinion_all",
                        help="Add the changes each reviewer made after both had agreed (counted apart).")
tables.show_cells(debates_ui.opinion_columns(reports.opinion_display(counts), every_column=opinion_all),
                  key="deb_opinion_table")

# Full width, one under the other: side by side, the tables' right columns were cut off at 1366 px.
st.subheader("Leader effect")
st.caption("PRD Fig. 6: each model's opinion holding and altering when it leads the discussion (speaks first) "
           "and when it follows.")
leaders = reports.leader_effect(stored_debates, turns)
if len(leaders):
    leader_all = st.toggle("Every column", key="deb_leader_all",
                           help="Add the changes each reviewer made after both had agreed, as leader and as follower.")
    tables.show_cells(debates_ui.leader_columns(reports.leader_display(leaders), every_column=leader_all),
                      key="deb_leader_table", hide_index=False)
else:
    st.caption("No reviewer was challenged in a leader or follower role.")
adoption = reports.leader_adoption(stored_debates, turns)
if len(adoption):
    st.caption("Also: of the debates that started split and ended agreed, how many ended on the leader's first "
               "verdict (not PRD's measure).")
    tables.show_cells(reports.adoption_display(adoption), key="deb_adoption_table", hide_index=False)

# ------------------------------------------------------------------- the list
st.subheader("Transcripts")
kind_col, filter_col = st.columns([1, 3])
kind = kind_col.radio("Kind", ["All", "Debates", "Discussions"], horizontal=True, key="deb_kind")
verdict_filter = filter_col.segmented_control(
    "Show", ["All", "Agreed", "Unresolved", "Adjudicated", "Opinion changed"], key=state.DEB_FILTER,
    help="Unresolved debates wait for a human on **Adjudication**.")
shown = reports.filter_debates(debates, kind=kind, show=verdict_filter or "All")
list_all = st.toggle("Every column", key="deb_list_all",
                     help="Add the criterion, the scenario, the speakers, their first and last verdicts and the "
                          "human decisions of each debate.")
tables.show_cells(debates_ui.list_columns(reports.debate_list_display(shown), every_column=list_all), key="deb_list")
if len(shown) == 0:
    st.info("No debate matches these filters.")
    st.stop()

data.seed_single_choice(state.DEB_SELECTED, shown["id"].tolist(), 0)
debate_id = st.selectbox("Open the transcript of", shown["id"].tolist(), key=state.DEB_SELECTED,
                         format_func=reports.debate_label(shown))
debate = shown.set_index("id").loc[debate_id]

# Stored text (question, answers, rationales, names, criterion, scenario) is untrusted: peercore.ui.safe.
st.markdown(f"**Question {safe.md(debate['question_id'])}**")
safe.text(data.question_text(db, study, rev, debate["question_id"]), empty="(question text not stored)")
st.markdown(" ".join(filter(None, [data.status_badge(debate["status"]), data.verdict_badge(debate["consensus"], prefix="consensus"),
                      safe.code(debate["criterion"] or "no criterion"), safe.code(debate["scenario"] or "no scenario")])))
with st.expander("The two submissions", expanded=False):
    first, second = st.columns(2)
    first.markdown(f"**Submission 1** — {data.name_md(debate['model_a'])}")
    safe.text(data.answer_text(db, study, rev, debate["question_id"], debate["model_a"]), empty="(answer not stored)",
              container=first)
    second.markdown(f"**Submission 2** — {data.name_md(debate['model_b'])}")
    safe.text(data.answer_text(db, study, rev, debate["question_id"], debate["model_b"]), empty="(answer not stored)",
              container=second)

for round_number, round_turns in reports.rounds(turns, debate_id):
    st.markdown(f"##### {reports.round_title(round_number)}")
    for turn in round_turns.itertuples(index=False):
        with st.chat_message("assistant", avatar=":material/smart_toy:"):
            st.markdown(f"{data.name_md(turn.speaker)} {data.verdict_badge(turn.verdict)}")
            safe.text(turn.rationale, empty="(no reasoning recorded)")
