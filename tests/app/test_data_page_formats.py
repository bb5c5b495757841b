"""Issue 21, numbers and labels: the Data page's tables follow the dashboard's one formatting rule.

Before: the import preview showed the file's snake_case names (``question_id``, ``p_a``),
a missing probability or turn as "None", and the import report and history printed
counts without thousands separators ("1200" beside the cards' "1,200"). The rule is
:func:`peercore.reports.number_formats` (shares 3 decimals) with counts separated and
missing cells "—" (:func:`peercore.ui.tables.show_cells`). What is asserted is the text
each cell is drawn with (the Styler's display values sent to the browser, and the grid's
placeholder for a missing cell, which the browser draws instead of "None"), not the data.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from app_studies import app_test, open_page, problems
from peercore.store import Store

#: Judgments in the staged file: more than a thousand, so a count needs its separator.
N_ROWS = 1_200


def _votes_csv() -> bytes:
    """Hard verdicts (no probability, no turn: missing cells), every third one with a probability."""
    lines = ["question_id,model_a,model_b,judge,winner,p_a"]
    for k in range(N_ROWS):
        p_a = "0.25" if k % 3 == 0 else ""
        lines.append(f"q{k:04d},alpha,bravo,human:zoe,{'model_a' if k % 2 else 'model_b'},{p_a}")
    return ("\n".join(lines) + "\n").encode()


def _drawn(element):
    """The table as the browser draws it: each cell's text (the Styler's display values)."""
    payload = element.proto.arrow_data.styler.display_values
    assert payload, "the table is sent without the rule's cell texts"
    frame = pa.ipc.open_stream(payload).read_all().to_pandas()
    frame.columns = list(element.value.columns)
    return frame


def _table(at, column: str):
    """The table showing ``column`` (AppTest gives a table no key)."""
    return next(e for e in at.dataframe if column in e.value.columns)


@pytest.fixture
def fresh(db_file, monkeypatch):
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    Store(db_file).studies.create("votes")
    return db_file


def test_the_import_preview_and_report_follow_the_one_formatting_rule(fresh):
    at = open_page(app_test(), "data")
    at.file_uploader(key="data_upload_0").set_value(("votes.csv", _votes_csv(), "text/csv")).run()
    assert problems(at) == []
    assert next(m.value for m in at.metric if m.label == "Judgments") == "1,200"  # the preview's card

    preview = _table(at, "winner")
    headers = list(preview.value.columns)
    assert [h for h in headers if "_" in h] == [], headers  # plain words, not question_id / model_a / p_a
    assert {"question", "model A", "model B", "P(A wins)"} <= set(headers)
    drawn = _drawn(preview)
    assert drawn["P(A wins)"].tolist()[:4] == ["0.250", "—", "—", "0.250"]  # 3 decimals
    assert preview.value["turn"].isna().all() and preview.proto.placeholder == "—"  # a missing cell is drawn "—"
    assert not drawn.isin(["None", "nan", "<NA>"]).any().any()

    at.button(key="data_import").click().run()
    assert problems(at) == []
    report = _table(at, "added")
    judgments = report.value["table"].tolist().index("judgments")
    assert report.value["added"].iloc[judgments] == N_ROWS  # the data keep their type
    assert _drawn(report)["added"].iloc[judgments] == "1,200"  # drawn as the cards print it
    history = _table(at, "judgments added")
    assert _drawn(history)["judgments added"].tolist() == ["1,200"]
