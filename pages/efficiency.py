"""Efficiency: how many comparisons a good ranking needs, and which scorer and selection get there first."""

import streamlit as st

from peercore import charts
from peercore.ui import data, state

state.ensure_frame()
st.title("Efficiency")
st.caption("For each question, rank the contestants' answers from only k of the judge's comparisons, and compare "
           "with the ranking from all of them (Spearman). Median and 10–90% band over seeded repeats; "
           "random order vs greedy Gaussian-PoE selection (Liusie et al. 2024, Fig. 1).")
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
reference = reference_col.selectbox("Full-data ranking", list(data.EFFICIENCY_REFERENCES), key="eff_reference",
                                    format_func=data.EFFICIENCY_REFERENCES.get)
repeat_col, question_col, method_col = st.columns([1, 1, 3])
repeats = repeat_col.select_slider("Repeats", [3, 5, 10, 20], value=5, key="eff_repeats")
questions = question_col.select_slider("Questions (at most)", [10, 20, 40, 80, 160], value=40, key="eff_questions")
methods = method_col.multiselect("Scorers", list(data.EFFICIENCY_METHODS), default=list(data.EFFICIENCY_METHODS),
                                 format_func=data.EFFICIENCY_METHODS.get, key="eff_methods")
if not methods:
    st.warning("Pick at least one scorer.")
    st.stop()
data.show_flags(db, study, rev, [judge] if judge != data.POOLED else list(data.health(db, study, rev).index))

with st.spinner("Sub-sampling comparisons…"):
    result = data.efficiency(db, study, rev, judge, tuple(methods), repeats, questions, reference)
if result["hard_only"]:
    st.caption("This judge gave no probabilities, so average probability equals win ratio and PoE-BT equals BT.")
st.plotly_chart(charts.efficiency_chart(result["summary"]), key="eff_chart")
st.caption(f"{result['questions']} question(s), {result['candidates']} candidates each on average, "
           f"up to {result['max_comparisons']} comparisons per question.")
st.dataframe(result["table"], hide_index=True, width="stretch", key="eff_table")
