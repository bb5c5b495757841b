"""Pure DataFrame assembly for the dashboard pages (no streamlit, no SQL).

Pages describe the screen; everything that turns store tables into what a page shows
(the gold set, transcripts, opinion changes, annotator agreement, what-if tables)
lives here, as plain functions of DataFrames that tests call directly. The maths
itself stays in :mod:`peercore.ranking`, :mod:`peercore.bias` and
:mod:`peercore.agreement`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from peercore.agreement import agreement_by_judge, cohen_kappa, scaleeval_agreement
from peercore.judgments import COLUMNS, concat, empty_judgments, judgments_from_frame
from peercore.ranking import arena_ranks, battle_counts, comparisons_from_judgments, elo_trajectory, poe_gaussian, poe_scores

__all__ = [
    "LEADERBOARD_METHODS", "WEIGHT_MODES", "BASE_SCORES", "POE_METHODS", "JUDGE_KINDS",
    "judge_kind", "judge_groups", "auto_aliases", "gold_judgments", "with_gold", "poe_table", "what_if",
    "elo_curves", "turn_judgments", "initial_and_final", "debate_overview", "opinion_counts",
    "leader_effect", "final_turns", "annotator_agreement", "decisions_by_item", "with_answers",
    "accuracy_table", "scaleeval_table", "system_summary", "criteria_variation", "question_groups",
    "VERDICT_LABELS", "verdict_label",
]

# Leaderboard methods as the page names them -> peercore codes.
LEADERBOARD_METHODS: tuple[str, ...] = ("Win rate", "Elo", "Bradley-Terry", "Peer Rank weighted", "PoE")
BASE_SCORES: dict[str, str] = {"Win rate": "winrate", "Elo": "elo", "Bradley-Terry": "bt"}
WEIGHT_MODES: dict[str, str] = {
    "PRD (5 iterations, min-max)": "prd",
    "Fixed point (softmax, keeps every reviewer)": "fixed-point",
}
POE_METHODS: dict[str, str] = {"PoE-Gaussian": "poe_gaussian", "PoE-BT": "poe_bt"}
JUDGE_KINDS: dict[str, str] = {
    "llm": "LLM reviewers",
    "human": "Humans",
    "debate": "Debate gold",
    "adjudicator": "Debate gold",
    "vote": "Derived votes",
}
VERDICT_LABELS = {"model_a": "1", "model_b": "2", "tie": "tie"}
VERDICT_NAMES = {"model_a": "Submission 1", "model_b": "Submission 2", "tie": "Tie"}

CONSENSUS_JUDGE = "debate:consensus"
_Z95 = 1.959963984540054


def verdict_label(verdict: object) -> str:
    """``model_a`` -> "1", ``model_b`` -> "2", ``tie`` -> "tie", missing -> "—"."""
    if verdict is None or (isinstance(verdict, float) and math.isnan(verdict)) or verdict is pd.NA:
        return "—"
    return VERDICT_LABELS.get(str(verdict), str(verdict))


# ------------------------------------------------------------------------------ judges


def judge_kind(name: str) -> str:
    """``llm``, ``human``, ``debate``, ``adjudicator`` or ``vote`` from a judge name (CONTRACTS.md)."""
    prefix = name.split(":", 1)[0] if ":" in name else ""
    return prefix if prefix in ("human", "debate", "adjudicator", "vote") else "llm"


def judge_groups(judges: Iterable[str]) -> dict[str, list[str]]:
    """Judges grouped for the pickers: LLM reviewers, Humans, Debate gold, Derived votes.

    Groups with no judge are left out; names are sorted within a group.
    """
    groups: dict[str, list[str]] = {}
    for name in sorted(set(judges)):
        groups.setdefault(JUDGE_KINDS[judge_kind(name)], []).append(name)
    order = list(dict.fromkeys(JUDGE_KINDS.values()))
    return {label: groups[label] for label in order if label in groups}


def auto_aliases(judges: Iterable[str], contestants: Iterable[str], stored: Mapping[str, str] | None = None) -> dict[str, str]:
    """judge -> the contestant it is: the stored alias, else the same name, else the name after ``backend:``.

    Judges that are no contestant are left out (humans, debate gold).
    """
    stored = dict(stored or {})
    contestants = set(contestants)
    out: dict[str, str] = {}
    for judge in judges:
        if stored.get(judge) in contestants:
            out[judge] = stored[judge]
        elif judge in contestants:
            out[judge] = judge
        elif ":" in judge and judge_kind(judge) == "llm" and judge.split(":", 1)[1] in contestants:
            out[judge] = judge.split(":", 1)[1]
    return out


# -------------------------------------------------------------------------------- gold


def gold_judgments(debates: pd.DataFrame, adjudications: pd.DataFrame) -> pd.DataFrame:
    """The ScaleEval gold set as canonical judgments.

    * every debate (``kind == "debate"``) that ended in agreement gives one row, judge
      ``debate:consensus``, winner = the consensus;
    * every human adjudication gives one row, judge ``adjudicator:<annotator>``;
    * a debate imported as already ``adjudicated`` with a consensus but no stored
      decision gives one row, judge ``adjudicator:imported``.

    Several decisions about one debate are reduced by majority wherever the gold set
    is matched (:func:`peercore.agreement.match_reference`).
    """
    rows = []
    if len(debates):
        kind = debates["kind"] if "kind" in debates.columns else pd.Series("debate", index=debates.index)
        decided_ids = set(adjudications["debate_id"]) if len(adjudications) else set()
        for row, is_debate in zip(debates.itertuples(index=False), (kind == "debate").tolist()):
            if not is_debate or row.consensus is None or (isinstance(row.consensus, float) and math.isnan(row.consensus)):
                continue
            if row.status == "agreed":
                judge = CONSENSUS_JUDGE
            elif row.status == "adjudicated" and row.id not in decided_ids:
                judge = "adjudicator:imported"
            else:
                continue
            rows.append(_gold_row(row, judge, row.consensus))
    for row in adjudications.itertuples(index=False):
        rows.append(_gold_row(row, f"adjudicator:{row.annotator}", row.verdict))
    if not rows:
        return empty_judgments()
    return judgments_from_frame(pd.DataFrame(rows), source="gold set")


def _gold_row(row, judge: str, winner: str) -> dict:
    return {
        "question_id": row.question_id, "model_a": row.model_a, "model_b": row.model_b, "judge": judge,
        "winner": winner, "criterion": (row.criterion or None) if isinstance(row.criterion, str) else None,
    }


def with_gold(stored: pd.DataFrame, gold: pd.DataFrame) -> pd.DataFrame:
    """The stored judgments plus the gold rows a ranking can count as judges.

    Adjudications are always added (they live only in the adjudication table). The
    derived ``debate:consensus`` rows are added only when no debate consensus is stored
    as judgments already (debate runs and debate-table imports store theirs as
    ``debate:<panel>``), so a debate is never counted twice.
    """
    if len(gold) == 0:
        return stored
    has_consensus = stored["judge"].map(judge_kind).eq("debate").any()
    extra = gold[~gold["judge"].isin(set(stored["judge"]))]
    if has_consensus:
        extra = extra[extra["judge"] != CONSENSUS_JUDGE]
    return concat([stored, extra]) if len(extra) else stored


def question_groups(debates: pd.DataFrame, questions: pd.DataFrame) -> dict[str, str]:
    """question_id -> scenario (from debates) or category (from questions); ``"(none)"`` when unknown."""
    out: dict[str, str] = {}
    if len(questions):
        for qid, category in zip(questions["question_id"], questions["category"]):
            out[str(qid)] = category or "(none)"
    if len(debates):
        for qid, scenario in zip(debates["question_id"], debates["scenario"]):
            if scenario:
                out[str(qid)] = scenario
    return out


# ------------------------------------------------------------------------- leaderboard


def poe_table(judgments: pd.DataFrame, *, method: str = "poe_gaussian", debias: bool = False) -> pd.DataFrame:
    """A ranked table like :func:`peercore.ranking.leaderboard` for the PoE scores.

    PoE-Gaussian gets 95% intervals from its posterior (Liusie et al. 2024): score
    +- 1.96 sd of :math:`s_i - \\bar s`, i.e. of the centred covariance
    :math:`P \\Sigma P` with :math:`P = I - \\mathbf 1 \\mathbf 1^T / N` (the anchor's
    uncertainty about a common shift says nothing about the ranking), with the expert
    variance :math:`\\sigma^2` estimated by the residual mean square
    :math:`\\lVert \\mu - W s \\rVert^2 / (K - N + 1)`. PoE-BT has no intervals. Ranks
    follow the Arena rule on the interval (or on the score when there is none).

    Returns
    -------
    DataFrame ``model, score, rank, ci_low, ci_high, battles``, best first.
    """
    if method == "poe_gaussian":
        comparisons = comparisons_from_judgments(judgments)
        fit = poe_gaussian(comparisons, debias=debias)
        n, k = comparisons.n, len(comparisons)
        beta = float(np.mean(comparisons.p)) if debias and k else 0.5
        residual = (comparisons.p - beta) - (fit.scores[comparisons.i] - fit.scores[comparisons.j])
        sigma2 = float(residual @ residual) / max(k - n + 1, 1)
        centre = np.eye(n) - 1.0 / n
        sd = np.sqrt(np.clip(np.diag(centre @ fit.covariance @ centre), 0.0, None) * sigma2)
        models = list(comparisons.candidates)
        score = pd.Series(fit.scores, index=models)
        low = pd.Series(fit.scores - _Z95 * sd, index=models)
        high = pd.Series(fit.scores + _Z95 * sd, index=models)
    else:
        score = poe_scores(judgments, method=method, debias=debias)
        score.index = list(score.index)
        low = high = pd.Series(np.nan, index=score.index)
    counts = battle_counts(judgments).sum(axis=1)
    ranks = arena_ranks(low.where(low.notna(), score), high.where(high.notna(), score))
    table = pd.DataFrame({
        "model": score.index, "score": score.to_numpy(), "rank": ranks.reindex(score.index).to_numpy(),
        "ci_low": low.to_numpy(), "ci_high": high.to_numpy(), "battles": counts.reindex(score.index).to_numpy(),
    })
    table = table.sort_values(["rank", "score", "model"], ascending=[True, False, True], kind="stable")
    return table.astype({"battles": int, "rank": int}).reset_index(drop=True)


def what_if(full: pd.DataFrame, reduced: pd.DataFrame) -> pd.DataFrame:
    """Compare two ranked tables (all reviewers vs some unticked).

    Returns
    -------
    DataFrame ``model, rank, rank_without, rank_change, score, score_without``, in the
    order of ``reduced`` (models missing from one side get NaN). ``rank_change`` > 0
    means the model moved up when the reviewers were removed.
    """
    left = full.set_index("model")[["rank", "score"]]
    right = reduced.set_index("model")[["rank", "score"]].rename(columns={"rank": "rank_without", "score": "score_without"})
    both = left.join(right, how="outer")
    both["rank_change"] = both["rank"] - both["rank_without"]
    order = list(reduced["model"]) + [m for m in full["model"] if m not in set(reduced["model"])]
    both = both.reindex(order)
    both.index.name = "model"
    return both.reset_index()[["model", "rank", "rank_without", "rank_change", "score", "score_without"]]


def elo_curves(judgments: pd.DataFrame, judges: Iterable[str], *, points: int = 150, include_all: bool = True) -> pd.DataFrame:
    """Online Elo of every contestant over the battles, one curve set per judge (PRD Fig. 4).

    Each judge's battles are taken in stored order; ``points`` checkpoints per curve.
    With ``include_all`` a set named ``All selected`` pools the chosen judges.

    Returns
    -------
    Long DataFrame ``judge, battles, model, elo``.
    """
    frames = []
    sets = [(judge, judgments[judgments["judge"] == judge]) for judge in judges]
    if include_all and len(sets) > 1:
        sets.append(("All selected", judgments[judgments["judge"].isin(list(judges))]))
    for name, rows in sets:
        if len(rows) == 0:
            continue
        trajectory = elo_trajectory(rows, every=max(1, len(rows) // points))
        long = trajectory.reset_index().melt(id_vars="battles", var_name="model", value_name="elo")
        frames.append(long.assign(judge=name))
    if not frames:
        return pd.DataFrame(columns=["judge", "battles", "model", "elo"])
    return pd.concat(frames, ignore_index=True)[["judge", "battles", "model", "elo"]]


# ---------------------------------------------------------------- debates & discussions


def turn_judgments(debates: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Every verdict spoken in a debate or discussion as a canonical judgment table.

    ``judge`` is the speaker, ``round`` the round (0 = initial verdicts); turns without
    a verdict are left out. The result carries a ``debate_id`` column besides the
    canonical ones.
    """
    if len(turns) == 0 or len(debates) == 0:
        return empty_judgments().assign(debate_id=pd.Series([], dtype="int64"))
    merged = turns[turns["verdict"].notna()].merge(
        debates[["id", "question_id", "model_a", "model_b", "criterion"]], left_on="debate_id", right_on="id"
    )
    if len(merged) == 0:
        return empty_judgments().assign(debate_id=pd.Series([], dtype="int64"))
    frame = pd.DataFrame({
        "question_id": merged["question_id"], "model_a": merged["model_a"], "model_b": merged["model_b"],
        "judge": merged["speaker"], "winner": merged["verdict"],
        "criterion": merged["criterion"].where(merged["criterion"] != "", None),
        "round": merged["round"], "rationale": merged["rationale"],
    })
    out = judgments_from_frame(frame, source="debate turns")
    return out.assign(debate_id=merged["debate_id"].astype("int64").to_numpy())


def initial_and_final(turn_table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split :func:`turn_judgments` into each speaker's first and last verdict per debate.

    Returns ``(before, after)`` canonical tables; they are equal for debates decided in
    the first round.
    """
    if len(turn_table) == 0:
        return empty_judgments(), empty_judgments()
    ordered = turn_table.sort_values(["debate_id", "judge", "round"], kind="stable")
    first = ordered.groupby(["debate_id", "judge"], sort=False).head(1)
    last = ordered.groupby(["debate_id", "judge"], sort=False).tail(1)
    return concat([first[list(COLUMNS)]]), concat([last[list(COLUMNS)]])


def debate_overview(debates: pd.DataFrame, turns: pd.DataFrame, adjudications: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per debate with what the filters and badges need.

    Adds ``speakers`` (comma-separated), ``initial`` and ``final`` (each speaker's first
    and last verdict as 1 / 2 / tie, in speaking order), ``opinion_changed`` (some
    speaker altered its verdict, :func:`peercore.discussion.opinion_changes`),
    ``agreed`` (status is agreed) and ``decisions`` (number of human adjudications).
    """
    from peercore.discussion import opinion_changes

    out = debates.copy()
    changes = opinion_changes(turns) if len(turns) else pd.DataFrame(columns=["debate_id", "altered"])
    changed = set(changes.loc[changes["altered"].astype(bool), "debate_id"])
    spoken = turns[turns["verdict"].notna()].sort_values(["debate_id", "round", "position"], kind="stable") if len(turns) else turns
    initial: dict[int, str] = {}
    final: dict[int, str] = {}
    speakers: dict[int, str] = {}
    for debate_id, part in (spoken.groupby("debate_id", sort=False) if len(spoken) else []):
        order = list(dict.fromkeys(part["speaker"]))
        speakers[debate_id] = ", ".join(order)
        firsts = part.groupby("speaker", sort=False).head(1).set_index("speaker")["verdict"]
        lasts = part.groupby("speaker", sort=False).tail(1).set_index("speaker")["verdict"]
        initial[debate_id] = " / ".join(verdict_label(firsts[s]) for s in order)
        final[debate_id] = " / ".join(verdict_label(lasts[s]) for s in order)
    out["speakers"] = out["id"].map(speakers).fillna("")
    out["initial"] = out["id"].map(initial).fillna("")
    out["final"] = out["id"].map(final).fillna("")
    out["opinion_changed"] = out["id"].isin(changed)
    out["agreed"] = out["status"] == "agreed"
    counts = adjudications.groupby("debate_id").size() if adjudications is not None and len(adjudications) else pd.Series(dtype=int)
    out["decisions"] = out["id"].map(counts).fillna(0).astype(int)
    return out


def opinion_counts(turns: pd.DataFrame) -> pd.DataFrame:
    """Opinion altering and holding per speaker (PRD section 5), from :func:`peercore.discussion.opinion_changes`.

    Every time a speaker gives a verdict after an earlier one in the same debate it
    either *alters* (a different verdict) or *holds* (the same).

    Returns
    -------
    DataFrame indexed by speaker: ``turns`` (verdicts after the first), ``altered``,
    ``held``, ``altering_rate`` (altered / turns, NaN with no later turns).
    """
    from peercore.discussion import opinion_changes

    speakers = sorted(set(turns["speaker"])) if len(turns) else []
    changes = opinion_changes(turns) if len(turns) else pd.DataFrame(columns=["speaker", "altered"])
    altered = changes["altered"].astype(bool).groupby(changes["speaker"]).sum()
    total = changes.groupby("speaker").size()
    out = pd.DataFrame(index=pd.Index(speakers, name="speaker"))
    out["turns"] = total.reindex(out.index).fillna(0).astype(int)
    out["altered"] = altered.reindex(out.index).fillna(0).astype(int)
    out["held"] = out["turns"] - out["altered"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["altering_rate"] = np.where(out["turns"] > 0, out["altered"] / out["turns"].where(out["turns"] > 0, 1), np.nan)
    return out


def leader_effect(debates: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Does the final verdict follow whoever spoke first? (PRD section 5, the leader effect.)

    From :func:`peercore.discussion.discussion_outcomes`: among debates whose speakers
    disagreed at first and agreed at the end, those that ended on the leader's (the
    first speaker's) initial verdict, counted per leader.

    Returns
    -------
    DataFrame indexed by leader: ``debates`` (initially split, finally agreed),
    ``followed_leader``, ``leader_share``.
    """
    from peercore.discussion import discussion_outcomes

    columns = ["debates", "followed_leader", "leader_share"]
    if len(debates) == 0 or len(turns) == 0:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="leader"))
    outcomes = discussion_outcomes(debates, turns)
    decided = outcomes[outcomes["followed_leader"].notna()]
    grouped = decided.groupby("leader")
    out = pd.DataFrame({"debates": grouped.size(), "followed_leader": grouped["followed_leader"].sum()})
    out.index.name = "leader"
    out = out.astype({"debates": int, "followed_leader": int})
    out["leader_share"] = out["followed_leader"] / out["debates"]
    return out


def final_turns(turns: pd.DataFrame, debate_id: int) -> pd.DataFrame:
    """Each speaker's last turn in one debate (their final reasoning and verdict), in speaking order."""
    part = turns[turns["debate_id"] == debate_id].sort_values(["round", "position"], kind="stable")
    last = part.groupby("speaker", sort=False).tail(1)
    order = list(dict.fromkeys(part["speaker"]))
    return last.set_index("speaker").reindex(order).reset_index()


# ------------------------------------------------------------------------ adjudication


def decisions_by_item(adjudications: pd.DataFrame) -> pd.DataFrame:
    """Debates decided by two or more annotators: who said what and whether they agree.

    Returns
    -------
    DataFrame ``debate_id, question_id, annotators, verdicts, agree``.
    """
    rows = []
    for debate_id, part in adjudications.groupby("debate_id", sort=True):
        if part["annotator"].nunique() < 2:
            continue
        rows.append((debate_id, part["question_id"].iloc[0], ", ".join(part["annotator"]),
                     ", ".join(verdict_label(v) for v in part["verdict"]), part["verdict"].nunique() == 1))
    return pd.DataFrame(rows, columns=["debate_id", "question_id", "annotators", "verdicts", "agree"])


def annotator_agreement(adjudications: pd.DataFrame) -> pd.DataFrame:
    """Agreement between every two annotators on the debates both decided.

    Returns
    -------
    DataFrame ``annotator_1, annotator_2, n, agreement, cohen_kappa`` (kappa NaN when
    undefined, e.g. both always chose the same verdict).
    """
    wide = adjudications.pivot_table(index="debate_id", columns="annotator", values="verdict", aggfunc="first")
    rows = []
    for first, second in itertools.combinations(sorted(wide.columns), 2):
        both = wide[[first, second]].dropna()
        if len(both) == 0:
            continue
        agree = float((both[first] == both[second]).mean())
        rows.append((first, second, len(both), agree, cohen_kappa(both[first].tolist(), both[second].tolist())))
    return pd.DataFrame(rows, columns=["annotator_1", "annotator_2", "n", "agreement", "cohen_kappa"])


# ---------------------------------------------------------------------------- bias etc.


def answers_for(judgments: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """The answers in the shape :func:`peercore.bias.length_bias` needs for these judgments.

    Judgments without a turn (most studies) are matched with each model's first-turn
    answer, so the ``turn`` column is dropped; judgments with turns keep it (MT-Bench).
    """
    if "turn" not in answers.columns:
        return answers
    if judgments["turn"].notna().any():
        return answers
    first = answers[answers["turn"].fillna(1) == 1]
    return first.drop(columns="turn").drop_duplicates(["question_id", "model"]).reset_index(drop=True)


def with_answers(judgments: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """The judgments whose two answers are both stored (what length bias can use)."""
    if len(answers) == 0 or len(judgments) == 0:
        return judgments.iloc[0:0]
    known = set(zip(answers["question_id"].astype(str), answers["model"].astype(str)))
    qid = judgments["question_id"].astype(str)
    keep = [(q, a) in known and (q, b) in known for q, a, b in zip(qid, judgments["model_a"], judgments["model_b"])]
    return judgments[np.asarray(keep, dtype=bool)].reset_index(drop=True)


# -------------------------------------------------------------------- meta-evaluation


def accuracy_table(judgments: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Each judge against a reference: accuracy with and without ties, Cohen's kappa.

    The reference is reduced by majority per comparison and matched in either
    orientation (:func:`peercore.agreement.agreement_by_judge`).

    Returns
    -------
    DataFrame indexed by judge: ``n``, ``accuracy``, ``kappa`` (ties counted),
    ``n_without_ties``, ``accuracy_without_ties``, ``kappa_without_ties``.
    """
    if len(judgments) == 0 or len(reference) == 0:
        return pd.DataFrame(columns=["n", "accuracy", "kappa", "n_without_ties", "accuracy_without_ties", "kappa_without_ties"])
    with_ties = agreement_by_judge(judgments, reference, ties="include")
    without = agreement_by_judge(judgments, reference, ties="exclude")
    out = pd.DataFrame({
        "n": with_ties["n"], "accuracy": with_ties["agreement"], "kappa": with_ties["cohen_kappa"],
        "n_without_ties": without["n"], "accuracy_without_ties": without["agreement"],
        "kappa_without_ties": without["cohen_kappa"],
    })
    return out[out["n"] > 0]


def scaleeval_table(judgments: pd.DataFrame, gold: pd.DataFrame, group_of: Mapping[str, str]) -> pd.DataFrame:
    """ScaleEval Tables 3-4: example- and system-level agreement per judge, scenario, criterion.

    Returns the output of :func:`peercore.agreement.scaleeval_agreement` (one row per
    judge, scenario, criterion and pair of systems), or an empty frame when nothing
    matches.
    """
    if len(judgments) == 0 or len(gold) == 0:
        return pd.DataFrame()
    needed = set(judgments["question_id"].astype(str))
    groups = {q: group_of.get(q, "(none)") for q in needed}
    return scaleeval_agreement(judgments, gold, group_of=groups)


def system_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Collapse :func:`scaleeval_table` to judge x scenario (criterion pooled).

    Example-level agreement is weighted by the number of examples; system-level
    agreement is the share of (criterion, pair) cells whose modes match.
    """
    if len(table) == 0:
        return pd.DataFrame(columns=["judge", "group", "n", "example_agreement", "system_agreement"])
    weighted = table.assign(hits=table["example_agreement"] * table["n"])
    grouped = weighted.groupby(["judge", "group"], sort=True)
    out = pd.DataFrame({
        "n": grouped["n"].sum(),
        "example_agreement": grouped["hits"].sum() / grouped["n"].sum(),
        "system_agreement": grouped["system_agreement"].mean(),
    })
    return out.reset_index()


# Criteria-prompt variants of ScaleEval section 6 (Table 5), as peercore.prompts makes
# them; a variant is written after the criterion, e.g. "helpfulness/gibberish".
from peercore.prompts import VARIATIONS as CRITERIA_VARIANTS  # noqa: E402


def criteria_variation(judgments: pd.DataFrame, gold: pd.DataFrame) -> pd.DataFrame:
    """ScaleEval Table 5: each judge's agreement with the gold under varied criteria prompts.

    A verdict belongs to a variant when its ``criterion`` is ``<criterion>/<variant>`` or
    ``<criterion>:<variant>`` with a variant from :data:`CRITERIA_VARIANTS`; its
    ``criterion`` is then compared with the gold's plain criterion.

    Returns
    -------
    DataFrame ``judge, variant, n, example_agreement`` (empty when no variant runs exist).
    """
    if len(judgments) == 0 or len(gold) == 0:
        return pd.DataFrame(columns=["judge", "variant", "n", "example_agreement"])
    parts = judgments["criterion"].fillna("").str.extract(r"^(?P<base>.*?)[/:](?P<variant>[a-z]+)$")
    variant = parts["variant"].where(parts["variant"].isin(CRITERIA_VARIANTS))
    varied = judgments[variant.notna()]
    if len(varied) == 0:
        return pd.DataFrame(columns=["judge", "variant", "n", "example_agreement"])
    base = parts.loc[variant.notna(), "base"].replace("", None)
    rows = []
    for name in sorted(variant.dropna().unique()):
        mask = (variant[variant.notna()] == name).to_numpy()
        chunk = varied[mask].assign(criterion=base[mask].to_numpy())
        chunk = concat([chunk[list(COLUMNS)]])
        table = agreement_by_judge(chunk, gold, ties="include")
        for judge, result in table.iterrows():
            if result["n"] > 0:
                rows.append((judge, name, int(result["n"]), float(result["agreement"])))
    return pd.DataFrame(rows, columns=["judge", "variant", "n", "example_agreement"])


def run_costs(configs: Mapping[str, Mapping], costs: Mapping[str, float]) -> pd.Series:
    """Cost per judge from the runs: each run's cost split equally over the judges it names.

    A run's configuration (or its ``job`` entry, as the runner stores it) names its judge(s) under ``judge`` / ``reviewer`` (a name or
    ``{"name": ...}``) or ``judges`` / ``reviewers`` (a list of those). Runs naming no
    judge are left out.

    Returns
    -------
    Series judge -> cost in USD (empty when no run names a judge).
    """
    totals: dict[str, float] = {}
    for run_id, config in configs.items():
        config = config.get("job", config)  # the runner stores {"job": job.config()}
        names = []
        for key in ("judge", "reviewer", "judges", "reviewers"):
            value = config.get(key)
            for item in value if isinstance(value, list) else [value]:
                name = item.get("name") if isinstance(item, Mapping) else item
                if isinstance(name, str) and name:
                    names.append(name)
        for name in names:
            totals[name] = totals.get(name, 0.0) + float(costs.get(run_id, 0.0)) / len(names)
    return pd.Series(totals, dtype=float, name="cost")


def scaleeval_pivots(table: pd.DataFrame, criterion: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judge x scenario tables of example- and system-level agreement (ScaleEval Tables 3-4).

    ``criterion`` None (or "All criteria") pools every criterion. An ``all`` column
    pools the scenarios.
    """
    if len(table) == 0:
        return pd.DataFrame(), pd.DataFrame()
    part = table if criterion in (None, "All criteria") else table[table["criterion"].fillna("(none)") == criterion]
    if len(part) == 0:
        return pd.DataFrame(), pd.DataFrame()
    summary = system_summary(part)
    pooled = system_summary(part.assign(group="all"))
    both = pd.concat([summary, pooled])
    example = both.pivot(index="judge", columns="group", values="example_agreement")
    system = both.pivot(index="judge", columns="group", values="system_agreement")
    order = [c for c in example.columns if c != "all"] + ["all"]
    return example[order], system[order]
