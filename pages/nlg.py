"""NLG assessment: candidates ranked per context and scored against human ratings; comparative vs absolute."""

import streamlit as st

from peercore.nlg import charts as nlg_charts
from peercore.nlg.report import paper_table
from peercore.ui import data, safe, state
from peercore.ui import nlg as ui

state.ensure_frame()
st.title("NLG assessment")
st.caption("Each context (a dialogue, an article) has several candidate responses with human scores. A judge "
           "compares the candidates pairwise (comparative assessment) or scores each alone (absolute scoring); the "
           "predicted scores are correlated with the human scores within each context and averaged over contexts "
           "(Liusie et al. 2024 and the Product-of-Experts follow-up).")
study = data.current_study()
db, _, rev = data.key(study)
if not ui.has_human_scores(db, study, rev):
    st.info("This study has no human scores. Import a score table (question_id, model and one numeric column per "
            "attribute) or the TopicalChat USR file on **Data**; the bundled study *topicalchat-usr* has both "
            "and the offline judge's comparisons and scores.")
    st.page_link("pages/data.py", label="Go to Data", icon=":material/upload_file:")
    st.stop()

info = ui.overview(db, study, rev)
if st.session_state.get("nlg_attribute") not in info["attributes"]:  # open on an attribute some judge has
    st.session_state["nlg_attribute"] = ui.preferred_attribute(info)
attribute_col, comparative_col, score_col = st.columns([1, 3, 2])
attribute = attribute_col.selectbox("Attribute", info["attributes"], key="nlg_attribute")
comparative_options = ui.comparative_options(info["comparative"])
scoring_options = ui.scoring_options(info["scoring"], attribute)
default_comparative, default_score = ui.defaults(db, study, rev, attribute)
if st.session_state.get("nlg_attribute_seen") != attribute:  # a new attribute: its own judges
    st.session_state["nlg_attribute_seen"] = attribute
    st.session_state["nlg_judge"] = default_comparative
    st.session_state["nlg_score_judge"] = default_score
if st.session_state.get("nlg_judge") not in comparative_options:
    st.session_state["nlg_judge"] = default_comparative
if st.session_state.get("nlg_score_judge") not in scoring_options:
    st.session_state["nlg_score_judge"] = default_score
comparative = comparative_col.selectbox("Comparative judge (its verdicts' criterion)", list(comparative_options),
                                        key="nlg_judge", format_func=comparative_options.get)
score_judge = score_col.selectbox("Absolute-scoring judge", list(scoring_options), key="nlg_score_judge",
                                  format_func=scoring_options.get)
common = st.toggle("Only the contexts every chosen judge covers", value=True, key="nlg_common",
                   help="Comparative and absolute scores measured on the same contexts, as the papers compare them.")

result = ui.evaluation(db, study, rev, attribute, comparative, score_judge, common)
if result is None:
    st.info(f"No judge has compared or scored the candidates on {safe.md(attribute)} yet. Run "
            f"`peercore nlg compare` / `peercore nlg score` (or choose a judge above).")
    st.stop()

for note in result.notes:  # e.g. a judge whose comparisons all went one way: raw scores only
    st.warning(safe.md(note[0].upper() + note[1:] + "."), icon=":material/warning:")

cells = st.columns(4)
cells[0].metric("Contexts", f"{len(result.contexts):,}")
cells[1].metric("Comparisons", f"{result.comparisons:,}")
cells[2].metric("Absolute scores", f"{result.scores:,}")
cells[3].metric("P(first)", f"{result.bias['p_first']:.2f}" if result.bias else "–",
                help="Share of the comparative judge's decisive verdicts that picked the response shown first "
                     "(0.5 = no position bias).")

st.subheader("Correlation with the human scores")
st.caption("Spearman and Pearson correlation within each context, averaged over contexts, with a 95% bootstrap "
           "interval over contexts. Debiased: the judge's first-position preference removed (decision threshold "
           "at the median probability for win ratio and Bradley-Terry; offset by the mean probability for the "
           "soft scorers).")
st.dataframe(paper_table(result.table), hide_index=True, width="stretch", key="nlg_table")
measure = st.segmented_control("Measure", ["spearman", "pearson"], default="spearman", key="nlg_measure",
                               format_func=str.capitalize) or "spearman"
st.plotly_chart(nlg_charts.correlation_chart(result.table, measure=measure), key="nlg_chart")

left, right = st.columns(2)
with left:
    st.subheader("Single comparisons")
    st.caption("Accuracy on the candidate pairs whose human scores differ: raw (p > 0.5), debiased (p > the median "
               "p), both orders averaged, and the order the absolute scores give.")
    st.dataframe(result.accuracy.round(3), hide_index=True, width="stretch", key="nlg_accuracy")
with right:
    st.subheader("Position bias")
    if result.bias:
        b = result.bias
        offsets = ("debiasing undefined (every comparison went one way)" if b["tau"] is None else
                   f"mean p = {b['mean_p']:.3f}; debiasing threshold τ = {b['tau']:.3f}")
        st.markdown(f"P(first) = **{b['p_first']:.3f}** [{b['ci_low']:.3f}, {b['ci_high']:.3f}] over "
                    f"{b['n']:,} comparisons; {offsets}.")
    else:
        st.caption("No comparisons chosen.")

st.subheader("Systems")
st.caption("Each candidate system's mean over the contexts: human score, absolute score and (debiased) win ratio; "
           "the Spearman correlation of each column with the human means is the system-level agreement.")
st.dataframe(result.systems.round(3), hide_index=True, width="stretch", key="nlg_systems")
if result.system_spearman:
    st.caption("System-level Spearman with the human means: " + ", ".join(
        f"{name.replace('_', ' ')} {value:.3f}" for name, value in result.system_spearman.items()))

with st.expander("One context: its candidates, human and predicted scores"):
    context = st.selectbox("Context", list(result.contexts), key="nlg_context")
    if context:
        st.dataframe(ui.context_table(db, study, rev, attribute, comparative, score_judge, context),
                     hide_index=True, width="stretch", key="nlg_context_table")

if comparative != ui.NONE:
    st.subheader("How many comparisons? (against the human scores)")
    st.caption("For each context, score the candidates from only k of the judge's comparisons and correlate with "
               "the human scores (Spearman), median and 10–90% band over seeded repeats; random order vs greedy "
               "Gaussian-PoE selection, raw vs debiased (PoE paper, Fig. 1).")
    method_col, repeat_col = st.columns([3, 1])
    methods = method_col.multiselect("Scorers", list(ui.METHOD_LABELS), default=["win_ratio", "poe_gaussian"],
                                     format_func=ui.METHOD_LABELS.get, key="nlg_curve_methods")
    repeats = repeat_col.select_slider("Repeats", [3, 5, 10, 20], value=5, key="nlg_repeats")
    if methods:
        curves = ui.curves(db, study, rev, attribute, comparative, tuple(methods), repeats)
        st.plotly_chart(nlg_charts.human_curves_chart(curves, method_labels=ui.METHOD_LABELS), key="nlg_curves")
        st.dataframe(curves.round(3), hide_index=True, width="stretch", key="nlg_curves_table")
    else:
        st.warning("Pick at least one scorer.")
