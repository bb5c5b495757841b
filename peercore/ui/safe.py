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
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from peercore.untrusted import escape_markdown, markdown_code

__all__ = ["md", "md_lines", "code", "text"]


def md(value: object) -> str:
    """``value`` as Markdown that renders as its plain text, on one line (None or NaN gives "")."""
    return "" if _missing(value) else escape_markdown(value)


def md_lines(value: object) -> str:
    """Like :func:`md`, keeping line breaks (for an alert or caption that quotes several lines)."""
    return "" if _missing(value) else escape_markdown(value, multiline=True)


def code(value: object) -> str:
    """``value`` as an inline code span: a name inside PeerBoard's Markdown, in monospace."""
    return "" if _missing(value) else markdown_code(value)


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
