"""Adjudication (ScaleEval): a human decides the debates the judge agents could not settle."""

import streamlit as st

from peercore import reports
from peercore.ui import adjudication as adj
from peercore.ui import data, safe, state

state.ensure_frame()
st.title("Adjudication")
study = data.current_study()
st.caption("Debates whose agents still disagreed after the last round. Your decision joins the gold set that "
           "**Meta-evaluation** scores every judge against; it is saved the moment you click.")
settings = adj.settings(study)
overlap = settings["overlap"]

# ------------------------------------------------------------- who, which, how
scenarios, criteria = adj.filter_options(study)
for key, options in ((state.ADJ_SCENARIO, scenarios), (state.ADJ_CRITERION, criteria)):
    if st.session_state[key] not in options:
        st.session_state[key] = options[0]
name_col, scenario_col, criterion_col, blind_col = st.columns([3, 2, 2, 2], vertical_alignment="bottom")
login, signed_in_as = adj.login()  # with st.login configured, the annotator is the signed-in user
if login == "signed_in":
    st.session_state[state.ANNOTATOR] = signed_in_as
    name_col.text_input("Annotator", key=state.ANNOTATOR, disabled=True,
                        help="You are signed in: your decisions and skips are kept under your account.")
elif login == "signed_out":
    st.session_state[state.ANNOTATOR] = ""
    name_col.button("Sign in to adjudicate", key="adj_login", icon=":material/login:", on_click=st.login,
                    help="This dashboard asks who you are through its identity provider; your decisions are "
                         "kept under your account.")
else:
    name_col.text_input("Annotator", key=state.ANNOTATOR, placeholder="your name, e.g. alice",
                        help="Your decisions and skips are kept under this name, in any browser; several people "
                             "can adjudicate the same queue.")
scenario = scenario_col.selectbox("Scenario", scenarios, key=state.ADJ_SCENARIO)
criterion = criterion_col.selectbox("Criterion", criteria, key=state.ADJ_CRITERION)
blind_col.toggle("Blind mode", key=state.ADJ_BLIND,
                 help="Hide the agents' verdicts and reasons until you have decided, so the gold is your judgement "
                      "and not an echo of the agents'. You can still ask to see them on any debate (the decision "
                      "is then recorded as not blind).")
annotator = adj.annotator_name()

progress = adj.progress(study, annotator, overlap=overlap)
if progress["unresolved"] == 0:
    st.info("No debate is waiting: every debate in this study ended in agreement (or there are none). "
            "Run a ScaleEval **debate** on **Reviewers & runs** or import one on **Data** to fill the queue.")
    st.stop()
if not annotator:
    st.info(f"{progress['open']} of {progress['unresolved']} unresolved debate(s) have no decision yet; "
            f"{adj.overlap_text(overlap)}. " + ("Sign in above to start." if login == "signed_out" else
                                                "Type your name above to start."))
    st.stop()

queue = adj.queue(study, annotator, overlap=overlap, scenario=scenario, criterion=criterion)
skipped = adj.skipped(study, annotator)
pending = adj.without_skipped(queue, skipped)
n_skipped = len(queue) - len(pending)
taken = adj.take(study, annotator, scenario=scenario, criterion=criterion)  # the lease on the debate shown
complete = "" if progress["complete"] is None else f" · {progress['complete']} complete"
st.progress(progress["share"], text=f"You decided {progress['mine']} of {progress['unresolved']} unresolved debate(s) · "
                                    f"{progress['needs_me']} still need you{complete} · {adj.overlap_text(overlap)} "
                                    "(set on **Studies**)")

if taken is None:
    if len(pending):  # they need this annotator, and others hold them
        st.info(f"The {len(pending)} debate(s) that still need you are being decided by others right now ("
                f"{adj.overlap_text(overlap)}). A debate comes back here if its holder leaves without deciding "
                "(their lease runs out).")
        st.button("Check again", key="adj_check", icon=":material/refresh:")
    elif n_skipped:
        st.info(f"You skipped the {n_skipped} debate(s) left here.")
        st.button("Show the skipped debates again", key="adj_unskip", on_click=adj.clear_skipped,
                  args=(study, annotator))
    elif len(queue) == 0 and progress["needs_me"]:
        st.info("No debate that needs you matches the scenario and criterion chosen above.")
    else:
        st.success("Queue empty: no debate needs your decision.", icon=":material/task_alt:")
    st.button("Undo last decision", key="adj_undo", icon=":material/undo:", shortcut="U",
              on_click=adj.undo_last, args=(annotator, study), disabled=not adj.can_undo(annotator))
    adj.show_flash()
else:
    item = {**taken.to_dict(), "id": taken.debate_id}
    debate_id = int(item["id"])
    db, _, rev = data.key(study)
    item_col, decide_col = st.columns([3, 2], gap="medium")
    # Stored text (question, answers, rationales, names, criterion, scenario, rubric) is untrusted: peercore.ui.safe.
    with item_col:
        st.subheader(f"Debate #{debate_id} · question {safe.md(item['question_id'])}")
        others = f"{int(item['decisions'])} decision(s) by others" if item["decisions"] else "no decision yet"
        st.markdown(" ".join(filter(None, [safe.code(item["criterion"]), safe.code(item["scenario"]),
                                           f"{int(item['n_rounds'])} round(s) · {others} · "
                                           f"{len(pending)} left in your queue"
                                           + (f" ({n_skipped} skipped)" if n_skipped else "")])))
        st.caption(adj.lease_text(taken))
        with st.container(border=True):
            safe.text(data.question_text(db, study, rev, item["question_id"]), empty="(question text not stored)")
        reveal_models = st.toggle("Show which model wrote each submission", key="adj_reveal")
        for column, model, label in zip(st.columns(2), (item["model_a"], item["model_b"]), ("Submission 1", "Submission 2")):
            answer = data.answer_text(db, study, rev, item["question_id"], model)
            with column.container(border=True, height=adj.answer_height(answer)):
                st.markdown(f"**{label}**" + (f" — {data.name_md(model)}" if reveal_models else ""))
                safe.text(answer, empty="(answer not stored)")

    with decide_col:
        note_key = f"adj_note_{st.session_state[state.ADJ_NOTE_VERSION]}"
        st.text_input("Note (optional)", key=note_key, placeholder="why you decided so")
        one, two, tie, both_bad = adj.DECISION_BUTTONS
        adj.decision_button(st, one, debate_id, annotator, note_key)
        adj.decision_button(st, two, debate_id, annotator, note_key)
        tie_col, bad_col = st.columns(2)
        adj.decision_button(tie_col, tie, debate_id, annotator, note_key)
        adj.decision_button(bad_col, both_bad, debate_id, annotator, note_key)
        skip_col, undo_col = st.columns(2)
        skip_col.button("Skip", key="adj_skip", shortcut="S", icon=":material/skip_next:", on_click=adj.skip,
                        args=(study, debate_id, annotator), width="stretch",
                        help="Put this debate aside; it stays skipped under your name until you bring it back.")
        undo_col.button("Undo last", key="adj_undo", icon=":material/undo:", shortcut="U", on_click=adj.undo_last,
                        args=(annotator, study), disabled=not adj.can_undo(annotator), width="stretch")
        st.caption(adj.KEYS_HELP)
        adj.show_flash()
        st.markdown("**Guidelines**")
        if settings["rubric"].strip():
            with st.container(border=True, height=adj.rubric_height(settings["rubric"])):
                safe.text(settings["rubric"])
        else:
            st.caption("This study has no guidelines yet: write them on **Studies** (\"Adjudication guidelines\").")

    # ---------------------------------------------------------------- the agents
    st.markdown("**What the agents said**")
    if adj.is_blind(debate_id):
        hidden_col, show_col = st.columns([3, 2], vertical_alignment="center")
        hidden_col.caption("Blind mode: the agents' verdicts and reasons stay hidden until you decide, so your "
                           "decision is your own. They are shown after your decision.")
        show_col.button("Show the agents' verdicts now", key="adj_show_agents", icon=":material/visibility:",
                        on_click=adj.reveal, args=(debate_id,),
                        help="Unblinds this debate; your decision is then recorded as not blind.")
    else:
        adj.show_agents(db, study, rev, debate_id)

# ------------------------------------------------------ after the last decision
last = st.session_state[state.ADJ_LAST]
if last is not None and annotator:
    decided = adj.decision_of(study, last, annotator)
    if decided is not None:
        with st.expander(f"Debate #{last}, which you just decided ({adj.DECISION_NAMES[decided]}): "
                         "what its agents said"):
            adj.show_agents(*data.key(study), last)

# ---------------------------------------------------------------- agreement
st.divider()
st.subheader("Agreement between annotators")
decisions = data.adjudications(*data.key(study))
result = adj.alpha(decisions)
if result is None:
    st.caption("Agreement appears once two people have decided the same debate "
               f"(set how many annotators each debate needs on **Studies**; now {adj.overlap_text(overlap)}).")
else:
    st.markdown(adj.alpha_text(result))
    st.dataframe(reports.annotator_agreement_display(reports.annotator_agreement(decisions)), hide_index=True,
                 width="stretch", key="adj_agreement")
    st.dataframe(reports.decisions_by_item(decisions), hide_index=True, width="stretch", key="adj_items")
with st.expander(f"All decisions ({len(decisions)})"):
    st.dataframe(adj.decisions_display(decisions), hide_index=True, width="stretch", key="adj_all")
