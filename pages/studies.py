"""Studies (home): choose or create a study, and see what it holds and where it came from."""

import pandas as pd
import streamlit as st

from peercore import reports
from peercore.app import access as rules
from peercore.app.access import Action, AccessDenied, Role
from peercore.app.exports import audit_table
from peercore.store.studies import study_name_problem
from peercore.ui import access
from peercore.ui import adjudication as adj
from peercore.ui import data, safe, state, tables

PICK = "studies_pick"
NEW_NAME, NEW_DESCRIPTION = "studies_new_name", "studies_new_description"
DELETE_CONFIRM = "studies_delete_confirm"
RUBRIC, OVERLAP = "studies_rubric", "studies_overlap"  # + "::<study>": one pair of widgets per study
GRANT_WHO, GRANT_ROLE, GRANT_SCOPE = "studies_grant_who", "studies_grant_role", "studies_grant_scope"
REFUSED = "studies_refused"  # the last refusal (Markdown), shown once


def open_picked() -> None:
    st.session_state[state.STUDY] = st.session_state[PICK]


def create_study() -> None:
    name = st.session_state[NEW_NAME].strip()
    if not name:
        st.session_state["studies_error"] = "Give the study a name."
        return
    if name in set(data.studies()["name"]):
        st.session_state["studies_error"] = f"A study named {safe.code(name)} already exists."
        return
    problem = study_name_problem(name)  # the store's rule (line breaks, invisible characters, paths, length)
    if problem is not None:
        st.session_state["studies_error"] = safe.md(problem[0].upper() + problem[1:])
        return
    try:
        rules.create_study(data.store(), access.current_actor(), name,
                           description=st.session_state[NEW_DESCRIPTION].strip(),
                           source={"kind": "created in the dashboard"})
    except AccessDenied as exc:
        st.session_state["studies_error"] = access.refusal_text(exc)
        return
    except ValueError as exc:  # e.g. a study of that name the actor may not see
        st.session_state["studies_error"] = safe.md(str(exc))
        return
    st.session_state[state.STUDY] = name
    st.session_state[NEW_NAME] = st.session_state[NEW_DESCRIPTION] = ""
    st.session_state["studies_error"] = ""


def save_guidelines(name: str) -> None:
    """Form callback: the rubric and the overlap, each through its checked action (recorded when it changed)."""
    store, actor = data.store(), access.current_actor()
    stored = store.studies.settings(name)
    rubric, overlap = st.session_state[f"{RUBRIC}::{name}"], int(st.session_state[f"{OVERLAP}::{name}"])
    try:
        if rubric != stored["rubric"]:
            rules.edit_guidelines(store, actor, name, rubric)
        if overlap != stored["overlap"]:
            rules.set_overlap(store, actor, name, overlap)
    except AccessDenied as exc:
        st.session_state[REFUSED] = access.refusal_text(exc)
        return
    st.session_state["studies_guidelines_saved"] = name


def delete_study(name: str) -> None:
    try:
        rules.delete_study(data.store(), access.current_actor(), name)
    except AccessDenied as exc:
        st.session_state[REFUSED] = access.refusal_text(exc)
        return
    st.session_state[state.STUDY] = None
    st.session_state[DELETE_CONFIRM] = ""


def grant_role(study: str) -> None:
    """Form callback: give an address or ``@domain`` a role in this study or everywhere (owners only)."""
    scope = None if st.session_state.get(GRANT_SCOPE) == "everywhere" else study
    who = (st.session_state.get(GRANT_WHO) or "").strip()
    try:
        rules.grant(data.store(), access.current_actor(), who, st.session_state[GRANT_ROLE], study=scope)
    except AccessDenied as exc:
        st.session_state[REFUSED] = access.refusal_text(exc)
        return
    except ValueError as exc:  # not an address, unknown role
        st.session_state[REFUSED] = safe.md(str(exc)[0].upper() + str(exc)[1:])
        return
    st.session_state[GRANT_WHO] = ""
    st.session_state["studies_granted"] = f"{who} is now {st.session_state[GRANT_ROLE]} " + (
        "everywhere" if scope is None else f"in {study}")


def audit_display(log: pd.DataFrame) -> pd.DataFrame:
    """The audit log as exported (:func:`peercore.app.exports.audit_table`), newest first, in the page's words."""
    return pd.DataFrame({
        "when (UTC)": log["at"].str.slice(0, 19).str.replace("T", " "), "who": log["actor"],
        "action": log["action"].str.replace("_", " "), "details": log["details"],
    }).iloc[::-1].reset_index(drop=True)


state.ensure_frame()
st.title("Studies")
st.caption("A study is one evaluation: questions, the contestants' answers, every judge's verdicts, "
           "debates and human adjudications. Pick one to open it on every page.")
actor = access.current_actor()
if actor.local:
    st.caption(access.OPEN_PORT)
else:
    held = rules.role_for(data.store(), actor, None)
    st.caption(f"Signed in as {safe.code(actor.who)}" + (f" ({held.label} everywhere)" if held else "") + ".")
if st.session_state.get(REFUSED):
    st.error(st.session_state.pop(REFUSED), icon=":material/block:")

all_studies = data.studies()
st.subheader("Studies in this database")
if len(all_studies):
    tables.show_cells(data.studies_overview(all_studies), key="studies_overview")
left, right = st.columns([3, 2], gap="large")

with left:
    if len(all_studies):
        st.session_state[PICK] = st.session_state[state.STUDY]
        st.radio("Open study", all_studies["name"].tolist(), key=PICK, on_change=open_picked, horizontal=True,
                 format_func=safe.md)
    else:
        st.info("This database holds no study. Create one here, then import judgments on **Data**.")

with right:
    st.subheader("Create a study")
    with st.form("create_study", clear_on_submit=False, border=True):
        st.text_input("Name", key=NEW_NAME, placeholder="e.g. mt-bench-june")
        st.text_area("Description", key=NEW_DESCRIPTION, height=80)
        st.form_submit_button("Create study", on_click=create_study, type="primary",
                              disabled=not access.can(Action.CREATE_STUDY),
                              help=None if access.can(Action.CREATE_STUDY) else "Needs the editor role everywhere.")
    if st.session_state.get("studies_error"):
        st.error(st.session_state["studies_error"])

study = data.current_study()
db, _, rev = data.key(study)
summary = data.summary(db, study, rev)

st.divider()
# Study names, descriptions and provenance are untrusted text (peercore.ui.safe).
st.header(safe.md(study))
description = all_studies.set_index("name").loc[study, "description"]
if description:
    safe.text(description)

cells = st.columns(7)
helps = reports.summary_helps(summary)  # a card holds a short number, its detail in the help
for cell, (label, value) in zip(cells, reports.summary_metrics(summary)):
    cell.metric(label, value, help=helps.get(label))

with st.container():
    st.subheader("Where the data came from")
    source = all_studies.set_index("name").loc[study, "source"]
    if source:
        tables.show(reports.source_table(source), key="studies_source")
    else:
        st.caption("No provenance was recorded for this study.")
    st.caption(f"Created {all_studies.set_index('name').loc[study, 'created_at'][:19].replace('T', ' ')} UTC; "
               f"{summary['runs']} run(s) recorded; revision {rev}.")

with st.container():
    st.subheader("Judges")
    judges = data.judges(db, study, rev)
    if len(judges):
        contestants = data.contestants(db, study, rev)
        editor_frame = data.judge_editor_frame(db, study, rev)
        edited = st.data_editor(
            editor_frame, hide_index=True, width="stretch", key="studies_judges", placeholder=tables.MISSING,
            disabled=["name", "verdicts", "unparsed", "origin", "model", "configuration"],
            column_config=tables.with_widths(editor_frame, {
                "origin": st.column_config.TextColumn("origin", help="import: from a file; run: produced by a "
                                                      "PeerBoard run, with its whole configuration recorded"),
                "model": st.column_config.TextColumn("model", help="Variants of one model (another method, "
                                                     "template, temperature ...) are judges of their own."),
                "kind": st.column_config.SelectboxColumn("kind", options=["llm", "human", "debate", "adjudicator", "vote", "other"]),
                "model_alias": st.column_config.SelectboxColumn(
                    "is contestant", options=[""] + contestants,
                    help="The contestant this judge is (needed for Peer Rank weights and self-enhancement)."),
            }),
        )
        if st.button("Save judges", help="Store each judge's kind and the contestant it is.",
                     disabled=not access.can(Action.CONFIGURE_REVIEWERS, study)):
            try:
                data.save_judges(study, edited, access.current_actor())
            except AccessDenied as exc:
                access.refusal(exc)
            else:
                st.toast("Judges saved.")
                st.rerun()
        groups = reports.judge_groups(judges["name"], data.kinds(db, study, rev))
        st.caption(" · ".join(f"{label}: {len(names)}" for label, names in groups.items()))
    else:
        st.caption("No judge yet: import judgments on **Data** or run reviewers on **Reviewers & runs**.")

st.subheader("Adjudication guidelines")
guidelines = adj.settings(study)
with st.form("studies_guidelines", border=False):
    rubric_col, overlap_col = st.columns([3, 2], gap="large")
    rubric_col.text_area(
        "Rubric shown beside every debate on Adjudication", value=guidelines["rubric"], key=f"{RUBRIC}::{study}",
        height=150, placeholder="e.g. 1. A correct answer beats a fluent wrong one.\n2. Both bad: neither answers "
                                "the question or both are harmful.\n3. Tie: equally good, or equally flawed.",
        help="Plain text, shown as written. Annotators read it beside the question and the two submissions.")
    overlap_col.number_input(
        "Annotators each debate needs", min_value=0, max_value=1000, step=1, value=guidelines["overlap"],
        key=f"{OVERLAP}::{study}",
        help="A debate leaves everyone's queue once this many people decided it (Label Studio's overlap, "
             "Argilla's minimum submitted). 0: every annotator decides every debate. Two or more give the "
             "agreement between annotators on Adjudication.")
    overlap_col.caption(f"Now: {adj.overlap_text(guidelines['overlap'])}.")
    overlap_col.form_submit_button("Save guidelines", on_click=save_guidelines, args=(study,), type="primary",
                                   disabled=not access.can(Action.EDIT_GUIDELINES, study))
if st.session_state.pop("studies_guidelines_saved", None) == study:
    st.success("Guidelines saved: Adjudication shows them from now on.", icon=":material/check_circle:")

st.subheader("Who may do what")
if actor.local:
    st.caption("Roles apply once sign-in is configured (docs/TEAM.md); until then whoever reaches this port may "
               "do everything.")
roles = data.store().access.roles(study)
if len(roles):
    tables.show(pd.DataFrame({"who": roles["who"], "role": roles["role"],
                              "where": ["everywhere" if s is None else s for s in roles["study"]],
                              "granted by": roles["granted_by"],
                              "since (UTC)": roles["created_at"].astype(str).str.slice(0, 19).str.replace("T", " ")}),
                key="studies_roles")
else:
    st.caption("No role is stored yet.")
if access.can(Action.GRANT_ROLE, study):
    with st.form("studies_grant", border=True):
        who_col, role_col, scope_col = st.columns([3, 1, 2])
        who_col.text_input("E-mail address or @domain", key=GRANT_WHO, placeholder="ann@example.com or @example.com")
        role_col.selectbox("Role", [r.label for r in Role], key=GRANT_ROLE)
        scope_col.radio("Where", ["this study", "everywhere"], key=GRANT_SCOPE, horizontal=True,
                        help="A role in this study overrides one held everywhere. Granting everywhere needs the "
                             "owner role everywhere.")
        st.form_submit_button("Grant role", on_click=grant_role, args=(study,), type="primary")
    if st.session_state.get("studies_granted"):
        st.success(safe.md(st.session_state.pop("studies_granted")) + ".", icon=":material/check_circle:")

st.subheader("Audit log")
log = audit_table(data.store(), study)
if len(log):
    st.caption("Who changed what in this study, newest first (append-only; it outlives a deleted study).")
    st.dataframe(audit_display(log), hide_index=True, width="stretch", key="studies_audit")
else:
    st.caption("Nothing was changed in this study through the dashboard yet.")

if access.can(Action.DELETE_STUDY, study):
    with st.expander("Delete this study"):
        st.markdown(f"Deleting **{safe.md(study)}** removes its questions, answers, judgments, debates, adjudications "
                    "and runs; the audit log keeps what it held.")
        st.text_input("Type the study's name to confirm", key=DELETE_CONFIRM)
        st.button("Delete study", type="secondary", disabled=st.session_state.get(DELETE_CONFIRM) != study,
                  on_click=delete_study, args=(study,))
