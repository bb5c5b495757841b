"""Adjudication (ScaleEval): a human decides the debates the judge agents could not settle."""

import streamlit as st

from peercore import reports
from peercore.ui import data, safe, state

state.ensure_frame()
st.title("Adjudication")
study = data.current_study()
st.caption("Debates whose agents still disagreed after the last round wait here. Your decision joins the gold set "
           "that **Meta-evaluation** scores every judge against. Decisions are saved the moment you click.")

name_col, scope_col = st.columns([2, 3])
name_col.text_input("Annotator", key=state.ANNOTATOR, placeholder="your name, e.g. alice",
                    help="Each person's decisions are kept apart, so several people can adjudicate the same queue.")
scope_col.toggle("Hide debates someone else already decided", key=state.ADJ_ONLY_UNSEEN)
annotator = data.annotator_name()

progress = data.adjudication_progress(study, annotator)
if progress["unresolved"] == 0:
    st.info("No debate is waiting: every debate in this study ended in agreement (or there are none). "
            "Run a ScaleEval **debate** on **Reviewers & runs** or import one on **Data** to fill the queue.")
    st.stop()
if not annotator:
    st.info(f"{progress['open']} of {progress['unresolved']} unresolved debate(s) have no decision yet. "
            "Type your name above to start.")
    st.stop()

st.progress(progress["share"], text=f"You decided {progress['mine']} of {progress['unresolved']} unresolved debate(s)")
if st.session_state[state.ADJ_FLASH]:
    st.success(st.session_state[state.ADJ_FLASH], icon=":material/check_circle:")
    st.session_state[state.ADJ_FLASH] = ""  # shown once

queue = data.adjudication_queue(study, annotator, only_unseen=st.session_state[state.ADJ_ONLY_UNSEEN])
pending = data.without_skipped(queue)
undo_col, skipped_col = st.columns([1, 3])
undo_col.button("Undo last decision", key="adj_undo", icon=":material/undo:", shortcut="U",
                on_click=data.undo_last, args=(annotator,), disabled=not data.can_undo(annotator))

if len(pending) == 0:
    if len(queue):
        skipped_col.info(f"You skipped {len(queue)} debate(s).")
        st.button("Show the skipped debates again", key="adj_unskip", on_click=data.clear_skipped)
    else:
        st.success("Queue empty: every unresolved debate has your decision.", icon=":material/task_alt:")
else:
    item = pending.iloc[0]
    debate_id = int(item["id"])
    skipped_col.caption(f"{len(pending)} left in your queue" + (f" ({len(queue) - len(pending)} skipped)" if len(queue) > len(pending) else ""))
    db, _, rev = data.key(study)
    # Stored text (question, answers, rationales, names, criterion, scenario) is untrusted: peercore.ui.safe.
    st.subheader(f"Debate #{debate_id} · question {safe.md(item['question_id'])}")
    st.markdown(" ".join(filter(None, [safe.code(item["criterion"]), safe.code(item["scenario"]),
                                       f"{int(item['n_rounds'])} round(s)"])))
    with st.container(border=True):
        safe.text(data.question_text(db, study, rev, item["question_id"]), empty="(question text not stored)")
    reveal = st.toggle("Show which model wrote each submission", key="adj_reveal")
    first, second = st.columns(2, border=True)
    with first:
        st.markdown("**Submission 1**" + (f" — {data.name_md(item['model_a'])}" if reveal else ""))
        safe.text(data.answer_text(db, study, rev, item["question_id"], item["model_a"]), empty="(answer not stored)")
    with second:
        st.markdown("**Submission 2**" + (f" — {data.name_md(item['model_b'])}" if reveal else ""))
        safe.text(data.answer_text(db, study, rev, item["question_id"], item["model_b"]), empty="(answer not stored)")

    st.markdown("**Where each agent ended**")
    finals = reports.final_turns(data.turns(db, study, rev), debate_id)
    for column, turn in zip(st.columns(max(1, len(finals)), border=True), finals.itertuples(index=False)):
        column.markdown(f"{data.name_md(turn.speaker)} {data.verdict_badge(turn.verdict)}")
        safe.text(turn.rationale, empty="(no reasoning recorded)", container=column)
    with st.expander("The whole debate"):
        for round_number, round_turns in reports.rounds(data.turns(db, study, rev), debate_id):
            st.markdown(f"**{reports.round_title(round_number)}**")
            for turn in round_turns.itertuples(index=False):
                st.markdown(f"{data.name_md(turn.speaker)} {data.verdict_badge(turn.verdict)}")
                safe.text(turn.rationale, empty="(no reasoning recorded)")

    note_key = f"adj_note_{st.session_state[state.ADJ_NOTE_VERSION]}"
    st.text_input("Note (optional)", key=note_key, placeholder="why you decided so")
    one, two, tie, skip = st.columns(4)
    one.button("Submission 1 is better", key="adj_one", type="primary", shortcut="1", icon=":material/looks_one:",
               on_click=data.decide, args=(debate_id, "model_a", annotator, note_key), width="stretch")
    two.button("Submission 2 is better", key="adj_two", type="primary", shortcut="2", icon=":material/looks_two:",
               on_click=data.decide, args=(debate_id, "model_b", annotator, note_key), width="stretch")
    tie.button("Tie", key="adj_tie", shortcut="0", icon=":material/drag_handle:",
               on_click=data.decide, args=(debate_id, "tie", annotator, note_key), width="stretch")
    skip.button("Skip", key="adj_skip", shortcut="S", icon=":material/skip_next:",
                on_click=data.skip, args=(debate_id,), width="stretch")
    st.caption("Keys: **1**, **2**, **0** (tie), **S** (skip), **U** (undo).")

# ---------------------------------------------------------------- agreement
st.divider()
st.subheader("Agreement between annotators")
decisions = data.adjudications(*data.key(study))
if decisions["annotator"].nunique() < 2:
    st.caption("Agreement appears once two people have decided the same debate.")
else:
    st.dataframe(reports.annotator_agreement_display(reports.annotator_agreement(decisions)), hide_index=True,
                 width="stretch", key="adj_agreement")
    st.dataframe(reports.decisions_by_item(decisions), hide_index=True, width="stretch", key="adj_items")
with st.expander(f"All decisions ({len(decisions)})"):
    st.dataframe(reports.decisions_display(decisions), hide_index=True, width="stretch", key="adj_all")
