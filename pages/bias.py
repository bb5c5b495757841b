"""Bias: does a judge prefer the first answer, its own model, or the longer answer?"""

import streamlit as st

from peercore import charts, reports
from peercore.domain.selection import Selection
from peercore.ui import data, safe, state, tables

state.ensure_frame()
st.title("Bias")
study = data.current_study()
db, _, rev = data.key(study)
all_judges, groups = data.judges_or_stop(db, study, rev, choice_key=state.BIAS_JUDGES)
chosen = st.multiselect("Judges", all_judges, key=state.BIAS_JUDGES, format_func=reports.judge_label)
if not chosen:
    st.warning("Pick at least one judge.")
    st.stop()
# Every vote counts, as `peercore bias`: a position effect shows in each verdict a judge gave (a majority hides it).
bias = data.bias_tables(db, study, rev, Selection(judges=tuple(chosen), repeated_votes="each"))
for warning in bias.warnings:  # what the selection merged or left out, never silently
    st.info(safe.md(warning), icon=":material/info:")

# --------------------------------------------------------------------- judge health
st.header("Judge health")
st.caption("Does a judge's verdict carry information? Flagged when one position takes more than 90% of its decisive "
           "verdicts, its position-bias interval lies wholly outside [0.2, 0.8], or more than 20% of its replies "
           "held no readable verdict. `peercore review` prints the same check after every run.")
if len(bias.health):
    data.show_flags(db, study, rev, chosen)
    tables.show_cells(reports.health_display(bias.health), key="bias_health")
else:
    st.caption("No chosen judge is an LLM judge.")

# -------------------------------------------------------------------- position bias
st.header("Position bias")
st.caption("Share of decisive verdicts that chose the answer shown first, with 95% Wilson intervals. "
           "On a set where every pair is shown in both orders an unbiased judge sits on the red 0.5 line "
           "(Liusie et al. 2024; MT-Bench section 3.3).")
# Chart, then its table at full width: side by side, the tables' right columns were cut off at 1366 px.
# A judge whose verdicts have no known order has no bar: no empty chart, the reason in one line.
if (silent := reports.silent_chart_note(bias.position, shown=bias.position["p_first"].notna())) is None:
    st.plotly_chart(charts.position_bias_chart(bias.position), key="bias_position")
else:
    st.caption(safe.md(silent))
tables.show_cells(reports.position_display(bias.position), key="bias_position_table", hide_index=False)

discussion = data.discussion_bias(db, study, rev)
if discussion is not None:
    st.subheader("Before and after discussion")
    st.caption("The same share for each debater's first verdict and last verdict in the study's debates and discussions.")
    st.plotly_chart(charts.position_bias_chart(discussion, group="stage", title="First-position wins, before vs after"),
                    key="bias_discussion")

# ----------------------------------------------------------------- swap consistency
st.header("Swap consistency")
st.caption("When a judge saw the same two answers in both orders, did it pick the same winner? "
           "Inconsistent pairs lean to the position that gained (MT-Bench Table 2).")
if (silent := reports.silent_chart_note(bias.swap, shown=bias.swap["n_pairs"] > 0)) is None:
    st.plotly_chart(charts.swap_consistency_chart(bias.swap), key="bias_swap")
else:
    st.caption(safe.md(silent))
tables.show_cells(reports.swap_display(bias.swap), key="bias_swap_table", hide_index=False)

# ---------------------------------------------------------------- self-enhancement
st.header("Self-enhancement")
if bias.aliases:
    st.caption("Win rate each judge gives each contestant; a judge's own model is outlined. "
               "Self-enhancement = the rate a judge gives its own model minus what the other judges give it.")
    st.plotly_chart(charts.self_enhancement_heatmap(bias.self_matrix, bias.aliases), key="bias_self")
    if (note := charts.cut_note(bias.self_matrix.shape[1], what="contestants")) is not None:
        st.info(f"The heatmap draws {note}: the judges' own models first, then the others in name order (a column "
                "per contestant could not be read). The table below holds each judge's self-enhancement.",
                icon=":material/info:")
    tables.show_cells(reports.self_enhancement_display(bias.self_summary), key="bias_self_table", hide_index=False)
else:
    st.info("None of the chosen judges is a contestant, so self-enhancement cannot be measured. "
            "Mark which contestant a judge is on **Studies**.")

# ---------------------------------------------------------------------- length bias
st.header("Length bias")
if bias.length is not None:
    st.caption("Share of decisive verdicts between answers of different length that went to the longer one.")
    st.plotly_chart(charts.length_bias_chart(bias.length), key="bias_length")
    tables.show_cells(reports.length_display(bias.length), key="bias_length_table", hide_index=False)
else:
    st.info("Length bias needs the answers' texts. Import the answers on **Data** (question_id, model, answer).")

# ---------------------------------------------------------------- debiasing threshold
st.header("Debiasing threshold")
if bias.debiased is not None:
    st.caption("For judges that give a probability p(first is better): deciding 'first' when p > tau, with tau the "
               "median p, makes both positions win equally often (Liusie et al. 2024, eq. 9-10).")
    chart_col, table_col = st.columns([3, 1])
    chart_col.plotly_chart(charts.position_bias_chart(bias.debiased, group="stage",
                                                      title="First-position wins, as judged vs with tau"),
                           key="bias_threshold")
    tables.show_cells(reports.threshold_display(bias.tau), key="bias_tau", container=table_col, budget=210)
else:
    st.info("No chosen judge gave probabilities (p_a), so there is no threshold to tune. "
            "Reviewers that read token probabilities record them on **Reviewers & runs**.")

# ---------------------------------------------------------------- biases as a model
# The bias model's headers on screen: plain words that fit a 1366 px screen, the detail in their help.
BIAS_MODEL_LABELS = {"bias toward": "toward", "Elo points": "Elo", "95% interval": "Elo 95%",
                     "P shift interval": "P shift 95%", "informative": "informative"}
BIAS_MODEL_HELP = {
    "bias toward": "What the judge is pulled toward: the first position, its own model's family, the longer answer.",
    "Elo points": "The pull in Elo points (positive: toward it).",
    "95% interval": "95% (sandwich) interval of the Elo points.",
    "P shift": "Change in the probability that the favoured answer wins between two answers of equal quality.",
    "P shift interval": "95% interval of the probability shift.",
    "verdicts": "Verdicts of this judge in the model.",
    "informative": "Verdicts that inform this term (e.g. where the two answers differ in length).",
    "significant": "The 95% interval excludes zero.",
}
st.header("Biases as a model")
st.caption("Each judge's pull toward the first position, toward its own model's family and toward the longer answer, "
           "estimated together in one Bradley-Terry model whose model strengths all chosen judges share: Elo points "
           "and the change in the probability that the favoured answer wins between two answers of equal quality, "
           "with 95% (sandwich) intervals. A judge's self-preference is how much more it favours its own family than "
           "the other judges do. `peercore bias --study ... --model` prints the same.")
with st.expander("Model families (for self-preference)", icon=":material/family_history:"):
    st.caption("Contestants of one family count as the judge's own (e.g. gpt-4 and gpt-3.5 as `openai`). "
               "By default every model is its own family.")
    edited = st.data_editor(data.family_frame(db, study, rev), hide_index=True, disabled=["model"],
                            key="bias_families", width="stretch")
families = data.family_pairs(edited)
try:
    with st.spinner("Fitting the bias model…"):
        modelled = data.bias_model(db, study, rev, Selection(judges=tuple(chosen)), families)
except ValueError as error:
    st.info(f"The bias model cannot be fitted on these judges: {safe.md_lines(error)}")
else:
    st.plotly_chart(charts.bias_model_chart(modelled.table), key="bias_model_chart")
    st.caption("Self (family) preference per judge:")
    tables.show_cells(reports.self_preference_summary(modelled.table), key="bias_self_model")
    tables.show_cells(reports.bias_model_display(modelled.table), key="bias_model_table",
                labels=BIAS_MODEL_LABELS, helps=BIAS_MODEL_HELP)
    if "length" not in set(modelled.table.index.get_level_values("bias")):
        st.caption("No length term: the study has no answers' texts.")

# --------------------------------------------------------- agreement among the judges
st.header("Agreement among the chosen judges")
st.caption("Krippendorff's alpha (nominal) over every presentation two or more chosen judges decided, with a 95% "
           "bootstrap interval over presentations; 1 = perfect agreement, 0 = chance. Humans (annotators) and LLM "
           "judges also on their own. `peercore agree --study ... --alpha --judge human:` prints the same.")
rows = data.alpha_rows(db, study, rev, tuple(chosen))
if len(rows):
    tables.show_cells(rows, key="bias_alpha")
else:
    st.info("Agreement needs two or more chosen judges who decided the same presentations.")
