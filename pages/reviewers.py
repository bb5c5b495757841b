"""Reviewers & runs: configure LLM reviewers, estimate a job (cut to a budget), launch it, watch it, cancel or resume it, read its verdicts."""

import streamlit as st

from peercore.app.access import Action
from peercore.jobs import preview
from peercore.ui import access, data, escalation, guarantees, runs, safe, state, tables

state.ensure_frame()
st.title("Reviewers & runs")
study = data.current_study()
db, _, rev = data.key(study)
may_configure = access.can(Action.CONFIGURE_REVIEWERS, study)
may_launch, may_resume = access.can(Action.LAUNCH_RUN, study), access.can(Action.RESUME_RUN, study)
if not may_launch:
    st.info("Configuring reviewers and launching, cancelling or resuming runs (which spend the server's API keys) "
            "need the editor role in this study; you can read its runs and verdicts.", icon=":material/lock:")

# ---------------------------------------------------------------------------- keys
st.subheader("API keys")
st.caption("Read from the environment or `.streamlit/secrets.toml` at launch only; never shown, stored or logged.")
for column, (variable, where) in zip(st.columns(len(runs.KEY_VARS) + 1), runs.key_status()):
    column.metric(variable, "set" if where != "not set" else "not set", help=f"Found in: {where}")

# ----------------------------------------------------------------------- reviewers
st.subheader("Reviewers")
reviewers = runs.load_reviewers(study)
st.caption("Kept in this study: adding, editing or removing a reviewer saves the list, with the name of its key's "
           "variable, never a key.")
if reviewers:
    tables.show_cells(runs.reviewers_table(reviewers), key="rv_table")
    remove_cols = st.columns(min(6, len(reviewers)))
    for index, reviewer in enumerate(reviewers):
        column = remove_cols[index % len(remove_cols)]
        column.button(f"Edit {safe.md(runs.label(reviewer))}", key=f"rv_edit_{index}", on_click=runs.edit_reviewer,
                      args=(index,), icon=":material/edit:", disabled=not may_configure)
        column.button(f"Remove {safe.md(runs.label(reviewer))}", key=f"rv_remove_{index}",
                      on_click=runs.remove_reviewer, args=(index,), icon=":material/delete:",
                      disabled=not may_configure)
else:
    st.info("No reviewer yet. Add one below — or the offline local judge, which needs no key and no network.")

editing = st.session_state.get(runs.EDITING)
editing = editing if editing is not None and editing < len(reviewers) else None
with st.expander("Add a reviewer" if editing is None else f"Edit reviewer {safe.md(runs.label(reviewers[editing]))}",
                 expanded=not reviewers or editing is not None):
    with st.form("add_reviewer", border=False):
        provider_col, model_col, temp_col = st.columns([2, 2, 1])
        provider_col.selectbox("Provider", list(runs.PROVIDERS), format_func=runs.PROVIDERS.get, key=runs.F_PROVIDER)
        model_col.text_input("Model", key=runs.F_MODEL, placeholder="gpt-4o-mini, claude-3-5-haiku-latest, qwen2.5-coder-1.5b …")
        temp_col.number_input("Temperature", min_value=0.0, max_value=2.0, step=0.1, key=runs.F_TEMPERATURE)
        url_col, key_col, name_col = st.columns([2, 1, 1])
        url_col.text_input("Base URL (OpenAI-compatible servers)", key=runs.F_URL, placeholder="http://127.0.0.1:8080/v1",
                           help="Without a key: a URL carrying one (?api_key=..., user:password@) is refused.")
        key_col.text_input("Key variable (optional)", key=runs.F_KEY_ENV, placeholder="MY_SERVER_KEY",
                           help="The name of the environment variable (or secrets.toml entry) holding the server's "
                                "key; the key itself is read at launch and never stored.")
        name_col.text_input("Name (optional)", key=runs.F_NAME, help="The judge name in the results; "
                            "needed when one model plays several roles. Leave it out and another configuration of "
                            "a model already in the study gets a variant name of its own.")
        st.form_submit_button("Add reviewer" if editing is None else "Save changes", on_click=runs.add_reviewer,
                              type="primary", disabled=not may_configure)
    if editing is not None:
        st.button("Stop editing", key="rv_stop_editing", on_click=runs.stop_editing)
    st.button("Add the offline local judge (Qwen2.5-Coder 1.5B)", key="rv_local", on_click=runs.add_local_preset,
              disabled=not may_configure)
if st.session_state.get("rv_error"):
    st.error(safe.md_lines(st.session_state["rv_error"]))

# ----------------------------------------------------------------------------- job
st.subheader("Job")
kind = st.segmented_control("What to run", list(runs.JOBS), format_func=runs.JOBS.get, default="review",
                            key="rv_kind") or "review"
contestants = data.contestants(db, study, rev)
options = {"strategy": "all"}
if kind == "answers":
    st.caption("Each reviewer above answers every question of the study, as a contestant.")
else:
    pick_col, strategy_col, k_col, budget_col, limit_col = st.columns([3, 2, 1, 1, 1])
    options["contestants"] = pick_col.multiselect("Contestants to compare", contestants, key="rv_contestants",
                                                  help="Default: every contestant with answers.")
    options["strategy"] = strategy_col.selectbox("Selection strategy", ["all", "random", "no-repeat", "symmetric", "greedy"],
                                                 key="rv_strategy", help="all = every ordered pair, both presentation "
                                                 "orders (PRD); the others pick K comparisons per question (Liusie et "
                                                 "al. 2024). no-repeat and greedy show each pair in one order only.")
    if options["strategy"] in runs.ONE_ORDER_STRATEGIES:
        st.caption(f"{options['strategy']} shows each pair in one order only, so these verdicts cannot measure "
                   "position bias (the Bias page and the health check need both orders: use all or symmetric).")
    options["comparisons"] = k_col.number_input("K per question", min_value=1, value=4, key="rv_k",
                                                disabled=options["strategy"] == "all")
    options["budget"] = budget_col.number_input("Call budget", min_value=0, value=0, key="rv_budget",
                                                help="At most this many calls (0 = no limit). When the job needs "
                                                     "more, whole questions are kept (chosen at random, seeded) "
                                                     "while they fit, and the estimate says what was left out.")
    options["max_questions"] = limit_col.number_input("Question limit", min_value=0, value=0, key="rv_max_questions",
                                                      help="Judge at most this many questions, chosen at random "
                                                           "(seeded) — 0 = every question. `--max-questions` in "
                                                           "the command line.")
    if kind == "review":
        method_col, criterion_col, template_col = st.columns(3)
        options["method"] = method_col.selectbox(
            "Verdict from", runs.review_methods(), key="rv_method", format_func=runs.method_label,
            help="default: each backend's own, as `peercore review` without --method (the label-probability "
                 "classifier for local models and log-probability servers; the verdict prompt for OpenAI and "
                 "Anthropic); verdict: the reply's verdict line (PRD); logprobs / logits: the probability of '1' vs "
                 "'2' (Liusie et al.); samples: K samples; auto: the best the backend supports")
        options["samples"] = method_col.number_input("Samples", min_value=2, value=5, key="rv_samples",
                                                      disabled=options["method"] != "samples")
        options["criterion"] = criterion_col.text_input("Criterion (optional)", key="rv_criterion",
                                                        placeholder="helpfulness")
        options["template"] = template_col.selectbox("Template", ["(default)", *runs.review_templates()],
                                                     key="rv_template").replace("(default)", "")
    elif kind == "discussion":
        turns_col, orders_col = st.columns(2)
        options["turns"] = turns_col.number_input("Turns", min_value=1, max_value=12, value=4, key="rv_turns")
        options["both_orders"] = orders_col.toggle("Both leader orders", value=True, key="rv_both")
    elif kind == "debate":
        criteria_col, rounds_col, panel_col = st.columns(3)
        options["criteria"] = criteria_col.multiselect("Criteria", runs.rubrics(), default=["helpfulness"], key="rv_criteria")
        options["max_rounds"] = rounds_col.number_input("Rounds (incl. initial)", min_value=1, max_value=6, value=3,
                                                        key="rv_rounds")
        options["panel"] = panel_col.text_input("Panel name (optional)", key="rv_panel", placeholder="scaleeval",
                                                help="The consensus judge is debate:<name>. Left empty, another "
                                                     "configuration of an existing panel gets a variant name.")
        options["layout"] = st.radio("Prompt layout", list(runs.DEBATE_LAYOUTS), key="rv_layout", horizontal=True,
                                     help="ScaleEval's prompts ask for the verdict on the last line; the compact "
                                          "ones ask for it first, so a small local model's verdict survives a short "
                                          "reply budget.")

live = st.session_state[state.RUN_HANDLE]
if not reviewers:
    st.caption("Add at least one reviewer to estimate and launch a job.")
else:
    frozen_reviewers, frozen_options = runs.frozen(reviewers, options)
    try:
        planned = runs.estimate(db, study, rev, kind, frozen_reviewers, frozen_options)
    except ValueError as error:
        st.error(f"This job cannot run as set: {safe.md_lines(error)}")
        planned = None
    if planned is not None:
        est = planned["estimate"]
        cells = st.columns(4)
        cells[0].metric("Items to do", f"{est.pending_items:,} of {est.items:,}")
        cells[1].metric("Paid calls", runs.range_text(est.calls_low, est.calls_high))
        cells[2].metric("From the cache", f"{est.cached_calls:,}")
        cells[3].metric("Cost", runs.cost_text(est))
        if est.note:
            st.info(f"Cut to fit: {safe.md(est.note)}", icon=":material/content_cut:")
        st.caption(f"Items and calls: {planned['items_and_calls']}; a range is certain calls – every possible "
                   f"call. Run `{planned['run_id'][:12]}` — launching the same job again resumes it; "
                   "calls already made come from the cache for free.")
        show_col, count_col = st.columns([3, 1])
        if show_col.toggle("Show the prompts the judges will read", key="rv_show_prompts_on",
                           help="The exact messages of the job's first calls, as sent (`--show-prompts N` in the "
                                "command line); discussion turns and later debate rounds quote earlier replies and "
                                "are not known before the run. Nothing is called."):
            shown = count_col.number_input("Prompts", min_value=1, max_value=50, value=3, key="rv_show_prompts")
            job = runs.build_job(study, kind, reviewers, options)
            st.code(preview.prompts_text(preview.job_prompts(job, data.store(), int(shown))) or "(no call to make)",
                    language=None)
        st.button("Launch", type="primary", icon=":material/play_arrow:", key="rv_launch",
                  disabled=live is not None and not live.handle.done() or est.pending_items == 0 or not may_launch,
                  on_click=runs.launch, args=(study, kind, reviewers, options))
if st.session_state.get("run_error"):
    st.error(safe.md_lines(st.session_state["run_error"]))


# ------------------------------------------------------------------------ live run
@st.fragment(run_every=1.0)
def live_progress() -> None:
    """Polls the running job every second; when it ends, reruns the page once to show the result."""
    live = st.session_state[state.RUN_HANDLE]
    if live is None or live.handle.done():
        st.rerun(scope="app")
    progress = live.handle.progress
    st.progress(0.0 if progress is None else progress.fraction, text=safe.md(runs.progress_text(live)))
    if progress is not None:
        cells = st.columns(4)
        cells[0].metric("Paid calls", f"{progress.calls:,}")
        cells[1].metric("From the cache", f"{progress.cached:,}")
        cells[2].metric("Failed items", f"{progress.failed:,}")
        cells[3].metric("Cost", "unknown" if progress.cost_usd is None else f"${progress.cost_usd:,.4f}")
    st.code("\n".join(live.lines()[-12:]) or "(no progress yet)", language=None)
    st.button("Cancel", key="rv_cancel", icon=":material/stop:", on_click=runs.cancel,
              disabled=live.handle.cancel_requested or not access.can(Action.CANCEL_RUN, live.job.study))


if live is not None:
    st.subheader(f"Live run `{live.handle.run_id[:12]}`")
    if not live.handle.done():
        live_progress()
    else:
        result, error = runs.result_of(live)
        runs.record_end(live, result)  # once: how it ended and its final cost, in the audit log
        level, message = runs.result_message(result, error)
        getattr(st, level)(safe.md_lines(message))
        if getattr(result, "accounting", None):
            st.caption(safe.md(runs.accounting_text(result.accounting)))
        if result is not None:
            for label, name in runs.renamed_judges(live).items():
                st.info(f"Judge {safe.code(label)} is stored as {safe.code(name)}: its configuration differs from the "
                        "judge of that name already in the study (a judge is its whole configuration).")
            judged = runs.run_judges(live)
            if judged and live.kind in runs.INSPECT_KINDS:
                runs.show_health(db, study, judged)
            runs.inspect_run(live, db, study)
        st.code("\n".join(live.lines()[-12:]) or "(no progress)", language=None)
        st.button("Close", key="rv_clear", on_click=runs.clear)

# ------------------------------------------------------------------ escalation cascade
st.subheader("Escalation cascade")
st.caption("Judges in order, cheapest first: each keeps the verdicts it is confident enough about, the next judges "
           "the rest, and what no stage keeps is queued for people on the Adjudication page. With probability at "
           "least 1 - risk, agreement with the human majority on the kept verdicts is at least the target (Trust or "
           "Escalate, Jung et al. 2025; `peercore escalate`).")
stage_options = escalation.stage_choices(db, study, rev, reviewers)
human_references = guarantees.references(db, study, rev)
if not human_references:
    st.info("This study has no human votes: a cascade is calibrated on human-labelled comparisons (import them, or "
            "decide label requests on the Adjudication page).")
else:
    stages_col, reference_col, target_col, risk_col = st.columns([3, 2, 1, 1])
    cascade = stages_col.multiselect("Stages, in order", stage_options, key="rv_cascade_stages",
                                     help="The study's judges (their stored verdicts) and the reviewers above (run "
                                          "on what they need, keys from the environment as `peercore escalate`).")
    reference = reference_col.selectbox("Human reference", human_references, key="rv_cascade_reference",
                                        index=human_references.index(escalation.default_reference(human_references)),
                                        format_func=guarantees.reference_label)
    target = target_col.number_input("Target agreement", min_value=0.5, max_value=0.999,
                                     value=escalation.DEFAULT_TARGET, step=0.01, key="rv_cascade_target")
    risk = risk_col.number_input("Risk", min_value=0.001, max_value=0.5, value=escalation.DEFAULT_RISK, step=0.01,
                                 key="rv_cascade_risk", help="delta: the guarantee holds with probability 1 - risk.")
    cascade_live = st.session_state.get(escalation.CASCADE)
    running = cascade_live is not None and not cascade_live.done.is_set() or live is not None and not live.handle.done()
    plan_col, run_col = st.columns(2)
    show_plan = plan_col.button("Show plan", key="rv_cascade_plan", icon=":material/table_chart:",
                                disabled=not cascade)
    if may_launch:
        run_col.button("Run cascade", key="rv_cascade_run", type="primary", icon=":material/play_arrow:",
                       disabled=not cascade or running, on_click=escalation.launch_cascade,
                       args=(study, cascade, reference, target, risk))
    if show_plan and cascade:
        try:
            plan = guarantees.plan(db, study, rev, cascade=tuple(cascade), reference=reference,
                                   target_agreement=float(target), risk=float(risk))
        except guarantees.SectionUnavailable as why:
            st.info(f"No plan yet: {safe.md_lines(why)} A judge spec is calibrated when the cascade runs it.")
        else:
            st.caption(f"The plan (dry run, `peercore escalate --dry-run`): {plan.n_calibration:,} labelled "
                       f"calibration comparisons; escalated to humans: {plan.escalated:.1%} of the comparisons.")
            tables.show_cells(guarantees.plan_display(plan), key="rv_cascade_plan_table",
                              labels=guarantees.PLAN_LABELS)
            for warning in plan.warnings:
                st.warning(safe.md_lines(warning))

    @st.fragment(run_every=1.0)
    def cascade_progress() -> None:
        """Polls the running cascade every second; when it ends, reruns the page once to show its report."""
        current = st.session_state.get(escalation.CASCADE)
        if current is None or current.done.is_set():
            st.rerun(scope="app")
        st.progress(0.0 if current.stage < 0 else current.stage / len(current.cascade),
                    text=safe.md(escalation.stage_text(current)))
        st.code("\n".join(current.lines()[-12:]) or "(no progress yet)", language=None)

    if cascade_live is not None:
        if not cascade_live.done.is_set():
            cascade_progress()
        elif cascade_live.error:
            st.error(f"The cascade did not run: {safe.md_lines(cascade_live.error)}")
            st.button("Close", key="rv_cascade_clear", on_click=escalation.clear_cascade)
        else:
            report = cascade_live.result
            if report.status != "finished":
                st.warning(safe.md_lines(report.message))
            else:
                st.success(safe.md(escalation.report_sentence(report)))
            tables.show_cells(escalation.report_display(report), key="rv_cascade_report",
                              labels=escalation.REPORT_LABELS)
            for warning in report.warnings:
                st.warning(safe.md_lines(warning))
            if report.queued or report.already_requested:
                st.page_link("pages/adjudication.py", label="Decide the label requests on the Adjudication page",
                             icon=":material/gavel:")
            st.code("\n".join(cascade_live.lines()[-12:]) or "(no progress)", language=None)
            st.button("Close", key="rv_cascade_clear", on_click=escalation.clear_cascade)

# ---------------------------------------------------------------------------- runs
st.subheader("Runs of this study")
all_runs = data.runs(db, study, rev)
if len(all_runs) == 0:
    st.caption("No run yet.")
else:
    tables.show_cells(runs.runs_display(all_runs), key="rv_runs")
    stopped = runs.resumable_runs(db, study, rev)
    if len(stopped):
        pick_col, button_col = st.columns([3, 1])
        run_id = pick_col.selectbox("Resume an interrupted run", stopped["id"].tolist(), key="rv_resume_pick",
                                    format_func=runs.run_label(stopped))
        button_col.button("Resume", key="rv_resume", icon=":material/replay:", on_click=runs.resume,
                          args=(study, run_id), disabled=live is not None and not live.handle.done() or not may_resume)

# ------------------------------------------------------------------ inspect verdicts
st.subheader("Inspect verdicts")
sources = runs.inspectable_runs(db, study, rev)
source_col, judge_col = st.columns([3, 2])
source = source_col.selectbox("Verdicts of", sources, key="rv_inspect_run", format_func=runs.inspect_label(db, study, rev),
                              help="A run's verdicts, or every verdict stored in the study (imports included).")
if source == runs.ALL_VERDICTS:  # a whole study can be large: read one judge at a time by default
    judge_options = data.judge_names(db, study, rev)
    data.seed_list_choice("rv_inspect_judges", judge_options, limit=1)
else:  # a run is read whole; its own judges are the choices
    judge_options = runs.judges_of(runs.run_verdicts(db, study, rev, source, None))
    data.seed_list_choice("rv_inspect_judges", judge_options, limit=0)
picked = judge_col.multiselect("Judges", judge_options, key="rv_inspect_judges", placeholder="Every judge")
verdicts = runs.run_verdicts(db, study, rev, source, tuple(picked) or None)
counts = runs.verdict_counts(verdicts)
invalid_col, disagree_col = st.columns(2)
invalid_only = invalid_col.toggle(f"Only invalid replies ({counts['invalid']:,})", key="rv_inspect_invalid")
disagreeing_only = disagree_col.toggle(
    f"Only pairs whose two orders disagree ({counts['disagreeing']:,} of {counts['both_orders']:,} verdicts "
    "judged in both orders)",
    key="rv_inspect_disagree", help="The same judge judged the same two answers as A/B and as B/A and named "
                                    "different winners (MT-Bench's swap inconsistency).")
shown = runs.filter_verdicts(verdicts, invalid_only=invalid_only, disagreeing_only=disagreeing_only)
if len(shown) == 0:
    st.info("No verdict matches these filters.")
else:
    st.caption(f"{len(shown):,} of {counts['verdicts']:,} verdicts"
               + (f"; the first {runs.DISPLAY_LIMIT:,} are listed" if len(shown) > runs.DISPLAY_LIMIT else "")
               + ". Open one below to read the question, both answers and the judge's reasoning.")
    listed = shown.head(runs.DISPLAY_LIMIT)
    table = runs.verdicts_display(listed)
    st.dataframe(table, hide_index=True, width="stretch", key="rv_inspect_table",
                 column_config=tables.with_widths(table, runs.verdicts_columns()))
    row = st.selectbox("Open", listed.index.tolist(), key="rv_inspect_row", format_func=runs.verdict_label(listed))
    item = listed.loc[row]
    st.markdown(" ".join([safe.code(item["judge"]), data.verdict_badge(item["verdict"] if item["valid"] else None),
                          f"p_a {item['p_a']:.3f}" if item["p_a"] == item["p_a"] else "no p_a",
                          "" if item["valid"] else "**invalid reply**"]))
    st.markdown(f"**Question {safe.md(item['question_id'])}**")
    safe.text(item["question"], empty="(question text not stored)")
    first, second = st.columns(2)
    first.markdown(f"**Shown first** — {data.name_md(item['model_a'])}")
    safe.text(item["answer_a"], empty="(answer not stored)", container=first)
    second.markdown(f"**Shown second** — {data.name_md(item['model_b'])}")
    safe.text(item["answer_b"], empty="(answer not stored)", container=second)
    st.markdown("**The judge's reasoning**" + ("" if item["valid"] else " (the raw reply: no verdict could be read)"))
    safe.text(item["rationale"], empty="(no reasoning recorded)")
