"""Leaderboard: who is best, by which method, according to which judges."""

import streamlit as st

from peercore import charts
from peercore.ui import data, safe, state, views

state.ensure_frame()
st.title("Leaderboard")
study = data.current_study()
db, _, rev = data.key(study)
all_judges, groups = data.judges_or_stop(db, study, rev, choice_key=state.LB_JUDGES)

# ------------------------------------------------------------------------ controls
method_col, option_col, boot_col = st.columns([2, 3, 1])
method = method_col.selectbox("Method", views.LEADERBOARD_METHODS, key=state.LB_METHOD,
                              help="Win rate and Elo as in PRD; Bradley-Terry on the Elo scale as in Chatbot Arena; "
                                   "Peer Rank weighs each reviewer by how it does as a contestant; PoE from Liusie et al.")
if method == "Peer Rank weighted":
    mode_col, base_col = option_col.columns(2)
    peer = mode_col.selectbox("Weight mode", list(views.WEIGHT_MODES), key=state.LB_WEIGHT_MODE)
    base = base_col.selectbox("Score", list(views.BASE_SCORES), key=state.LB_BASE)
elif method == "PoE":
    peer = st.session_state[state.LB_WEIGHT_MODE]
    base = option_col.selectbox("Experts", list(views.POE_METHODS), key="lb_poe",
                                help="Gaussian experts have a closed form with posterior intervals; BT experts do not.")
else:
    peer, base = st.session_state[state.LB_WEIGHT_MODE], st.session_state[state.LB_BASE]
    option_col.caption("95% intervals by bootstrap over battles; rank = 1 + models whose interval lies wholly above.")
bootstrap = boot_col.selectbox("Bootstrap rounds", [0, 100, 200, 500, 1000], key=state.LB_BOOTSTRAP,
                               disabled=method == "PoE")

st.pills("Quick pick", ["All judges", *groups], key="lb_quick", selection_mode="single",
         on_change=data.apply_quick_pick, args=(state.LB_JUDGES, "lb_quick", all_judges, groups))
chosen = st.multiselect("Judges that count", all_judges, key=state.LB_JUDGES,
                        help="Any mix of LLM reviewers, humans and debate gold (consensus + adjudications).")
if not chosen:
    st.warning("Pick at least one judge.")
    st.stop()

chosen, left_out = data.peer_rank_judges(db, study, rev, chosen) if method == "Peer Rank weighted" else (chosen, [])
if left_out:
    st.warning(f"Peer Rank weighs reviewers by their own score as contestants, so judges that are not contestants "
               f"are left out: {', '.join(safe.md(j) for j in left_out)}. Mark which contestant a judge is on **Studies**.")
if method == "Peer Rank weighted" and len(chosen) < 2:
    st.error("Peer Rank needs at least two reviewers that are also contestants.")
    st.stop()

try:
    with st.spinner("Ranking…"):
        result = data.ranked(db, study, rev, method, tuple(chosen), peer, base, bootstrap)
except ValueError as error:  # e.g. a fixed point that does not converge: say so, do not crash
    st.error(f"Cannot rank with these settings: {safe.md_lines(error)}")
    st.stop()

tab_names = ["Table", "Elo curves", "Heatmaps", "Reviewer weights", "What-if"]
tabs = st.tabs(tab_names, key=state.LB_TAB, on_change="rerun")

# --------------------------------------------------------------------------- table
with tabs[0]:
    if tabs[0].open:
        table = result["table"]
        a, b, c = st.columns(3)
        a.metric("Judgments counted", f"{result['n']:,}")
        b.metric("Contestants", len(table))
        c.metric("Judges", len(chosen))
        st.dataframe(data.leaderboard_display(table, result["score_label"]), hide_index=True, width="stretch",
                     key="lb_table")
        st.plotly_chart(charts.leaderboard_chart(table, score_label=result["score_label"]), key="lb_chart")
        if result["weights"] is not None:
            st.caption(f"Peer Rank weights after {result['iterations']} iteration(s): "
                       + ", ".join(f"{safe.md(j)} {w:.3f}" for j, w in result["weights"].sort_values(ascending=False).items()))
        st.download_button("Download the leaderboard (CSV)", data.csv_bytes(table), file_name=f"{study}-leaderboard.csv",
                           mime="text/csv", icon=":material/download:")

# ---------------------------------------------------------------------- Elo curves
with tabs[1]:
    if tabs[1].open:
        st.caption("Online Elo (K=32, start 1000) of every contestant as each judge's battles come in, "
                   "in stored order — one line style per judge (PRD Fig. 4).")
        data.seed_list_choice(state.LB_CURVE_JUDGES, chosen, limit=3)
        curve_judges = st.multiselect("Overlay the curves of", chosen, key=state.LB_CURVE_JUDGES)
        if curve_judges:
            st.plotly_chart(charts.elo_curves_chart(data.elo_curves(db, study, rev, tuple(curve_judges))), key="lb_elo")
        else:
            st.info("Pick one or more judges to draw their Elo curves.")

# ------------------------------------------------------------------------ heatmaps
with tabs[2]:
    if tabs[2].open:
        st.caption("Share of battles the row model won against the column model, ties half (PRD Fig. 7).")
        data.seed_single_choice(state.LB_HEAT_LEFT, chosen, 0)
        data.seed_single_choice(state.LB_HEAT_RIGHT, chosen, 1)
        left, right = st.columns(2)
        with left:
            judge_left = st.selectbox("Left judge", chosen, key=state.LB_HEAT_LEFT)
            st.plotly_chart(charts.win_rate_heatmap(data.heatmap(db, study, rev, judge_left), title=judge_left),
                            key="lb_heat_left_chart")
        with right:
            judge_right = st.selectbox("Right judge", chosen, key=state.LB_HEAT_RIGHT)
            st.plotly_chart(charts.win_rate_heatmap(data.heatmap(db, study, rev, judge_right), title=judge_right),
                            key="lb_heat_right_chart")
        st.plotly_chart(charts.count_heatmap(data.counts(db, study, rev, tuple(chosen)),
                                             title="Battles per pair (judges that count)"), key="lb_counts")

# ------------------------------------------------------------------ reviewer weights
with tabs[3]:
    if tabs[3].open:
        st.caption("Peer Rank: each reviewer's weight comes from its own score as a contestant, iterated "
                   "(PRD Fig. 3). PRD runs 5 min-max iterations (the weakest gets 0); the fixed point keeps everyone.")
        mode = peer if method == "Peer Rank weighted" else st.session_state[state.LB_WEIGHT_MODE]
        weights = data.peer_weights(db, study, rev, tuple(chosen), mode, base if method == "Peer Rank weighted" else "Win rate")
        if weights["weights"] is None:
            st.info("Reviewer weights need at least two chosen judges that are also contestants "
                    "(e.g. `gpt4` reviewing `gpt4`). Mark which contestant a judge is on **Studies**.")
        else:
            bars, moves = st.columns(2)
            bars.plotly_chart(charts.weight_bars(weights["weights"]), key="lb_weights")
            moves.plotly_chart(charts.weight_history_chart(weights["history"]), key="lb_weight_history")
            st.caption(f"{mode}: {weights['iterations']} iteration(s). Weights per iteration (row 0 = equal start):")
            st.dataframe(weights["history"], width="stretch", key="lb_weight_table")

# ---------------------------------------------------------------------------- what-if
with tabs[4]:
    if tabs[4].open:
        st.caption("Untick a judge to see how the ranking changes without it.")
        boxes = st.columns(min(4, len(chosen)))
        kept = [judge for k, judge in enumerate(chosen)
                if boxes[k % len(boxes)].checkbox(safe.md(judge), value=True, key=f"{state.LB_WHATIF_PREFIX}{judge}")]
        if not kept:
            st.warning("Keep at least one judge ticked.")
        elif len(kept) == len(chosen):
            st.info("Every judge is ticked: untick one to compare.")
        else:
            without = data.ranked(db, study, rev, method, tuple(kept), peer, base, bootstrap)
            comparison = views.what_if(result["table"], without["table"])
            st.dataframe(data.what_if_display(comparison), hide_index=True, width="stretch", key="lb_whatif_table")
            st.plotly_chart(charts.rank_change_chart(comparison), key="lb_whatif_chart")
