"""Untrusted text on the dashboard: the rule, and the few helpers pages use to keep it.

Text that came from a file, a model or a person (questions, answers, rationales, names of
models, judges, speakers and annotators, criteria, scenarios, question ids, notes,
study names, descriptions and provenance, file names, run errors and logs) is shown as
text: it never formats the screen, fetches an image, draws a badge or makes a link.
Labels PeerBoard writes itself (verdict badges, round titles, headings) keep their
Markdown; the untrusted parts inside them are escaped.

The rule, per element
---------------------
============================================  ============================================
element                                       untrusted text goes in as
============================================  ============================================
a body of text: question, answer, rationale,  :func:`text` (``st.text``: no Markdown at
study description                             all, line breaks kept, wraps)
an error, a run's error, a file's problem     PeerBoard's words + :func:`md_lines` (escaped,
in ``st.error`` / ``st.warning``              its line breaks kept) in the alert
logs                                          ``st.code(..., language=None)`` (plain)
tables (annotators' notes, provenance,        ``st.dataframe`` / ``st.data_editor`` cells,
run errors, import log ...)                   index and column headers are plain text;
                                              ``st.column_config`` ``help`` is Markdown:
                                              PeerBoard's words only
a name or value inside PeerBoard's Markdown:  :func:`md` (escaped, reads as plain text)
``st.markdown``, captions, alerts, headers,   or :func:`code` (inline code, for names in
``st.metric`` labels, ``help`` tooltips,      transcripts)
badge labels
widget labels: buttons, checkboxes, toggles,  :func:`md` (Streamlit renders every widget
expanders, tabs, text inputs ...              label as Markdown)
options of ``st.radio``, ``st.pills``,        ``format_func=safe.md`` (these options are
``st.segmented_control``                      Markdown); the value stays the raw string
options of ``st.selectbox``,                  as they are (plain text in Streamlit)
``st.multiselect``
plotly figures                                built by :mod:`peercore.charts`, which
                                              escapes every string it draws
============================================  ============================================

The escaping itself is pure and lives in :mod:`peercore.untrusted` (charts use it
without streamlit); its docstring lists each Markdown construct and how it is stopped.

What a user copies is what the data says
----------------------------------------
Backslash escapes are resolved when Markdown is parsed, so they never reach the screen or
the clipboard. A few patterns, though, are found by Streamlit's plugins in the parsed text
(``www.x.y``, ``http://``, ``name@host.tld``, ``:smile:``, ``->``) or in the raw source
(``:material/x:``), where no escape helps; :func:`peercore.untrusted.escape_markdown`
breaks them with an invisible word joiner (U+2060), which travels with copy-paste into a
filter or the CLI. :func:`md` and :func:`md_lines` never insert it: a word holding such a
pattern is shown as an inline code span instead (monospace; nothing in a code span is
Markdown, and no plugin looks inside one), and ``:material/`` is kept from being rewritten
by ending the span before its ``m``. The text read, selected and copied is the data's.
"""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from peercore.untrusted import WORD_JOINER, escape_markdown

__all__ = ["md", "md_lines", "code", "text"]


def md(value: object) -> str:
    """``value`` as Markdown that renders as its plain text, on one line (None or NaN gives "")."""
    return "" if _missing(value) else _markdown(value, multiline=False)


def md_lines(value: object) -> str:
    """Like :func:`md`, keeping line breaks (for an alert or caption that quotes several lines)."""
    return "" if _missing(value) else _markdown(value, multiline=True)


def code(value: object) -> str:
    """``value`` as an inline code span: a name inside PeerBoard's Markdown, in monospace."""
    if _missing(value):
        return ""
    return _code_span(_ONE_LINE.sub(" ", str(value).replace("\r\n", "\n").replace("\r", "\n")))


# A placeholder for a word shown as code while the rest is escaped: private-use characters, which no
# Markdown rule or escape touches, around the word's number.
_HOLD = re.compile("\ue000(\\d+)\ue001")
_WORD = re.compile(r"\S+")
_ONE_LINE = re.compile(r"[ \t]*\n\s*")
_MATERIAL = re.compile(r":(?=material/)", re.IGNORECASE)


def _markdown(value: object, *, multiline: bool) -> str:
    """:func:`peercore.untrusted.escape_markdown`, with the words it would break with a word joiner as code."""
    words: list[str] = []

    def hold(match: re.Match) -> str:
        word = match.group(0)
        sentinel = "\ue000" in word or "\ue001" in word  # the data's own private-use characters: kept as code
        if not sentinel and escape_markdown(word).count(WORD_JOINER) <= word.count(WORD_JOINER):
            return word
        words.append(word)
        return f"\ue000{len(words) - 1}\ue001"

    held = _WORD.sub(hold, str(value))
    escaped = escape_markdown(held, multiline=multiline)
    return _HOLD.sub(lambda m: _code_span(words[int(m.group(1))]), escaped)


def _code_span(word: str) -> str:
    """``word`` as inline code; ``:material/`` split before its ``m`` (Streamlit rewrites it even in code)."""
    if word == "":
        return ""
    cut = _MATERIAL.search(word)
    if cut is not None:
        head, letter, tail = word[:cut.end()], word[cut.end()], word[cut.end() + 1:]
        return _code_span(head) + letter + _code_span(tail)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", word)), default=0) + 1)
    pad = " " if word[0] == "`" or word[-1] == "`" or (word[0] == word[-1] == " " and word.strip()) else ""
    return f"{fence}{pad}{word}{pad}{fence}"


def text(body: object, *, empty: str = "(none recorded)", container=None) -> None:
    """Show a body of untrusted text with ``st.text`` (no Markdown; line breaks kept).

    ``empty`` is PeerBoard's own placeholder, shown as a caption when ``body`` is None,
    NaN or blank. ``container`` is a column or container to write into (default: here).
    """
    where = st if container is None else container
    if _missing(body) or not str(body).strip():
        where.caption(empty)
    else:
        where.text(str(body))


def _missing(value: object) -> bool:
    return value is None or (not isinstance(value, str) and pd.api.types.is_scalar(value) and bool(pd.isna(value)))
