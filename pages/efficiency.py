"""Efficiency: how many comparisons a good ranking needs, and which scorer and selection get there first."""

import streamlit as st

from peercore import charts
from peercore.ui import data, safe, state
from peercore.ui import nlg as nlg_ui

state.ensure_frame()
st.title("Efficiency")
st.caption("For each question, rank the contestants' answers from only k of the judge's comparisons, and compare "
           "with the human scores of the answers when the study has them, else with the ranking from all the "
           "comparisons (Spearman). Median and 10–90% band over seeded repeats; random order vs greedy "
           "Gaussian-PoE selection (Liusie et al. 2024, Fig. 1).")
study = data.current_study()
db, _, rev = data.key(study)
choices = data.efficiency_judges(db, study, rev)
if not choices:
    st.info("Efficiency needs a judge that compared the answers of at least three contestants on the same question. "
            "Import judgments on **Data** or run reviewers on **Reviewers & runs**.")
    st.stop()

data.seed_single_choice(state.EFF_JUDGE, list(choices), 0)
judge_col, reference_col = st.columns([2, 2])
judge = judge_col.selectbox("Judge", list(choices), key=state.EFF_JUDGE, format_func=choices.get)
# Human scores are the reference the papers measure against: offered first when the study has them.
humans = {f"human:{a}": f"human scores: {a}" for a in nlg_ui.human_attributes(db, study, rev)}
references = {**humans, **data.EFFICIENCY_REFERENCES} if judge != data.POOLED else dict(data.EFFICIENCY_REFERENCES)
if st.session_state.get("eff_reference") not in references:
    st.session_state["eff_reference"] = nlg_ui.human_reference_for(db, study, rev, judge, list(humans)) or \
        next(iter(references))
reference = reference_col.selectbox("Compare with", list(references), key="eff_reference",
                                    format_func=references.get)
repeat_col, question_col, method_col = st.columns([1, 1, 3])
repeats = repeat_col.select_slider("Repeats", [3, 5, 10, 20], value=5, key="eff_repeats")
questions = question_col.select_slider("Questions (at most)", [10, 20, 40, 80, 160], value=40, key="eff_questions")
methods = method_col.multiselect("Scorers", list(data.EFFICIENCY_METHODS), default=list(data.EFFICIENCY_METHODS),
                                 format_func=data.EFFICIENCY_METHODS.get, key="eff_methods")
if not methods:
    st.warning("Pick at least one scorer.")
    st.stop()
data.show_flags(db, study, rev, [judge] if judge != data.POOLED else list(data.health(db, study, rev).index))

if reference.startswith("human:"):
    with st.spinner("Sub-sampling comparisons…"):
        result = nlg_ui.efficiency_against_humans(db, study, rev, judge, reference.removeprefix("human:"),
                                                  tuple(methods), repeats, questions)
    complete = True
else:
    # The curves run in a background thread: the page shows their progress and the strategies finished so far.
    job = data.efficiency_job(db, study, rev, judge, tuple(methods), repeats, questions, reference)
    complete = job.wait(data.EFFICIENCY_WAIT_S if job.quick else 0.0)
    if job.error:
        st.error(f"The curves could not be computed: {safe.md(job.error)}")
        st.stop()
    result = job.result if complete else job.partial
if "error" in (result or {}):
    st.info(f"This judge's comparisons cannot be measured against the human scores: {safe.md(result['error'])}. "
            "Choose another reference above.")
    st.stop()


@st.fragment(run_every=None if complete else 1.0)
def curves() -> None:
    """The chart, the takeaway and the table; while the job runs, redrawn every second with what is done."""
    shown = result
    if not complete:
        if job.done:  # finished since the page ran: draw the whole result without polling any more
            st.rerun()
        shown = job.partial
        st.progress(job.fraction, text=f"Computing the curves in the background: {job.fraction:.0%} done.")
        if shown is None:
            st.caption("No strategy has finished yet; its curve appears here as soon as it has.")
            return
        done = ", ".join(sorted(set(shown["summary"]["strategy"])))
        st.caption(f"Partial result: the {done} curve so far; the rest is drawn when it is done.")
    if complete:
        takeaway = data.efficiency_takeaway(shown["summary"])
        if takeaway:
            st.markdown(takeaway)
    if shown["hard_only"]:
        st.caption("This judge gave no probabilities, so average probability equals win ratio and PoE-BT equals BT.")
    figure = charts.efficiency_chart(shown["summary"])
    if reference.startswith("human:"):
        figure.update_yaxes(title="Spearman with the human scores", range=[-0.3, 1.05])
    st.plotly_chart(figure, key="eff_chart")
    sample = (f" of the {shown['usable']:,} with three or more candidates (the first by id)"
              if shown.get("usable", 0) > shown["questions"] else "")
    st.caption(f"{shown['questions']} question(s){sample}, {shown['candidates']} candidates each on average, "
               f"up to {shown['max_comparisons']} comparisons per question.")
    st.dataframe(shown["table"], hide_index=True, width="stretch", key="eff_table")


curves()
