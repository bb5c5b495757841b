"""The bias report: what ``peercore bias`` prints and the Bias page shows, computed once.

Position bias, swap consistency and the health check come from the read model
(:mod:`peercore.position`: verdicts of a known order, pairs seen both ways round);
self-enhancement, length bias and the debiasing threshold from the selected verdicts'
table, where the judges are contestants, the answers are stored or probabilities given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from peercore import bias, position
from peercore.app.health import health
from peercore.app.leaderboard import battles_of
from peercore.app.study import Study
from peercore.domain import verdicts as V
from peercore.domain.options import OrderPolicy
from peercore.domain.selection import Selection
from peercore.ranking.style import battle_lengths
from peercore.reports import answers_for, initial_and_final, turn_judgments, with_answers

__all__ = ["BiasReport", "BIAS_SELECTION", "bias_report", "discussion_bias", "judge_bias", "thresholded"]


@dataclass(frozen=True)
class BiasReport:
    """Everything the Bias page shows for a selection (:func:`bias_report`).

    Attributes
    ----------
    position : :func:`peercore.position.position_bias` (``p_first`` over decisive
        verdicts, ``p_first_all`` over all, Liusie eq. 8; ``position_note`` when silent).
    swap : :func:`peercore.position.swap_consistency`.
    health : :func:`peercore.app.health.health` of the chosen LLM judges.
    aliases : judge -> the contestant it is, for the chosen judges that are contestants.
    self_matrix, self_summary : :func:`peercore.bias.self_enhancement` (None without aliases).
    tau : each judge's debiasing threshold (judges with probabilities).
    debiased : position bias as judged and with the threshold (None without probabilities).
    length : :func:`peercore.bias.length_bias` (None without stored answers).
    warnings : what the selection merged or left out.
    """

    position: pd.DataFrame
    swap: pd.DataFrame
    health: pd.DataFrame
    aliases: dict = field(default_factory=dict)
    self_matrix: pd.DataFrame | None = None
    self_summary: pd.DataFrame | None = None
    tau: pd.Series = field(default_factory=lambda: pd.Series(dtype=float, name="tau"))
    debiased: pd.DataFrame | None = None
    length: pd.DataFrame | None = None
    warnings: tuple[str, ...] = ()

    def table(self) -> pd.DataFrame:
        """One row per judge: position bias, swap consistency and health (``peercore bias``'s table)."""
        out = self.position.drop(columns=["position_note"]).join(
            self.swap[["n_pairs", "consistent"]].rename(columns={"consistent": "swap_consistency"}), how="left")
        out = out.join(self.health[["invalid_share", "identical_share", "flagged", "reasons"]], how="left")
        out["flagged"] = out["flagged"].astype(object).where(out["flagged"].notna(), False).astype(bool)
        out["reasons"] = out["reasons"].fillna("")
        notes = self.position["position_note"]
        out["reasons"] = [r if r else n for r, n in zip(out["reasons"], notes.reindex(out.index).fillna(""))]
        return out


def thresholded(chosen: V.Verdicts, tau: Mapping[str, float]) -> V.Verdicts:
    """The verdicts re-decided from ``p_a`` with each judge's threshold (Liusie eq. 9; :func:`peercore.bias.decide`)."""
    threshold = np.array([tau.get(j, np.nan) for j in chosen.judges], dtype=float)[chosen.judge]
    winner = bias.decide(chosen.p_a, threshold, chosen.winner)
    return replace(chosen, winner=winner)


BIAS_SELECTION = Selection(repeated_votes="each")


def bias_report(study: Study, selection: Selection | None = None) -> BiasReport:
    """Position bias, swap consistency, health, self-enhancement, thresholds and length bias of a selection.

    By default every judge, final verdicts, **each vote** (:data:`BIAS_SELECTION`): a
    position effect shows in each verdict a judge gave, which the majority of repeated
    votes would hide.
    """
    selected = study.select(selection or BIAS_SELECTION)
    chosen = selected.verdicts
    judges = chosen.judges_present()
    aliases = {j: m for j, m in chosen.aliases().items() if j in set(judges)}
    out = dict(position=position.position_bias(chosen), swap=position.swap_consistency(chosen),
               health=health(study, judges), aliases=aliases, warnings=tuple(selected.notes.messages()))
    frame = None
    if aliases:
        frame = V.to_frame(chosen)
        out["self_matrix"], out["self_summary"] = bias.self_enhancement(frame, aliases=aliases)
    given = ~np.isnan(chosen.p_a)
    if given.any():
        with_p = np.zeros(len(chosen.judges), dtype=bool)
        with_p[np.unique(chosen.judge[given])] = True
        part = V.take(chosen, with_p[chosen.judge])
        tau = pd.Series({chosen.judges[k]: float(np.median(chosen.p_a[given & (chosen.judge == k)]))
                         for k in np.flatnonzero(with_p)}, name="tau")
        tau.index.name = "judge"
        out["tau"] = tau
        out["debiased"] = pd.concat([position.position_bias(part).assign(stage="as judged"),
                                     position.position_bias(thresholded(part, tau.to_dict())).assign(
                                         stage="debiased threshold")])
    answers = study.answers()
    if len(answers):
        frame = V.to_frame(chosen) if frame is None else frame
        texts = answers_for(frame, answers)
        usable = with_answers(frame, texts)
        out["length"] = bias.length_bias(usable, texts) if len(usable) else None
    return BiasReport(**out)


def discussion_bias(study: Study) -> pd.DataFrame | None:
    """Position bias of the speakers' first and last verdicts in the study's debates and discussions."""
    debates = study.debates()
    if len(debates) == 0:
        return None
    table = turn_judgments(debates, study.store.debates.turns(debates["id"].tolist()))
    if len(table) == 0:
        return None
    before, after = initial_and_final(table)
    encode = lambda frame: V.from_frame(frame, order=OrderPolicy.KNOWN)  # noqa: E731 - speakers see model_a first
    return pd.concat([position.position_bias(encode(before)).assign(stage="before discussion"),
                      position.position_bias(encode(after)).assign(stage="after discussion")])


def judge_bias(study: Study, selection: Selection | None = None, *, families: Mapping[str, str] | None = None,
               level: float = 0.95):
    """Each judge's position, self (family) and length bias estimated together (:func:`peercore.bias.judge_bias_model`)."""
    chosen = V.compact(study.select(selection).verdicts)
    if len(chosen) == 0:
        raise ValueError("the selection holds no judgments")
    answers = study.answers()
    lengths = None
    if len(answers) or study.has_extras():  # the answers' lengths: decode the verdicts to look them up
        frame = study.with_extras(V.to_frame(chosen), chosen)
        lengths = battle_lengths(frame, answers if len(answers) else None)
        if lengths is not None and lengths.isna().all(axis=None):
            lengths = None
    return bias.judge_bias_model(battles_of(chosen), order_known=chosen.order_known, aliases=chosen.aliases(),
                                 families=families, lengths=lengths, level=level)
