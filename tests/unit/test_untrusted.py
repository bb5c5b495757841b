"""peercore.untrusted: hostile text in, inert text out, and nothing of it lost.

Two properties are checked on every escaped string:

- *inert*: reading the source as CommonMark + GFM + Streamlit's plugins would, no
  character that opens a construct is left unescaped (images, links, HTML, entities,
  emphasis, code, LaTeX, directives, tables, block starts), and the parsed text holds no
  pattern Streamlit's plugins replace after parsing (emoji / logo / icon shortcodes,
  autolink literals, typographic arrows);
- *faithful*: undoing the escapes gives back the original text.

The real rendering is checked in a browser by tests/e2e/test_browser_untrusted_text.py.
"""

from __future__ import annotations

import html
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peercore.untrusted import WORD_JOINER, escape_markdown, escape_plotly, markdown_code

HOSTILE = [
    "![](http://tracker.invalid/track.png)",
    ":red-badge[FAKE VERDICT]",
    "[click](http://evil.invalid/) and <http://evil.invalid/auto>",
    '<img src="http://tracker.invalid/x.png"> <b>bold</b> <a href="http://evil.invalid">a</a>',
    "&lt;b&gt;escaped&lt;/b&gt; &amp; &#60;",
    "www.evil.invalid and spy@evil.invalid and https://evil.invalid/x",
    "$e^{i\\pi}$ and $$x$$",
    ":material/warning: :material_warning: :smile: :+1: :streamlit: :help :small[x] :color[x]{foreground=red}",
    "bare :red-badge :shimmer :primary-background-badge and :unknown[label]{a=b}",
    "**strong** __strong__ *em* _em_ ~~struck~~ `code` ``co`de``",
    "# heading\n## heading\n> quote\n- item\n+ item\n* item\n1. item\n2) item\n---\n***\n___\n===",
    "```\nfence\n```\n~~~\nfence\n~~~\n    indented code\n\tindented by a tab",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "[ref]: http://evil.invalid/ref\n[^1]\n[^1]: footnote",
    "a -> b <- c <-> d -- e >= f <= g ~= h",
    "trailing backslash \\\nhard break  \nnext",
    "<!-- comment --> <script>alert(1)</script>",
]


# ----------------------------------------------------------------- reading the source back

_ASCII_PUNCTUATION = set(string.punctuation)
# Bare text directives streamlit 1.67's Markdown gives a meaning (any other bare ``:name``
# is turned back into its text); with a label ``[..]`` or attributes ``{..}`` any name is
# a directive, but ``[`` and ``{`` are never left unescaped.
STREAMLIT_DIRECTIVES = re.compile(
    r"(help|small|shimmer|color|(red|orange|yellow|green|blue|violet|purple|gray|grey|primary|rainbow)"
    r"(-background)?(-badge)?)(?![\w-])", re.IGNORECASE)


def unescape(source: str) -> tuple[str, set[int]]:
    """The text CommonMark reads from ``source`` (backslash escapes resolved), and the
    positions in it that were escaped."""
    out, escaped, k = [], set(), 0
    while k < len(source):
        if source[k] == "\\" and k + 1 < len(source) and source[k + 1] in _ASCII_PUNCTUATION:
            escaped.add(len(out))
            out.append(source[k + 1])
            k += 2
        else:
            out.append(source[k])
            k += 1
    return "".join(out), escaped


def active_characters(source: str) -> list[str]:
    """What in ``source`` could still open a Markdown construct (empty when inert)."""
    text, escaped = unescape(source)
    found = []
    for k, char in enumerate(text):
        if k in escaped:
            continue
        previous = text[k - 1] if k else ""
        following = text[k + 1] if k + 1 < len(text) else ""
        line_start = text[:k].rsplit("\n", 1)[-1].strip(" \t") == ""
        if char in "\\`*~[]{}<>&$|":
            found.append(f"{char!r} at {k}")
        elif char == "_" and _in_open_run(text, k):
            found.append(f"'_' at {k}")
        elif char == ":" and (name := STREAMLIT_DIRECTIVES.match(text, k + 1)):
            found.append(f"directive ':{name.group(0)}' at {k}")
        elif line_start and char in "#+=-":
            found.append(f"block start {char!r} at {k}")
        elif line_start and char.isdigit() and (number := re.match(r"\d+[.)]", text[k:])) \
                and k + len(number.group(0)) - 1 not in escaped:
            found.append(f"ordered list at {k}")
    if re.search(r"^( {4,}|\t)", text, re.MULTILINE):
        found.append("indented code")
    # What Streamlit's plugins look for in the parsed text:
    for name, pattern in (("shortcode", r":[\w+-]+:"), ("autolink www", r"www\."), ("autolink url", r"://"),
                          ("autolink e-mail", r"@[\w.+-]"), ("typography", r"(?<!\S)(<->|->|<-|--|>=|<=|~=)(?!\S)"),
                          ("material icon", r":material/")):
        if re.search(pattern, text, re.IGNORECASE):
            found.append(name)
    return found


def _in_open_run(text: str, k: int) -> bool:
    """Whether the underscore run around ``k`` could open or close emphasis (is not between two letters or digits)."""
    start = k
    while start > 0 and text[start - 1] == "_":
        start -= 1
    end = k
    while end < len(text) and text[end] == "_":
        end += 1
    inside = start > 0 and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()
    return not inside


def read_back(source: str, *, multiline: bool) -> str:
    """The text a reader sees: escapes resolved, word joiners gone, hard breaks as line breaks,
    indentation (no-break spaces) as spaces."""
    text, _ = unescape(source)
    text = text.replace(WORD_JOINER, "")
    if multiline:
        text = text.replace("  \n", "\n")
    return "\n".join(re.sub(r"^\u00a0+", lambda m: " " * len(m.group(0)), line) for line in text.split("\n"))


def _indentation(line: str) -> str:
    return re.sub(r"^[ \t\u00a0]+", lambda m: m.group(0).replace("\t", "    ").replace("\u00a0", " "), line)


def expected_one_line(original: str) -> str:
    """What :func:`escape_markdown` promises to keep on one line: the text, line breaks as spaces."""
    return _indentation(re.sub(r"[ \t]*\n\s*", " ", original.replace("\r\n", "\n").replace("\r", "\n")))


def expected_multiline(original: str) -> str:
    """What :func:`escape_markdown` promises to keep with ``multiline=True``: lines, indentation
    (tabs as four spaces), paragraphs (several blank lines read as one)."""
    text = original.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    text = re.sub(r"\n[ \t]*(?:\n[ \t]*)+", "\n\n", text)
    return "\n".join(_indentation(line) for line in text.split("\n"))


# ----------------------------------------------------------------------- escape_markdown


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_markdown_is_inert_on_one_line(hostile):
    source = escape_markdown(hostile)
    assert "\n" not in source
    assert active_characters(source) == []
    assert read_back(source, multiline=False) == expected_one_line(hostile)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_markdown_is_inert_with_its_lines_kept(hostile):
    source = escape_markdown(hostile, multiline=True)
    assert active_characters(source) == []
    assert read_back(source, multiline=True) == expected_multiline(hostile)


def test_the_reported_attacks_are_escaped_exactly():
    assert escape_markdown("![](http://host/track.png)") == f"!\\[\\](http:{WORD_JOINER}//host/track.png)"
    assert escape_markdown(":red-badge[FAKE VERDICT]") == "\\:red-badge\\[FAKE VERDICT\\]"
    assert escape_markdown("<b>x</b>") == "\\<b\\>x\\</b\\>"


def test_plain_names_stay_readable():
    """Escaping touches only what could act: the usual names and messages read unchanged in the source."""
    for plain in ("gpt4", "vicuna-13b", "qwen2.5-coder-1.5b", "OPENAI_API_KEY", "base_url", "claude 3.5 (sonnet)",
                  "question 12", "win rate 0.802", "human:ann", "openai:gpt-4o", "debate:consensus"):
        assert escape_markdown(plain) == plain
    # A bare directive Streamlit knows would turn into an icon, a style or an empty badge.
    for known in ("human:help", "judge:red-badge", "x:small", "x:Blue-Background", "x:color"):
        assert escape_markdown(known) == known.replace(":", "\\:")
    assert escape_markdown("x.5-coder-1.5b@agent-t0.7a") == f"x.5-coder-1.5b@{WORD_JOINER}agent-t0.7a"


def test_line_breaks_become_hard_breaks_and_paragraphs():
    assert escape_markdown("Verdict: 1\nReason: shorter", multiline=True) == "Verdict: 1  \nReason: shorter"
    assert escape_markdown("one\n\n\n\ntwo", multiline=True) == "one\n\ntwo"
    assert escape_markdown("one\r\ntwo") == "one two"
    assert escape_markdown("    indented", multiline=True) == "\u00a0" * 4 + "indented"


def test_missing_values_give_nothing():
    assert escape_markdown(None) == "" and markdown_code(None) == "" and escape_plotly(None) == ""
    assert escape_markdown(12) == "12"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(string.punctuation + " \t\n" + "abcxyz019_:@.wW/é\u00a0")), max_size=40))
def test_any_text_is_inert_and_comes_back(text):
    one_line, lines = escape_markdown(text), escape_markdown(text, multiline=True)
    assert active_characters(one_line) == []
    assert active_characters(lines) == []
    assert read_back(one_line, multiline=False) == expected_one_line(text)
    assert read_back(lines, multiline=True) == expected_multiline(text)


# -------------------------------------------------------------------------- markdown_code


@pytest.mark.parametrize("name", ["local:qwen2.5-coder-1.5b@agent-t0.7a", "a`b", "``x``", "`", " x ", "![](http://t/x)",
                                  ":red-badge[FAKE]", "$x$", "<b>x</b>"])
def test_a_code_span_holds_the_name_verbatim(name):
    span = markdown_code(name)
    fence = re.match(r"`+", span).group(0)
    assert span.endswith(fence) and len(fence) > max((len(r) for r in re.findall(r"`+", name)), default=0)
    inner = span[len(fence):-len(fence)]
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip():
        inner = inner[1:-1]  # CommonMark strips one space from each side
    assert inner == name


def test_a_code_span_keeps_material_icons_from_being_rewritten():
    """Streamlit rewrites ":material/" to ":material_" in the raw source, code spans included."""
    assert ":material/" not in markdown_code(":material/warning:")
    assert markdown_code(":material/warning:").replace(WORD_JOINER, "") == "`:material/warning:`"
    assert markdown_code("one\ntwo") == "`one two`"


# ------------------------------------------------------------------------- escape_plotly


@pytest.mark.parametrize("hostile", HOSTILE)
def test_plotly_labels_hold_no_tag_and_decode_to_the_text(hostile):
    label = escape_plotly(hostile)
    assert "<" not in label and ">" not in label
    assert re.fullmatch(r"([^&]|&(amp|lt|gt);)*", label, re.DOTALL)  # every & starts one of our entities
    assert html.unescape(label) == hostile


def test_plotly_escaping_is_injective():
    names = ["<b>a</b>", "&lt;b&gt;a&lt;/b&gt;", "a & b", "a &amp; b"]
    assert len({escape_plotly(n) for n in names}) == len(names)
