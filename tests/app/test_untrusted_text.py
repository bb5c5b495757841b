"""Untrusted text is text, page by page under AppTest (issue 8).

The hostile study (app_studies.build_hostile_study) has Markdown and HTML in every text
field. On every page, with its tabs, expanders and toggles opened:

- every string Streamlit renders as Markdown (bodies of markdown, captions, alerts and
  headings; labels and help of widgets, metrics, expanders and tabs; radio and
  pills / segmented-control options; progress text) carries the data only escaped: no
  image, link, badge, directive, HTML tag, LaTeX, shortcode or autolink survives
  (inline code spans, which show their content verbatim, are allowed);
- bodies of text (question, answers, rationales, description) are ``st.text``
  elements holding the data as written, line breaks included;
- plotly figures hold names only escaped.

tests/e2e/test_browser_untrusted_text.py checks the same in a real browser.
"""

from __future__ import annotations

import json
import re

import pytest

from app_studies import BADGE, HOSTILE, HOSTILE_BLOCK, HOSTILE_LINE, HOSTILE_STUDY, app_test, open_page, problems
from peercore.ui import safe  # what the pages write: escaped, words Markdown plugins would act on as code
from peercore.ui.adjudication import STICKY_BAR_CSS

# What must never appear in Markdown source unescaped (each would render as something).
ACTIVE = [
    ("image", re.compile(r"!\[")), ("link", re.compile(r"(?<!\\)\](?<!\\)\(")), ("badge / directive", re.compile(r"(?<!\\):[a-z-]+\[")),
    ("HTML tag", re.compile(r"(?<!\\)<[a-z/!]", re.I)), ("autolink", re.compile(r"www\.|https?://|@evil", re.I)),
    ("LaTeX", re.compile(r"(?<!\\)\$e\^")), ("shortcode", re.compile(r":(smile|streamlit|material[/_]\w+):")),
    ("entity", re.compile(r"(?<!\\)&lt;")), ("emphasis", re.compile(r"(?<!\\)\*\*strong|(?<![\\\w])_em(?<!\\)_")),
    ("strike-through", re.compile(r"(?<!\\)~~struck")), ("code fence", re.compile(r"(?<!\\)```")),
    ("heading", re.compile(r"^\s*#+ A heading", re.M)), ("table", re.compile(r"(?<!\\)\|---")),
    ("quote or list", re.compile(r"^\s*(> a quote|- a list item|1\. a numbered)", re.M)),
]
CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
# PeerBoard's own badges (peercore.ui.data.verdict_badge / status_badge): the only directives allowed.
OUR_BADGES = re.compile(r":(?:blue|orange|gray|red|green|violet)-badge\[(?:consensus: )?"
                        r"(?:Submission 1|Submission 2|Tie|no verdict|agreed|unresolved|adjudicated)\]")
# PeerBoard's own style sheets (constants, no data in them): the only HTML a page writes.
OUR_STYLES = {STICKY_BAR_CSS}
PLAIN_TYPES = {"text", "code", "json", "dataframe", "arrow_data_frame", "plotly_chart", "selectbox", "multiselect",
               "exception", "empty"}


def walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child)


def markdown_strings(at) -> list[tuple[str, str]]:
    """(element type and field, source) of everything on screen Streamlit renders as Markdown."""
    found = []
    for node in walk(at._tree):
        proto, kind = getattr(node, "proto", None), getattr(node, "type", "")
        if proto is None or kind in PLAIN_TYPES:
            continue
        for field in ("body", "label", "help", "text"):
            value = getattr(proto, field, None)
            if kind == "html" and value in OUR_STYLES:
                continue
            if isinstance(value, str) and value:
                found.append((f"{kind}.{field}", value))
        for option in getattr(proto, "options", []):
            value = option if isinstance(option, str) else getattr(option, "content", None)
            if isinstance(value, str) and value:
                found.append((f"{kind}.options", value))
    return found


def rendered_from_data(at) -> list[str]:
    """Markdown sources on screen in which hostile data is still active."""
    bad = []
    for where, source in markdown_strings(at):
        outside_code = OUR_BADGES.sub("", CODE_SPAN.sub("", source))
        for name, pattern in ACTIVE:
            if pattern.search(outside_code):
                bad.append(f"{where}: {name} in {source[:120]!r}")
    return bad


def plotly_markup(at) -> list[str]:
    """Strings of the plotly figures on screen that hold a raw tag (PeerBoard's <br> / <extra> in templates aside)."""
    bad = []
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)

        def strings(value, path):
            if isinstance(value, str):
                yield path, value
            elif isinstance(value, dict):
                for key, item in value.items():
                    if key != "template":
                        yield from strings(item, f"{path}.{key}")
            elif isinstance(value, list):
                for item in value:
                    yield from strings(item, path)

        for path, value in strings(spec, "figure"):
            cleaned = re.sub(r"<br>|<extra></extra>", "", value) if path.endswith("hovertemplate") else value
            if "<" in cleaned:
                bad.append(f"{path}: {value[:80]!r}")
    return bad


def assert_all_text(at, view: str) -> None:
    assert problems(at) == [], view
    assert rendered_from_data(at) == [], view
    assert plotly_markup(at) == [], view


def texts(at) -> list[str]:
    return [t.value for t in at.text]


# ------------------------------------------------------------------------------- pages


@pytest.fixture
def at(hostile):
    return app_test()


def test_studies_page(at):
    assert at.session_state["study"] == HOSTILE_STUDY
    assert_all_text(at, "studies")
    assert at.header[0].value == safe.md(HOSTILE_STUDY)
    assert safe.md(HOSTILE_STUDY) in at.radio(key="studies_pick").options
    assert HOSTILE_BLOCK.strip() in texts(at)  # the description, as written


@pytest.mark.parametrize("tab", ["Table", "Elo curves", "Heatmaps", "Reviewer weights", "What-if"])
def test_leaderboard_tabs(at, tab):
    open_page(at, "leaderboard")
    at.session_state["lb_tab"] = tab
    at.run()
    assert_all_text(at, tab)
    if tab == "What-if":
        labels = [c.label for c in at.checkbox if c.key.startswith("lb_whatif::")]
        assert sorted(labels) == sorted(safe.md(j) for j in HOSTILE.llm_judges)
        at.checkbox(key=f"lb_whatif::{HOSTILE.llm_judges[0]}").uncheck().run()
        assert_all_text(at, "what-if, one judge unticked")
    if tab != "What-if":
        assert at.get("plotly_chart"), tab


def test_leaderboard_warnings_name_judges_escaped(at):
    open_page(at, "leaderboard")
    at.selectbox(key="lb_method").set_value("Peer Rank weighted").run()
    at.multiselect(key="lb_judges").set_value([*HOSTILE.llm_judges, HOSTILE.humans[0]]).run()
    assert_all_text(at, "peer rank with a human")
    assert any(safe.md(HOSTILE.humans[0]) in w.value for w in at.warning)


@pytest.mark.parametrize("page", ["bias", "efficiency", "data", "reviewers", "meta_evaluation"])
def test_pages_without_transcripts(at, page):
    open_page(at, page)
    assert_all_text(at, page)


def test_meta_evaluation_criteria_are_escaped_options(at):
    open_page(at, "meta_evaluation")
    options = at.segmented_control(key="meta_criterion").proto.options
    assert safe.md(HOSTILE.criterion) in [o.content for o in options]
    at.segmented_control(key="meta_criterion").set_value(HOSTILE.criterion).run()  # the value stays the raw criterion
    assert_all_text(at, "one criterion")


def test_debate_transcript_shows_replies_as_text(at):
    open_page(at, "debates")
    assert_all_text(at, "debates")
    shown = texts(at)
    assert HOSTILE.question(0).strip() in shown  # the question, as written
    assert sum(HOSTILE_BLOCK in t for t in shown) >= 6  # every turn's reply, its lines kept
    assert any(HOSTILE.answer(HOSTILE.models[0], "").strip().split("\n")[0] in t for t in shown)  # the answers
    badges = [m.value for m in at.markdown if "-badge[" in m.value]
    assert badges and all(BADGE not in CODE_SPAN.sub("", b) for b in badges)  # PeerBoard's badges only
    at.radio(key="deb_kind").set_value("Discussions").run()
    assert_all_text(at, "discussion")
    assert HOSTILE_LINE in texts(at)


def test_adjudication_item_and_decisions(at):
    open_page(at, "adjudication")
    at.text_input(key="annotator").input("apptest").run()
    assert_all_text(at, "queue head")
    assert at.subheader[0].value == f"Debate #1 · question {safe.md(HOSTILE.question_id(0))}"
    at.toggle(key="adj_reveal").set_value(True).run()
    assert_all_text(at, "models revealed")
    assert any(m.value.startswith("**Submission 1** — `") for m in at.markdown)  # names as inline code
    assert HOSTILE.question(0).strip() in texts(at)
    at.text_input(key="adj_note_0").input(HOSTILE_LINE)
    at.button(key="adj_one").click().run()
    assert_all_text(at, "after a decision with a hostile note")


def test_hostile_upload_errors_and_preview_are_text(hostile):
    """A file named and filled with Markdown: its preview and its error name it as text."""
    at = open_page(app_test(), "data")
    name = f"votes {BADGE} ![](x).csv"
    good = ("question_id,model_a,model_b,judge,winner\n"
            f"q1,{HOSTILE.models[0]},{HOSTILE.models[1]},\"human:{BADGE}\",model_a\n").encode()
    at.file_uploader(key="data_upload_0").set_value((name, good, "text/csv")).run()
    assert_all_text(at, "preview")
    assert any(safe.md(name) in s.value for s in at.subheader)
    bad = good + f"q2,{HOSTILE.models[0]},{HOSTILE.models[1]},x,\"{BADGE} ![](http://tracker.invalid/e.png)\"\n".encode()
    at = open_page(app_test(), "data")
    at.file_uploader(key="data_upload_0").set_value((name, bad, "text/csv")).run()
    assert at.error, "a bad winner must be refused"
    assert rendered_from_data(at) == []


class _FinishedHandle:
    """A run handle that already ended: its result carries a server's (hostile) error."""

    run_id = "0123456789abcdef"

    def __init__(self, *, raises: bool) -> None:
        self.raises = raises

    def done(self) -> bool:
        return True

    def wait(self, timeout=None):
        from types import SimpleNamespace

        if self.raises:
            raise RuntimeError(f"the server answered: {HOSTILE_BLOCK}")
        return SimpleNamespace(status="failed", error=f"server said: {HOSTILE_LINE}", done=1, total=2)


@pytest.mark.parametrize("raises", [False, True], ids=["run error", "run exception"])
def test_a_run_error_and_its_log_are_text(hostile, raises):
    from peercore.ui.runs import LiveRun

    live = LiveRun(handle=_FinishedHandle(raises=raises), kind="review")
    live.log.append(f"1/2 failed — {HOSTILE_LINE}")
    at = app_test()
    at.session_state["run_handle"] = live
    open_page(at, "reviewers")
    assert rendered_from_data(at) == []
    shown = "\n".join(e.value for e in [*at.warning, *at.error])
    assert safe.md(HOSTILE_LINE) in shown or safe.md_lines(HOSTILE_BLOCK) in shown
    assert any(HOSTILE_LINE in c.value for c in at.code)  # the log, verbatim in a code block


def test_stored_values_inside_peerboard_badges_are_escaped():
    from peercore.ui import data

    assert data.verdict_badge("model_a") == ":blue-badge[Submission 1]"
    assert data.verdict_badge("model_b", prefix="consensus") == ":orange-badge[consensus: Submission 2]"
    assert data.verdict_badge(f"x] {BADGE}") == f":gray-badge[{safe.md(f'x] {BADGE}')}]"
    assert data.verdict_badge(f"x] {BADGE}", prefix="consensus").startswith(":gray-badge[consensus: x\\]")
    assert data.status_badge(BADGE) == f":gray-badge[{safe.md(BADGE)}]"
    assert data.name_md("a`b") == "``a`b``" and data.name_md(f"spy@evil {BADGE}") == f"`spy@evil {BADGE}`"


def test_downloads_of_the_hostile_study_get_one_safe_file_name(at, monkeypatch):
    """Study names may hold ``/`` (``<b>study</b>``): a download is named by peercore.io.formats.file_name_part,
    one file name with no folder, no markup and nothing a file system refuses."""
    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator

    from peercore.io.formats import file_name_part

    names: list[str] = []
    original = DeltaGenerator.download_button

    def recording(self, label, data, file_name=None, *args, **kwargs):
        names.append(file_name)
        return original(self, label, data, file_name, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", recording)
    monkeypatch.setattr(st, "download_button", lambda *args, **kwargs: recording(st._main, *args, **kwargs))
    for page in ("leaderboard", "data"):
        open_page(at, page)
        assert problems(at) == [], page
    prefix = file_name_part(HOSTILE_STUDY)
    assert "/" in HOSTILE_STUDY and prefix == "hostile _red-badge[FAKE VERDICT] _b_study__b_"
    assert len(names) >= 2 and all(name.startswith(prefix + "-") for name in names), names
    assert not [name for name in names if set(name) & set('/\\:*?"<>|')], names
