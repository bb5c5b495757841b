"""Issue 21, numbers and labels: Bias, Meta-evaluation, Studies and Debates follow the dashboard's one rule.

The rule (:func:`peercore.reports.number_formats`, :func:`peercore.ui.tables.show_cells`):
probabilities and shares with 3 decimals, counts with thousands separators, a missing cell
"—" (never "None", "nan" or "Infinity"), intervals written ``a – b``, headers in plain
words. Before, the Bias page showed ``n_pairs`` / ``n_longer_won`` / ``own_win_rate``
headers, "None" notes, "3220" without a separator, Judge health's interval with 2
decimals beside position bias's 3, and empty charts on a study whose verdict order is
unknown (an imported AlpacaEval folder); Meta-evaluation a ``reference_votes`` header
with "1.000" votes, ``[a, b]`` intervals, an escalation table with "None" thresholds and
an empty cost chart; Studies ``made_by`` / ``date_utc`` and a Judgments card cut to
"250 (…"; Debates a "None" leader-effect cell. What is asserted is the text each cell is
drawn with (the Styler's display values sent to the browser and the grid's placeholder
for a missing cell), the headers and what is (not) drawn.

Studies: the bundled sample and an AlpacaEval folder imported with ``peercore import``
(made from ``tests/data/alpacaeval`` as ``scripts/screenshots.py`` makes it), in one
database built once; PRD Vicuna80 through the ``prd`` fixture.
"""

from __future__ import annotations

import re
import shutil
import sys

import pandas as pd
import pyarrow as pa
import pytest

from app_studies import REPO, app_test, open_page, problems
from peercore.ui import state

#: A count as the rule spells it: digits grouped by thousands.
COUNT = re.compile(r"^\d{1,3}(,\d{3})*$")
#: A probability's interval as the rule spells it.
INTERVAL3 = re.compile(r"^-?\d\.\d{3} – -?\d\.\d{3}$")
#: What a cell must never read.
NEVER = {"None", "nan", "NaN", "<NA>", "inf", "Infinity", "-inf"}


@pytest.fixture(scope="module")
def studies_db(tmp_path_factory):
    """The bundled sample and the imported AlpacaEval folder, in one database (built once, copied per test)."""
    sys.path.insert(0, str(REPO / "scripts"))
    from screenshots import alpaca_folder

    from peercore.cli import main
    from peercore.store import Store
    from peercore.ui.data import ensure_sample_study, sample_folder

    folder = tmp_path_factory.mktemp("display_rule")
    path = folder / "studies.sqlite"
    store = Store(path)
    ensure_sample_study(store, sample_folder(REPO / "sample_data"))
    store.close()
    assert main(["import", str(alpaca_folder(folder)), "--study", "alpacaeval", "--db", str(path)]) == 0
    return path


@pytest.fixture
def studies(studies_db, tmp_path, monkeypatch):
    path = tmp_path / "studies.sqlite"
    shutil.copy(studies_db, path)
    monkeypatch.setenv("PEERBOARD_DB", str(path))
    return path


def _opened(study: str, page: str):
    at = app_test(timeout=300)
    at.selectbox(key=state.STUDY).set_value(study).run()
    open_page(at, page)
    assert problems(at) == []
    return at


def _drawn(element) -> pd.DataFrame:
    """The table as the browser draws it: each cell's text (the Styler's display values), its headers the frame's."""
    payload = element.proto.arrow_data.styler.display_values
    assert payload, "the table is sent without the rule's cell texts"
    frame = pa.ipc.open_stream(payload).read_all().to_pandas()
    shown = element.value
    frame = frame.iloc[:, -len(shown.columns):]  # the index's own column(s) first
    frame.columns = list(shown.columns)
    frame.index = shown.index
    return frame


def _section(at, header: str) -> list:
    """The elements below the page's header ``header``, up to the next header."""
    out, current = [], None
    for node in at.main:
        if node.type == "header":
            current = node.value
        elif current == header:
            out.append(node)
    assert current is not None
    return out


def _tables(at, header: str) -> list:
    return [node for node in _section(at, header) if node.type == "dataframe"]


def _charts(at, header: str) -> list:
    return [node for node in _section(at, header) if node.type == "plotly_chart"]


def _texts(nodes) -> str:
    return "\n".join(str(getattr(node, "value", "")) for node in nodes)


def _no_missing_word(frame: pd.DataFrame) -> None:
    found = frame.isin(NEVER)
    assert not found.any().any(), frame[found.any(axis=1)].to_string()


def _snake(headers) -> list[str]:
    return [h for h in headers if re.search(r"[a-z]_[a-z]", str(h))]


# ------------------------------------------------------------------------------------------ Bias


def test_bias_tables_have_plain_headers_and_one_number_of_decimals(studies):
    at = _opened("sample", "bias")
    at.multiselect(key=state.BIAS_JUDGES).set_value(list(at.multiselect(key=state.BIAS_JUDGES).options)).run()
    assert problems(at) == []
    sections = ["Judge health", "Position bias", "Swap consistency", "Self-enhancement", "Length bias",
                "Debiasing threshold"]
    for header in sections:
        tables = _tables(at, header)
        assert tables, header
        for table in tables:
            assert _snake(table.value.columns) == [], (header, list(table.value.columns))  # n_pairs, n_longer_won...
            _no_missing_word(_drawn(table))
    swap = _drawn(_tables(at, "Swap consistency")[0])
    assert {"pairs in both orders", "consistent", "favours first", "favours second"} <= set(swap.columns)
    assert (swap["why no statistic"] != "None").all()  # a judge with pairs has no note: blank, not "None"
    # Judge health's interval has the 3 decimals of every probability (position bias's interval beside it)
    health = _drawn(_tables(at, "Judge health")[0])
    position = _drawn(_tables(at, "Position bias")[0])
    for frame in (health, position):
        intervals = [t for t in frame["95% interval"] if t != "—"]
        assert intervals and all(INTERVAL3.match(t) for t in intervals), intervals
    length = _drawn(_tables(at, "Length bias")[0])
    assert {"verdicts", "longer won", "P(longer chosen)"} <= set(length.columns)


def test_bias_counts_have_separators_and_no_empty_charts_when_the_order_is_unknown(studies):
    at = _opened("alpacaeval", "bias")
    health = _drawn(_tables(at, "Judge health")[0])
    assert health["replies"].tolist() == ["3,220"]  # not "3220"
    assert health["95% interval"].tolist() == ["—"]
    length = _drawn(_tables(at, "Length bias")[0])
    assert all(COUNT.match(t) for t in length["verdicts"]) and length["verdicts"].tolist() == ["3,201"]
    for header in ("Position bias", "Swap consistency"):
        assert _charts(at, header) == [], f"{header}: an empty chart is drawn"  # the order is unknown: no bar
        said = _texts(node for node in _section(at, header) if node.type in ("caption", "markdown", "alert"))
        assert "No chart: the order in which its answers were shown is unknown" in said, header
        _no_missing_word(_drawn(_tables(at, header)[0]))


# ---------------------------------------------------------------------------------- Meta-evaluation


def test_meta_evaluation_counts_intervals_and_escalation_read_by_the_rule(studies):
    at = _opened("sample", "meta_evaluation")
    human = _drawn(_tables(at, "Against human annotations")[0])
    assert "reference votes" in human.columns and _snake(human.columns) == []
    assert human["reference votes"].tolist() == ["1", "1"]  # a count of votes, not "1.000"
    assert all(COUNT.match(t) for t in human["matched"])
    evaluators = _drawn(_tables(at, "Judges as evaluators")[0])
    intervals = [t for t in evaluators["human_agreement_interval"] if t != "—"]
    assert intervals and all(INTERVAL3.match(t) for t in intervals), intervals  # "a – b", never "[a, b]"
    plan = _tables(at, "Escalation to humans with a promised agreement")[0]
    drawn = _drawn(plan)
    _no_missing_word(drawn)
    assert drawn.set_index("stage").loc["humans", "threshold"] == "—"
    assert (drawn["threshold"] != "—").sum() == len(drawn) - 1
    assert all(t == "no threshold (keeps none)" or re.match(r"^\d\.\d{3}$", t)
               for t in drawn["threshold"] if t != "—")


def test_meta_evaluation_without_runs_or_references_draws_no_empty_cost_chart(studies):
    at = _opened("alpacaeval", "meta_evaluation")
    assert _charts(at, "Cost versus agreement") == []
    said = _texts(_section(at, "Cost versus agreement"))
    assert "No run accounting: costs are known for runs made here" in said
    evaluators = _drawn(_tables(at, "Judges as evaluators")[0])
    assert evaluators["verdicts"].tolist() == ["3,220"]  # not "3220"


def test_meta_evaluation_on_prd_counts_with_separators(prd):
    at = open_page(app_test(timeout=300), "meta_evaluation")
    assert problems(at) == []
    human = _drawn(_tables(at, "Against human annotations")[0])
    assert all(COUNT.match(t) for t in human["reference votes"]), human["reference votes"].tolist()
    assert any("," in t for t in human["matched"]), human["matched"].tolist()  # hundreds of matched comparisons+
    _no_missing_word(human)


# ------------------------------------------------------------------------------------------ Studies


def test_studies_page_provenance_in_plain_words_and_a_card_that_fits(studies):
    at = _opened("sample", "studies")
    source = next(e for e in at.dataframe if list(e.value.columns) == ["field", "value"]).value
    fields = source["field"].tolist()
    assert "made by" in fields and "date (UTC)" in fields
    assert [f for f in fields if "_" in f] == [], fields
    card = next(m for m in at.metric if m.label == "Judgments")
    assert card.value == "250"  # a short number: "250 (+5 unparsed)" was cut to "250 (…" at 1366 px
    assert "5 unparsed" in card.proto.help
    judges = next(e for e in at.dataframe if "model_alias" in e.value.columns)
    assert (judges.value["model_alias"] == "").any()  # judges that are no contestant ...
    assert judges.proto.placeholder == "—"  # ... read "—", not the grid's "None"


# ------------------------------------------------------------------------------------------ Debates


def test_debates_leader_effect_shows_a_missing_rate_as_a_dash(studies):
    at = _opened("sample", "debates")
    leader = next(e for e in at.dataframe if "leader altering rate" in e.value.columns)
    assert leader.value["leader altering rate"].isna().any()  # a reviewer that never led
    drawn = _drawn(leader)
    _no_missing_word(drawn)
    assert "—" in drawn["leader altering rate"].tolist()
    assert leader.proto.placeholder == "—"
