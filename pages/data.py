"""Data: upload answers, judgments, human annotations and debates; preview; import; export."""

import streamlit as st

from peercore.app.access import Action
from peercore.app.exports import audit_bytes
from peercore.io.formats import file_name_part
from peercore.ui import access, data, imports, safe, state, tables
from peercore.ui import nlg as nlg_ui

state.ensure_frame()
st.title("Data")
study = st.session_state.get(state.STUDY)


def _may_import(name: str) -> bool:
    """Whether the current actor may import into ``name`` (creating it when it does not exist)."""
    exists = data.store().studies.exists(name)
    return access.can(Action.IMPORT if exists else Action.CREATE_STUDY, name if exists else None)


# -------------------------------------------------------------------------- import
st.header("Import")
st.caption("Every file is read and checked in full before anything is written; a problem names the file, "
           "line and field. Folders (PRD, ScaleEval, FastChat MT-Bench) are uploaded as a .zip.")
format_col, target_col = st.columns([2, 2])
fmt = format_col.selectbox("Format", imports.formats(), format_func=imports.format_label, key="data_format")
target = target_col.text_input("Into study", value=study or "", key="data_target",
                               help="An existing study, or a new name to create one.")
uploaded = st.file_uploader("File (CSV, TSV, JSONL, JSON, Parquet) or folder (.zip)", type=imports.UPLOAD_TYPES,
                            key=imports.upload_key())

parsed = imports.parse_upload(uploaded, fmt) if uploaded is not None else None  # a new file clears the last outcome
if st.session_state.get("data_report") is not None:
    st.success(f"Imported into **{safe.md(st.session_state['data_report']['study'].iloc[0])}**.", icon=":material/task_alt:")
    tables.show_cells(st.session_state["data_report"].drop(columns="study"), key="data_report_table")
    for warning in st.session_state.get("data_warnings") or []:  # imported, but worth a look (look-alike names)
        st.warning(safe.md(warning[0].upper() + warning[1:] + "."), icon=":material/warning:")
if st.session_state.get("data_error"):
    st.error(safe.md_lines(st.session_state["data_error"]), icon=":material/error:")

if parsed is not None:
    if parsed.error:
        where = f" ({safe.md(parsed.where)})" if parsed.where else ""
        st.error(f"**{safe.md(parsed.name)}** cannot be imported{where}: {safe.md_lines(parsed.error)}",
                 icon=":material/error:")
        if parsed.context is not None:
            st.markdown("The offending row:")
            tables.show_cells(parsed.context, key="data_context")  # the file's own field names, as the error names them
        st.caption("Fix the file and upload it again; nothing was written.")
    else:
        st.subheader(f"Preview of {safe.md(parsed.name)}")
        cells = st.columns(len(parsed.counts))
        for cell, (label, count) in zip(cells, parsed.counts.items()):
            cell.metric(label, f"{count:,}")
        if parsed.bundle.notes:
            st.caption("Notes: " + "; ".join(f"{safe.md(k.replace('_', ' '))}: {safe.md(v)}"
                                             for k, v in parsed.bundle.notes.items() if k != "files"))
        previews = imports.preview_tables(parsed.bundle)
        for tab, (name, frame) in zip(st.tabs([safe.md(name) for name in previews]), previews.items()):
            tables.show_cells(imports.plain_headers(frame), key=f"data_preview_{name}", container=tab)
        st.button(f"Import into “{safe.md(target.strip()) or '?'}”", type="primary", icon=":material/download_done:",
                  key="data_import", on_click=imports.do_import, args=(target,),
                  disabled=not target.strip() or not _may_import(target.strip()),
                  help=None if not target.strip() or _may_import(target.strip()) else
                  "Importing needs the editor role in the study (a new study: the editor role everywhere).")

if not study:
    st.info("There is no study yet: upload a file above to create one (give it a name under **Into study**).")
    st.stop()

db, _, rev = data.key(study)

# ------------------------------------------------------------------------- history
st.header(f"What {safe.md(study)} holds")
counts = data.summary(db, study, rev)
cells = st.columns(4)
for cell, label, key_ in zip(cells, ["Questions", "Answers", "Judgments", "Debates"],
                             ["questions", "answers", "judgments", "debates"]):
    cell.metric(label, f"{counts[key_]:,}")
history = data.imports_log(db, study, rev)
if len(history):
    tables.show_cells(imports.imports_display(history), key="data_history")
else:
    st.caption("No file was imported into this study (its data came from runs or the sample).")

# -------------------------------------------------------------------------- scores
if counts.get("human_scores") or counts.get("judge_scores"):
    st.header("Scores")
    st.caption("Ratings of single candidates, not verdicts: human scores (one column per attribute; context = "
               "question_id, candidate = model) and judges' absolute scores. The NLG assessment page correlates "
               "rankings with them.")
    score_cells = st.columns(2)
    score_cells[0].metric("Human scores", f"{counts.get('human_scores', 0):,}")
    score_cells[1].metric("Judges' absolute scores", f"{counts.get('judge_scores', 0):,}")
    if counts.get("human_scores"):
        tables.show_cells(imports.plain_headers(nlg_ui.human_scores(db, study, rev)), key="data_human_scores")
    if counts.get("judge_scores"):
        tables.show_cells(imports.plain_headers(nlg_ui.judge_scores(db, study, rev)), key="data_judge_scores")

# -------------------------------------------------------------------------- export
st.header("Export")
if not access.can(Action.EXPORT, study) or not access.permit(Action.EXPORT, study):
    st.caption("Exporting needs the editor role in this study.")
    st.stop()
what_col, format_col = st.columns(2)
what = what_col.selectbox("What", list(imports.EXPORT_WHAT), format_func=imports.EXPORT_WHAT.get, key="data_export_what")
out_format = format_col.selectbox("Format", ["csv", "jsonl", "parquet"], key="data_export_format")
if counts["judgments"]:
    st.download_button(f"Download {what} ({out_format})", imports.export_bytes(db, study, rev, what, out_format),
                       file_name=f"{file_name_part(study)}-{what}.{out_format}", icon=":material/download:", key="data_export")
    st.caption("CSV cells that a spreadsheet would run as a formula (= + - @) are prefixed with ' .")
else:
    st.caption("Nothing to export yet: the study has no judgments.")
for what, label, count in (("human", "human scores", counts.get("human_scores")),
                           ("judge-scores", "judges' absolute scores", counts.get("judge_scores"))):
    if count:
        st.download_button(f"Download {label} ({out_format})", nlg_ui.export_bytes(db, study, rev, what, out_format),
                           file_name=f"{file_name_part(study)}-{what}.{out_format}", icon=":material/download:",
                           key=f"data_export_{what}")
st.download_button(f"Download the audit log ({out_format})", audit_bytes(data.store(), study, out_format),
                   file_name=f"{file_name_part(study)}-audit.{out_format}", icon=":material/download:",
                   key="data_export_audit", help="Who changed what in this study (imports, runs, guidelines, roles, "
                                                 "decisions), as the Studies page lists it.")
