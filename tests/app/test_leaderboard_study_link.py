"""A Leaderboard link names its study (issue 21, item 3): ``?study=NAME`` beside the view's parameters.

Opening such a URL opens that study with the view restored; the study the page shows is
written into the URL, so copying it shares the study too; a name the database lacks is
said and the default study opens, never an error; and once followed, a link's study does
not undo a study chosen later in the sidebar.
"""

from __future__ import annotations

import pytest

from app_studies import app_test, build_synthetic_study, open_page, problems
from peercore.store import Store

OTHER = "a-synthetic"  # sorts before PRD's name: the study a session opens on by default


@pytest.fixture
def two_studies(prd, monkeypatch):
    """PRD and a synthetic study that opens by default, in one database."""
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    build_synthetic_study(Store(prd["db"]), OTHER)
    return prd


def params_of(at) -> dict[str, list[str]]:
    return {k: [v] if isinstance(v, str) else list(v) for k, v in at.query_params.items()}


def contestants_shown(at) -> set[str]:
    tables = [d.value for d in at.dataframe if {"model", "rank"} <= set(d.value.columns)]
    assert tables, f"no leaderboard table; tables: {[list(d.value.columns) for d in at.dataframe]}"
    return set(tables[0]["model"])


def test_a_link_naming_prd_opens_its_leaderboard_with_the_view(two_studies):
    at = app_test()
    assert at.sidebar.selectbox(key="study").value == OTHER  # without the link, another study is open
    at.query_params.update({"study": two_studies["name"], "method": "winrate", "judge": ["gpt4", "gpt35"],
                            "repeated_votes": "each"})
    open_page(at, "leaderboard")
    assert problems(at) == []
    assert at.sidebar.selectbox(key="study").value == two_studies["name"]
    assert at.selectbox(key="lb_method").value == "Win rate"
    assert at.multiselect(key="lb_judges").value == ["gpt4", "gpt35"]
    assert at.checkbox(key="lb_each_vote").value is True
    assert contestants_shown(at) == {"bard", "claude", "gpt35", "gpt4", "vicuna-13b"}  # PRD's table, not the other
    assert params_of(at)["study"] == [two_studies["name"]]

    # The link was followed once: choosing another study is not undone by the parameters it left behind.
    at.sidebar.selectbox(key="study").set_value(OTHER).run()
    assert problems(at) == []
    assert at.sidebar.selectbox(key="study").value == OTHER
    assert contestants_shown(at) == {"alpha", "bravo", "charlie", "delta"}
    assert params_of(at)["study"] == [OTHER]


def test_the_open_study_goes_into_the_url_and_the_copied_url_opens_it(two_studies):
    at = open_page(app_test(), "leaderboard")
    assert problems(at) == [] and params_of(at)["study"] == [OTHER]
    at.sidebar.selectbox(key="study").set_value(two_studies["name"]).run()
    at.selectbox(key="lb_method").set_value("Win rate").run()
    at.multiselect(key="lb_judges").set_value(["claude"]).run()
    assert problems(at) == []
    shared = params_of(at)
    assert shared["study"] == [two_studies["name"]] and shared["method"] == ["winrate"]
    assert shared["judge"] == ["claude"]

    other = app_test()  # another person opens the copied URL
    assert other.sidebar.selectbox(key="study").value == OTHER
    other.query_params.update({k: v if len(v) > 1 or k == "judge" else v[0] for k, v in shared.items()})
    open_page(other, "leaderboard")
    assert problems(other) == []
    assert other.sidebar.selectbox(key="study").value == two_studies["name"]
    assert other.selectbox(key="lb_method").value == "Win rate"
    assert other.multiselect(key="lb_judges").value == ["claude"]
    assert params_of(other) == shared


def test_an_unknown_study_in_a_link_is_said_and_the_default_study_opens(two_studies):
    at = app_test()
    at.query_params.update({"study": "no-such-study", "method": "winrate"})
    open_page(at, "leaderboard")
    assert problems(at) == []
    warned = " ".join(w.value for w in at.warning)
    assert "no-such-study" in warned and "not a study you can open" in warned and OTHER in warned
    assert at.sidebar.selectbox(key="study").value == OTHER
    assert at.selectbox(key="lb_method").value == "Win rate"  # the rest of the view still applies
    assert contestants_shown(at) == {"alpha", "bravo", "charlie", "delta"}
    assert params_of(at)["study"] == [OTHER]  # the URL now names the study shown
    at.run()
    assert problems(at) == [] and not [w for w in at.warning if "no-such-study" in w.value]  # said once
