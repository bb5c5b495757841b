"""Leaderboard: who is best, by which method, according to which judges.

The table is :func:`peercore.app.leaderboard`, the very call behind
``peercore rank --study`` and leaderboard exports, with the same defaults; under it, the
command that prints it (:func:`peercore.cli.analysis.rank_command_line`: the judges the
page counts, LLM reviewers by default, and every option that differs from the CLI's).

The view (method, judges, category, options) is the study's own: every way here opens
it through :func:`peercore.ui.state.open_leaderboard` (the study's default method, the
view last used for it, or a link's), and it goes into the URL's query parameters with
``peercore rank``'s option names and values, so a view can be shared or bookmarked.
"Versus a baseline" defaults to the model in every chosen comparison
(:func:`peercore.app.leaderboard.selection_baseline`, also ``--baseline auto``); fragile
adjacent pairs are marked from the robustness audit ``peercore audit`` runs.

With one LLM judge among the chosen, "Anchor to human labels" shows its leaderboard
anchored to people's votes (:func:`peercore.app.calibration.calibrated_leaderboard`, as
``peercore calibrate`` and Meta-evaluation compute it), with the judge-only and
humans-only scores beside it. The URL also names the study (``?study=NAME``), which
``app.py`` opens when a link is followed.
"""

from dataclasses import replace

import pandas as pd
import streamlit as st

from peercore import charts, reports
from peercore.cli.analysis import rank_command_line
from peercore.io.formats import file_name_part
from peercore.ranking.peer_rank import PER_SHUFFLE
from peercore.app.guarantees import FRAGILE_SHARE, audit_leaderboard, fragile_marks, fragile_pairs
from peercore.app.leaderboard import (PRELIMINARY_BATTLES, RankOptions, anchor_judge, anchored_method,
                                      label_references, selection_baseline)
from peercore.domain.selection import Selection
from peercore.ui import data, safe, state, tables
from peercore.ui import guarantees as guarantees_ui

# The checkboxes below that undo what a selection merges or leaves out, as its warnings name them.
PAGE_OPTIONS = {"each_vote": "“Count every repeated vote”", "all_rounds": "“Also count debate agents' initial verdicts”"}

state.ensure_frame()
st.title("Leaderboard")
study = data.current_study()
db, _, rev = data.key(study)
# One view per study, whichever way the page was reached (Home's card calls the same function); a link's view wins.
studies = data.studies()
provenance = next((source for name, source in zip(studies["name"], studies["source"]) if name == study), None)
state.open_leaderboard(study, state.default_method(provenance.get("leaderboard_method")
                                                   if isinstance(provenance, dict) else None,
                                                   baseline=lambda: selection_baseline(data.study(db, study))),
                       state.url_view(st.query_params))
all_judges, groups = data.judges_or_stop(db, study, rev, choice_key=state.LB_JUDGES)

# ------------------------------------------------------------------------ controls
method_col, option_col, boot_col = st.columns([2, 3, 1])
method = method_col.selectbox("Method", reports.LEADERBOARD_METHODS, key=state.LB_METHOD,
                              help="Win rate and Elo as in PRD; Bradley-Terry on the Elo scale as in Chatbot Arena; "
                                   "Peer Rank weighs each reviewer by how it does as a contestant; PoE from Liusie et "
                                   "al.; versus a baseline: AlpacaEval's win rates against one model.")
poe = "PoE-Gaussian"
baseline, controls, interval_kind, reweight, prior = None, (), "bootstrap", False, None
weights_from = "winrate"  # where Peer Rank's weights come from (the notebook's per-shuffle Elo on request)
if method == "Peer Rank weighted":
    mode_col, base_col = option_col.columns(2)
    peer_label = mode_col.selectbox("Weight mode", list(reports.WEIGHT_MODES), key=state.LB_WEIGHT_MODE)
    base = base_col.selectbox("Score", list(reports.BASE_SCORES), key=state.LB_BASE,
                              help="The score ranked; the reviewers' weights come from their win rates "
                                   "(PRD Table 2), as `peercore rank --peer-weights` does.")
    if reports.BASE_SCORES[base] == "elo" and reports.WEIGHT_MODES[peer_label] == "prd" and option_col.checkbox(
            "Weights from Elo within each shuffle (PRD notebook)", key="lb_per_shuffle",
            help="PRD's notebook weighted Elo (cells 40-41, Table 2): in every shuffle, 5 rounds of Elo, each weighted "
                 "by the min-max weights of the previous round's ratings (W / mean(W)); the mean over shuffles. "
                 "`peercore rank --method elo --peer-weights prd --weights-from elo-per-shuffle`."):
        weights_from = PER_SHUFFLE
elif method == "PoE":
    peer_label, base = st.session_state[state.LB_WEIGHT_MODE], st.session_state[state.LB_BASE]
    poe = option_col.selectbox("Experts", list(reports.POE_METHODS), key="lb_poe",
                               help="Gaussian experts have a closed form with posterior intervals; BT experts do not.")
elif method == "Versus a baseline":
    peer_label, base = st.session_state[state.LB_WEIGHT_MODE], st.session_state[state.LB_BASE]
    baseline_box = option_col.empty()  # filled once the chosen judgments are known: they set the default
elif method == "Bradley-Terry":
    peer_label, base = st.session_state[state.LB_WEIGHT_MODE], st.session_state[state.LB_BASE]
    style_col, interval_col = option_col.columns(2)
    controls = tuple(reports.STYLE_CONTROLS[c] for c in style_col.multiselect(
        "Control for style", list(reports.STYLE_CONTROLS), key="lb_controls", placeholder="No style control",
        disabled=not data.has_answers(db, study, rev),
        help="Chatbot Arena's style control: the ratings once the answers' length and Markdown are accounted for, "
             "beside the plain ratings (`peercore rank --control length --control markdown`). Needs the answers."))
    interval_kind = reports.INTERVAL_KINDS[interval_col.radio(
        "Intervals", list(reports.INTERVAL_KINDS), key="lb_intervals", horizontal=True,
        help="Which 95% interval sets the ranks. The sandwich (robust) interval is shown beside the bootstrap.")]
else:
    peer_label, base = st.session_state[state.LB_WEIGHT_MODE], st.session_state[state.LB_BASE]
    option_col.caption("95% intervals by bootstrap over battles; rank = 1 + models whose interval lies wholly above.")
bootstrap = boot_col.selectbox("Bootstrap rounds", [0, 100, 200, 500, 1000], key=state.LB_BOOTSTRAP,
                               disabled=method in ("PoE", "Versus a baseline") or interval_kind == "sandwich")
code, peer = reports.leaderboard_method(method, base=base, peer=peer_label, poe=poe)

st.pills("Quick pick", ["All judges", *groups], key="lb_quick", selection_mode="single",
         on_change=data.apply_quick_pick, args=(state.LB_JUDGES, "lb_quick", all_judges, groups))
judge_col, category_col = st.columns([3, 1])
chosen = judge_col.multiselect("Judges that count", all_judges, key=state.LB_JUDGES, format_func=reports.judge_label,
                               help="Any mix of LLM reviewers, humans and debate gold (consensus + adjudications). "
                                    "Another configuration of a model is a judge of its own, listed after the model.")
categories = reports.question_categories(data.questions(db, study, rev))
state.keep_valid(state.LB_CATEGORY, [reports.ALL_CATEGORIES, *categories])
category = category_col.selectbox("Category", [reports.ALL_CATEGORIES, *categories], key=state.LB_CATEGORY,
                                  disabled=not categories,
                                  help="Rank on one question category only, as LMArena's category view "
                                       "(`peercore rank --category NAME`); the By category tab shows them side by side.")
if not chosen:
    st.warning("Pick at least one judge.")
    st.stop()

with st.expander("Which judgments count", icon=":material/filter_alt:"):
    options = st.columns(2)
    state.keep_valid("lb_contestants", data.contestants(db, study, rev))
    contestants = options[0].multiselect("Contestants", data.contestants(db, study, rev), key="lb_contestants",
                                         placeholder="All contestants",
                                         help="Rank only battles between these (e.g. the five models of PRD's table).")
    common = options[0].checkbox("Only contestants every chosen judge judged", key="lb_common",
                                 help="Mixed selections (e.g. humans who also judged other models) rank some "
                                      "contestants on other judges' verdicts than the rest.")
    all_rounds = options[1].checkbox("Also count debate agents' initial verdicts", key="lb_all_rounds",
                                     help="By default a debate agent or discussion reviewer counts once per pair, "
                                          "with its final verdict.")
    each_vote = options[1].checkbox("Count every repeated vote", key="lb_each_vote",
                                    help="By default several votes of one judge on one comparison (e.g. PRD's three "
                                         "human votes per pair) count as their majority.")
    soft = options[1].toggle("Soft verdicts (p_a as fractional wins)", key="lb_soft",
                             disabled=not data.has_probabilities(db, study, rev) or method == "Versus a baseline",
                             help="Judges that give probabilities (label-probability classifiers) count p_a instead "
                                  "of a hard win; others keep their verdicts. (Against a baseline p_a always counts, "
                                  "as AlpacaEval's weighted win rate.)")
    min_battles = options[0].number_input("Preliminary below (battles)", min_value=0, value=PRELIMINARY_BATTLES,
                                          step=5, key="lb_min_battles",
                                          help="Contestants with fewer battles are marked preliminary (`--min-battles`).")
    if method == "Bradley-Terry":
        reweight = options[1].checkbox("Reweight battles by 1 / max(battles of the pair, 50)", key="lb_reweight",
                                       help="LMArena's reweighting: pairs sampled very often do not dominate "
                                            "(`--reweight`).")
        prior = reports.WEAK_PRIOR if options[1].checkbox(
            f"Weak prior (sd {reports.WEAK_PRIOR:.0f} Elo points)", key="lb_prior",
            help="Keeps a handful of verdicts from giving ratings like 1739 / -479; with many battles it moves "
                 "nothing (`--prior 200`).") else None
# One LLM judge among the chosen: its leaderboard can be anchored to human labels (issue 23, `peercore calibrate`).
anchor_for = anchor_judge(data.study(db, study), chosen)
anchored_on, references, reference = False, [], None
if anchor_for is not None:
    toggle_col, reference_col = st.columns([1, 2])
    anchored_on = toggle_col.toggle(
        "Anchor to human labels", key=state.LB_ANCHOR,
        help="The leaderboard people would have produced from all of the chosen LLM judge's comparisons: its "
             "verdicts corrected with the human labels on some of them, with 95% intervals honest about the judge's "
             "errors and about how few labels there are (prediction-powered inference, PPI++), beside the judge "
             "alone and the humans alone (`peercore calibrate`).")
    references = label_references(data.study(db, study))
    if anchored_on and references:
        state.keep_valid(state.LB_ANCHOR_REFERENCE, references)
        reference = reference_col.selectbox("Human labels", references, key=state.LB_ANCHOR_REFERENCE,
                                            format_func=guarantees_ui.reference_label,
                                            help="Whose votes are the labels (`--reference`): imported human votes "
                                                 "(judges `human:<name>`), decisions on Adjudication "
                                                 "(`adjudicator:<name>`), or both.")
selection = Selection(judges=tuple(chosen), contestants=tuple(contestants) or None, common_contestants=common,
                      final_only=not all_rounds, repeated_votes="each" if each_vote else "majority",
                      categories=None if category == reports.ALL_CATEGORIES else (category,))
if method == "Versus a baseline":
    models = data.contestants(db, study, rev)
    if st.session_state.get(state.LB_BASELINE) not in models:  # AlpacaEval's baseline: in every chosen comparison
        st.session_state[state.LB_BASELINE] = selection_baseline(data.study(db, study), selection)
    baseline = baseline_box.selectbox("Baseline", models, key=state.LB_BASELINE, placeholder="Choose the baseline",
                                      help="Every model's win rate against this one on the same questions, as "
                                           "AlpacaEval reports it (`peercore rank --method winrate --baseline MODEL`). "
                                           "By default the model in every chosen comparison (the most battles if "
                                           "several).")
    if baseline is None:
        state.remember_view(study)
        st.info("No model takes part in every comparison of the chosen judgments: choose the baseline above.",
                icon=":material/info:")
        st.stop()
state.remember_view(study)

options = dict(soft=soft, baseline=baseline, controls=controls, intervals=interval_kind, reweight=reweight,
               prior=prior, min_battles=int(min_battles))
# At Arena scale the bootstrap runs in the background: the point estimate shows at once, the intervals follow.
job = data.ranking_job(db, study, rev, selection, code, peer, bootstrap=bootstrap, **options) \
    if weights_from == "winrate" else None
try:
    with st.spinner("Ranking…"):
        if job is not None and job.done and job.error is not None:
            raise job.error
        complete = job is None or job.done
        result = job.result if job is not None and job.done else \
            data.ranked(db, study, rev, selection, code, peer, bootstrap=bootstrap if complete else 0,
                        weights_from=weights_from, **options)
except ValueError as error:  # e.g. Peer Rank without two contestant judges: say so, do not crash
    st.error(f"Cannot rank with these settings: {safe.md_lines(error)}")
    st.stop()
if job is not None:
    job.start()  # the bootstrap, once the point estimate is in hand (they do not share the cores)
command = rank_command_line(study, selection, RankOptions(method=code, peer_weights=peer, bootstrap=bootstrap,
                                                          weights_from=weights_from, **options))
for warning in data.page_warnings(result.warnings, result.notes, PAGE_OPTIONS):
    st.warning(safe.md(warning), icon=":material/warning:")

AUDITED = {"Win rate": "winrate", "Bradley-Terry": "bt"}  # the leaderboards the robustness audit refits
# Up to this many votes and contestants the audit runs by itself (PRD, 8,000 votes and 5 models: under a second);
# it refits once per adjacent pair and dropped vote, so beyond them it waits for its checkbox.
AUDIT_AT_ONCE, AUDIT_AT_ONCE_MODELS = 50_000, 20


def robustness_audit():
    """The robustness audit of this leaderboard (``peercore audit``, once per study revision), or None.

    Only for win rate and plain Bradley-Terry once the ranking is complete; beyond
    :data:`AUDIT_AT_ONCE` votes or :data:`AUDIT_AT_ONCE_MODELS` contestants it waits for
    its checkbox.
    """
    if AUDITED.get(method) is None or controls or not complete:
        return None
    large = result.n_judgments > AUDIT_AT_ONCE or len(result.table) > AUDIT_AT_ONCE_MODELS
    if large and not st.checkbox(
            "Mark fragile pairs (robustness audit)", key="lb_audit",
            help=f"{result.n_judgments:,} votes, {len(result.table):,} contestants: the audit refits the ranking for "
                 "every adjacent pair while dropping votes, which takes a while (`peercore audit`)."):
        return None
    handle = data.study(db, study)
    audited = AUDITED[method]
    try:
        return handle.cached(("pages.leaderboard.audit", selection, audited, soft, prior, reweight),
                             lambda: audit_leaderboard(handle, selection, method=audited, soft=soft, prior=prior,
                                                       reweight=reweight))
    except ValueError:  # nothing to audit: the table shows no mark
        return None


def fragile_votes(audit) -> None:
    """The votes whose removal swaps each fragile pair, one click away, and the command that lists them."""
    fragile = fragile_pairs(audit.pairs)
    command = rank_command_line(study, selection, RankOptions(method=AUDITED[method], soft=soft, prior=prior,
                                                              reweight=reweight), command="audit")
    if not fragile:
        st.caption(f"Robustness: no adjacent pair swaps when fewer than {FRAGILE_SHARE:.0%} of the "
                   f"{audit.n_votes:,} votes are removed. The same audit from the command line:")
        st.code(command, language="bash", wrap_lines=True)
        return
    with st.expander(f"Fragile: {len(fragile)} adjacent pair(s) swap when under {FRAGILE_SHARE:.0%} of the votes go",
                     icon=":material/warning:"):
        st.caption("Each pair's votes that, removed, swap it (refitted to check). The same list from the command line "
                   "(`--format json` for every vote):")
        st.code(command, language="bash", wrap_lines=True)
        votes = pd.DataFrame([{"pair": f"{pair['higher']} above {pair['lower']}", **vote}
                              for pair in fragile for vote in pair["votes"]])
        votes = votes.map(lambda v: "—" if v is None or v != v else f"{v}")  # a missing turn reads "—"
        tables.show(votes, key="lb_fragile_votes")


def anchored_table(search: str):
    """The chosen LLM judge's leaderboard anchored to the human labels chosen above (``peercore calibrate``).

    The anchored score with its 95% interval, the judge alone, the humans alone with their
    interval and the effective labels (:func:`peercore.ui.guarantees.leaderboard_anchored`,
    the call Meta-evaluation makes), and a sentence on how many labels anchored it; a study
    without human labels, or a method with no anchored counterpart, gets a sentence.
    Returns the anchored leaderboard shown, or None.
    """
    if not references:
        st.info("This study has no human labels to anchor to yet: import human votes on **Data** (judges named "
                "`human:<name>`) or decide comparisons on **Adjudication**. Turn the switch off for the judge's own "
                "leaderboard.", icon=":material/info:")
        return None
    estimand = anchored_method(code, peer)
    if estimand is None:
        st.info("Anchored scores are win rates or Bradley-Terry ratings: choose **Win rate**, **Bradley-Terry** or "
                "**Versus a baseline** as the Method.", icon=":material/info:")
        return None
    try:
        board = guarantees_ui.leaderboard_anchored(db, study, rev, judge=anchor_for, reference=reference,
                                                   method=estimand, baseline=baseline)
    except guarantees_ui.SectionUnavailable as exc:  # e.g. no label on this judge's comparisons
        st.info(safe.md(str(exc)), icon=":material/info:")
        return None
    st.markdown(guarantees_ui.anchored_sentence(board))
    shown = guarantees_ui.anchored_display(board)
    if search:
        shown = shown[[search.casefold() in str(model).casefold() for model in shown["model"]]]
    tables.show_cells(shown, key="lb_anchored", labels=guarantees_ui.ANCHORED_LABELS, helps=guarantees_ui.ANCHORED_HELP,
                      decimals=guarantees_ui.anchored_decimals(board))
    st.caption("Computed on every comparison the judge made in this study (final verdicts; a probability counts "
               "as such); the category, contestants and options under **Which "
               "judgments count** do not apply. The same table: `peercore calibrate --study --judge --reference "
               f"--method {estimand}{' --baseline' if baseline else ''}`.")
    for warning in board.warnings:
        st.caption(safe.md(warning))
    return board


tab_names = ["Table", "By category", "Elo curves", "Heatmaps", "Reviewer weights", "What-if"]
tabs = st.tabs(tab_names, key=state.LB_TAB, on_change="rerun")

# --------------------------------------------------------------------------- table


@st.fragment(run_every=None if complete else 1.0)
def bootstrap_progress() -> None:
    """While the bootstrap runs in the background: its progress; once it is done, the whole page again."""
    if complete:
        return
    if job.done:
        st.rerun()
    done = f"{job.fraction:.0%} of {bootstrap} rounds done" if code == "bt" else f"{bootstrap} rounds running"
    st.progress(job.fraction, text=f"Bootstrap intervals: {done} (in the background).")
    st.caption("Partial result: scores and battles on every verdict; the 95% intervals and the ranks they set "
               "appear when the bootstrap is done (the ranks below are those of the scores alone).")


with tabs[0]:
    if tabs[0].open:
        bootstrap_progress()
        table = result.table
        search = st.text_input("Find a model or judge", key=state.LB_SEARCH, placeholder="Part of a name, any case",
                               help="Shows only the contestants whose name contains this text (taken as plain text) "
                                    "and names the judges that count whose name contains it; ranks stay those of "
                                    "the whole table.")
        if search:
            table = table[[search.casefold() in str(model).casefold() for model in table["model"]]]
            judges_found = [judge for judge in result.judges if search.casefold() in str(judge).casefold()]
            st.caption(f"{len(table):,} of {len(result.table):,} contestants contain {safe.code(search)}; judges that "
                       f"count: {', '.join(safe.md(j) for j in judges_found) or 'none'}.")
        a, b, c = st.columns(3)
        a.metric("Judgments counted", f"{result.n_judgments:,}",
                 help=f"After the selection: {'every debate round' if all_rounds else 'final debate verdicts'}, "
                      f"{'every repeated vote' if each_vote else 'the majority of repeated votes'}; unparsed replies "
                      "are never counted (the Studies page lists them).")
        b.metric("Contestants", len(result.table))
        c.metric("Judges", len(result.judges))
        board = None  # the anchored leaderboard, when it stands in for the judge's own
        if anchored_on:
            board = anchored_table(search)
        elif result.baseline is not None:
            shown = reports.baseline_display(table)
            shown.insert(0, "rank", table["rank"].to_numpy())
            percents = ("win rate %", "± se", "LC win rate %", "LC ± se", "discrete win rate %")
            tables.show(shown, key="lb_baseline_table", decimals={column: 2 for column in percents},
                        helps={"rank": "AlpacaEval 2's order: by length-controlled win rate (by win rate when no row "
                                       "has one); 1 + the models whose 95% interval lies wholly above"})
            st.caption(f"Against {safe.md(result.baseline['baseline'])}, as AlpacaEval's leaderboard: rates and standard "
                       "errors in percent; a verdict's probability counts as a fractional win. Length-controlled win "
                       f"rate: instruction difficulty {safe.md(result.baseline['difficulty'])}; its standard error by "
                       f"{safe.md(result.baseline['lc_standard_error'])}. The same table from the command line "
                       "(add `--db` unless `PEERBOARD_DB` names this database):")
            st.code(command, language="bash", wrap_lines=True)
            if result.baseline.get("lc_note"):  # the LC is not AlpacaEval's published one: say so
                st.info(f"Length-controlled win rate {safe.md(result.baseline['lc_note'])}.", icon=":material/info:")
            st.plotly_chart(charts.baseline_chart(table, baseline=result.baseline["baseline"]), key="lb_baseline_chart")
        else:
            lengths = reports.average_lengths(data.answers(db, study, rev)) if data.has_answers(db, study, rev) else None
            shown = reports.leaderboard_display(table, result.score_label, lengths=lengths)
            audit = robustness_audit()
            if audit is not None:
                marks = fragile_marks(audit.pairs)
                shown["fragile"] = [marks.get(model, "") for model in shown["model"]]
            tables.show(shown, key="lb_table",
                        decimals={result.score_label: reports.score_digits(result.score_label)},
                        labels={"battles": "votes"},
                        helps={"battles": "Battles counted for the model (LMArena's votes)",
                               "preliminary": "Fewer battles than the threshold under 'Which judgments count': "
                                              "the rating may still move a lot",
                               "avg length": "Mean length of the model's answers in characters (AlpacaEval)",
                               "fragile": f"The order with the neighbour flips when fewer than "
                                          f"{FRAGILE_SHARE:.0%} of all votes are removed (Huang et al., ICLR 2026; "
                                          "`peercore audit`)"})
            if audit is not None:
                fragile_votes(audit)
            st.caption(f"{'Soft verdicts: p_a counted as a fractional win where given' if result.verdicts == 'soft' else 'Hard verdicts: win 1, tie 0.5, loss 0'}"
                       f"; {'sandwich (robust) intervals' if interval_kind == 'sandwich' else f'{bootstrap} bootstrap rounds, seed 0' + ('' if complete else ' (running)')}. "
                       "Rank spread: the best and worst rank the intervals allow. The same table from the command "
                       "line (add `--db` unless `PEERBOARD_DB` names this database):")
            st.code(command, language="bash", wrap_lines=True)
            st.plotly_chart(charts.leaderboard_chart(table, score_label=result.score_label), key="lb_chart")
            if (note := charts.cut_note(len(table), what="contestants")) is not None:
                st.info(f"The chart draws {note}, best first: more rows could not be read. The table above and the "
                        "download hold every contestant.", icon=":material/info:")
        if result.style is not None:
            st.subheader("Plain vs style-controlled")
            st.caption("The style-controlled rating explains each verdict by the two models' strength and the answers' "
                       "style; ▲ a model rises once style is accounted for. Coefficients: how many Elo points one "
                       "standard deviation of a style feature is worth (Chatbot Arena's style control).")
            st.plotly_chart(charts.style_control_chart(table), key="lb_style_chart")
            coefficients = reports.style_table(result.style)
            left, right = st.columns([2, 3])
            tables.show(coefficients, key="lb_style_table", container=left, budget=340)
            right.plotly_chart(charts.coefficient_chart(result.style.reset_index().rename(columns={"coefficient": "value"}),
                                                        title="Style coefficients"), key="lb_style_coefficients")
        if result.weights is not None:
            st.caption(f"Peer Rank weights after {result.iterations} iteration(s): "
                       + ", ".join(f"{safe.md(j)} {w:.3f}" for j, w in result.weights.sort_values(ascending=False).items()))
        downloaded, what = (result.table, "leaderboard") if board is None else (board.table, "anchored-leaderboard")
        st.download_button("Download the leaderboard (CSV)", data.csv_bytes(downloaded),
                           file_name=f"{file_name_part(study)}-{what}.csv", mime="text/csv", icon=":material/download:")

# --------------------------------------------------------------------- by category
with tabs[1]:
    if tabs[1].open:
        st.caption("One leaderboard per question category (PRD and MT-Bench categories, ScaleEval scenarios), per "
                   "criterion or per turn, with the method above, side by side (`peercore rank --study --by`).")
        by_col, group_col = st.columns([1, 3])
        by = reports.GROUP_BY[by_col.selectbox("Split by", list(reports.GROUP_BY), key="lb_by")]
        try:
            grouped = data.ranked_by(db, study, rev, selection, by, None, code if method != "Versus a baseline"
                                     else "winrate", peer, bootstrap=bootstrap, soft=soft)
        except ValueError as error:
            st.info(f"Cannot split by {by}: {safe.md_lines(error)}")
        else:
            names = list(grouped.rankings)
            shown = group_col.multiselect("Groups", names, default=names[:reports.GROUPS_SHOWN], key=f"lb_groups::{by}",
                                          help=f"The first {reports.GROUPS_SHOWN} by default, so the table fits a "
                                               "laptop screen; the heatmap reads well with more.")
            if len(grouped.counts) == 1:
                st.info(f"Every chosen judgment is in one {by} ({safe.md(grouped.counts.index[0])}).")
            if shown:
                wide = reports.grouped_table(replace(grouped, rankings={g: grouped.rankings[g] for g in shown}))
                st.dataframe(wide, hide_index=True, width="stretch", key="lb_by_table",
                             column_config=tables.grouped_columns(wide, digits=reports.score_digits(result.score_label)))
                st.plotly_chart(charts.group_rank_heatmap(wide), key="lb_by_heatmap")
                if (note := charts.cut_note(len(wide), what="contestants")) is not None:
                    st.caption(f"The heatmap draws {note}, in the table's order; the table holds every one.")
            st.dataframe(grouped.counts.reset_index(), hide_index=True, key="lb_by_counts")
            for group, error in grouped.errors.items():
                st.caption(f"{safe.md(group)}: not ranked ({safe.md(error)})")

# ---------------------------------------------------------------------- Elo curves
with tabs[2]:
    if tabs[2].open:
        st.caption("Online Elo (K=32, start 1000) of every contestant as each judge's battles come in, "
                   "in stored order — one line style per judge (PRD Fig. 4).")
        data.seed_list_choice(state.LB_CURVE_JUDGES, chosen, limit=3)
        ranked_models = result.table["model"].tolist()
        data.seed_list_choice("lb_curve_models", ranked_models, limit=reports.CURVE_MODELS)
        judges_col, models_col = st.columns(2)
        curve_judges = judges_col.multiselect("Overlay the curves of", chosen, key=state.LB_CURVE_JUDGES)
        curve_models = models_col.multiselect(
            "Contestants", ranked_models, key="lb_curve_models", max_selections=charts.MAX_LINES,
            help=f"The top {reports.CURVE_MODELS} of the table by default: more lines than that are hard to tell apart "
                 f"(at most {charts.MAX_LINES}).")
        if curve_judges and curve_models:
            st.plotly_chart(charts.elo_curves_chart(data.elo_curves(db, study, rev, selection, tuple(curve_judges),
                                                                    tuple(curve_models)),
                                                    models=curve_models), key="lb_elo")
        else:
            st.info("Pick one or more judges and contestants to draw their Elo curves.")

# ------------------------------------------------------------------------ heatmaps
with tabs[3]:
    if tabs[3].open:
        st.caption("Share of battles the row model won against the column model, ties half (PRD Fig. 7).")
        ranked = result.table["model"].tolist()
        # Thousands of contestants: a heatmap of the best-ranked ones, computed for them only.
        shown = tuple(ranked[:charts.MAX_ROWS]) if charts.cut_note(len(ranked)) is not None else None
        if shown is not None:
            st.info(f"{len(ranked):,} contestants: the heatmaps show the {len(shown)} best-ranked (a {len(ranked):,} x "
                    f"{len(ranked):,} heatmap can be neither drawn nor read). Choose contestants under **Which "
                    "judgments count** to compare others.", icon=":material/info:")
        data.seed_single_choice(state.LB_HEAT_LEFT, chosen, 0)
        data.seed_single_choice(state.LB_HEAT_RIGHT, chosen, 1)
        left, right = st.columns(2)
        with left:
            judge_left = st.selectbox("Left judge", chosen, key=state.LB_HEAT_LEFT)
            st.plotly_chart(charts.win_rate_heatmap(data.heatmap(db, study, rev, selection, judge_left, shown),
                                                    title=judge_left), key="lb_heat_left_chart")
        with right:
            judge_right = st.selectbox("Right judge", chosen, key=state.LB_HEAT_RIGHT)
            st.plotly_chart(charts.win_rate_heatmap(data.heatmap(db, study, rev, selection, judge_right, shown),
                                                    title=judge_right),
                            key="lb_heat_right_chart")
        st.plotly_chart(charts.count_heatmap(data.counts(db, study, rev, selection, shown),
                                             title="Battles per pair (judges that count)"), key="lb_counts")

# ------------------------------------------------------------------ reviewer weights
with tabs[4]:
    if tabs[4].open:
        st.caption("Peer Rank: each reviewer's weight comes from its own score as a contestant, iterated "
                   "(PRD Fig. 3). PRD runs 5 min-max iterations (the weakest gets 0); the fixed point keeps everyone.")
        mode = peer_label if method == "Peer Rank weighted" else st.session_state[state.LB_WEIGHT_MODE]
        weights = data.peer_weights(db, study, rev, selection, reports.WEIGHT_MODES[mode],
                                    reports.BASE_SCORES[base] if method == "Peer Rank weighted" else "winrate")
        if weights["weights"] is None:
            st.info("Reviewer weights need at least two chosen judges that are also contestants "
                    "(e.g. `gpt4` reviewing `gpt4`). Mark which contestant a judge is on **Studies**.")
        else:
            bars, moves = st.columns(2)
            bars.plotly_chart(charts.weight_bars(weights["weights"]), key="lb_weights")
            moves.plotly_chart(charts.weight_history_chart(weights["history"]), key="lb_weight_history")
            st.caption(f"{mode}: {weights['iterations']} iteration(s). Weights per iteration (row 0 = equal start):")
            tables.show(weights["history"], key="lb_weight_table", hide_index=False)

# ---------------------------------------------------------------------------- what-if
with tabs[5]:
    if tabs[5].open:
        st.caption("Untick a judge to see how the ranking changes without it.")
        boxes = st.columns(min(4, len(chosen)))
        kept = [judge for k, judge in enumerate(chosen)
                if boxes[k % len(boxes)].checkbox(safe.md(judge), value=True, key=f"{state.LB_WHATIF_PREFIX}{judge}")]
        if not kept:
            st.warning("Keep at least one judge ticked.")
        elif len(kept) == len(chosen):
            st.info("Every judge is ticked: untick one to compare.")
        else:
            without = data.ranked(db, study, rev, replace(selection, judges=tuple(kept)), code, peer,
                                  bootstrap=bootstrap, soft=soft, weights_from=weights_from, baseline=baseline,
                                  controls=controls,
                                  intervals=interval_kind, reweight=reweight, prior=prior, min_battles=int(min_battles))
            comparison = reports.what_if(result.table, without.table)
            tables.show(reports.what_if_display(comparison), key="lb_whatif_table",
                        decimals={c: reports.score_digits(result.score_label) for c in ("score (all)", "score (without)")})
            st.plotly_chart(charts.rank_change_chart(comparison), key="lb_whatif_chart")
            if (note := charts.cut_note(len(comparison), what="contestants")) is not None:
                st.caption(f"The chart draws {note}, in the table's order; the table holds every one.")
