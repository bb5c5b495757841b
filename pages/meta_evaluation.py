"""Meta-evaluation: how far can each judge be trusted, against the gold set and against humans?"""

import streamlit as st

from peercore import charts, reports
from peercore.ui import data, safe, state, tables
from peercore.ui import guarantees as guarantees_ui
from peercore.ui import meta as meta_ui

state.ensure_frame()
st.title("Meta-evaluation")
study = data.current_study()
db, _, rev = data.key(study)
panels = data.panels(db, study, rev)
panel = None
if len(panels) > 1:
    panel = st.selectbox("Debate panel (its gold set)", panels, key="meta_panel",
                         help="Each debate configuration is a panel with its own gold: the verdicts its agents agreed "
                              "on plus the adjudications of its split debates.")
elif panels:
    panel = panels[0]
REFERENCE_MODES = {"majority": "Majority of the human votes (PRD Table 3)",
                   "votes": "Every human vote on its own (MT-Bench)"}
HUMAN_WORDS = {"majority": "the human majority", "votes": "every human vote"}
reference_mode = st.radio("Human reference", list(REFERENCE_MODES), format_func=REFERENCE_MODES.get,
                          key="meta_reference_mode", horizontal=True,
                          help="How the human votes on a comparison form the reference: their majority, or each vote "
                               "compared on its own (`peercore agree --reference-mode majority|votes`).")
meta = data.meta_evaluation(db, study, rev, panel, reference_mode)
if meta.n_judges == 0:
    if meta.n_humans:  # human votes only: nothing to hold against them yet
        st.info(f"No LLM judge to evaluate: this study's verdicts are the votes of {meta.n_humans:,} human annotator "
                f"name{'s' if meta.n_humans != 1 else ''}. Import an LLM judge's verdicts on **Data** or run "
                "reviewers on **Reviewers & runs** to see how well it agrees with them.")
    else:
        st.info("This study has no LLM or human verdicts to evaluate yet. Import judgments on **Data** or run "
                "reviewers on **Reviewers & runs**.")
    st.stop()

cells = st.columns(4)
for cell, (label, value) in zip(cells, meta.metrics.items()):
    cell.metric(label, f"{value:,}")
for warning in meta.warnings:  # what the selection merged or left out, never silently
    st.info(safe.md(warning), icon=":material/info:")
data.show_flags(db, study, rev, data.health(db, study, rev).index)

# ------------------------------------------------------------------ against the gold
st.header("Against the gold set")
st.caption("Gold = the verdicts the panel's debates agreed on plus human adjudications of its debates that stayed "
           "split (ScaleEval). Several decisions on one debate are reduced by majority. A judge's unparsed replies "
           "count as misses (ScaleEval eq. 2).")
if meta.gold_accuracy is None and meta.n_gold:
    st.info(f"The gold set holds {meta.n_gold} verdict(s), but none is about a comparison a judge here "
            "judged (same question, pair and criterion).")
elif meta.gold_accuracy is None:
    st.info("There is no gold verdict yet: no debate ended in agreement and none was adjudicated. "
            "Decide the open debates on **Adjudication**, or run ScaleEval debates on **Reviewers & runs**.")
else:
    gold_accuracy, gold_name = meta.gold_accuracy, "the gold set"
    audit = meta_ui.circularity(db, study, rev, panel)
    if len(audit["circular"]):
        st.warning(meta_ui.circular_text(audit["circular"]), icon=":material/sync_problem:")
        choice = st.radio("Score the judges against", list(meta_ui.GOLD_CHOICES), format_func=meta_ui.GOLD_CHOICES.get,
                          key="meta_gold_choice", horizontal=True)
        if choice == "loao" and audit["loao_accuracy"] is not None:
            gold_accuracy, gold_name = audit["loao_accuracy"], "leave-one-agent-out gold"
        with st.expander("Circular gold, judge by judge"):
            tables.show_cells(audit["comparison"], key="meta_circular", hide_index=False)
            st.caption("An agent's verdict here is its final one in the debate. Leave-one-agent-out gold keeps "
                       "the human decisions and, on a debate the agent argued in, the verdict all the other agents "
                       "ended on (no gold when they split).")
    st.plotly_chart(charts.agreement_chart(gold_accuracy, metrics=data.ACCURACY_METRICS,
                                           title=f"Each judge against {gold_name}"), key="meta_gold_chart")
    tables.show_cells(reports.accuracy_display(gold_accuracy), key="meta_gold_table", hide_index=False,
                      labels=meta_ui.ACCURACY_LABELS, helps=meta_ui.ACCURACY_HELP, decimals=meta_ui.ACCURACY_DECIMALS)

    st.subheader("By scenario and criterion (ScaleEval Tables 3–4)")
    criteria = ["All criteria", *meta.criteria]
    if st.session_state[state.META_CRITERION] not in criteria:
        st.session_state[state.META_CRITERION] = criteria[0]
    criterion = st.segmented_control("Criterion", criteria, key=state.META_CRITERION, format_func=safe.md)
    example, system = data.scaleeval_pivots(meta.scaleeval, criterion or "All criteria")
    st.markdown("**Example-level agreement** (share of examples matching the gold)")
    tables.show(example, key="meta_example", hide_index=False)
    st.markdown("**System-level agreement** (share of system pairs whose most frequent verdict matches)")
    tables.show(system, key="meta_system", hide_index=False)

# ------------------------------------------------------------------- against humans
st.header("Against human annotations")
if meta.human_accuracy is None:
    st.info("No human annotations in this study. Import them on **Data** (judges named `human:<name>`).")
else:
    st.caption(f"Reference: {safe.md(meta.human_reference)}. Cohen's kappa is MT-Bench's measure, Fleiss' "
               "kappa (judge and reference as two raters) is what PRD's Table 3 reports.")
    st.plotly_chart(charts.agreement_chart(meta.human_accuracy, metrics=data.ACCURACY_METRICS,
                                           title="Each judge against the human majority" if reference_mode == "majority"
                                           else "Each judge against every human vote"), key="meta_human_chart")
    tables.show_cells(reports.accuracy_display(meta.human_accuracy), key="meta_human_table", hide_index=False,
                      labels=meta_ui.ACCURACY_LABELS, helps=meta_ui.ACCURACY_HELP, decimals=meta_ui.ACCURACY_DECIMALS)

# ------------------------------------------------------------------ cost vs agreement
st.header("Cost versus agreement")
costs = meta.costs
if (silent := meta_ui.cost_chart_note(costs)) is not None:  # no point to draw: no empty chart, the reason
    st.info(silent, icon=":material/info:")
else:
    st.caption(costs["caption"])
    against = "the gold set" if meta.gold_accuracy is not None else HUMAN_WORDS[reference_mode]
    st.plotly_chart(meta_ui.cost_chart(costs, against=against), key="meta_cost")

# ------------------------------------------------------------------ criteria variation
st.header("Robustness to the criteria prompt (ScaleEval Table 5)")
if len(meta.variation):
    tables.show(reports.variation_display(meta.variation), key="meta_variation", hide_index=False)
else:
    st.info("Appears when judges were also run with varied criteria prompts (general, shortened, gibberish, "
            "shuffled, flipped, masked), recorded as criterion `<criterion>/<variant>`; "
            "launch such runs on **Reviewers & runs**.")

# ------------------------------------------------------------------ judges as evaluators
st.header("Judges as evaluators")
st.caption("Each LLM judge of the study as an evaluator, as AlpacaEval ranks its annotators and more "
           "(`peercore judges`). Click a header to sort.")
try:
    evaluators = guarantees_ui.evaluators(db, study, rev)
except guarantees_ui.SectionUnavailable as exc:
    st.info(safe.md(str(exc)))
else:
    every_column = st.toggle("Every column", key="meta_evaluators_all",
                             help="Add the human-judged count, agreement without ties, Fleiss' kappa, Kendall, "
                                  "P(prefers lists) and seconds per 1,000 (as `peercore judges` prints them).")
    tables.show_cells(guarantees_ui.evaluator_display(evaluators, every_column=every_column), key="meta_evaluators",
                      labels=guarantees_ui.EVALUATOR_LABELS, helps=guarantees_ui.EVALUATOR_HELP)
    for note in evaluators.notes:
        st.caption(safe.md(note))

# ------------------------------------------------------------------ anchored to human labels
st.header("Judge scores anchored to human labels")
humans = guarantees_ui.references(db, study, rev)
llms = guarantees_ui.llm_judges(db, study, rev)
if not humans or not llms:
    st.info("Needs an LLM judge and human labels on some of its comparisons: import human annotations on "
            "**Data** (judges named `human:<name>`) or decide debates on **Adjudication**.")
else:
    st.caption("The leaderboard the humans would have produced from all of the judge's comparisons, with 95% "
               "intervals honest about the judge's errors and about how few humans there are (prediction-powered "
               "inference, PPI++; `peercore calibrate`). Beside it: the judge alone, the humans alone, and the "
               "judge's own score corrected with its error rates.")
    judge_col, reference_col, method_col = st.columns([2, 2, 1])
    anchored_judge = judge_col.selectbox("Judge", llms, key="meta_anchor_judge")
    anchored_reference = reference_col.selectbox("Human labels", humans, key="meta_anchor_reference",
                                                 format_func=lambda r: "every human judge" if r == "human:" else r)
    anchored_method = method_col.radio("Score", ["winrate", "bt"], key="meta_anchor_method", horizontal=True,
                                       format_func={"winrate": "win rate", "bt": "Bradley-Terry"}.get)
    try:
        board = guarantees_ui.anchored(db, study, rev, judge=anchored_judge, reference=anchored_reference,
                                       method=anchored_method)
    except guarantees_ui.SectionUnavailable as exc:
        st.info(safe.md(str(exc)))
    else:
        cells = st.columns(3)
        cells[0].metric("Human labels", f"{board.labels:,}")
        cells[1].metric("Judge's comparisons", f"{board.comparisons:,}")
        cells[2].metric("Effective labels (median)", f"{board.effective_labels:,.0f}",
                        help=guarantees_ui.ANCHORED_HELP["effective_labels"])
        tables.show_cells(guarantees_ui.anchored_display(board), key="meta_anchored",
                          labels=guarantees_ui.ANCHORED_LABELS, helps=guarantees_ui.ANCHORED_HELP,
                          decimals=guarantees_ui.anchored_decimals(board))
        for warning in board.warnings:
            st.caption(safe.md(warning))

# ------------------------------------------------------------------ escalation plan
st.header("Escalation to humans with a promised agreement")
if not humans or not llms:
    st.info("Needs LLM judges and human labels on their comparisons to calibrate on.")
else:
    st.caption("Trust or Escalate (Jung et al., ICLR 2025): each judge of the cascade keeps the verdicts it is "
               "confident enough about; what no judge keeps goes to humans. Thresholds are chosen on the human "
               "labels so that, with the probability shown, agreement with the human majority on kept verdicts is "
               "at least the target (`peercore escalate --dry-run`).")
    cascade_col, target_col, risk_col = st.columns([3, 1, 1])
    cascade = cascade_col.multiselect("Cascade, cheapest judge first", llms, default=llms[:2], key="meta_cascade")
    target = target_col.select_slider("Target agreement", [0.7, 0.75, 0.8, 0.85, 0.9, 0.95], value=0.8,
                                      key="meta_target")
    risk = risk_col.select_slider("Risk", [0.01, 0.05, 0.1, 0.2], value=0.1, key="meta_risk",
                                  help="The promise holds with probability at least 1 - risk.")
    if not cascade:
        st.info("Choose at least one judge for the cascade.")
    else:
        reference = "human:" if "human:" in humans else humans[0]
        try:
            escalation = guarantees_ui.plan(db, study, rev, cascade=tuple(cascade), reference=reference,
                                            target_agreement=target, risk=risk)
        except guarantees_ui.SectionUnavailable as exc:
            st.info(safe.md(str(exc)))
        else:
            kept_agreement = ("not measurable (no judge keeps a verdict)" if escalation.agreement is None
                              or escalation.agreement != escalation.agreement else f"{escalation.agreement:.3f}")
            st.markdown(f"On {escalation.n_calibration:,} human-labelled comparisons: the judges keep "
                        f"{1 - escalation.escalated:.2%} of the verdicts, {escalation.escalated:.2%} go to humans; "
                        f"agreement with the human majority on what the judges keep: {kept_agreement}.")
            tables.show_cells(guarantees_ui.plan_display(escalation), key="meta_plan", labels=guarantees_ui.PLAN_LABELS)
            for warning in escalation.warnings:
                st.caption(safe.md(warning))
