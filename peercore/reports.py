"""Pure DataFrame assembly for what the dashboard shows (no streamlit, no SQL).

Pages describe the screen; the tables they show (transcripts, opinion changes,
annotator agreement, what-if tables, meta-evaluation tables) are built here, as plain
functions of DataFrames that tests call directly, and formatted for display by the
``*_display`` functions. Which judgments a number is computed from (selection, the
gold set, judge kinds, aliases) is decided once, in :mod:`peercore.app`; the maths
stays in :mod:`peercore.ranking`, :mod:`peercore.bias` and :mod:`peercore.agreement`.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from peercore.agreement import agreement_by_judge, cohen_kappa, scaleeval_agreement
from peercore.judges import VARIANT_MARK, base_name
from peercore.judgments import COLUMNS, concat, empty_judgments, judgments_from_frame
from peercore.ranking import elo_trajectory

# How the judge pickers group judges by kind (display labels: the kinds themselves are
# peercore.judges.JUDGE_KINDS).
KIND_LABELS = {"llm": "LLM reviewers", "human": "Humans", "debate": "Debate gold", "adjudicator": "Debate gold",
               "vote": "Derived votes", "other": "Other judges"}

__all__ = [
    "LEADERBOARD_METHODS", "WEIGHT_MODES", "BASE_SCORES", "POE_METHODS", "STYLE_CONTROLS", "INTERVAL_KINDS",
    "GROUP_BY", "WEAK_PRIOR", "VERDICT_LABELS", "VERDICT_NAMES", "CURVE_MODELS", "ALL_CATEGORIES", "GROUPS_SHOWN",
    "score_digits", "number_formats", "average_lengths", "question_categories",
    "leaderboard_method", "judge_groups", "judge_label", "verdict_label", "what_if", "elo_curves", "turn_judgments",
    "initial_and_final", "debate_overview", "opinion_counts", "leader_effect", "leader_adoption", "final_turns",
    "decisions_by_item", "annotator_agreement", "answers_for", "with_answers", "scaleeval_table",
    "system_summary", "criteria_variation", "run_costs", "scaleeval_pivots", "health_display",
    "settings_text", "opinion_chart_rows", "adoption_display", "BASELINE_COLUMNS",
    "baseline_columns", "baseline_display", "style_table", "grouped_table", "bias_model_display",
    "self_preference_summary", "alpha_display", "BIAS_LABELS", "swap_display", "self_enhancement_display",
    "length_display", "silent_chart_note", "summary_helps", "field_words",
]

# Leaderboard methods as the page names them -> peercore.domain.options.Method codes.
LEADERBOARD_METHODS: tuple[str, ...] = ("Win rate", "Elo", "Bradley-Terry", "Peer Rank weighted", "PoE",
                                         "Versus a baseline")
# Style controls as the page names them -> peercore.ranking.style controls.
STYLE_CONTROLS: dict[str, str] = {"Length": "length", "Markdown (headers, lists, bold)": "markdown"}
INTERVAL_KINDS: dict[str, str] = {"Bootstrap": "bootstrap", "Sandwich (robust)": "sandwich"}
GROUP_BY: dict[str, str] = {"Question category": "category", "Criterion": "criterion", "Turn": "turn"}
WEAK_PRIOR = 200.0  # Elo points: the page's "weak prior" (peercore rank --prior 200)
BASE_SCORES: dict[str, str] = {"Win rate": "winrate", "Elo": "elo", "Bradley-Terry": "bt"}
WEIGHT_MODES: dict[str, str] = {
    "PRD (5 iterations, min-max)": "prd",
    "Fixed point (softmax, keeps every reviewer)": "fixed-point",
}
POE_METHODS: dict[str, str] = {"PoE-Gaussian": "poe-gaussian", "PoE-BT": "poe-bt"}
VERDICT_LABELS = {"model_a": "1", "model_b": "2", "tie": "tie"}
VERDICT_NAMES = {"model_a": "Submission 1", "model_b": "Submission 2", "tie": "Tie"}


def leaderboard_method(label: str, *, base: str = "Win rate", peer: str | None = None,
                       poe: str = "PoE-Gaussian") -> tuple[str, str]:
    """``(method, peer_weights)`` codes of :meth:`peercore.study.Study.leaderboard` for the page's choice.

    ``Peer Rank weighted`` ranks by ``base`` with weights of mode ``peer``; ``PoE`` by
    ``poe``; ``Versus a baseline`` is the win rate (with a baseline); the others by
    themselves without weights.
    """
    if label == "Peer Rank weighted":
        return BASE_SCORES[base], WEIGHT_MODES[peer or next(iter(WEIGHT_MODES))]
    if label == "PoE":
        return POE_METHODS[poe], "none"
    if label == "Versus a baseline":
        return "winrate", "none"
    return BASE_SCORES[label], "none"


def verdict_label(verdict: object) -> str:
    """``model_a`` -> "1", ``model_b`` -> "2", ``tie`` -> "tie", missing -> "—"."""
    if verdict is None or (isinstance(verdict, float) and math.isnan(verdict)) or verdict is pd.NA:
        return "—"
    return VERDICT_LABELS.get(str(verdict), str(verdict))


# ------------------------------------------------------------------------------ judges


def judge_groups(judges: Iterable[str], kinds: Mapping[str, str]) -> dict[str, list[str]]:
    """Judges grouped for the pickers by their kind in the study (LLM reviewers, Humans, Debate gold ...).

    Within a group, the variants of one model follow their base name
    (``openai:gpt-4o``, ``openai:gpt-4o~logprobs``). Groups with no judge are left out.
    """
    groups: dict[str, list[str]] = {}
    for name in sorted(set(judges), key=lambda n: (base_name(n), n)):
        groups.setdefault(KIND_LABELS.get(kinds.get(name, "llm"), "Other judges"), []).append(name)
    order = list(dict.fromkeys(KIND_LABELS.values()))
    return {label: groups[label] for label in order if label in groups}


def judge_label(name: str) -> str:
    """A judge as a picker shows it: a variant names its settings after its model (``gpt-4o · variant logprobs``)."""
    if VARIANT_MARK not in name:
        return name
    base, variant = name.split(VARIANT_MARK, 1)
    return f"{base} · variant {variant}"


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


def elo_curves(judgments: pd.DataFrame, judges: Iterable[str], *, points: int = 150, include_all: bool = True,
               models: Iterable[str] | None = None) -> pd.DataFrame:
    """Online Elo of every contestant over the battles, one curve set per judge (PRD Fig. 4).

    Each judge's battles are taken in stored order; ``points`` checkpoints per curve.
    With ``include_all`` a set named ``All selected`` pools the chosen judges. ``models``:
    the curves of these contestants only (every battle still counts): with thousands of
    contestants, the few a chart draws.

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
        if models is not None:
            trajectory = trajectory[[m for m in models if m in trajectory.columns]]
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
    from peercore.discussion import verdict_changes  # on call: it loads the review runner (jobs, reviewers)

    out = debates.copy()
    changes = verdict_changes(turns) if len(turns) else pd.DataFrame(columns=["debate_id", "altered"])
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


def opinion_counts(debates: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Opinion holding and altering per speaker and role, as PRD section 5 defines them.

    :func:`peercore.discussion.opinion_altering_holding`: a turn counts as *held* or
    *altered* only when the other reviewer disagreed with the speaker's opinion at that
    point; changes after agreement are counted apart.
    """
    from peercore.discussion import opinion_altering_holding  # on call: it loads the review runner (jobs, reviewers)

    return opinion_altering_holding(debates, turns)


def leader_effect(debates: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Each model's opinion holding and altering as leader versus as follower (PRD Fig. 6)."""
    from peercore.discussion import leader_effect as effect  # on call: it loads the review runner (jobs, reviewers)

    return effect(debates, turns)


def leader_adoption(debates: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Share of split-then-agreed discussions that ended on the leader's first verdict (not PRD's measure)."""
    from peercore.discussion import leader_adoption as adoption  # on call: it loads the review runner (jobs, reviewers)

    return adoption(debates, turns)


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


def settings_text(settings: Mapping | None) -> str:
    """A judge's recorded configuration in one line (``method=logits, template=...``); '' for imported judges."""
    if not settings:
        return ""
    shown = {k: v for k, v in settings.items() if k not in ("backend", "model", "template_version", "discussion_template_version",
                                                            "rubric_version") and v is not None}
    return ", ".join(f"{k}={v}" for k, v in shown.items())


def health_display(health: pd.DataFrame) -> pd.DataFrame:
    """The judge health table (:func:`peercore.bias.judge_health`) with readable columns.

    The interval has 3 decimals as every probability (:func:`position_display`); a judge
    without one has a missing cell (drawn "—").
    """
    return pd.DataFrame({
        "judge": health.index, "replies": health["n"].astype(int),
        "P(first chosen)": health["p_first"].round(3), "95% interval": _missing(_intervals(health["ci_low"], health["ci_high"], 3)),
        "identical verdicts": health["identical_share"].round(3), "unparsed": health["invalid_share"].round(3),
        "carries information": ["no: " + r if f else "yes" for f, r in zip(health["flagged"], health["reasons"])],
        "what to try": health["fix"].fillna("").astype(str),
    })


def _missing(texts: Iterable[str]) -> list[str | None]:
    """Text cells with an empty one as missing (None), which the pages draw "—"."""
    return [text if text else None for text in texts]


def criteria_variation(judgments: pd.DataFrame, gold: pd.DataFrame, *,
                       families: Mapping[str, str] | None = None) -> pd.DataFrame:
    """ScaleEval Table 5: each judge's agreement with the gold under varied criteria prompts.

    A verdict belongs to a variant when its ``criterion`` is ``<criterion>/<variant>`` or
    ``<criterion>:<variant>`` with a variant from :data:`CRITERIA_VARIANTS`; its
    ``criterion`` is then compared with the gold's plain criterion.

    ``families`` (judge -> the judge apart from its criterion,
    :meth:`peercore.study.Study.judge_families`) puts the runs of one configuration
    under the varied rubrics on one row, as the paper's table does.

    Returns
    -------
    DataFrame ``judge, variant, n, example_agreement`` (empty when no variant runs exist).
    """
    if len(judgments) == 0 or len(gold) == 0:
        return pd.DataFrame(columns=["judge", "variant", "n", "example_agreement"])
    criterion = judgments["criterion"].fillna("").astype(str)
    parts = criterion.str.extract(r"^(?P<base>.*?)[/:](?P<variant>[a-z]+)$")
    variant = parts["variant"].where(parts["variant"].isin(CRITERIA_VARIANTS))
    base = parts["base"].where(variant.notna(), criterion)
    judge = judgments["judge"].astype(str)
    if families:
        judge = judge.map(lambda j: families.get(j, j))
    varied_judges = set(judge[variant.notna()])
    if not varied_judges:
        return pd.DataFrame(columns=["judge", "variant", "n", "example_agreement"])
    # A judge's runs on the plain criterion are its "general" column (unless it ran /general itself).
    explicit_general = set(judge[variant == "general"])
    plain = variant.isna() & (criterion != "") & judge.isin(varied_judges - explicit_general)
    variant = variant.where(~plain, "general")
    keep = variant.notna().to_numpy()
    frame = judgments[keep].assign(judge=judge[keep].to_numpy(), criterion=base[keep].replace("", None).to_numpy())
    rows = []
    for name in [v for v in CRITERIA_VARIANTS if v in set(variant.dropna())]:
        chunk = frame[(variant[keep] == name).to_numpy()]
        table = agreement_by_judge(chunk, gold, ties="include")
        for who, result in table.iterrows():
            if result["n"] > 0:
                rows.append((who, name, int(result["n"]), float(result["agreement"])))
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


# ------------------------------------------------------------------ display tables

_SUMMARY_LABELS = (("questions", "Questions"), ("contestants", "Contestants"), ("judges", "Judges"),
                   ("judgments", "Judgments"), ("human_votes", "Human votes"), ("debates", "Debates"),
                   ("open_adjudications", "Open adjudications"))


def summary_metrics(summary: dict) -> list[tuple[str, str]]:
    """(label, formatted count) for the Studies page header, in display order.

    Each card holds one short number that a 1366 px screen shows whole: judgments are the
    readable verdicts; the unparsed replies kept beside them are in :func:`summary_helps`.
    """
    return [(label, f"{summary[key]:,}") for key, label in _SUMMARY_LABELS]


def summary_helps(summary: dict) -> dict[str, str]:
    """The detail each Studies card of :func:`summary_metrics` keeps in its help (a card holds one short number).

    Judgments: how many unparsed replies are kept beside the readable verdicts
    (:func:`judgment_count` writes both in one line where there is room).
    """
    unparsed = int(summary.get("invalid_judgments", 0))
    return {"Judgments": f"{summary['judgments']:,} readable verdicts"
                         + (f", plus {unparsed:,} unparsed replies kept with their raw text (shown apart on Data)."
                            if unparsed else "; no unparsed reply.")}


def judgment_count(summary: dict) -> str:
    """``"1,234"`` or ``"1,234 (+5 unparsed)"`` from :meth:`peercore.store.Store.summary`."""
    unparsed = int(summary.get("invalid_judgments", 0))
    return f"{summary['judgments']:,}" + (f" (+{unparsed:,} unparsed)" if unparsed else "")


def source_table(source: dict) -> pd.DataFrame:
    """The study's provenance record as two columns (nested values as JSON; the import log is on Data)."""
    shown = {k: v for k, v in source.items() if k != "imports"}
    if isinstance(source.get("imports"), list):
        shown["imports"] = f"{len(source['imports'])} file(s), listed on Data"
    return pd.DataFrame({"field": [field_words(k) for k in shown],
                         "value": [v if isinstance(v, str) else json.dumps(v) for v in shown.values()]})


#: Provenance fields whose name is a package's, written as the package spells it.
_FIELD_NAMES = {"llama_cpp_python": "llama-cpp-python"}


def field_words(name: str) -> str:
    """A provenance field's name in plain words: ``made_by`` -> "made by", ``date_utc`` -> "date (UTC)".

    Examples
    --------
    >>> [field_words(n) for n in ("made_by", "debate_date_utc", "peercore_version", "kind")]
    ['made by', 'debate date (UTC)', 'peercore version', 'kind']
    """
    name = str(name)
    if name in _FIELD_NAMES:
        return _FIELD_NAMES[name]
    if name.endswith("_utc"):
        return name[:-len("_utc")].replace("_", " ") + " (UTC)"
    return name.replace("_", " ")


#: Contestants the Elo curves draw by default (the top of the table): 15 lines cannot be told apart.
CURVE_MODELS = 5
#: Groups the By-category table shows by default (four fit a 1366 px screen with their ranks).
GROUPS_SHOWN = 4
#: The Leaderboard's "Category" option meaning every question.
ALL_CATEGORIES = "All categories"


def question_categories(questions: pd.DataFrame) -> list[str]:
    """The study's question categories, sorted (empty ones left out)."""
    if "category" not in questions.columns:
        return []
    values = questions["category"].dropna().astype(str)
    return sorted(v for v in values.unique() if v.strip() and v != "None")


def score_digits(score_label: str) -> int:
    """Decimals a score is shown with: 3 for win rates and PoE scores (shares), 1 for ratings (Elo scale)."""
    return 3 if score_label in ("win rate",) or "PoE" in score_label else 1


def number_formats(frame: pd.DataFrame, *, decimals: Mapping[str, int] | None = None) -> dict[str, str]:
    """A printf format per float column of a displayed table, one rule on every page.

    Ratings on the Elo scale (columns naming Elo, rating, Bradley-Terry, plain, score
    (…) of a rating) with 1 decimal; percentages (``%``, ``se``) with 2; shares, rates
    and probabilities with 3. ``decimals`` overrides by column name. Integer and text
    columns are left alone.
    """
    out = {}
    for column in frame.columns:
        if not pd.api.types.is_float_dtype(frame[column]):
            continue
        name = str(column)
        if decimals and name in decimals:
            digits = decimals[name]
        elif "%" in name or name.endswith("se") or "± se" in name:
            digits = 2
        elif any(word in name.lower() for word in ("elo", "rating", "bradley", "plain")):
            digits = 1
        else:
            digits = 3
        out[name] = f"%.{digits}f"
    return out


def average_lengths(answers: pd.DataFrame) -> pd.Series:
    """Mean answer length in characters per model (AlpacaEval's ``avg_length``), from ``question_id, model, answer``."""
    if len(answers) == 0:
        return pd.Series(dtype=float)
    return answers.assign(length=answers["answer"].astype(str).str.len()).groupby("model")["length"].mean()


def leaderboard_display(table: pd.DataFrame, score_label: str, *, lengths: pd.Series | None = None) -> pd.DataFrame:
    """The ranked table with readable column names and the interval as one text cell.

    Columns: ``rank``, ``model``, the score, ``95% interval``, ``battles``, then when
    the table has them ``rank spread`` (best – worst rank the intervals allow),
    ``robust interval`` (Bradley-Terry's sandwich interval), ``preliminary``, and for
    style control ``plain`` (plain Bradley-Terry's rating), ``plain rank`` and
    ``rank change`` (▲ the model rises once style is controlled), and with ``lengths``
    (:func:`average_lengths`) ``avg length`` as AlpacaEval shows it. Scores are rounded
    as :func:`score_digits` says (win rate 3 decimals, ratings 1).
    """
    digits = score_digits(score_label)
    out = pd.DataFrame({
        "rank": table["rank"].astype(int), "model": table["model"], score_label: table["score"].round(digits),
        "95% interval": _intervals(table["ci_low"], table["ci_high"], digits), "battles": table["battles"].astype(int),
    })
    if "rank_worst" in table.columns:
        out["rank spread"] = [f"{int(b)}" if int(b) == int(w) else f"{int(b)}–{int(w)}"
                              for b, w in zip(table["rank"], table["rank_worst"])]
    if "sandwich_low" in table.columns:
        out["robust interval"] = _intervals(table["sandwich_low"], table["sandwich_high"], digits)
    if "preliminary" in table.columns:  # fewer battles than the minimum (peercore.app.leaderboard.PRELIMINARY_BATTLES)
        out["preliminary"] = table["preliminary"].astype(bool).to_numpy()
    if "plain_score" in table.columns:
        out["plain"] = table["plain_score"].round(digits).to_numpy()
        out["plain rank"] = table["plain_rank"].astype(int).to_numpy()
        out["rank change"] = [_arrow(c) for c in table["rank_change"]]
    if lengths is not None and len(lengths):
        out["avg length"] = table["model"].map(lengths).round(0).astype("Int64").to_numpy()
    return out


def _intervals(low: pd.Series, high: pd.Series, digits: int) -> list[str]:
    return ["" if pd.isna(lo) or pd.isna(hi) else f"{lo:.{digits}f} – {hi:.{digits}f}" for lo, hi in zip(low, high)]


def _arrow(change) -> str:
    return "" if pd.isna(change) or change == 0 else (f"▲ {int(change)}" if change > 0 else f"▼ {int(-change)}")


# AlpacaEval's leaderboard columns, in the order its CSV writes them (rates in percent).
BASELINE_COLUMNS = ("model", "win_rate", "standard_error", "lc_win_rate", "lc_standard_error", "discrete_win_rate",
                    "n_wins", "n_wins_base", "n_draws", "n_total", "avg_length")


def baseline_columns(table: pd.DataFrame) -> list[str]:
    """The AlpacaEval columns of a baseline ranking's table, in AlpacaEval's order."""
    return [c for c in BASELINE_COLUMNS if c in table.columns]


def baseline_display(table: pd.DataFrame) -> pd.DataFrame:
    """The "versus a baseline" view: AlpacaEval's columns with readable names (percent, 2 decimals)."""
    out = pd.DataFrame({
        "model": table["model"], "win rate %": table["win_rate"].round(2),
        "± se": table["standard_error"].round(2),
        "LC win rate %": table["lc_win_rate"].round(2), "LC ± se": table["lc_standard_error"].round(2),
        "discrete win rate %": table["discrete_win_rate"].round(2), "wins": table["n_wins"].astype(int),
        "losses": table["n_wins_base"].astype(int), "draws": table["n_draws"].astype(int),
        "total": table["n_total"].astype(int),
        "avg length": table["avg_length"].round(0).astype("Int64"),
    })
    if "preliminary" in table.columns:
        out["preliminary"] = table["preliminary"].astype(bool).to_numpy()
    return out


def style_table(style: pd.DataFrame) -> pd.DataFrame:
    """Style control's coefficients for display: Elo points, 95% interval, probability shift."""
    return pd.DataFrame({
        "feature": style.index.astype(str), "Elo points per sd": style["coefficient"].round(1).to_numpy(),
        "95% interval": _intervals(style["ci_low"], style["ci_high"], 1),
        "P(first wins) shift": style["probability_shift"].round(3).to_numpy(),
    })


BIAS_LABELS = {"position": "first position", "self": "own family", "length": "longer answer (per sd)"}


def bias_model_display(table: pd.DataFrame) -> pd.DataFrame:
    """The judge-bias model (:func:`peercore.bias.judge_bias_model`) for display, one row per judge and bias."""
    frame = table.reset_index()
    return pd.DataFrame({
        "judge": frame["judge"], "bias toward": frame["bias"].map(BIAS_LABELS).fillna(frame["bias"]),
        "Elo points": frame["elo"].round(1), "95% interval": _intervals(frame["ci_low"], frame["ci_high"], 1),
        "P shift": frame["probability_shift"].round(3),
        "P shift interval": _intervals(frame["p_low"], frame["p_high"], 3),
        "verdicts": frame["n"].astype(int), "informative": frame["n_informative"].astype(int),
        "significant": frame["significant"].astype(bool),
    })


def self_preference_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per judge, its self (family) preference from the bias model: Elo points, interval, probability shift."""
    if "self" not in set(table.index.get_level_values("bias")):
        return pd.DataFrame(columns=["judge", "Elo points", "95% interval", "P shift", "significant"])
    rows = table.xs("self", level="bias")
    return pd.DataFrame({"judge": rows.index, "Elo points": rows["elo"].round(1).to_numpy(),
                         "95% interval": _intervals(rows["ci_low"], rows["ci_high"], 1),
                         "P shift": rows["probability_shift"].round(3).to_numpy(),
                         "significant": rows["significant"].astype(bool).to_numpy()})


def alpha_display(result) -> pd.DataFrame:
    """Krippendorff's alpha (:class:`peercore.agreement.AlphaResult`) as a one-row table."""
    return pd.DataFrame([{"raters": len(result.raters), "alpha": round(result.alpha, 3),
                          "95% interval": _intervals(pd.Series([result.ci_low]), pd.Series([result.ci_high]), 3)[0],
                          "units": result.units, "values": result.values}])


def grouped_table(grouped) -> pd.DataFrame:
    """Leaderboards by group side by side: one row per contestant, ``score (group)`` and ``rank (group)``.

    Contestants absent from a group are empty there; rows follow the first group's order.
    """
    order: list[str] = []
    columns: dict[str, pd.Series] = {}
    for group, ranking in grouped.rankings.items():
        table = ranking.table.set_index("model")
        order += [m for m in table.index if m not in order]
        columns[f"score ({group})"] = table["score"]
        columns[f"rank ({group})"] = table["rank"]
    wide = pd.DataFrame(columns).reindex(order)
    for column in wide.columns:
        if column.startswith("rank ("):
            wide[column] = wide[column].astype("Int64")
    wide.index.name = "model"
    return wide.reset_index()


def what_if_display(comparison: pd.DataFrame) -> pd.DataFrame:
    arrows = ["" if pd.isna(c) or c == 0 else (f"▲ {int(c)}" if c > 0 else f"▼ {int(-c)}") for c in comparison["rank_change"]]
    return pd.DataFrame({
        "model": comparison["model"], "rank (all)": comparison["rank"], "rank (without)": comparison["rank_without"],
        "change": arrows, "score (all)": comparison["score"].round(4), "score (without)": comparison["score_without"].round(4),
    })


def position_display(position: pd.DataFrame) -> pd.DataFrame:
    """Position bias (:func:`peercore.position.position_bias`) with plain headers, one row per judge (the index)."""
    return pd.DataFrame({
        "verdicts": position["n"], "decisive": position["n_decisive"], "P(first)": position["p_first"].round(3),
        "95% interval": _missing(_intervals(position["ci_low"], position["ci_high"], 3)),
        "P(first) over all, ties included (eq. 8)": position["p_first_all"].round(3),
        "ties": position["tie_rate"].round(3),
        "why no statistic": position["position_note"].fillna("").astype(str) if "position_note" in position.columns else "",
    }, index=position.index)


def swap_display(swap: pd.DataFrame) -> pd.DataFrame:
    """Swap consistency (:func:`peercore.position.swap_consistency`) with plain headers, one row per judge.

    The shares are named as the chart's legend names them; ``why no statistic`` holds the
    judge's note when it judged no pair in both orders.
    """
    return pd.DataFrame({
        "pairs in both orders": swap["n_pairs"].astype(int), "consistent": swap["consistent"].round(3),
        "favours first": swap["inconsistent_first"].round(3), "favours second": swap["inconsistent_second"].round(3),
        "why no statistic": swap["position_note"].fillna("").astype(str) if "position_note" in swap.columns else "",
    }, index=swap.index)


def self_enhancement_display(summary: pd.DataFrame) -> pd.DataFrame:
    """Self-enhancement (:func:`peercore.bias.self_enhancement`'s summary) with plain headers, one row per judge."""
    return pd.DataFrame({
        "its own model": summary["model"].astype(str), "win rate it gives its model": summary["own_win_rate"].round(3),
        "win rate the others give it": summary["others_win_rate"].round(3),
        "self-enhancement": summary["self_enhancement"].round(3),
    }, index=summary.index)


def length_display(length: pd.DataFrame) -> pd.DataFrame:
    """Length bias (:func:`peercore.bias.length_bias`) with plain headers, one row per judge."""
    return pd.DataFrame({
        "verdicts": length["n"].astype(int), "longer won": length["n_longer_won"].astype(int),
        "P(longer chosen)": length["longer_win_rate"].round(3),
        "95% interval": _missing(_intervals(length["ci_low"], length["ci_high"], 3)),
    }, index=length.index)


def silent_chart_note(frame: pd.DataFrame, *, shown: pd.Series) -> str | None:
    """Why a bias chart is not drawn, in one line, or None when some judge (``shown`` True) has a bar.

    The reasons are the judges' own notes (``position_note``: the order of the answers is
    unknown, no pair was judged in both orders), each said once.
    """
    if bool(shown.any()):
        return None
    notes = frame["position_note"].fillna("").astype(str) if "position_note" in frame.columns else pd.Series(dtype=str)
    reasons = list(dict.fromkeys(note for note in notes if note))
    return "No chart: " + ("; ".join(reasons) if reasons else "no chosen judge has a verdict to draw") + "."


def threshold_display(tau: pd.Series) -> pd.DataFrame:
    """Each judge's debiasing threshold tau (the median probability it gives the first answer), 3 decimals."""
    return pd.DataFrame({"judge": tau.index, "tau (median P(A wins))": tau.round(3).to_numpy()})


def debate_metrics(overview: pd.DataFrame) -> list[tuple[str, str]]:
    return [("Debates & discussions", f"{len(overview):,}"), ("Agreed", f"{int(overview['agreed'].sum()):,}"),
            ("Unresolved", f"{int((overview['status'] == 'unresolved').sum()):,}"),
            ("Adjudicated", f"{int((overview['decisions'] > 0).sum()):,}"),
            ("Opinion changed", f"{int(overview['opinion_changed'].sum()):,}")]


def filter_debates(overview: pd.DataFrame, *, kind: str, show: str) -> pd.DataFrame:
    """Rows of :func:`debate_overview` matching the page's kind and "Show" filters."""
    out = overview
    if kind == "Debates":
        out = out[out["kind"] == "debate"]
    elif kind == "Discussions":
        out = out[out["kind"] == "discussion"]
    if show == "Agreed":
        out = out[out["agreed"]]
    elif show == "Unresolved":
        out = out[out["status"] == "unresolved"]
    elif show == "Adjudicated":
        out = out[(out["decisions"] > 0) | (out["status"] == "adjudicated")]
    elif show == "Opinion changed":
        out = out[out["opinion_changed"]]
    return out.reset_index(drop=True)


def debate_list_display(overview: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "id": overview["id"], "kind": overview["kind"], "question": overview["question_id"],
        "submission 1": overview["model_a"], "submission 2": overview["model_b"],
        "criterion": overview["criterion"], "scenario": overview["scenario"], "status": overview["status"],
        "consensus": overview["consensus"].map(verdict_label), "speakers": overview["speakers"],
        "first verdicts": overview["initial"], "last verdicts": overview["final"],
        "opinion changed": overview["opinion_changed"], "human decisions": overview["decisions"],
    })


def debate_label(overview: pd.DataFrame):
    labels = {row.id: f"#{row.id} · {row.question_id} · {row.model_a} vs {row.model_b} · {row.status}"
              for row in overview.itertuples(index=False)}
    return lambda debate_id: labels.get(debate_id, str(debate_id))


def opinion_display(counts: pd.DataFrame) -> pd.DataFrame:
    """:func:`opinion_counts` with readable column names."""
    return counts.assign(altering_rate=counts["altering_rate"].astype(float).round(3)).rename(columns={
        "turns": "challenged turns", "changed_after_agreement": "changed after agreement",
        "altering_rate": "altering rate"})


def opinion_chart_rows(counts: pd.DataFrame) -> pd.DataFrame:
    """One bar per reviewer and role (``gpt4 (leader)``) for :func:`peercore.charts.opinion_chart`."""
    if len(counts) == 0:
        return pd.DataFrame(columns=["speaker", "held", "altered"])
    label = [f"{s} ({r})" if isinstance(r, str) and r else str(s) for s, r in zip(counts["speaker"], counts["role"])]
    return pd.DataFrame({"speaker": label, "held": counts["held"].to_numpy(), "altered": counts["altered"].to_numpy()})


def leader_display(leaders: pd.DataFrame) -> pd.DataFrame:
    """:func:`leader_effect` (PRD Fig. 6) with readable column names."""
    out = leaders.copy()
    for column in [c for c in out.columns if c.endswith("altering_rate")]:
        out[column] = out[column].astype(float).round(3)
    out.columns = [c.replace("_", " ") for c in out.columns]
    return out


def adoption_display(adoption: pd.DataFrame) -> pd.DataFrame:
    """:func:`leader_adoption` with readable column names."""
    return adoption.assign(share=adoption["share"].astype(float).round(3)).rename(
        columns={"debates": "split → agreed", "ended_on_leader_verdict": "ended on leader's verdict"})


def rounds(all_turns: pd.DataFrame, debate_id: int):
    """(round, turns in speaking order) for one debate."""
    part = all_turns[all_turns["debate_id"] == debate_id].sort_values(["round", "position"], kind="stable")
    return list(part.groupby("round", sort=True))


def round_title(round_number: int) -> str:
    return "Initial verdicts" if round_number == 0 else f"Round {round_number}"


def annotator_agreement_display(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(agreement=table["agreement"].round(3), cohen_kappa=table["cohen_kappa"].round(3)).rename(
        columns={"annotator_1": "annotator", "annotator_2": "with", "n": "debates both decided",
                 "cohen_kappa": "Cohen's kappa"})


def decisions_display(decisions: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "debate": decisions["debate_id"], "question": decisions["question_id"], "annotator": decisions["annotator"],
        "decision": decisions["verdict"].map(verdict_label), "note": decisions["note"],
        "when (UTC)": decisions["created_at"].str.slice(0, 19).str.replace("T", " "),
    })


def accuracy_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`peercore.app.agreement.accuracy_table` with readable column names (each kappa named)."""
    table = table.round(3)
    if "reference_votes" in table.columns:  # a count (the median per comparison): an integer when it is one
        votes = table["reference_votes"]
        table = table.assign(reference_votes=votes.round(0).astype("Int64") if (votes.dropna() % 1 == 0).all()
                             else votes.round(1))
    return table.rename(columns={"n": "matched", "cohen_kappa": "Cohen's kappa", "reference_votes": "reference votes",
                                          "fleiss_kappa": "Fleiss' kappa (PRD Table 3)",
                                          "unparsed": "unparsed (counted as misses)",
                                          "n_without_ties": "matched w/o ties",
                                          "accuracy_without_ties": "accuracy w/o ties",
                                          "cohen_kappa_without_ties": "Cohen's kappa w/o ties"})


def variation_display(table: pd.DataFrame) -> pd.DataFrame:
    return table.pivot(index="judge", columns="variant", values="example_agreement").round(3)
