"""1-5 criteria rubrics and ScaleEval's criteria variations.

ScaleEval (Chern et al. 2024, Sec. 5 and Table 5) tests whether a judge really reads the
criterion by replacing the general rubric with altered versions and measuring how far
its verdicts move. :func:`criteria_variation` derives those versions from any rubric,
deterministically from a seed, following the transformations visible in ScaleEval's
released rubric files (``helpfulness-2`` ... ``helpfulness-6``):

``general``
    The rubric unchanged.
``shortened``
    Each level loses its title prefix (``"Helpful - "``) and keeps the rest of its
    description as it is (ScaleEval's ``helpfulness-2``: the level titles removed).
``gibberish``
    About 40 % of the letters of each level are replaced by look-alike symbols
    (``$ # @ % & * ! /`` and digits), like ``"H$lpfu& - Th$ r!s0*n$e ..."``.
``shuffled``
    The words of each level are put in a random order (all words kept).
``flipped``
    Each word is spelled backwards, punctuation staying in place
    (``"Helpful, detailed."`` -> ``"lufpleH, deliated."``).
``masked``
    About 35 % of the letters of each level are replaced by ``_``.

The seed decides which characters or which order; ``general``, ``shortened`` and
``flipped`` do not use it. Level numbers (1-5) are never altered, so the output still
reads as a 1-5 scale.

**The criterion's name.** ScaleEval's judge prompt (Table 6) carries the criteria text
only (``[Criteria]: {criteria}``), so a varied rubric is all the judge learns of the
criterion. Every variation but ``general`` therefore hides the name: the rubric's
:attr:`Rubric.header` (the templates' ``{criterion_header}``) reads ``[Criteria]``
instead of ``[Criterion: Helpfulness]``; a masked or gibberish rubric is not
introduced by the word it masks. The general rubric keeps its named header.

A criterion with a variation is written ``<criterion>/<variation>`` (``helpfulness/gibberish``;
``helpfulness:gibberish`` is read too): :func:`load_rubric` gives the varied rubric, review
and debate jobs send it with rubric-bearing templates and store the verdicts under that
criterion, and the Meta-evaluation compares them with the gold of the plain criterion
(ScaleEval Table 5).
"""

from __future__ import annotations

import hashlib
import random
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Mapping

from ..errors import PeercoreError

__all__ = ["Rubric", "RubricError", "VARIATIONS", "criteria_variation", "load_rubric", "list_rubrics", "split_criterion"]

VARIATIONS = ("general", "shortened", "gibberish", "shuffled", "flipped", "masked")
_GIBBERISH = "$#@%&*!/0347"
_TITLE = re.compile(r"^\s*[^.!?]{1,40}?\s+-\s+")
_WORD = re.compile(r"\S+")


class RubricError(PeercoreError):
    """A rubric is unknown or malformed."""


@dataclass(frozen=True)
class Rubric:
    """A criterion with one description per score level.

    Attributes
    ----------
    name : identifier, e.g. ``"helpfulness"`` (variants add ``"-<kind>"``).
    title : human-readable criterion name.
    levels : ``{1: "...", ..., 5: "..."}``, ascending.
    hides_name : the prompt must not name the criterion (a criteria variation, see
        :attr:`header`).
    """

    name: str
    title: str
    levels: Mapping[int, str]
    hides_name: bool = False

    def __post_init__(self) -> None:
        if not self.levels:
            raise RubricError(f"rubric {self.name!r}: levels must not be empty")
        bad = [k for k in self.levels if not isinstance(k, int)]
        if bad:
            raise RubricError(f"rubric {self.name!r}: level keys must be integers, got {bad!r}")

    def render(self) -> str:
        """``"1: ...\\n2: ...\\n..."``, the text a ``{rubric}`` placeholder takes."""
        return "\n".join(f"{k}: {self.levels[k]}" for k in sorted(self.levels))

    @property
    def header(self) -> str:
        """The line introducing the rubric in a prompt (a template's ``{criterion_header}``).

        ``[Criterion: <title>]``, or ScaleEval's bare ``[Criteria]`` (Chern et al. 2024,
        Table 6) when :attr:`hides_name`: a criteria variation must not be undone by
        naming the criterion beside it.
        """
        return "[Criteria]" if self.hides_name else f"[Criterion: {self.title}]"

    @classmethod
    def from_mapping(cls, name: str, levels: Mapping, *, title: str | None = None) -> "Rubric":
        """From ``{"1": "...", ...}`` (string or integer keys), e.g. a ScaleEval YAML block."""
        try:
            parsed = {int(k): str(v) for k, v in levels.items()}
        except (TypeError, ValueError):
            raise RubricError(f"rubric {name!r}: level keys must be integers, got {list(levels)!r}") from None
        return cls(name=name, title=title or name, levels=dict(sorted(parsed.items())))


def list_rubrics() -> list[str]:
    """Names of the shipped rubrics (``scaleeval_rubrics.toml``), sorted."""
    return sorted(_rubrics())


def split_criterion(name: str) -> tuple[str, str | None]:
    """``("helpfulness", "gibberish")`` from ``helpfulness/gibberish`` (or ``:``); ``(name, None)`` without one."""
    for mark in ("/", ":"):
        base, sep, variation = str(name).rpartition(mark)
        if sep and variation in VARIATIONS:
            return base, variation
    return str(name), None


def load_rubric(name: str) -> Rubric:
    """A shipped rubric by name, or a variation of one (``helpfulness/gibberish``, see :func:`criteria_variation`).

    Raises
    ------
    RubricError
        If the name (or the criterion before the variation) is unknown; the known names
        and variations are listed.
    """
    table = _rubrics()
    base, variation = split_criterion(name)
    if base not in table:
        raise RubricError(f"rubric must be one of {sorted(table)} (optionally /<variation>, one of {VARIATIONS}); "
                          f"got {name!r}")
    return table[base] if variation is None else criteria_variation(table[base], variation)


def criteria_variation(rubric: Rubric, kind: str, seed: int = 0) -> Rubric:
    """A deterministic variation of a rubric (ScaleEval, Chern et al. 2024, Table 5).

    Parameters
    ----------
    rubric : the general rubric.
    kind : one of :data:`VARIATIONS` (see the module docstring for what each does).
    seed : decides the random choices of ``gibberish``, ``shuffled`` and ``masked``;
        each level uses its own stream derived from (seed, kind, rubric name, level), so
        the result does not depend on call order.

    Returns
    -------
    Rubric
        Named ``"<name>-<kind>"``, with the general rubric's title and ``hides_name``
        set, so prompts introduce it as ``[Criteria]`` without the criterion's name
        (``general`` returns the rubric unchanged).

    Raises
    ------
    ValueError
        If ``kind`` is not one of :data:`VARIATIONS` (the value is quoted).
    """
    if kind not in VARIATIONS:
        raise ValueError(f"kind must be one of {VARIATIONS}, got {kind!r}")
    if kind == "general":
        return rubric
    transform = {"shortened": _shorten, "gibberish": _gibberish, "shuffled": _shuffle,
                 "flipped": _flip, "masked": _mask}[kind]
    levels = {level: transform(text, _rng(seed, kind, rubric.name, level)) for level, text in rubric.levels.items()}
    return Rubric(name=f"{rubric.name}-{kind}", title=rubric.title, levels=levels, hides_name=True)


def _rng(seed: int, kind: str, name: str, level: int) -> random.Random:
    blob = f"{seed}|{kind}|{name}|{level}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(blob).digest()[:8], "big"))


def _shorten(text: str, rng: random.Random) -> str:
    return _TITLE.sub("", text, count=1).strip()


def _replace_letters(text: str, rng: random.Random, *, rate: float, alphabet: str) -> str:
    out = []
    for ch in text:
        if ch.isalpha() and rng.random() < rate:
            out.append(rng.choice(alphabet))
        else:
            out.append(ch)
    return "".join(out)


def _gibberish(text: str, rng: random.Random) -> str:
    return _replace_letters(text, rng, rate=0.4, alphabet=_GIBBERISH)


def _mask(text: str, rng: random.Random) -> str:
    return _replace_letters(text, rng, rate=0.35, alphabet="_")


def _shuffle(text: str, rng: random.Random) -> str:
    words = _WORD.findall(text)
    original = list(words)
    for _ in range(10):  # avoid returning the original order for texts of 2+ distinct words
        rng.shuffle(words)
        if words != original or len(set(original)) < 2:
            break
    return " ".join(words)


def _flip(text: str, rng: random.Random) -> str:
    def flip_word(match: re.Match) -> str:
        word = match.group(0)
        core = re.match(r"^(\W*)(.*?)(\W*)$", word)
        lead, middle, trail = core.group(1), core.group(2), core.group(3)
        return lead + middle[::-1] + trail

    return _WORD.sub(flip_word, text)


@lru_cache(maxsize=1)
def _rubrics() -> dict[str, Rubric]:
    data = tomllib.loads(resources.files(__package__).joinpath("scaleeval_rubrics.toml").read_text(encoding="utf-8"))
    out = {}
    for name, table in data.items():
        levels = {k: v for k, v in table.items() if k != "title"}
        out[name] = Rubric.from_mapping(name, levels, title=table.get("title", name))
    return out
