"""Reading an absolute score: from the reply's text, never guessed, and from token probabilities.

Prompt scoring (Liusie, Manakul, Gales 2024, the absolute baseline of Sec. 5; Zheng et
al. 2023, MT-Bench single-answer grading) asks a judge for a score of one candidate on a
scale. Two readings:

* **text** (:func:`parse_score`): the number the reply gives. It is read only where the
  reply says it is the score -- ``Score: 7``, ``Rating: 7/9``, FastChat's ``[[7]]`` -- or
  when the whole reply is the number (``7``, ``7/9``, ``7.``). No score, two different
  scores, a range (``7-8``, ``7 or 8``), a denominator other than the scale's top
  (``7/10`` on 1-9) or a score outside the scale make the reply *invalid*: it is stored
  with ``valid = 0`` and its raw text, never rounded, clipped or guessed.
* **probabilities** (:func:`expected_score`): with next-token log-probabilities after
  the prefill (``Score: ``), the probability of each score label
  :math:`P(s) = \\exp(\\ell_s) / \\sum_{s'} \\exp(\\ell_{s'})` over the scale's labels and
  the expected score :math:`\\hat s = \\sum_s s\\,P(s)` (Liusie et al.'s prompt-scoring
  with probabilities). Labels must be single tokens for the judge: Qwen's tokenizer
  splits ``10`` into ``1`` and ``0``, so the default scale is 1-9.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ParsedScore", "parse_score", "expected_score", "check_scale"]

_NUM = r"(\d+(?:\.\d+)?)"
_OUT_OF = rf"(?:\s*(?:/|out\s+of)\s*{_NUM})?"
_RANGE = r"\s*(?:-|–|—|to|or|and)\s*\d"
_MARKED = re.compile(rf"\b(?:score|rating|rated|grade)\b\s*(?:is|of)?\s*[:=]?\s*\**\s*{_NUM}{_OUT_OF}", re.IGNORECASE)
_BRACKETED = re.compile(rf"\[\[\s*{_NUM}{_OUT_OF}\s*\]\]")
_WHOLE = re.compile(rf"^\s*\**\s*{_NUM}{_OUT_OF}\s*\**\s*[.!]?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedScore:
    """A score read from text.

    Attributes
    ----------
    score : the score, or None when the reply is invalid.
    problem : why it is invalid (``"no score"``, ``"two different scores (7 and 8)"``,
        ``"8 is outside the scale 1-5"`` ...), else None.
    """

    score: float | None
    problem: str | None = None

    @property
    def valid(self) -> bool:
        return self.score is not None


def check_scale(low: int, high: int) -> tuple[int, int]:
    """``(low, high)`` as whole numbers with ``low < high``.

    Raises
    ------
    ValueError
        If either is not a whole number or ``low >= high`` (the values are quoted).
    """
    for name, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"scale {name} must be a whole number, got {value!r}")
    if low >= high:
        raise ValueError(f"scale must run from a lower to a higher score, got {low!r} to {high!r}")
    return int(low), int(high)


def parse_score(text: str, *, low: int, high: int) -> ParsedScore:
    """The score a reply gives on the scale ``low``-``high``, or why there is none.

    Parameters
    ----------
    text : the reply, with the prefill in front (``"Score: 7"``).
    low, high : the scale.

    Returns
    -------
    ParsedScore
        ``score`` when exactly one score value is given (it may be repeated), on the
        scale, with no other denominator; otherwise ``score=None`` and the reason.
    """
    low, high = check_scale(low, high)
    found: list[tuple[str, str | None, int]] = []
    for pattern in (_BRACKETED, _MARKED):
        for match in pattern.finditer(text):
            found.append((match.group(1), match.group(2), match.end()))
    if not found:
        whole = _WHOLE.match(text)
        if whole is None:
            return ParsedScore(None, "no score")
        found.append((whole.group(1), whole.group(2), whole.end(1)))
    values = []
    for number, denominator, end in found:
        if re.match(_RANGE, text[end:]) and denominator is None:
            return ParsedScore(None, f"a range ({text[end - len(number):end + 12].strip()!r}), not one score")
        if denominator is not None and float(denominator) != high:
            return ParsedScore(None, f"a score out of {denominator}, but the scale is {low}-{high}")
        values.append(float(number))
    distinct = sorted(set(values))
    if len(distinct) > 1:
        shown = " and ".join(f"{v:g}" for v in distinct[:3])
        return ParsedScore(None, f"two different scores ({shown})")
    value = distinct[0]
    if not low <= value <= high:
        return ParsedScore(None, f"{value:g} is outside the scale {low}-{high}")
    return ParsedScore(value)


def expected_score(top_logprobs: Mapping[str, float] | None, labels: Sequence[str]
                   ) -> tuple[float, dict[str, float], float] | None:
    """Expected score over the score tokens' probabilities.

    .. math:: P(s) = \\frac{\\sum_{t:\\,\\mathrm{strip}(t) = s} e^{\\ell_t}}
              {\\sum_{s'} \\sum_{t:\\,\\mathrm{strip}(t) = s'} e^{\\ell_t}}, \\qquad
              \\hat s = \\sum_s s \\, P(s)

    (tokens equal to a label after stripping spaces are summed: ``"7"`` and ``" 7"``).

    Parameters
    ----------
    top_logprobs : first-token log-probabilities ``{token: logprob}``.
    labels : the scale's labels (``"1"`` ... ``"9"``), each a number.

    Returns
    -------
    ``(expected, distribution, mass)`` -- ``distribution`` maps each label to its
    normalised probability and ``mass`` is the probability the labels had before
    normalising (how much of the judge's next token was a score at all) -- or None when
    no label appears.
    """
    if not top_logprobs:
        return None
    mass = {label: 0.0 for label in labels}
    for token, logprob in top_logprobs.items():
        piece = str(token).strip()
        if piece in mass and logprob is not None and math.isfinite(logprob):
            mass[piece] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    distribution = {label: value / total for label, value in mass.items()}
    expected = sum(float(label) * p for label, p in distribution.items())
    return expected, distribution, total
