"""Issue 22 on the pages: the notebook's weighted Elo, P(first) over all comparisons, the exact prompts, the LC note.

* Leaderboard, Peer Rank weighted / Elo: "Weights from Elo within each shuffle (PRD notebook)", PRD's
  ``peer_ranking.ipynb`` cells 40-41 (:func:`peercore.ranking.peer_rank.notebook_weighted_elo`).
* Bias, position bias: ``P(first)`` over decisive verdicts beside Liusie et al. (2024) eq. 8's share over all
  comparisons, ties included.
* Reviewers & runs: the exact prompts of the job (``--show-prompts``), with ScaleEval's (Table 6) bare
  ``[Criteria]`` header when a criteria variation hides the criterion.
* Leaderboard, versus a baseline: every row has a length-controlled win rate, and the page says when it is not
  comparable with AlpacaEval's published one (Dubois et al. 2024).
"""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from app_studies import LLM_JUDGES, REPO, app_test, open_page, problems
from peercore.ranking.peer_rank import PER_SHUFFLE
from peercore.app import Study, leaderboard
from peercore.domain.selection import Selection
from peercore.store import Store

sys.path.insert(0, str(REPO / "tests"))
from fakes.llm_server import FakeLLMServer  # noqa: E402


def _table(at, *columns: str) -> pd.DataFrame:
    found = [e.value for e in at.dataframe if set(columns) <= set(e.value.columns)]
    assert found, f"no table with {columns}; tables: {[list(e.value.columns) for e in at.dataframe]}"
    return found[0]


def test_leaderboard_offers_the_prd_notebooks_weighted_elo(synthetic):
    at = open_page(app_test(), "leaderboard")
    at.selectbox(key="lb_method").set_value("Peer Rank weighted").run()
    at.multiselect(key="lb_judges").set_value(list(LLM_JUDGES)).run()
    at.selectbox(key="lb_base").set_value("Elo").run()
    at.selectbox(key="lb_bootstrap").set_value(0).run()
    fixed = _table(at, "rank", "model").set_index("model").iloc[:, 1]
    at.checkbox(key="lb_per_shuffle").check().run()
    assert problems(at) == []
    per_shuffle = _table(at, "rank", "model").set_index("model").iloc[:, 1]
    want = leaderboard(Study(Store(synthetic["db"]), "synthetic"),
        Selection(judges=LLM_JUDGES), method="elo", peer_weights="prd", weights_from=PER_SHUFFLE, bootstrap=0)
    assert per_shuffle.to_dict() == pytest.approx(want.table.set_index("model")["score"].to_dict(), abs=0.05)
    assert per_shuffle.to_dict() != pytest.approx(fixed.to_dict(), abs=0.05)  # not the fixed-weight Elo


def test_bias_page_shows_p_first_over_all_comparisons_beside_the_decisive_share(synthetic):
    at = open_page(app_test(), "bias")
    position = _table(at, "P(first)", "P(first) over all, ties included (eq. 8)")
    from peercore.bias import position_bias

    judgments = Study(Store(synthetic["db"]), "synthetic").judgments(Selection(judges=tuple(position.index)))
    want = position_bias(judgments)
    assert position["P(first) over all, ties included (eq. 8)"].to_dict() == \
        pytest.approx(want["p_first_all"].round(3).to_dict())
    ties = want[want["tie_rate"] > 0]
    assert len(ties) and (position.loc[ties.index, "P(first) over all, ties included (eq. 8)"]
                          < position.loc[ties.index, "P(first)"]).all()


def _add_reviewer(at, url: str, name: str) -> None:
    at.selectbox(key="rv_provider").set_value("compatible")
    at.text_input(key="rv_model").input("fake-judge")
    at.text_input(key="rv_url").input(url)
    at.text_input(key="rv_name").input(name)
    at.button(key="FormSubmitter:add_reviewer-Add reviewer").click().run()


def test_reviewers_page_shows_the_exact_prompts_of_a_job(synthetic):
    # The page's debates take the plain rubrics (a variation's prompts: tests/unit/jobs/test_show_prompts.py).
    from peercore.prompts import load_rubric

    with FakeLLMServer() as server:
        at = open_page(app_test(), "reviewers")
        _add_reviewer(at, server.openai_base_url, "fake")
        _add_reviewer(at, server.openai_base_url, "fake-2")
        at.segmented_control(key="rv_kind").set_value("debate").run()
        at.toggle(key="rv_show_prompts_on").set_value(True).run()
        assert problems(at) == []
        shown = "\n".join(c.value for c in at.code)
        assert shown.count("=== prompt ") == 3 and "=== prompt 1 of 3:" in shown
        assert "[Criterion: Helpfulness]\nScore levels for this criterion:\n" + load_rubric("helpfulness").render() in shown
        assert "later call(s) of this item quote earlier replies" in shown
        at.number_input(key="rv_show_prompts").set_value(5).run()
        assert "\n".join(c.value for c in at.code).count("=== prompt ") == 5
        assert server.requests_total == 0  # nothing was sent


def test_versus_a_baseline_has_an_lc_on_every_row_and_says_it_is_not_the_published_one(synthetic):
    at = open_page(app_test(), "leaderboard")
    at.selectbox(key="lb_method").set_value("Versus a baseline").run()
    at.selectbox(key="lb_baseline").set_value("delta").run()
    assert problems(at) == []
    table = _table(at, "LC win rate %")
    assert table["LC win rate %"].notna().all() and len(table) == 4
    notes = "\n".join(i.value for i in at.info)
    assert "not comparable with AlpacaEval's published LC" in notes and "baseline delta" in notes
