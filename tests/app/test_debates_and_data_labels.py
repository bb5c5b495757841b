"""Issue 21, numbers and names on Discussions & debates and Data.

Before: the transcript list on Discussions & debates had 14 columns, nearly all cut at 1366 px
(the leader-effect table 9); the Data page's Format list offered ``prd-discussions``,
``human-scores``, ``usr`` and ``judge-scores`` as they are spelled on the command line; the
import preview of an AlpacaEval folder counted the baseline's answers once per file (6,440
shown, 4,025 stored).
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from app_studies import app_test, open_page, problems
from peercore.io.importer import FORMATS
from peercore.reports import number_formats
from peercore.store import Store
from peercore.ui.tables import FULL_WIDTH, _px, fitted_widths

# ----------------------------------------------------------------------------- debates: wide tables

#: Columns a table may show by default and still fit a 1366 px screen with its names whole.
MOST_COLUMNS = 8


def _shown(at) -> dict[str, object]:
    """Every table on the page by its first column's header."""
    return {df.value.columns[0]: df.value for df in at.dataframe}


#: The columns that name something (a reviewer, a debate, a question, a model): never cut.
NAMES = ("speaker", "id", "question", "submission 1", "submission 2")


def _cut_names(frame) -> list[str]:
    """The name columns of ``frame`` that :func:`fitted_widths` narrows below their longest name at 1366 px."""
    index = frame.index.name is not None
    widths = fitted_widths(frame, FULL_WIDTH, formats=number_formats(frame), index=index)
    if not widths:
        return []  # the table fits as it is
    cut = [c for c in frame.columns if c in NAMES and widths[c] < _px(max(len(str(v)) for v in frame[c]))]
    return cut  # the index (speaker) is drawn at its natural width by fitted_widths


def test_the_wide_debate_tables_show_few_whole_columns_and_every_column_on_demand(synthetic):
    at = open_page(app_test(), "debates")
    assert problems(at) == []
    shown = _shown(at)
    opinions, listed, leaders = shown["speaker"], shown["id"], shown["leader held"]
    for frame in (opinions, listed, leaders):
        assert len(frame.columns) + (frame.index.name is not None) <= MOST_COLUMNS, list(frame.columns)
        assert _cut_names(frame) == [], list(frame.columns)
    assert {"submission 1", "submission 2", "status", "consensus", "opinion changed"} <= set(listed.columns)
    assert leaders.index.name == "speaker" and {"leader held", "follower altered"} <= set(leaders.columns)

    for toggle in ("deb_opinion_all", "deb_leader_all", "deb_list_all"):
        at.toggle(key=toggle).set_value(True).run()
    shown = _shown(at)
    assert {"criterion", "scenario", "speakers", "first verdicts", "last verdicts", "human decisions"} \
        <= set(shown["id"].columns) and len(shown["id"].columns) == 14
    assert {"leader changed after agreement", "follower changed after agreement"} <= set(shown["leader held"].columns)
    assert "changed after agreement" in shown["speaker"].columns


# ----------------------------------------------------------------------------- data: format labels


@pytest.fixture
def fresh(db_file, monkeypatch):
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    Store(db_file).studies.create("alpaca")
    return db_file


def test_the_format_list_reads_as_words_and_keeps_the_internal_names_behind_them(fresh):
    at = open_page(app_test(), "data")
    select = at.selectbox(key="data_format")
    labels = list(select.options)
    assert len(labels) == len(set(labels)) == len(FORMATS)  # every format (and "auto") once
    assert [label for label in labels if label in FORMATS] == []  # not `usr`, `prd-discussions`, `judge-scores`
    assert all(label[:1].isupper() for label in labels), labels
    select.set_value("usr").run()
    assert at.session_state["data_format"] == "usr"  # the CLI's name, under the words


# ----------------------------------------------------------------------------- data: preview counts

BASELINE = "gpt4_1106_preview"
INSTRUCTIONS = ["Say hi", "Say bye", "Name a prime number"]


def _alpaca_folder(models: list[str]) -> bytes:
    """A zipped AlpacaEval folder: one annotations file per model, each against the same baseline outputs."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for model in models:
            records = [{"instruction": text, "output_1": f"{BASELINE} answers {text!r}", "generator_1": BASELINE,
                        "output_2": f"{model} answers {text!r}", "generator_2": model,
                        "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": 1.25 + 0.25 * i}
                       for i, text in enumerate(INSTRUCTIONS)]
            archive.writestr(f"alpaca/{model}/annotations.json", json.dumps(records))
    return buffer.getvalue()


def _preview(at) -> dict[str, str]:
    out = {}
    for m in at.metric:
        out.setdefault(m.label, m.value)
    return out


def test_the_preview_of_an_alpacaeval_folder_counts_the_baseline_once_as_the_store_does(fresh):
    models = ["model-a", "model-b", "model-c"]
    at = open_page(app_test(), "data")
    at.file_uploader(key="data_upload_0").set_value(("alpaca.zip", _alpaca_folder(models), "application/zip")).run()
    assert problems(at) == []
    promised = _preview(at)
    assert promised["Answers"] == str(len(INSTRUCTIONS) * (len(models) + 1))  # 12, not 18 (the baseline thrice)

    at.button(key="data_import").click().run()
    assert problems(at) == []
    stored = Store(fresh).questions.answers("alpaca")
    assert f"{len(stored):,}" == promised["Answers"]
    assert f"{len(Store(fresh).verdicts.table('alpaca')):,}" == promised["Judgments"]
