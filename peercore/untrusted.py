"""Untrusted text stays text: escaping for the two renderers the dashboard feeds.

Questions, answers, rationales, names of models, judges and annotators, criteria,
scenarios, notes, file names, provenance and error messages come from files, models or
people. PeerBoard shows them; it never lets them format the screen, fetch an image,
draw a badge or make a link (DESIGN.md: "untrusted text stays text"). These pure
functions (no streamlit; :mod:`peercore.charts` uses them too) turn such text into
source that renders as exactly that text:

- :func:`escape_markdown` for Streamlit Markdown (``st.markdown``, captions, alerts,
  headers, widget labels, radio / pills / segmented-control options, help tooltips);
- :func:`markdown_code` for a name shown as inline code inside PeerBoard's Markdown;
- :func:`escape_plotly` for every string a plotly figure draws (titles, tick labels,
  legend entries, hover text, annotations: plotly reads ``<b>``, ``<a href>``,
  ``<br>``... and ``&...;`` entities in all of them).

Where Streamlit offers a plain-text element (``st.text``, ``st.code``, dataframes,
selectbox / multiselect options) nothing needs escaping; :mod:`peercore.ui.safe`
writes down which element gets what.

What Streamlit's Markdown would otherwise do with text (streamlit 1.67; the frontend
is react-markdown with remark-gfm, remark-math, remark-directive, remark-emoji and
Streamlit's own plugins), and how :func:`escape_markdown` stops it:

=========================================  ==============================================
construct                                  stopped by
=========================================  ==============================================
images ``![](url)``, links ``[x](url)``,   ``\\[`` ``\\]`` (and ``\\<`` for ``<url>``)
footnotes, reference definitions
raw HTML (shown as text anyway), entities  ``\\<`` ``\\>`` ``\\&``
emphasis, strike-through, code spans       ``\\*`` ``\\~`` ``\\```, ``\\_`` unless between two
                                           letters or digits (``base_url`` stays)
LaTeX ``$...$``                            ``\\$``
directives ``:red-badge[..]``, ``:help``,  ``\\[`` ``\\]`` ``\\{`` ``\\}`` (no label, no
``:color[..]{..}``, ``:small[..]``         attributes), and ``\\:`` before a name Streamlit
                                           gives a meaning (``help``, ``small``,
                                           ``shimmer``, ``color``, colours, ``*-badge``);
                                           any other bare ``:name`` reads as written
tables                                     ``\\|``
headings, lists, quotes, code fences,      ``\\#`` ``\\-`` ``\\+`` ``\\=`` ``1\\.`` at a line
thematic breaks, setext underlines         start; ``>``, `````, ``~``, ``*`` anywhere;
                                           indentation kept as no-break spaces
GFM autolink literals ``www.x.y``,         a word joiner (U+2060) after ``www``, after
``http://``, ``a@b.c`` (matched on the     ``:`` before ``//``, after ``@``: these are found
parsed text, so escapes do not help)       in the parsed text, where backslashes are gone
emoji ``:smile:``, ``:streamlit:`` logo,   a word joiner after the opening ``:``
icons ``:material/x:`` / ``:material_x:``
typography ``->``, ``<=``, ``--``          a word joiner between the two characters
=========================================  ==============================================

The word joiner is invisible and zero-width: the text reads and wraps as written (it
does travel along when the text is copied).
"""

from __future__ import annotations

import re

__all__ = ["escape_markdown", "markdown_code", "escape_plotly", "WORD_JOINER"]

WORD_JOINER = "\u2060"
_NBSP = "\u00a0"

# Characters escaped wherever they are, and the line starts that would open a block.
# An underscore run between two letters or digits (``base_url``) can neither open nor
# close emphasis (CommonMark's flanking rules), so only the others are escaped.
_ALWAYS = re.compile(r"([\\`*~\[\]{}<>&$|])")
_UNDERSCORES = re.compile(r"_+")
# A text directive is ``:name`` plus an optional ``[label]`` and ``{attributes}``; with
# ``[`` and ``{`` escaped it is bare. Streamlit turns a bare directive it does not know
# back into its text (``human:ann`` reads "human:ann"), but gives these names a meaning
# (an icon, a style, an empty badge: the text would be lost), so their colon is escaped.
_DIRECTIVE = re.compile(
    r":(?=(?:help|small|shimmer|color|(?:red|orange|yellow|green|blue|violet|purple|gray|grey|primary|rainbow)"
    r"(?:-background)?(?:-badge)?)(?![\w-]))",
    re.IGNORECASE,
)
_LINE_START = re.compile(r"^(\s*)(?:([#+=-])|(\d+)([.)]))", re.MULTILINE)

# Patterns Streamlit's plugins find in the parsed text (after escapes are resolved):
# break each with a word joiner where it would start to match.
_JOIN_AFTER = re.compile(
    r"(?<=:)(?=[\w+-]+:)"      # :smile: :+1: :streamlit: :material_x:
    r"|(?<=:)(?=material/)"    # :material/x: (rewritten to :material_x: before parsing)
    r"|(?<=:)(?=//)"           # http:// https://
    r"|(?<=www)(?=\.)"         # www.example.com
    r"|(?<=@)(?=[\w.+-])",     # someone@example.com
    re.IGNORECASE,
)
_TYPOGRAPHY = re.compile(r"(?<!\S)(<->|->|<-|--|>=|<=|~=)(?!\S)")

_NEWLINES = re.compile(r"\r\n?")
_ONE_LINE = re.compile(r"[ \t]*\n\s*")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


def escape_markdown(text: object, *, multiline: bool = False) -> str:
    r"""Markdown source that Streamlit renders as ``text``, literally and inert.

    Parameters
    ----------
    text : any value; None gives "" and anything else is ``str()``-ed.
    multiline : keep the line breaks (each becomes a hard break, blank lines separate
        paragraphs, leading indentation is kept as no-break spaces). By default line
        breaks become spaces, as fits a label, a header or a phrase inside a sentence.

    Returns
    -------
    str
        Safe to embed anywhere in PeerBoard's own Markdown (inside ``**...**``, a badge
        label ``:blue-badge[...]``, after a line start): it cannot end or open a construct.

    Examples
    --------
    >>> print(escape_markdown("**bold** :red-badge[FAKE] ![](x.png)"))
    \*\*bold\*\* \:red-badge\[FAKE\] !\[\](x.png)
    """
    if text is None:
        return ""
    value = _NEWLINES.sub("\n", str(text))
    if not multiline:
        return _escape_line(_indent(_ONE_LINE.sub(" ", value)))
    paragraphs = _BLANK_LINES.split(value.strip("\n"))
    return "\n\n".join("  \n".join(_escape_line(_indent(line)) for line in paragraph.split("\n"))
                       for paragraph in paragraphs)


def _indent(line: str) -> str:
    stripped = line.lstrip(" \t" + _NBSP)
    lead = line[: len(line) - len(stripped)]
    return lead.replace("\t", "    ").replace(" ", _NBSP) + stripped


def _escape_line(text: str) -> str:
    text = _TYPOGRAPHY.sub(lambda m: m.group(1)[0] + WORD_JOINER + m.group(1)[1:], text)
    text = _JOIN_AFTER.sub(WORD_JOINER, text)
    text = _ALWAYS.sub(r"\\\1", text)
    text = _UNDERSCORES.sub(_escape_underscores, text)
    text = _DIRECTIVE.sub(r"\\:", text)
    return _LINE_START.sub(_escape_line_start, text)


def _escape_underscores(match: re.Match) -> str:
    run, text, start, end = match.group(0), match.string, match.start(), match.end()
    if 0 < start and end < len(text) and text[start - 1].isalnum() and text[end].isalnum():
        return run
    return "\\_" * len(run)


def _escape_line_start(match: re.Match) -> str:
    lead, marker, digits, delimiter = match.groups()
    return lead + ("\\" + marker if marker else digits + "\\" + delimiter)


def markdown_code(text: object) -> str:
    """``text`` as a Markdown inline code span (monospace, nothing inside it is Markdown).

    The fence is one backtick longer than the longest run of backticks in ``text``, so
    no backtick in the text can close it; line breaks become spaces. ``:material/`` gets
    a word joiner after its colon (Streamlit rewrites that string in its raw source,
    code spans included). None or "" gives "".
    """
    if text is None:
        return ""
    value = _ONE_LINE.sub(" ", _NEWLINES.sub("\n", str(text)))
    if value == "":
        return ""
    value = value.replace(":material/", ":" + WORD_JOINER + "material/")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value[0] == "`" or value[-1] == "`" or (value[0] == value[-1] == " " and value.strip()) else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def escape_plotly(text: object) -> str:
    """``text`` for a plotly label: ``&``, ``<`` and ``>`` as entities, so no tag renders.

    Plotly draws a subset of HTML in every piece of text (``<b>``, ``<i>``, ``<br>``,
    ``<sup>``, ``<span style>``, ``<a href>``) and decodes ``&...;`` entities once;
    escaped, the text is drawn as written. None gives "". Untrusted text never goes
    into a ``hovertemplate`` itself (``%{...}`` there is a placeholder): it travels in
    ``meta``, ``text`` or the data and the template refers to it.
    """
    if text is None:
        return ""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
