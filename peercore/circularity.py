"""Circular gold: a debate's own agents scored against the consensus they formed, and the way out.

ScaleEval's gold set (:func:`peercore.app.study.gold_judgments`) is the verdict a panel's
agents agreed on, plus human decisions on the debates they left split. When a judge
under evaluation is also one of the panel's agents, its score against that gold is
partly circular: on every debate it argued in and the panel agreed on, the gold *is*
its own final verdict (it agrees by construction), and every debate where it was the
lone dissent has no gold at all (the panel did not agree), so its disagreements are
never counted.

Leave-one-agent-out gold (the rule :func:`peercore.app.agreement.agreement_table` applies to
reference judges: a judge is never part of its own reference) removes the judge from
the panel before forming the gold it is scored against: on a debate it argued in, the
gold is the final verdict the *other* agents all gave (unanimity of the rest, as the
panel's own "agreed" is unanimity of all; none when they split, when one of them has
no readable verdict, or when nobody else spoke), unless people decided the debate, in
which case their decisions stay the gold. Judges that argued in none of the panel's
debates get the panel's gold unchanged. (``agreement_table`` takes the *majority* of
the remaining reference; gold needs the remaining agents to agree, so only its
leave-one-out rule is reused, not its majority.)

Agents are matched to judges by name: a debate turn's ``speaker`` is the judge of the
same name (ScaleEval imports and PeerBoard's debate runs name them so).
"""

from __future__ import annotations

import pandas as pd

from peercore.judgments import judgments_from_frame

__all__ = ["final_agent_verdicts", "circular_gold", "leave_one_agent_out_gold"]

HUMAN_PREFIX = "adjudicator:"


def final_agent_verdicts(turns: pd.DataFrame) -> pd.DataFrame:
    """Each agent's last verdict in each debate.

    Parameters
    ----------
    turns : debate turns (``debate_id, round, position, speaker, verdict``), as
        :meth:`peercore.store.Store.debates.turns` returns them.

    Returns
    -------
    DataFrame ``debate_id, speaker, verdict`` (verdict missing when the last reply had no
    readable verdict), one row per agent and debate.
    """
    if len(turns) == 0:
        return pd.DataFrame({"debate_id": pd.Series([], dtype="int64"), "speaker": pd.Series([], dtype=object),
                             "verdict": pd.Series([], dtype=object)})
    ordered = turns.sort_values(["debate_id", "round", "position"], kind="stable")
    last = ordered.groupby(["debate_id", "speaker"], sort=False).tail(1)
    return last[["debate_id", "speaker", "verdict"]].reset_index(drop=True)


def circular_gold(gold: pd.DataFrame, turns: pd.DataFrame, judges) -> pd.DataFrame:
    """How much of the gold each judge helped form as a debate agent.

    Parameters
    ----------
    gold : the gold set with ``debate_id`` (:meth:`peercore.study.Study.gold`).
    turns : the turns of the gold's debates.
    judges : the judges under evaluation (names).

    Returns
    -------
    DataFrame indexed by judge (only judges that argued in at least one of the debates):
    ``debates`` (debates it argued in), ``gold_formed`` (agreed debates whose consensus
    it was part of), ``gold`` (agreed-debate gold verdicts in total).
    """
    finals = final_agent_verdicts(turns)
    panel_rows = gold[~gold["judge"].astype(str).str.startswith(HUMAN_PREFIX)]
    agreed = set(panel_rows["debate_id"].astype(int))
    rows = []
    for judge in sorted(set(judges) & set(finals["speaker"])):
        argued = set(finals.loc[finals["speaker"] == judge, "debate_id"].astype(int))
        rows.append((judge, len(argued), len(argued & agreed), len(agreed)))
    return pd.DataFrame(rows, columns=["judge", "debates", "gold_formed", "gold"]).set_index("judge")


def leave_one_agent_out_gold(gold: pd.DataFrame, debates: pd.DataFrame, turns: pd.DataFrame, agent: str) -> pd.DataFrame:
    """The gold ``agent`` is scored against when it is left out of the panel (see the module's docstring).

    Parameters
    ----------
    gold : the panel's gold set with ``debate_id`` (:meth:`peercore.study.Study.gold`).
    debates : the panel's debates (``id, question_id, model_a, model_b, criterion``).
    turns : their turns.
    agent : the judge to leave out.

    Returns
    -------
    DataFrame
        Canonical judgments with ``debate_id``: the human decisions, the gold of debates
        ``agent`` did not argue in, and for each debate it argued in that people did not
        decide, the other agents' unanimous final verdict (judge ``<panel> without
        <agent>``).
    """
    finals = final_agent_verdicts(turns)
    argued = set(finals.loc[finals["speaker"] == agent, "debate_id"].astype(int))
    if not argued:
        return gold
    human = gold["judge"].astype(str).str.startswith(HUMAN_PREFIX)
    keep = gold[(human | ~gold["debate_id"].isin(argued)).to_numpy()]
    decided = set(gold.loc[human, "debate_id"].astype(int))
    by_id = debates.set_index("id")
    rows, ids = [], []
    for debate_id in sorted(argued - decided):
        if debate_id not in by_id.index:
            continue
        others = finals[(finals["debate_id"] == debate_id) & (finals["speaker"] != agent)]
        if len(others) == 0 or others["verdict"].isna().any() or others["verdict"].nunique() != 1:
            continue
        debate = by_id.loc[debate_id]
        panel = debate.get("panel") or "debate:consensus"
        criterion = debate.get("criterion")
        rows.append({"question_id": debate["question_id"], "model_a": debate["model_a"], "model_b": debate["model_b"],
                     "judge": f"{panel} without {agent}", "winner": others["verdict"].iloc[0],
                     "criterion": criterion if isinstance(criterion, str) and criterion else None})
        ids.append(debate_id)
    if not rows:
        return keep.reset_index(drop=True)
    extra = judgments_from_frame(pd.DataFrame(rows), source="leave-one-agent-out gold").assign(debate_id=ids)
    return pd.concat([keep, extra], ignore_index=True)
