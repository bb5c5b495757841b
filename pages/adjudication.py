"""Adjudication (ScaleEval): a human decides the debates the judge agents could not settle."""

import streamlit as st

from peercore import reports
from peercore.app.access import Action
from peercore.ui import access as access_ui
from peercore.ui import adjudication as adj
from peercore.ui import data, safe, state

state.ensure_frame()
# What the page is for goes in the title's help: at 1366 x 768 every line above the debate
# pushes the submissions down (issue 21).
st.title("Adjudication", help="Debates whose agents still disagreed after the last round. Your decision joins the "
                              "gold set that **Meta-evaluation** scores every judge against; it is saved the moment "
                              "you click, and you can change it later (Decisions made, at the bottom).")
study = data.current_study()
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
    # The signed-in account, as the roles name it (peercore.ui.access): decisions are kept under it.
    st.session_state[state.ANNOTATOR] = access_ui.current_actor().who or signed_in_as
    name_col.text_input("Annotator", key=state.ANNOTATOR, disabled=True,
                        help="You are signed in: your decisions and skips are kept under your account.")
elif login == "signed_out":
    st.session_state[state.ANNOTATOR] = ""
    name_col.button("Sign in to adjudicate", key="adj_login", icon=":material/login:", on_click=st.login,
                    help="This dashboard asks who you are through its identity provider; your decisions are "
                         "kept under your account.")
elif adj.annotator_name():
    # The name is set in its own step: once entered, the box gives way to this line, so the
    # cursor is no longer in a text box and the keys below decide (issue 21).
    with name_col:
        said_col, change_col = st.columns([3, 1], vertical_alignment="center")
        said_col.markdown(adj.adjudicating_as(adj.annotator_name()))
        change_col.button("Change", key=adj.CHANGE_NAME, on_click=adj.change_name, args=(study,), type="tertiary",
                          help="Adjudicate under another name (the debate you hold goes back to the queue).")
else:
    name_col.text_input("Annotator", key=state.ANNOTATOR, placeholder="your name, e.g. alice, then Enter",
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

if not access_ui.can(Action.ADJUDICATE, study):  # a viewer reads the other pages; deciding takes a lease here
    st.info(f"Deciding debates needs the annotator role in this study; {safe.md(annotator)} has not got it. "
            "Ask an owner of the study (Studies page) to grant it.")
    st.stop()

queue = adj.queue(study, annotator, overlap=overlap, scenario=scenario, criterion=criterion)
skipped = adj.skipped(study, annotator)
pending = adj.without_skipped(queue, skipped)
n_skipped = len(queue) - len(pending)
taken = adj.take(study, annotator, scenario=scenario, criterion=criterion)  # the lease on the debate shown
complete = "" if progress["complete"] is None else f" · {progress['complete']} complete"
st.progress(progress["share"], text=f"You decided {progress['mine']} of {adj.items_text(progress)} · "
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
    label_request = adj.is_label_request(item)
    db, _, rev = data.key(study)
    # Stored text (question, answers, rationales, names, criterion, scenario, rubric) is untrusted: peercore.ui.safe.
    # At 1366 x 768 the question, both submissions (side by side, each body a scroller of fixed
    # height) and the decision bar beside them are on screen together (issue 21); the bar's column
    # is sticky, so it stays on screen while the page scrolls down to the guidelines and the agents.
    what = "Label request" if label_request else "Debate"
    st.subheader(f"{what} #{debate_id} · question {safe.md(item['question_id'])}")
    others = f"{int(item['decisions'])} decision(s) by others" if item["decisions"] else "no decision yet"
    rounds = "" if label_request else f"{int(item['n_rounds'])} round(s) · "
    st.markdown(" ".join(filter(None, [safe.code(item["criterion"]), safe.code(item["scenario"]),
                                       f"{rounds}{others} · {len(pending)} left in your queue"
                                       + (f" ({n_skipped} skipped)" if n_skipped else "")])))
    if label_request:  # who asked and why: untrusted text, escaped
        st.markdown(adj.request_line(item.get("metadata")))
    question = data.question_text(db, study, rev, item["question_id"])
    with st.container(border=True, height=adj.question_height(question)):
        safe.text(question, empty="(question text not stored)")
    reveal_models = st.session_state.get("adj_reveal", False)
    adj.keep_bar_in_view()
    work_col, decide_col = st.columns([10, 4], gap="small")
    with work_col:
        one_col, two_col = st.columns(2, gap="small")
        for number, column, model, label in zip((1, 2), (one_col, two_col), (item["model_a"], item["model_b"]),
                                                ("Submission 1", "Submission 2")):
            answer = data.answer_text(db, study, rev, item["question_id"], model)
            column.markdown(f"**{label}**" + (f" — {data.name_md(model)}" if reveal_models else ""))
            with column.container(border=True, height=adj.SUBMISSION_HEIGHT, key=f"{adj.SUBMISSION_KEY}{number}"):
                safe.text(answer, empty="(answer not stored)")

        guide_col, reveal_col = st.columns([3, 1])
        with guide_col:
            st.markdown("**Guidelines**")
            if settings["rubric"].strip():
                with st.container(border=True, height=adj.rubric_height(settings["rubric"])):
                    safe.text(settings["rubric"])
            else:
                st.caption("This study has no guidelines yet: write them on **Studies** (\"Adjudication guidelines\").")
        reveal_col.toggle("Show which model wrote each submission", key="adj_reveal")

        # ---------------------------------------------------------------- the agents
        if not label_request:  # a label request has no debate behind it: the two answers only
            st.markdown("**What the agents said**")
            if adj.is_blind(debate_id):
                hidden_col, show_col = st.columns([3, 2], vertical_alignment="center")
                hidden_col.caption("Blind mode: the agents' verdicts and reasons stay hidden until you decide, so "
                                   "your decision is your own. They are shown after your decision.")
                show_col.button("Show the agents' verdicts now", key="adj_show_agents", icon=":material/visibility:",
                                on_click=adj.reveal, args=(debate_id,),
                                help="Unblinds this debate; your decision is then recorded as not blind.")
            else:
                adj.show_agents(db, study, rev, debate_id)

    with decide_col:
        one, two, tie, both_bad = adj.DECISION_BUTTONS
        note_key = f"adj_note_{st.session_state[state.ADJ_NOTE_VERSION]}"
        bar = st.container(key=adj.DECISION_BAR)  # the buttons: sticky (adj.STICKY_BAR_CSS)
        adj.decision_button(bar, one, debate_id, annotator, note_key)
        adj.decision_button(bar, two, debate_id, annotator, note_key)
        tie_col, bad_col = bar.columns(2)
        adj.decision_button(tie_col, tie, debate_id, annotator, note_key)
        adj.decision_button(bad_col, both_bad, debate_id, annotator, note_key)
        skip_col, undo_col = bar.columns(2)
        skip_col.button("Skip", key="adj_skip", shortcut="S", icon=":material/skip_next:", on_click=adj.skip,
                        args=(study, debate_id, annotator), width="stretch",
                        help="Put this debate aside; it stays skipped under your name until you bring it back.")
        undo_col.button("Undo", key="adj_undo", icon=":material/undo:", shortcut="U", on_click=adj.undo_last,
                        args=(annotator, study), disabled=not adj.can_undo(annotator), width="stretch",
                        help="Undo your last decision made here. To change any earlier one, use **Decisions made** "
                             "below.")
        st.text_input("Note (optional)", key=note_key, placeholder="why you decided so")
        st.caption(adj.KEYS_HELP)
        st.caption(adj.lease_text(taken))
        adj.show_flash()

# ------------------------------------------------------ after the last decision
last = st.session_state[state.ADJ_LAST]
if last is not None and annotator:
    decided = adj.decision_of(study, last, annotator)
    if decided is not None and last not in adj.label_request_ids(study):  # a label request has no agents
        with st.expander(f"Debate #{last}, which you just decided ({adj.DECISION_NAMES[decided]}): "
                         "what its agents said"):
            adj.show_agents(*data.key(study), last)

# ---------------------------------------------------------------- label requests
effects = adj.request_effects(*data.key(study))
if effects:
    still_open, decided_requests = adj.request_counts(effects)
    with st.expander(f"Label requests: {still_open} open · {decided_requests} decided"):
        st.caption("Comparisons people were asked to label (e.g. by `peercore calibrate --request`, where the judge is "
                   "least sure). Each decision is a label of the judge's leaderboard anchored to human labels "
                   "(Leaderboard); here, how much the decided requests narrowed its interval.")
        for line in adj.effect_lines(effects):
            st.markdown(line)

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
# ------------------------------------------------- the decisions made, any of them changeable
st.subheader("Decisions made")
history = data.store().debates.decision_history(study)  # read every run: others change theirs too
who = st.segmented_control("Show", [adj.MINE, adj.EVERYONE], key=adj.LIST_WHO, default=adj.MINE,
                           help="Your decisions, or everyone's. You can change any of yours, not only the last.")
made = adj.decisions_made(decisions, history, annotator, who or adj.MINE)
if len(made):
    st.dataframe(made, hide_index=True, width="stretch", key="adj_made")
else:
    st.caption("No decision yet." if who == adj.EVERYONE else "You have not decided a debate yet.")
mine = decisions[decisions["annotator"] == annotator] if annotator else decisions.iloc[0:0]
if len(mine):
    choices = {int(row.debate_id): adj.edit_label(row) for row in mine.iloc[::-1].itertuples(index=False)}
    with st.container(border=True):
        st.markdown("**Change one of your decisions**")
        pick_col, to_col = st.columns([3, 2])
        pick_col.selectbox("Decision to change", list(choices), key=adj.EDIT_CHOICE, format_func=choices.get)
        to_col.selectbox("Change it to", list(adj.DECISION_NAMES), key=adj.EDIT_DECISION,
                         format_func=adj.DECISION_NAMES.get)
        st.text_input("Reason", key=adj.EDIT_REASON, placeholder="why it changes (kept in the history)")
        st.button("Change decision", key="adj_edit", icon=":material/edit:", on_click=adj.edit,
                  args=(login, annotator, list(choices)))
        adj.show_edit_flash()
with st.expander(f"History of changes ({len(history)})"):
    st.caption("Every decision as it was made, changed or undone: append-only; the latest decision of each "
               "annotator on a debate is the one that counts (gold set, agreement, Meta-evaluation).")
    st.dataframe(adj.history_display(history), hide_index=True, width="stretch", key="adj_history")
with st.expander(f"All decisions ({len(decisions)})"):
    st.dataframe(adj.decisions_display(decisions), hide_index=True, width="stretch", key="adj_all")
