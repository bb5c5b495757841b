"""Reading a judge's verdict from its reply: the last verdict line (or a leading
``Verdict: N``), never a guess.

Three schemes, one per template family, map a reply to the canonical ``winner`` values
(DESIGN.md: ``model_a`` = the answer shown first):

======================  ==============  ==============  ============
scheme                  ``model_a``     ``model_b``     ``tie``
======================  ==============  ==============  ============
``prd`` (PRD Table 8)   ``1``           ``2``           ``3``
``scaleeval``           ``1``           ``2``           ``0``
``ab`` (Liusie, MT-B.)  ``A``           ``B``           ``C``
======================  ==============  ==============  ============

In every scheme a named reference also counts (``Answer 1``, ``Assistant 2``,
``Response A``, ``Submission 2``, ``Output (b)``), and so do tie words (``tie``,
``equally good``, ``both are equivalent``).

How a reply is read
-------------------
Unless the reply opens with its verdict (*Verdict first*, below), the parser looks at
the last :data:`MAX_LINES` non-empty lines, bottom up, after removing markdown (``**``,
``__``, backticks, ``#`` headings, ``>`` quotes, list bullets) and surrounding quotes.
The first line that is a *verdict line* decides. A verdict line is one of, in this order
of precedence:

1. a bracketed verdict anywhere in it: ``[[A]]``, ``[[2]]``, ``[[tie]]`` (MT-Bench);
2. a bare verdict: ``1``, ``"2".``, ``Answer 1``, ``**Assistant 2**``, ``(a)``, ``Tie``;
3. a keyword line: ``Verdict: Answer 1``, ``Final answer: 2``, ``Therefore, I choose
   "2".``, ``The better answer is Answer 1`` (trailing text after the label is fine:
   ``Verdict: Answer 1, because ...``);
4. a comparative sentence: ``Answer 1 is clearly better than Answer 2.``,
   ``I prefer Response B``, ``Both answers are equally good.``

Lines that mention no verdict (``I hope this helps!``, ``[The End of Reviewer 1's
Evaluation]``) are skipped. Lines ending with ``:`` are headings or lead-ins and are
skipped (``**Answer 1:**``). If the deciding line is unclear -- two different labels
(``Verdict: 1 or 2``), a negated comparison (``Answer 1 is not better``), a number that
is not a label of the scheme (``5``), a keyword with no readable label (``Final answer:
42``) -- the result is invalid with ``verdict=None``: nothing is guessed, and the raw
text is kept for audit.

Verdict first
-------------
Templates for small models with a short reply budget (``scaleeval_compact_*``) ask for
the verdict *first*, ``Verdict: 1`` on its own line, then a reason that may be cut off
by ``max_tokens``. So before the bottom-up reading: when the first non-empty line is
exactly ``Verdict: <label>`` with a bare label of the scheme (``Verdict: 2``,
``**Verdict:** 0``, ``Verdict: 1.``; not ``Verdict: Answer 1`` or ``Verdict: 1 because
...``), that line decides, and the reasons below it are not read as verdicts (``Reason:
Submission 2 is not as clear`` does not spoil it; neither does a rubric score such as
``Score: 4``). If a later line restates a verdict -- a bracketed verdict ``[[2]]``, a
bare label ``2`` / ``Submission 2``, or a ``(Final) verdict ...`` line -- that is unclear
or names a different verdict, the reply contradicts itself and is invalid: it is not
known which layout the model followed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ParsedVerdict", "parse_verdict", "SCHEMES", "MAX_LINES"]

SCHEMES = ("prd", "scaleeval", "ab")
MAX_LINES = 4

_TOKENS = {
    "prd": {"1": "model_a", "2": "model_b", "3": "tie"},
    "scaleeval": {"1": "model_a", "2": "model_b", "0": "tie"},
    "ab": {"a": "model_a", "b": "model_b", "c": "tie"},
}
_REF_LABEL = {"1": "model_a", "a": "model_a", "2": "model_b", "b": "model_b"}

_NOUN = r"(?:answer|assistant|response|submission|output|candidate|option|model|summary|passage|reply)"
_NOUNREF = re.compile(rf"\b{_NOUN}\s*(?:#|no\.?\s*)?\(?\s*([12ab])\s*\)?(?![\w])")
_TIE_BARE = re.compile(
    r"^(?:it'?s\s+|it\s+is\s+)?(?:a\s+)?(?:tie|tied|draw|equal|equivalent|same|both|neither|"
    r"tie\s*\(?both\s*(?:good|bad)\)?|both\s+(?:good|bad))$")
_TIE_START = re.compile(r"^(?:a\s+)?(?:tie|tied|draw|equal|equally|equivalent|same|both|neither)\b")
_TIE_SENTENCE = re.compile(
    r"\b(?:it'?s\s+a\s+tie|it\s+is\s+a\s+tie|(?:both|the\s+two)\s+(?:answers|responses|submissions|assistants|outputs)"
    r"\s+are\s+(?:equally\s+\w+|equivalent|(?:about|roughly)\s+the\s+same|of\s+(?:equal|similar|the\s+same)\s+quality)"
    r"|(?:are|is)\s+equally\s+(?:good|bad|helpful|strong|weak|correct|accurate)|neither\s+(?:answer|response|submission|"
    r"assistant|one)\s+is\s+better)\b")
_KEYWORD = re.compile(
    r"^(?:(?:final|my|the|overall|our|clear)\s+)*(?:verdict|answer|decision|choice|preference|winner|judgment|judgement|"
    r"result|output|conclusion|selection|rating|score|evaluation|vote)\s*(?:is\s*:?|:|=|-|\u2014)\s*(?P<expr>.+)$")
_CHOOSE = re.compile(
    r"^(?:(?:therefore|thus|so|hence|overall|in\s+conclusion|in\s+summary|finally|based\s+on\s+[^,]+),?\s*)?"
    r"(?:i|we)\s+(?:would\s+|will\s+)?(?:choose|select|pick|prefer|vote\s+for|go\s+with|favou?r)\s*:?\s*(?P<expr>.+)$")
_BETTER_IS = re.compile(
    r"\b(?:the\s+)?(?:better|best|preferred|winning|stronger|superior)\s+(?:answer|response|submission|one|"
    r"assistant|output|option|choice)\s+(?:here\s+)?(?:is|would\s+be)\s*:?\s*(?P<expr>.+)$")
_COMPARATIVE = re.compile(
    rf"{_NOUNREF.pattern}\s+(?:is|was|seems|appears|looks|remains)?\s*(?:to\s+be\s+)?"
    r"(?:clearly\s+|slightly\s+|much\s+|significantly\s+|far\s+|overall\s+|definitely\s+|marginally\s+|somewhat\s+)?"
    r"(?:the\s+)?(?:better|superior|preferable|preferred|stronger|best|winner|wins|more\s+(?:helpful|accurate|relevant|"
    r"complete|correct|detailed|informative|coherent|useful|appropriate))\b")
_PREFER = re.compile(rf"\b(?:prefer|choose|pick|select|favou?r)\s+{_NOUNREF.pattern}")
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor)\b|n't\b")
_BRACKET = re.compile(r"\[\[\s*([^\[\]]{1,24}?)\s*\]\]")
_MARKUP = re.compile(r"(\*\*|__|`+|~~)")
_LEAD = re.compile(r"^(?:[#>]+\s*|[-*+\u2022]\s+)+")
_QUOTES = "\"'\u201c\u201d\u2018\u2019"
_VERDICT_FIRST = re.compile(r"verdict\s*:\s*[\(\[]?\s*([0-9a-z])\s*[\)\]]?")
_VERDICT_WORD = re.compile(r"^(?:(?:final|my|the|overall|our|clear)\s+)*verdict\b")


@dataclass(frozen=True)
class ParsedVerdict:
    """A verdict read from a judge's reply.

    Attributes
    ----------
    verdict : ``"model_a"``, ``"model_b"``, ``"tie"``, or None when unreadable.
    valid : True iff a verdict was read.
    raw : the reply exactly as received.
    line : the (original) line the verdict came from, or the unclear line that made the
        reply invalid; None when no verdict line was found.
    """

    verdict: str | None
    valid: bool
    raw: str
    line: str | None = None


def parse_verdict(text: str | None, *, scheme: str = "prd") -> ParsedVerdict:
    """Read the verdict from the last verdict line of ``text``, or from a first line ``Verdict: N``.

    See the module docstring for the rules.

    Parameters
    ----------
    text : the judge's reply (with any prefill prepended). None reads as empty.
    scheme : ``"prd"`` (1/2/3 = first/second/tie, PRD Table 8), ``"scaleeval"``
        (1/2/0, Chern et al. 2024) or ``"ab"`` (A/B/C, Liusie et al.; MT-Bench ``[[A]]``).

    Returns
    -------
    ParsedVerdict
        ``valid=False, verdict=None`` when no line gives a clear verdict.

    Raises
    ------
    ValueError
        If ``scheme`` is unknown (the value is quoted).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    raw = "" if text is None else str(text)
    first = _verdict_first(raw, scheme)
    if first is not None:
        return first
    seen = 0
    for original in reversed(raw.splitlines()):
        if not original.strip():
            continue
        seen += 1
        if seen > MAX_LINES:
            break
        status, verdict = _classify(original, scheme)
        if status == "verdict":
            return ParsedVerdict(verdict, True, raw, original)
        if status == "ambiguous":
            return ParsedVerdict(None, False, raw, original)
    return ParsedVerdict(None, False, raw, None)


def _verdict_first(raw: str, scheme: str) -> ParsedVerdict | None:
    """The verdict-first layout (module docstring), or None when the first line is not ``Verdict: <label>``."""
    lines = [line for line in raw.splitlines() if line.strip()]
    if not lines:
        return None
    match = _VERDICT_FIRST.fullmatch(_normalise(lines[0]))
    if not match or match.group(1) not in _TOKENS[scheme]:
        return None
    verdict = _TOKENS[scheme][match.group(1)]
    for line in lines[1:]:
        if _restates_verdict(line, scheme) and _classify(line, scheme) != ("verdict", verdict):
            return ParsedVerdict(None, False, raw, line)
    return ParsedVerdict(verdict, True, raw, lines[0])


def _restates_verdict(line: str, scheme: str) -> bool:
    """A verdict statement: a bracketed verdict, a bare label, or a ``(Final) verdict ...`` line."""
    s = _normalise(line)
    return bool(_BRACKET.search(s) or _token_verdict(s.strip("()[]{} "), scheme) is not None
                or _VERDICT_WORD.match(s))


def _normalise(line: str) -> str:
    s = _MARKUP.sub("", line).strip()
    s = _LEAD.sub("", s).strip()
    s = s.strip(_QUOTES + " \t").lower()
    s = re.sub(r"[\"\u201c\u201d\u2018\u2019]", "", s)  # quotes around labels: I choose "2"
    s = re.sub(r"\s+", " ", s)
    return s.rstrip(" .!;,")


def _token_verdict(token: str, scheme: str) -> str | None:
    token = token.strip().strip("()[]{}'\" .").lower()
    tokens = _TOKENS[scheme]
    if token in tokens:
        return tokens[token]
    ref = _NOUNREF.fullmatch(token)
    if ref:
        return _REF_LABEL[ref.group(1)]
    if _TIE_BARE.match(token):
        return "tie"
    return None


def _classify(original: str, scheme: str) -> tuple[str, str | None]:
    s = _normalise(original)
    if not s or s.endswith(":"):
        return "none", None

    # 1. bracketed verdicts, MT-Bench style
    brackets = _BRACKET.findall(s)
    if brackets:
        verdicts = {_token_verdict(b, scheme) for b in brackets}
        if None in verdicts or len(verdicts) != 1:
            return "ambiguous", None
        return "verdict", verdicts.pop()

    # 2. the whole line is a verdict
    bare = s.strip("()[]{} ")
    verdict = _token_verdict(bare, scheme)
    if verdict is not None:
        return "verdict", verdict
    if re.fullmatch(r"-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?", bare) or re.fullmatch(r"[a-e]", bare):
        return "ambiguous", None  # a score-like token that is not a label of this scheme

    # 3. keyword lines
    for pattern in (_KEYWORD, _CHOOSE):
        match = pattern.match(s)
        if match:
            return _expression(match.group("expr"), scheme)
    match = _BETTER_IS.search(s)
    if match:
        return _expression(match.group("expr"), scheme)

    # 4. comparative sentences and tie sentences
    found = {_REF_LABEL[m.group(1)] for m in _COMPARATIVE.finditer(s)}
    found |= {_REF_LABEL[m.group(1)] for m in _PREFER.finditer(s)}
    tie = bool(_TIE_SENTENCE.search(s))
    if found or tie:
        if _NEGATION.search(s) and not (tie and not found):
            return "ambiguous", None
        if tie:
            found.add("tie")
        if len(found) != 1:
            return "ambiguous", None
        return "verdict", found.pop()
    return "none", None


def _expression(expr: str, scheme: str) -> tuple[str, str | None]:
    """Read the label at the start of a keyword's expression; reject conflicting labels."""
    expr = expr.strip().strip(_QUOTES).strip()
    expr = re.sub(r"^(?:the\s+)?(?:final\s+)?(?:verdict|answer|choice)\s*(?:is\s*)?:?\s*", "", expr) or expr
    verdict, rest = None, ""
    ref = _NOUNREF.match(expr)
    bracket = re.match(r"^[\(\[]?\s*([0-9a-z])\s*[\)\]]?(?![\w])", expr)
    tie = _TIE_START.match(expr)
    if ref:
        verdict, rest = _REF_LABEL[ref.group(1)], expr[ref.end():]
    elif bracket and bracket.group(1) in _TOKENS[scheme]:
        verdict, rest = _TOKENS[scheme][bracket.group(1)], expr[bracket.end():]
    elif tie:
        verdict, rest = "tie", expr[tie.end():]
    else:
        return "ambiguous", None
    # a second, different label in the rest ("1 or 2", "Answer 1 / Answer 2") makes it unclear
    others = {_REF_LABEL[m.group(1)] for m in _NOUNREF.finditer(rest)}
    if re.search(r"(?:\bor\b|/|\band\b)\s*(?:[0-9a-c]\b|" + _NOUN + ")", rest):
        return "ambiguous", None
    if others - {verdict} and not re.search(r"\b(?:than|over|to)\b", rest):
        return "ambiguous", None
    return "verdict", verdict
