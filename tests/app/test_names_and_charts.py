"""Issue 21 through the pages (AppTest): names told apart, headers that fit, no invisible characters.

- A name column of a table wider than its place keeps the characters that tell any two
  names apart ("local:qwen2.5-coder-1.5b@agent-t0.7a" and "...@agent-t0.7b"), where it used
  to be cut to one common width ("local:qwen2.5-cod" for four judges).
- Meta-evaluation's and the bias model's headers are a few plain words; the detail is in
  each column's help.
- What the pages write holds no invisible character (names used to carry U+2060 word
  joiners, which travel with copy-paste), and hostile text is still inert.

tests/e2e/test_browser_offline_and_names.py measures the drawn names in a real browser.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from app_studies import PAGE_TITLES, PLAIN, _build_study, app_test, open_page, problems
from peercore.store import Store

JUDGES = ("local:qwen2.5-coder-1.5b", "local:qwen2.5-coder-1.5b@agent-t0.7a", "local:qwen2.5-coder-1.5b@agent-t0.7b")
MODELS = ("local:smollm2-135m", "local:smollm2-135m@t1.0", "gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18@long")
# A conservative width of one character of the grid's 14 px font, and the cell's left padding (px): the
# browser test measures the real font.
CHAR_PX, PADDING_PX = 7.0, 8
ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad]")
CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
AUTOLINK = re.compile(r"www\.|https?://|@evil|:smile:|:material/", re.I)


@pytest.fixture
def names(db_file) -> dict:
    """The synthetic study's shape with the sample's kind of names: long, alike but for their tails."""
    words = dataclasses.replace(PLAIN, models=MODELS, llm_judges=JUDGES)
    return _build_study(Store(db_file), "names", words, seed=0)


def _columns(element) -> dict:
    return json.loads(element.proto.columns) if element.proto.columns else {}


def _table(at, column: str, name: str):
    """The dataframe on screen whose ``column`` holds ``name``."""
    for element in at.dataframe:
        frame = element.value
        values = frame.index if column == frame.index.name else frame.get(column, [])
        if name in set(map(str, values)):
            return element
    raise AssertionError(f"no table with {name!r} in its {column!r} column")


def _shown_alike(element, column: str) -> dict[str, list[str]]:
    """Names of ``column`` whose first characters that fit its configured width (if any) are the same."""
    frame = element.value
    values = [str(v) for v in (frame.index if column == frame.index.name else frame[column])]
    width = _columns(element).get(column, {}).get("width")
    keep = len(max(values, key=len)) if width is None else int((width - PADDING_PX) // CHAR_PX)
    groups: dict[str, set[str]] = {}
    for value in values:
        groups.setdefault(value[:keep], set()).add(value)
    return {head: sorted(group) for head, group in groups.items() if len(group) > 1}


def test_judge_health_tells_the_judges_apart(names):
    at = open_page(app_test(), "bias")
    assert problems(at) == []
    health = _table(at, "judge", JUDGES[1])
    assert _shown_alike(health, "judge") == {}


def test_leaderboard_tells_the_models_apart(names):
    at = open_page(app_test(), "leaderboard")
    assert problems(at) == []
    table = _table(at, "model", MODELS[1])
    assert _shown_alike(table, "model") == {}


def _labels_and_help(element) -> dict[str, tuple[str, str | None]]:
    """Header shown and its help, per column of the frame."""
    config = _columns(element)
    frame = element.value
    return {str(c): (config.get(str(c), {}).get("label") or str(c), config.get(str(c), {}).get("help"))
            for c in frame.columns}


def test_meta_evaluation_headers_are_short_with_the_detail_in_help(synthetic):
    at = open_page(app_test(), "meta_evaluation")
    assert problems(at) == []
    table = next(e for e in at.dataframe if "Fleiss' kappa (PRD Table 3)" in e.value.columns)
    shown = _labels_and_help(table)
    assert shown["Fleiss' kappa (PRD Table 3)"][0] == "Fleiss' kappa"
    assert "PRD" in shown["Fleiss' kappa (PRD Table 3)"][1]
    assert shown["unparsed (counted as misses)"][0] == "unparsed"
    assert "misses" in shown["unparsed (counted as misses)"][1]
    assert max(len(label) for label, _ in shown.values()) <= 17, shown


def test_bias_model_headers_are_short_with_the_detail_in_help(synthetic):
    at = open_page(app_test(), "bias")
    assert problems(at) == []
    table = next(e for e in at.dataframe if "P shift interval" in e.value.columns)
    shown = _labels_and_help(table)
    assert max(len(label) for label, _ in shown.values()) <= 12, shown
    assert all(help_ for column, (label, help_) in shown.items() if label != column), shown


def _written(at) -> list[tuple[str, str]]:
    """(element, text) of every string the page sends to the browser: Markdown, labels, help, options, text."""
    found = []

    def walk(node):
        yield node
        for child in getattr(node, "children", {}).values():
            yield from walk(child)

    for node in walk(at._tree):
        proto, kind = getattr(node, "proto", None), getattr(node, "type", "")
        if proto is None:
            continue
        for field in ("body", "label", "help", "text", "placeholder"):
            value = getattr(proto, field, None)
            if isinstance(value, str) and value:
                found.append((f"{kind}.{field}", value))
        for option in getattr(proto, "options", []):
            value = option if isinstance(option, str) else getattr(option, "content", None)
            if isinstance(value, str) and value:
                found.append((f"{kind}.options", value))
    return found


@pytest.mark.parametrize("page", sorted(PAGE_TITLES))
def test_no_invisible_character_on_a_page_of_hostile_names(hostile, page):
    """Names with www., e-mail-like and URL parts, shortcodes and arrows: escaped without U+2060, still inert."""
    at = open_page(app_test(), page)
    assert problems(at) == []
    written = _written(at)
    assert written, page
    invisible = [f"{where}: {text[:80]!r}" for where, text in written if ZERO_WIDTH.search(text)]
    assert invisible == []
    active = [f"{where}: {text[:80]!r}" for where, text in written
              if where.split(".")[0] not in {"text", "code", "selectbox", "multiselect", "json"}
              and not where.endswith(".placeholder")  # a text box's placeholder is plain text
              and AUTOLINK.search(CODE_SPAN.sub("", text))]
    assert active == []  # autolinks, emoji and icons are inside code spans, where no plugin acts


def test_a_name_column_keeps_what_tells_names_apart_and_the_table_its_budget():
    """tables.fitted_widths: the name column is never cut to a common width that makes two names alike."""
    import pandas as pd

    from peercore.ui.tables import fitted_widths

    health = pd.DataFrame({"judge": [*JUDGES, "local:qwen2.5-coder-1.5b@agent-t0", "local:smollm2-135m"],
                           **{f"a rather long header {k}": ["some text"] * 5 for k in range(7)}})
    widths = fitted_widths(health, 880)
    keep = int((widths["judge"] - PADDING_PX) // CHAR_PX)
    assert len({name[:keep] for name in health["judge"]}) == 5, widths
    assert sum(widths.values()) <= 880
    # Fifteen long text columns: names further right give way, the table still fits its place.
    wide = pd.DataFrame({f"text {k}": [f"a sentence that differs only at its very end, number {i}" for i in range(3)]
                         for k in range(15)})
    assert sum(fitted_widths(wide, 880).values()) <= 880


def test_the_leading_names_stay_whole_and_numbers_are_never_cut():
    """The AlpacaEval leaderboard at 1366 px (issue 21, "Names are never cut so that two rows read alike"): the
    model names are whole ("FuseChat-Llama-3.2-3B-Instruct" was cut to "FuseChat-Lla") and so is the first
    interval, left to right as the budget allows; the notes column on the right gives way."""
    import pandas as pd

    from peercore.ui.tables import _px, fitted_widths

    models = ["FuseChat-Llama-3.2-3B-Instruct", "gpt4_1106_preview", "claude-2.1", "gpt-3.5-turbo-0613",
              "vicuna-13b-v1.3"]
    table = pd.DataFrame({
        "rank": [1, 1, 3, 4, 4], "model": models, "Bradley-Terry": [1256.0, 1236.2, 926.7, 816.5, 764.6],
        "95% interval": ["1232.9 – 1282.1", "1216.0 – 1250.4", "896.9 – 951.2", "768.0 – 851.0", "724.1 – 804.1"],
        "votes": [805, 3220, 805, 805, 805], "rank spread": ["1–2", "1–2", "3", "4–5", "4–5"],
        "robust interval": ["1231.8 – 1280.4", "1220.6 – 1251.9", "896.0 – 957.3", "779.5 – 853.6", "723.4 – 805.7"],
        "avg length": [1976, 2049, 1097, 797, 1061],
        "fragile": ["", "", "", "swaps with vicuna-13b-v1.3 (3 votes)", "swaps with gpt-3.5-turbo-0613 (3 votes)"],
    })
    formats = {"Bradley-Terry": "%.1f", "votes": "%d", "avg length": "%d"}
    widths = fitted_widths(table, 880, formats=formats)
    assert sum(widths.values()) <= 880
    assert widths["model"] >= _px(len(models[0]))
    assert widths["95% interval"] >= _px(len("1232.9 – 1282.1"))
    assert widths["fragile"] < _px(len("swaps with gpt-3.5-turbo-0613 (3 votes)"))
