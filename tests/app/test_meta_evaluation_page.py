"""Meta-evaluation (issue 12): circular gold said out loud, leave-one-agent-out gold, a labelled cost chart."""

from __future__ import annotations

import json

from app_studies import LLM_JUDGES, app_test, open_page, problems


def chart(at, title_start: str) -> dict:
    """The plotly figure whose title starts with ``title_start``."""
    figures = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    titles = [((f.get("layout", {}).get("title") or {}).get("text") or "") for f in figures]
    found = [f for f, t in zip(figures, titles) if t.startswith(title_start)]
    assert found, f"no chart titled {title_start!r}; titles: {titles}"
    return found[0]


def table(at, column: str):
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with {column!r}"
    return found[0]


def test_circular_gold_is_named_and_leave_one_agent_out_gold_is_offered(synthetic):
    at = open_page(app_test(), "meta_evaluation")
    assert problems(at) == []
    warning = [w.value for w in at.warning if "Circular gold" in w.value]
    assert len(warning) == 1 and all(f"`{judge}`" in warning[0] for judge in LLM_JUDGES)  # the three debate agents
    comparison = table(at, "accuracy (leave-one-agent-out)")
    assert set(comparison.index) == set(LLM_JUDGES)
    assert (comparison["gold verdicts it helped form"] == 5).all()  # the 5 agreed debates
    panel = table(at, "matched")["matched"].copy()
    assert at.radio(key="meta_gold_choice").value == "panel"  # ScaleEval's gold stays the default
    chart(at, "Each judge against the gold set")

    at.radio(key="meta_gold_choice").set_value("loao").run()
    assert problems(at) == []
    chart(at, "Each judge against leave-one-agent-out gold")
    loao = table(at, "matched")["matched"]
    # openai:alpha was the lone dissent on the 4 split debates (it ended on model_a, the others on model_b):
    # without it the others agree, so those debates become its gold; bravo and charlie leave a split behind.
    assert loao["openai:alpha"] > panel["openai:alpha"]
    assert loao["anthropic:bravo"] == panel["anthropic:bravo"] and loao["local:charlie"] == panel["local:charlie"]


def test_cost_chart_says_what_it_compares(synthetic):
    at = open_page(app_test(), "meta_evaluation")
    figure = chart(at, "Each judge: ")
    layout = figure["layout"]
    assert "against its accuracy with the gold set" in layout["title"]["text"]
    assert layout["xaxis"]["title"]["text"] in ("cost of its runs (USD)", "verdicts given (no cost recorded)")
    assert layout["yaxis"]["title"]["text"] == "accuracy with the gold set (ties counted)"
    assert layout["showlegend"] is True and figure["data"][0]["name"].startswith("one point per judge")


def test_no_circularity_warning_without_agents_among_the_judges(prd):
    at = open_page(app_test(), "meta_evaluation")
    assert problems(at) == []
    assert not [w for w in at.warning if "Circular gold" in w.value]
