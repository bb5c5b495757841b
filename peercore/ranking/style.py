"""Style features of two answers, for style control (Chatbot Arena) and the judge-bias model.

Chatbot Arena's style control (Chiang et al. 2024, "Does style matter? Disentangling
style and substance in Chatbot Arena", LMArena blog, August 2024) explains each verdict
by the two answers' style as well as the two models' strength. Per answer it counts

* ``length`` -- characters (Arena counts tokens; a ratio of lengths hardly differs);
* ``header`` -- Markdown headers (lines starting with 1-6 ``#`` and a space);
* ``list`` -- list items (lines starting with ``-``, ``*``, ``+`` or ``1.`` and a space);
* ``bold`` -- bold spans (``**text**`` or ``__text__``);

after removing fenced code blocks (what is inside a code block is not style), and turns
each count into the battle feature

.. math:: z = \\frac{a - b}{a + b} \\quad (0 \\text{ when } a = b = 0)

for the answer shown first (a) and second (b); :mod:`peercore.ranking.contextual`
standardises the features over battles. ``--control length`` uses ``length``;
``--control markdown`` the three Markdown counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = ["CONTROLS", "STYLE_FEATURES", "answer_style", "style_features", "features_for_controls",
           "battle_features", "battle_lengths", "ANSWER_COLUMNS", "LENGTH_COLUMNS"]

# Optional columns of a judgment file: the two answers' texts, or only their lengths.
ANSWER_COLUMNS = ("answer_a", "answer_b")
LENGTH_COLUMNS = ("length_a", "length_b")

STYLE_FEATURES: tuple[str, ...] = ("length", "header", "list", "bold")
# What a user asks to control for -> the features it brings in.
CONTROLS: dict[str, tuple[str, ...]] = {"length": ("length",), "markdown": ("header", "list", "bold")}

_CODE = re.compile(r"```[^`]*```")
_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)
_ORDERED = re.compile(r"^\s*\d+\.\s", re.MULTILINE)
_UNORDERED = re.compile(r"^\s*[-*+]\s", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def features_for_controls(controls: Iterable[str]) -> tuple[str, ...]:
    """The style features a list of controls asks for (``length``, ``markdown``), in a fixed order.

    Raises
    ------
    ValueError
        If a control is unknown (the known ones are listed).
    """
    wanted: list[str] = []
    for control in controls:
        if control not in CONTROLS:
            raise ValueError(f"control must be one of {tuple(CONTROLS)}, got {control!r}")
        wanted += [f for f in CONTROLS[control] if f not in wanted]
    return tuple(f for f in STYLE_FEATURES if f in wanted)


def answer_style(texts: Iterable[str | None]) -> pd.DataFrame:
    """Per answer: ``length`` (characters), ``header``, ``list`` and ``bold`` counts (code blocks removed).

    A missing text (None / NaN) gives a row of NaN.
    """
    rows = []
    for text in texts:
        if not isinstance(text, str):
            rows.append((np.nan, np.nan, np.nan, np.nan))
            continue
        prose = _CODE.sub("", text)
        rows.append((len(text), len(_HEADER.findall(prose)),
                     len(_ORDERED.findall(prose)) + len(_UNORDERED.findall(prose)), len(_BOLD.findall(prose))))
    return pd.DataFrame(rows, columns=list(STYLE_FEATURES), dtype=float)


def battle_features(first: pd.DataFrame | np.ndarray, second: pd.DataFrame | np.ndarray) -> np.ndarray:
    """:math:`(a - b) / (a + b)` per battle and feature, 0 where both are 0 (NaN where either is missing)."""
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    total = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total == 0, 0.0, (a - b) / np.where(total == 0, 1.0, total))


def battle_lengths(judgments: pd.DataFrame, answers: pd.DataFrame | None = None) -> pd.DataFrame:
    """``length_a``, ``length_b``: the two answers' lengths in characters, aligned with ``judgments``.

    From ``length_a``/``length_b`` columns when the table has them, else from
    ``answer_a``/``answer_b`` texts, else from ``answers`` (as :func:`style_features`).
    NaN where unknown; None when there is no source at all.
    """
    if set(LENGTH_COLUMNS) <= set(judgments.columns):
        out = judgments[list(LENGTH_COLUMNS)].apply(pd.to_numeric, errors="coerce").astype(float)
        return out.set_axis(judgments.index)
    if set(ANSWER_COLUMNS) <= set(judgments.columns) or answers is not None:
        raw = _raw_styles(judgments, answers, ["length"])
        return pd.DataFrame({"length_a": raw[0][:, 0], "length_b": raw[1][:, 0]}, index=judgments.index)
    return None


def style_features(judgments: pd.DataFrame, answers: pd.DataFrame | None = None, *,
                   features: Sequence[str] = STYLE_FEATURES) -> pd.DataFrame:
    """The style features of every battle of a judgment table (rows aligned with ``judgments``).

    Parameters
    ----------
    judgments : canonical judgment table. If it has answer-text columns ``answer_a``
        and ``answer_b`` (a file's), they are used; for ``length`` alone, numeric
        ``length_a`` and ``length_b`` columns do too.
    answers : otherwise a table ``question_id, model, answer[, turn]`` (a study's stored
        answers); a battle's answers are those of its question, contestants and turn
        (turn 1 when a verdict has none).
    features : which of :data:`STYLE_FEATURES`.

    Returns
    -------
    DataFrame with one column per feature, :math:`(a - b)/(a + b)`, and the index of
    ``judgments``; NaN where an answer is missing.

    Raises
    ------
    ValueError
        If a feature is unknown, or there is neither ``answer_a``/``answer_b`` nor ``answers``.
    """
    unknown = [f for f in features if f not in STYLE_FEATURES]
    if unknown:
        raise ValueError(f"features must be among {STYLE_FEATURES}, got {unknown}")
    features = list(features)
    if features == ["length"] and set(LENGTH_COLUMNS) <= set(judgments.columns) \
            and not set(ANSWER_COLUMNS) <= set(judgments.columns):
        lengths = battle_lengths(judgments)
        values = battle_features(lengths[["length_a"]].to_numpy(), lengths[["length_b"]].to_numpy())
        return pd.DataFrame(values, columns=features, index=judgments.index)
    if not (set(ANSWER_COLUMNS) <= set(judgments.columns)) and answers is None:
        raise ValueError("style features need the answers' texts: a study's stored answers, or answer_a / answer_b "
                         "columns in the judgment file")
    first, second = _raw_styles(judgments, answers, features)
    return pd.DataFrame(battle_features(first, second), columns=features, index=judgments.index)


def _raw_styles(judgments: pd.DataFrame, answers: pd.DataFrame | None, features: list[str]):
    """Per battle, the raw style counts of the first and of the second answer ((n, k) each)."""
    n = len(judgments)
    if set(ANSWER_COLUMNS) <= set(judgments.columns):
        texts = pd.concat([judgments["answer_a"], judgments["answer_b"]], ignore_index=True).astype(object)
        codes, unique = pd.factorize(texts.where(texts.notna(), None), use_na_sentinel=True)
        style = answer_style(list(unique))[features].to_numpy()
        per = np.full((len(codes), len(features)), np.nan)
        per[codes >= 0] = style[codes[codes >= 0]]
        return per[:n], per[n:]
    turn = answers["turn"].fillna(1).astype(int) if "turn" in answers.columns else pd.Series(1, index=answers.index)
    keys = pd.MultiIndex.from_arrays([answers["question_id"].astype(str), answers["model"].astype(str), turn])
    keep = ~keys.duplicated()
    style = answer_style(answers["answer"].to_numpy(dtype=object)[keep])[features]
    style.index = keys[keep]
    jturn = judgments["turn"].fillna(1).astype(int).to_numpy() if "turn" in judgments.columns else np.ones(n, int)
    qid = judgments["question_id"].astype(str).to_numpy()

    def lookup(models: pd.Series) -> np.ndarray:
        index = pd.MultiIndex.from_arrays([qid, models.astype(str).to_numpy(), jturn])
        position = style.index.get_indexer(index)
        out = np.full((len(index), len(features)), np.nan)
        out[position >= 0] = style.to_numpy()[position[position >= 0]]
        return out

    return lookup(judgments["model_a"]), lookup(judgments["model_b"])
