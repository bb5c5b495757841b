"""The Adjudication page's helpers: the queue, decisions, skips, undo, blind mode, agreement.

Everything here is read straight from the store on every run (never cached): several
people adjudicate at once and each must see the others' decisions. What belongs to an
annotator lives in the store (decisions, skips); what belongs to one browser tab lives
in session state (the undo history, which debates this tab unblinded, the last
decision, a one-line confirmation).

Several annotators share one queue through leases (:mod:`peercore.assignment`): the page
takes a lease on the debate it shows and renews it on every render; with an overlap N a
debate is shown to at most N annotators at once, and a decision that comes after the
lease ran out and others filled the overlap is refused with a message (nothing stored).
When Streamlit's built-in login (``st.login``) is configured, the annotator is the
signed-in user (:func:`login`) and the name cannot be typed.

Without login the name is set in its own step: once entered, the name box gives way to
"Adjudicating as NAME · Change" (:func:`adjudicating_as`, :func:`change_name`), so the
cursor is no longer in a text box and the decision keys work at once. Any decision of the
annotator, not only the last, can be changed with a reason (:func:`edit`, through
:func:`peercore.app.access.edit_decision`); every change is kept in the append-only
decision history (:meth:`peercore.store.Store.debates.decision_history`).

Decisions are ``model_a``, ``model_b``, ``tie`` and ``both_bad`` (neither answer is
acceptable; stored as a tie flagged ``both_bad``, see :meth:`peercore.store.Store.debates.adjudicate`).
The gold set and the agreement between annotators count "both bad" as a tie.
"""

from __future__ import annotations

import math
import uuid

import pandas as pd
import streamlit as st

from peercore import assignment, reports
from peercore.agreement import krippendorff_alpha
from peercore.app import access
from peercore.app.calibration import label_request_effect
from peercore.assignment import DecisionRefused
from peercore.errors import AccessDenied
from peercore.store import QUEUE_KINDS
from peercore.ui import data, safe, state

ALL_SCENARIOS, ALL_CRITERIA = "All scenarios", "All criteria"
# Session key (this tab): the last decision the store refused (its overlap was filled by
# others after this tab's lease ran out), shown once as an error.
REFUSED = "adj_refused"
DECISION_NAMES = {"model_a": "Submission 1", "model_b": "Submission 2", "tie": "Tie", "both_bad": "Both bad"}
# (decision, widget key, button label, icon, shortcut, primary); Tie and Both bad share a row of the
# decision bar at 1366 px, where an icon beside the label and the key would cut "Both bad".
DECISION_BUTTONS = (
    ("model_a", "adj_one", "Submission 1 is better", ":material/looks_one:", "1", True),
    ("model_b", "adj_two", "Submission 2 is better", ":material/looks_two:", "2", True),
    ("tie", "adj_tie", "Tie", None, "0", False),
    ("both_bad", "adj_both_bad", "Both bad", None, "B", False),
)
KEYS_HELP = ("Keys: **1**, **2**, **0** tie, **B** both bad, **S** skip, **U** undo. They do nothing while a text "
             "box has the cursor (a note types as a note): press **Tab** or click outside the box first.")


# The "Change" button beside "Adjudicating as NAME" (the name box gives way to it once a name is set).
CHANGE_NAME = "adj_change_name"


def annotator_name() -> str:
    return (st.session_state.get(state.ANNOTATOR) or "").strip()


def adjudicating_as(name: str) -> str:
    """The line that replaces the name box once a name is entered (Markdown; the name is untrusted text)."""
    return f"Adjudicating as **{safe.md(name)}**"


def change_name(study: str) -> None:
    """Button callback: give the held debate back and show the name box again, empty."""
    name = annotator_name()
    if name:
        assignment.release(data.store(), study, name)
    st.session_state[state.ANNOTATOR] = ""
    st.session_state[state.ADJ_FLASH] = ""


def user_info() -> dict | None:
    """What ``st.user`` holds, as a dict; None when it cannot be read.

    The identity source of the page (tests replace this function: AppTest cannot sign in
    through OIDC). Without ``[auth]`` in ``.streamlit/secrets.toml`` the dict has no
    ``is_logged_in`` key.
    """
    try:
        user = st.user.to_dict()
    except Exception:  # an older Streamlit, or no script run context
        return None
    # Only the claims that say who it is (never tokens the provider may expose).
    return {k: user[k] for k in ("is_logged_in", "email", "name", "preferred_username", "sub") if k in user}


def login() -> tuple[str, str]:
    """``(mode, name)`` of :func:`peercore.assignment.identity`: ``typed``, ``signed_out`` or ``signed_in``."""
    return assignment.identity(user_info())


def take(study: str, annotator: str, *, scenario: str = ALL_SCENARIOS, criterion: str = ALL_CRITERIA):
    """Take (or renew) the lease on the debate this page shows ``annotator``; None when none is offerable.

    Called on every render, so an open page keeps its debate while it redraws, and a page
    left alone gives it back when the lease runs out (:mod:`peercore.assignment`).
    """
    return assignment.next_item(data.store(), study, annotator,
                                scenario=None if scenario == ALL_SCENARIOS else scenario,
                                criterion=None if criterion == ALL_CRITERIA else criterion)


def lease_text(item) -> str:
    """One line about the lease on the shown debate: until when this annotator holds it."""
    until = str(item.expires_at)[11:16]
    return (f"You hold this debate until {until} UTC (renewed each time the page redraws); if you leave, it goes "
            "back to the queue then.")


def settings(study: str) -> dict:
    """The study's ``rubric`` and ``overlap`` (decisions each debate needs; 0 = everyone decides every debate)."""
    return data.store().studies.settings(study)


def overlap_text(overlap: int) -> str:
    """How the overlap setting reads on screen."""
    if overlap == 0:
        return "every annotator decides every debate"
    return f"each debate needs {overlap} annotator{'s' if overlap > 1 else ''}"


def _unresolved(study: str) -> pd.DataFrame:
    """Every queue item waiting for people (unresolved debates and label requests, :data:`QUEUE_KINDS`) with its
    number of ``decisions``."""
    db = data.store()
    debates = db.debates.table(study, status="unresolved")
    debates = debates[debates["kind"].isin(QUEUE_KINDS)].reset_index(drop=True)
    decided = db.debates.adjudications(study)
    counts = decided.groupby("debate_id").size() if len(decided) else pd.Series(dtype=int)
    return debates.assign(decisions=debates["id"].map(counts).fillna(0).astype(int))


def progress(study: str, annotator: str, *, overlap: int) -> dict:
    """Counts for the progress line.

    Returns
    -------
    dict
        ``unresolved`` (debates and label requests waiting for people), ``label_requests``
        (how many of them are label requests), ``open`` (no decision by anyone),
        ``mine`` (decided by ``annotator``), ``complete`` (with ``overlap`` decisions or
        more; None without an overlap), ``needs_me`` (what :func:`queue` shows without
        filters and skips), ``share`` (``mine`` / ``unresolved``).
    """
    db = data.store()
    unresolved = _unresolved(study)
    n = len(unresolved)
    mine = n - len(db.debates.queue(study, annotator=annotator)) if annotator else 0
    return {"unresolved": n, "label_requests": int((unresolved["kind"] == LABEL_REQUEST).sum()),
            "open": int((unresolved["decisions"] == 0).sum()), "mine": mine,
            "complete": int((unresolved["decisions"] >= overlap).sum()) if overlap else None,
            "needs_me": len(db.debates.queue(study, annotator=annotator, overlap=overlap)) if annotator else 0,
            "share": mine / n if n else 0.0}


def items_text(progress_: dict) -> str:
    """How the progress line names what waits: "4 unresolved debate(s)", with the label requests among them."""
    n, requests = progress_["unresolved"], progress_.get("label_requests", 0)
    if not requests:
        return f"{n} unresolved debate(s)"
    return f"{n} unresolved debate(s) and label request(s) ({requests} label request(s))"


def filter_options(study: str) -> tuple[list[str], list[str]]:
    """The scenario and criterion choices of the queue filters (each list starts with its "All ...")."""
    unresolved = _unresolved(study)
    scenarios = sorted({s for s in unresolved["scenario"] if s})
    criteria = sorted({c for c in unresolved["criterion"] if c})
    return [ALL_SCENARIOS, *scenarios], [ALL_CRITERIA, *criteria]


def queue(study: str, annotator: str, *, overlap: int, scenario: str = ALL_SCENARIOS,
          criterion: str = ALL_CRITERIA) -> pd.DataFrame:
    """Unresolved debates that still need ``annotator``: not decided by them and, with an overlap,
    decided by fewer than ``overlap`` people; narrowed to one scenario / criterion when chosen."""
    frame = data.store().debates.queue(study, annotator=annotator, overlap=overlap)
    if scenario != ALL_SCENARIOS:
        frame = frame[frame["scenario"] == scenario]
    if criterion != ALL_CRITERIA:
        frame = frame[frame["criterion"] == criterion]
    return frame.reset_index(drop=True)


def skipped(study: str, annotator: str) -> list[int]:
    """The debates ``annotator`` put aside (stored: the same in every browser)."""
    return data.store().debates.skipped(study, annotator) if annotator else []


def without_skipped(frame: pd.DataFrame, skipped_ids: list[int]) -> pd.DataFrame:
    return frame[~frame["id"].isin(skipped_ids)].reset_index(drop=True)


def decision_button(container, spec: tuple, debate_id: int, annotator: str, note_key: str) -> None:
    """One of :data:`DECISION_BUTTONS` in ``container``, deciding ``debate_id`` when clicked (or its key pressed)."""
    decision, key, label, icon, shortcut, primary = spec
    container.button(label, key=key, type="primary" if primary else "secondary", icon=icon, shortcut=shortcut,
                     on_click=decide, args=(debate_id, decision, annotator, note_key), width="stretch")


def is_blind(debate_id: int) -> bool:
    """Whether the agents' verdicts and reasons are hidden on this debate (blind mode on, not unblinded here)."""
    return bool(st.session_state[state.ADJ_BLIND]) and int(debate_id) not in st.session_state[state.ADJ_REVEALED]


def reveal(debate_id: int) -> None:
    """Button callback: show the agents on this debate (the decision is then recorded as not blind)."""
    st.session_state[state.ADJ_REVEALED] = [*st.session_state[state.ADJ_REVEALED], int(debate_id)]


def decide(debate_id: int, decision: str, annotator: str, note_key: str) -> None:
    """Button callback: store the decision at once, remember it for undo, clear the note."""
    note = (st.session_state.get(note_key) or "").strip()
    token = uuid.uuid4().hex  # this tab's decision: undo removes it and nothing decided elsewhere
    try:  # checked (annotator role), stored and recorded in the audit log by the application layer
        access.adjudicate(data.store(), page_actor(annotator), int(debate_id), decision, note=note, token=token,
                          blind=is_blind(debate_id))
    except AccessDenied as exc:
        st.session_state[REFUSED] = "Not saved: " + safe.md(str(exc))
        st.session_state[state.ADJ_FLASH] = ""
        return
    except DecisionRefused as exc:  # the lease ran out and others took or decided it meanwhile
        # Names are untrusted text: escaped so that the alert's Markdown shows them as typed.
        st.session_state[REFUSED] = "Not saved: " + exc.message(name=safe.md)
        st.session_state[state.ADJ_FLASH] = ""
        return
    st.session_state[state.ADJ_HISTORY] = st.session_state[state.ADJ_HISTORY] + [(int(debate_id), annotator, token)]
    st.session_state[state.ADJ_NOTE_VERSION] += 1
    st.session_state[state.ADJ_LAST] = int(debate_id)
    st.session_state[state.ADJ_FLASH] = f"Saved: debate #{debate_id} → {DECISION_NAMES[decision]}" + (
        " (with a note)" if note else "") + ". Press U to undo."


def skip(study: str, debate_id: int, annotator: str) -> None:
    """Button callback: put the debate aside for this annotator (stored, so every browser skips it)."""
    data.store().debates.skip(int(debate_id), annotator)
    st.session_state[state.ADJ_FLASH] = f"Skipped debate #{debate_id}."


def clear_skipped(study: str, annotator: str) -> None:
    data.store().debates.clear_skips(study, annotator)
    st.session_state[state.ADJ_FLASH] = ""


def show_flash() -> None:
    """The last action's confirmation, once: a toast (seen at once, moves nothing) and a line kept here."""
    refused = st.session_state.get(REFUSED)
    if refused:
        st.error(refused, icon=":material/block:")
        st.session_state[REFUSED] = ""
    flash = st.session_state[state.ADJ_FLASH]
    if flash:
        st.toast(flash, icon=":material/check_circle:")
        st.success(flash, icon=":material/check_circle:")
        st.session_state[state.ADJ_FLASH] = ""


def can_undo(annotator: str) -> bool:
    return any(entry[1] == annotator for entry in st.session_state[state.ADJ_HISTORY])


def undo_last(annotator: str, study: str | None = None) -> None:
    """Button callback: remove this tab's last decision by ``annotator`` (only if it is still the one stored).

    Each decision carries the token this tab gave it; if the same annotator has decided
    the debate again in another tab since, that decision stays and the undo says so.
    With ``study``, the debate held now is given back, so that the page shows the undone
    debate again (unless someone else took it meanwhile).
    """
    history = list(st.session_state[state.ADJ_HISTORY])
    for k in range(len(history) - 1, -1, -1):
        debate_id, name, token = history[k]
        if name == annotator:
            del history[k]
            try:
                removed = access.undo_decision(data.store(), page_actor(annotator), debate_id, token=token)
            except AccessDenied as exc:
                st.session_state[REFUSED] = "Not undone: " + safe.md(str(exc))
                return
            if removed and study is not None:
                data.store().debates.release_leases(study, annotator)
            st.session_state[state.ADJ_HISTORY] = history
            if st.session_state[state.ADJ_LAST] == debate_id:
                st.session_state[state.ADJ_LAST] = None
            st.session_state[state.ADJ_FLASH] = (
                f"Undone: your decision on debate #{debate_id} is removed; it is back in the queue." if removed else
                f"Nothing undone: debate #{debate_id} was decided again in another tab since; that decision stays.")
            return


def decision_of(study: str, debate_id: int, annotator: str) -> str | None:
    """``annotator``'s stored decision on a debate (``both_bad`` included), None when there is none."""
    decided = data.store().debates.adjudications(study)
    mine = decided[(decided["debate_id"] == int(debate_id)) & (decided["annotator"] == annotator)]
    return mine["decision"].iloc[0] if len(mine) else None


# ------------------------------------------------------------------- agreement


def alpha(decisions: pd.DataFrame):
    """Krippendorff's alpha (nominal) over every annotator, one unit per debate, "both bad" as a tie.

    Returns the :class:`peercore.agreement.AlphaResult` (1,000 bootstrap rounds over
    debates), or None when no debate has two decisions.
    """
    counts = decisions.groupby("debate_id")["annotator"].nunique() if len(decisions) else pd.Series(dtype=int)
    if not (counts >= 2).any():
        return None
    units = pd.DataFrame({
        "question_id": "debate " + decisions["debate_id"].astype(str), "model_a": decisions["model_a"],
        "model_b": decisions["model_b"], "judge": "adjudicator:" + decisions["annotator"],
        "winner": decisions["verdict"],
    })
    return krippendorff_alpha(units, rounds=1000, seed=0)


def alpha_text(result) -> str:
    """One sentence for the page: alpha, its interval and what it was computed on."""
    if math.isnan(result.alpha):
        return (f"Krippendorff's alpha is undefined on these {result.units} debate(s): every decision is the same "
                "verdict, so there is no disagreement to expect.")
    interval = "" if math.isnan(result.ci_low) else f" (95% bootstrap interval {result.ci_low:.2f} to {result.ci_high:.2f})"
    return (f"Krippendorff's alpha over all {len(result.raters)} annotators: **{result.alpha:.3f}**{interval}, on "
            f"{result.units} debate(s) with two or more decisions ({result.values} decisions). 1 = perfect agreement, "
            "0 = chance; \"both bad\" counts as a tie.")


def decisions_display(decisions: pd.DataFrame) -> pd.DataFrame:
    """Every decision for the page's table (untrusted names and notes are shown by st.dataframe as text)."""
    blind = decisions["blind"].map(lambda v: "not recorded" if pd.isna(v) else "yes" if v else "no")
    return pd.DataFrame({
        "debate": decisions["debate_id"], "question": decisions["question_id"], "annotator": decisions["annotator"],
        "decision": decisions["decision"].map(lambda d: DECISION_NAMES.get(d, str(d))), "blind": blind,
        "note": decisions["note"], "when (UTC)": decisions["created_at"].str.slice(0, 19).str.replace("T", " "),
    })


# ------------------------------------------------------------------- rendering


# Each submission's body: a scroller of this height (px), the two side by side with the decision
# bar beside them, so that at 1366 x 768 both submissions and the buttons are on screen together.
SUBMISSION_HEIGHT = 220
LABEL_REQUEST = "label_request"  # the queue item's kind of a label request (Store.debates.add_label_requests)
# The key of the decision buttons' container (its CSS class is st-key-<key>), the key prefix of the
# two submission bodies, and the CSS that keeps the buttons on screen (issue 21, "a bar that
# stays"): scrolling a long submission scrolls its body only, never the page behind it (overscroll
# containment on the body and what wraps it), and the buttons are sticky below Streamlit's 3.75rem
# header within their column, which is as tall as the row of the submissions, the guidelines and
# the agents, so they stay while the page scrolls through them. On a narrow screen (columns
# stacked) nothing is sticky.
DECISION_BAR = "adj_decision_bar"
SUBMISSION_KEY = "adj_submission_"
STICKY_BAR_CSS = f"""<style>
div[class*="st-key-{SUBMISSION_KEY}"], div[class*="st-key-{SUBMISSION_KEY}"] *,
div:has(> div[class*="st-key-{SUBMISSION_KEY}"]) {{ overscroll-behavior: contain; }}
@media (min-width: 640px) {{
  div[data-testid="stColumn"]:has(.st-key-{DECISION_BAR}) {{ align-self: stretch; }}
  div[data-testid="stColumn"]:has(.st-key-{DECISION_BAR}) > div[data-testid="stVerticalBlock"] {{ height: 100%; }}
  div[data-testid="stLayoutWrapper"]:has(> .st-key-{DECISION_BAR}) {{
    position: sticky; top: 3.75rem; z-index: 3; background-color: var(--st-background-color, inherit);
  }}
}}
</style>"""


def keep_bar_in_view() -> None:
    """Keep the decision buttons on screen while a submission or the page scrolls (:data:`STICKY_BAR_CSS`)."""
    st.html(STICKY_BAR_CSS)


def is_label_request(item: dict) -> bool:
    """Whether the queue item shown is a label request (two answers, no debate behind it)."""
    return item.get("kind") == LABEL_REQUEST


def request_line(metadata: dict | None) -> str:
    """"Label request: asked by WHO — WHY" for the page (Markdown; who and why are untrusted text, escaped)."""
    metadata = metadata or {}
    who = str(metadata.get("requested_by") or "").strip() or "someone (not recorded)"
    why = str(metadata.get("reason") or "").strip() or "no reason recorded"
    return f"**Label request:** asked by {safe.md(who)} — {safe.md(why)}"


def label_request_ids(study: str) -> set[int]:
    """The ids of the study's label requests (to tell them from debates in what was just decided)."""
    return set(data.store().debates.table(study, kind=LABEL_REQUEST)["id"].astype(int))


def request_effects(db: str, study: str, rev: int) -> list:
    """:func:`peercore.app.calibration.label_request_effect` of the study, memoised per revision."""

    handle = data.study(db, study)
    return handle.cached(("ui.adjudication", "label_request_effect"), lambda: label_request_effect(handle))


def request_counts(effects: list) -> tuple[int, int]:
    """(open, decided) label requests over every judge and reference."""
    return sum(e.open for e in effects), sum(e.decided for e in effects)


def effect_lines(effects: list) -> list[str]:
    """One Markdown paragraph per (judge, reference) of the label requests: how many are open and decided, and
    the median width of the anchored 95% interval (win rates, PPI++) with the decided requests and without them.

    Names and the leaderboard's messages are untrusted text (escaped).
    """
    lines = []
    for e in effects:
        counts = f"{e.requests} requested · {e.open} open · {e.decided} decided"
        if not (e.judge and e.reference):
            lines.append(f"Label requests without a judge and reference recorded: {counts}.")
            continue
        head = f"**{safe.md(e.judge)}** anchored to **{safe.md(e.reference)}**: {counts}. "
        if e.message_with:
            lines.append(head + "No anchored interval yet: " + safe.md(e.message_with))
            continue
        with_ = (f"median width of the anchored 95% interval (win rate) **{e.width_with:.3f}** with the "
                 f"{e.decided} decided request(s) ({e.labels_with} labels)")
        if e.message_without:
            lines.append(head + with_ + "; without them there would be no interval at all ("
                         + safe.md(e.message_without) + ").")
        elif e.decided == 0:
            lines.append(head + with_ + ": nothing decided yet, so nothing narrowed.")
        else:
            change = (e.width_without - e.width_with) / e.width_without if e.width_without > 0 else math.nan
            said = (f"narrower by {change:.1%}" if change > 0 else "no narrower" if change == 0 else
                    f"wider by {-change:.1%} (a decision against the judge can widen it)")
            lines.append(head + with_ + f", **{e.width_without:.3f}** without them ({e.labels_without} labels): "
                         f"{said}.")
    return lines


def question_height(text: str | None) -> int | str:
    """The question's box: as tall as its text when short, a 96 px scroller when long (the
    submissions below it must start on screen at 1366 x 768)."""
    return 96 if text and (len(text) > 240 or text.count("\n") > 3) else "content"


def rubric_height(rubric: str) -> int | str:
    """The guidelines box: as tall as the text when short, a 220 px scroller when long."""
    return 220 if len(rubric) > 500 or rubric.count("\n") > 8 else "content"


def show_agents(db: str, study: str, rev: int, debate_id: int) -> None:
    """Each agent's final verdict and reasons, and the whole debate in an expander (names and replies as text)."""
    turns = data.turns(db, study, rev)
    finals = reports.final_turns(turns, debate_id)
    for column, turn in zip(st.columns(max(1, len(finals)), border=True), finals.itertuples(index=False)):
        column.markdown(f"{data.name_md(turn.speaker)} {data.verdict_badge(turn.verdict)}")
        safe.text(turn.rationale, empty="(no reasoning recorded)", container=column)
    with st.expander("The whole debate"):
        for round_number, round_turns in reports.rounds(turns, debate_id):
            st.markdown(f"**{reports.round_title(round_number)}**")
            for turn in round_turns.itertuples(index=False):
                st.markdown(f"{data.name_md(turn.speaker)} {data.verdict_badge(turn.verdict)}")
                safe.text(turn.rationale, empty="(no reasoning recorded)")


# ------------------------------------------------------------- decisions made

# What the list of decisions shows: the annotator's own, or everyone's.
MINE, EVERYONE = "Mine", "All"
# Session keys (this tab) of the list and of the change form.
LIST_WHO, EDIT_CHOICE, EDIT_DECISION, EDIT_REASON, EDIT_FLASH = (
    "adj_list_who", "adj_edit_choice", "adj_edit_decision", "adj_edit_reason", "adj_edit_flash")


def actor(mode: str, annotator: str) -> access.Actor:
    """The :class:`peercore.app.access.Actor` this page acts as: the signed-in user (``mode``
    ``signed_in``; ``annotator`` is their account as :func:`peercore.ui.access.current_actor`
    names it), else the single-machine user under the typed name (every action allowed,
    as the page always decided without roles)."""
    if mode == "signed_in":
        return access.Actor(annotator, signed_in=True)
    return access.Actor(annotator.strip(), signed_in=False, local=True)


def page_actor(annotator: str) -> access.Actor:
    """:func:`actor` for the sign-in mode the page runs in (:func:`login`)."""
    return actor(login()[0], annotator)


def decisions_made(decisions: pd.DataFrame, history: pd.DataFrame, annotator: str, who: str) -> pd.DataFrame:
    """The list of decisions for the page: ``annotator``'s (``who`` = :data:`MINE`) or everyone's.

    One row per current decision, newest first: debate, question, annotator, decision,
    note, when it was last set, and how many times it was changed after the first
    (from :meth:`peercore.store.Store.debates.decision_history`).
    """
    rows = decisions if who == EVERYONE else decisions[decisions["annotator"] == annotator]
    changed = history[history["before"].notna() & history["after"].notna()]
    counts = changed.groupby(["debate_id", "annotator"]).size() if len(changed) else pd.Series(dtype=int)
    times = [int(counts.get((int(d), a), 0)) for d, a in zip(rows["debate_id"], rows["annotator"])]
    frame = pd.DataFrame({
        "debate": rows["debate_id"].astype(int), "question": rows["question_id"], "annotator": rows["annotator"],
        "decision": rows["decision"].map(lambda d: DECISION_NAMES.get(d, str(d))), "note": rows["note"],
        "when (UTC)": rows["created_at"].str.slice(0, 19).str.replace("T", " "), "times changed": times,
    })
    return frame.sort_values(["when (UTC)", "debate"], ascending=False, kind="stable").reset_index(drop=True)


def history_display(history: pd.DataFrame) -> pd.DataFrame:
    """The decision history for the page, newest first: who, when, before, after, reason."""
    def name(value) -> str:
        return "—" if value is None else DECISION_NAMES.get(value, str(value))

    frame = pd.DataFrame({
        "debate": history["debate_id"].astype(int), "annotator": history["annotator"],
        "changed by": history["changed_by"], "when (UTC)": history["at"].str.slice(0, 19).str.replace("T", " "),
        "before": history["before"].map(name), "after": history["after"].map(name), "reason": history["reason"],
    })
    return frame.iloc[::-1].reset_index(drop=True)


def edit_label(row) -> str:
    """How one of the annotator's decisions (a row of :meth:`peercore.store.Store.debates.adjudications`) reads in
    the "Decision to change" choice (plain text: a choice box shows no Markdown)."""
    return f"Debate #{int(row.debate_id)} · question {row.question_id} · now {DECISION_NAMES[row.decision]}"


def edit(mode: str, annotator: str, choices: list[int]) -> None:
    """Button callback: change the chosen decision of ``annotator`` to the chosen one, with the reason typed.

    ``choices`` are the debates the annotator decided (the choice box's options). Goes
    through :func:`peercore.app.access.edit_decision` (role check, the change in place, the
    history entry and the audit record in one transaction); the outcome is one line on the page.
    """
    debate_id = st.session_state.get(EDIT_CHOICE)
    decision = st.session_state.get(EDIT_DECISION)
    reason = (st.session_state.get(EDIT_REASON) or "").strip()
    if debate_id not in choices or decision not in DECISION_NAMES:
        st.session_state[EDIT_FLASH] = ("error", "Choose a decision to change and what it becomes.")
        return
    if not reason:
        st.session_state[EDIT_FLASH] = ("error", "Nothing changed: say why the decision changes (the reason is kept "
                                                 "in the history).")
        return
    try:
        changed = access.edit_decision(data.store(), actor(mode, annotator), debate_id, decision, reason=reason)
    except AccessDenied as exc:
        st.session_state[EDIT_FLASH] = ("error", str(exc))
        return
    if changed:
        st.session_state[EDIT_REASON] = ""
        st.session_state[EDIT_FLASH] = ("success", f"Changed: debate #{debate_id} → {DECISION_NAMES[decision]}. "
                                                   "Agreement and Meta-evaluation use it now.")
    else:
        st.session_state[EDIT_FLASH] = ("info", f"Debate #{debate_id} already is {DECISION_NAMES[decision]}: "
                                                "nothing changed.")


def show_edit_flash() -> None:
    """The last change's outcome, once."""
    flash = st.session_state.get(EDIT_FLASH)
    if flash:
        kind, text = flash
        getattr(st, kind)(text)
        st.session_state[EDIT_FLASH] = None
