"""Adjudication to the standard of annotation tools (issue 12): every new control under AppTest.

Blind mode, "both bad", skips kept per annotator in the store, scenario and criterion
filters, the study's rubric and overlap (edited on Studies), agreement over all
annotators (Krippendorff's alpha).
"""

from __future__ import annotations

import pytest

from app_studies import app_test, open_page, problems
from peercore.store import Store


def texts(at) -> list[str]:
    """Plain-text elements (st.text: questions, answers, replies, rubric) and Markdown on screen."""
    return [t.value for t in at.text] + [m.value for m in at.markdown]


def agent_lines(at) -> list[str]:
    """The agents' replies on screen (the synthetic study's debate turns read "... first thinks ..." / "... after ...")."""
    return [t for t in texts(at) if "first thinks" in t or "after reading the others" in t]


def sign_in(at, name: str):
    at.text_input(key="annotator").input(name).run()
    assert problems(at) == []
    return at


def head(at) -> str:
    return at.subheader[0].value


@pytest.fixture
def store(synthetic):
    s = Store(synthetic["db"])
    yield s
    s.close()


def test_blind_mode_hides_the_agents_until_the_decision(synthetic, store):
    at = sign_in(open_page(app_test(), "adjudication"), "bea")
    assert at.toggle(key="adj_blind").value is True  # on by default
    assert head(at).startswith("Debate #1")
    assert agent_lines(at) == []  # neither final verdicts nor the transcript
    assert any("Blind mode" in c.value for c in at.caption)
    at.button(key="adj_one").click().run()
    # Decided: debate 1's agents are readable now (below the next item), debate 2's are still hidden.
    assert head(at).startswith("Debate #2")
    shown = [e for e in at.expander if "which you just decided" in e.label]
    assert len(shown) == 1 and "Debate #1" in shown[0].label and "Submission 1" in shown[0].label
    assert agent_lines(at) and all("q00" in t or "after reading" in t for t in agent_lines(at))
    # Asking to see them on debate 2 shows them before the decision, and the decision says it was not blind.
    at.button(key="adj_show_agents").click().run()
    assert head(at).startswith("Debate #2") and any("q01" in t for t in agent_lines(at))
    at.button(key="adj_two").click().run()
    decided = store.debates.adjudications("synthetic").set_index("debate_id")
    assert decided.loc[1, "blind"] == True and decided.loc[2, "blind"] == False  # noqa: E712 (pandas boolean)


def test_blind_mode_off_shows_the_agents_at_once(synthetic, store):
    at = sign_in(open_page(app_test(), "adjudication"), "bea")
    at.toggle(key="adj_blind").set_value(False).run()
    assert any("q00" in t for t in agent_lines(at))
    assert all(b.key != "adj_show_agents" for b in at.button)
    at.button(key="adj_tie").click().run()
    assert store.debates.adjudications("synthetic")["blind"].tolist() == [False]


def test_both_bad_is_a_fourth_choice_stored_as_a_flagged_tie(synthetic, store):
    at = sign_in(open_page(app_test(), "adjudication"), "bea")
    at.text_input(key="adj_note_0").input("neither computes it")
    at.button(key="adj_both_bad").click().run()
    assert problems(at) == []
    assert any("Both bad" in s.value and "#1" in s.value for s in at.success)
    row = store.debates.adjudications("synthetic").iloc[0]
    assert (row["decision"], row["verdict"], row["both_bad"], row["note"]) == ("both_bad", "tie", True, "neither computes it")
    table = at.dataframe[-1].value  # "All decisions"
    assert table["decision"].tolist() == ["Both bad"] and table["blind"].tolist() == ["yes"]


def test_skips_are_kept_under_the_annotators_name_not_the_browser(synthetic, store):
    first = sign_in(open_page(app_test(), "adjudication"), "sky")
    first.button(key="adj_skip").click().run()
    assert head(first).startswith("Debate #2")
    assert store.debates.skipped("synthetic", "sky") == [1]
    later = sign_in(open_page(app_test(), "adjudication"), "sky")  # another browser, another day
    assert head(later).startswith("Debate #2")
    assert "(1 skipped)" in " ".join(m.value for m in later.markdown)
    other = sign_in(open_page(app_test(), "adjudication"), "tom")  # someone else's skips are not yours
    assert head(other).startswith("Debate #1")
    for _ in range(3):
        later.button(key="adj_skip").click().run()
    assert any("You skipped the 4 debate(s)" in i.value for i in later.info)
    later.button(key="adj_unskip").click().run()
    assert head(later).startswith("Debate #1") and store.debates.skipped("synthetic", "sky") == []


def test_queue_filters_by_scenario_and_criterion(synthetic, store):
    store.debates.add("synthetic", {"debate_key": "extra", "question_id": "q05", "model_a": "alpha", "model_b": "bravo",
                                    "criterion": "harmlessness", "scenario": "code", "status": "unresolved",
                                    "n_rounds": 1}, [{"round": 0, "position": 0, "speaker": "openai:alpha",
                                                      "verdict": "model_a", "rationale": "x"}])
    extra = int(store.debates.table("synthetic").query("debate_key == 'extra'")["id"].iloc[0])
    at = sign_in(open_page(app_test(), "adjudication"), "fil")
    assert at.selectbox(key="adj_scenario").options == ["All scenarios", "code", "math", "writing"]
    assert at.selectbox(key="adj_criterion").options == ["All criteria", "harmlessness", "helpfulness"]
    at.selectbox(key="adj_scenario").set_value("code").run()
    assert head(at).startswith("Debate #3") and "2 left in your queue" in " ".join(m.value for m in at.markdown)
    at.selectbox(key="adj_criterion").set_value("harmlessness").run()
    assert head(at).startswith(f"Debate #{extra} ") and "1 left in your queue" in " ".join(m.value for m in at.markdown)
    at.button(key="adj_one").click().run()
    assert any("No debate that needs you matches" in i.value for i in at.info)
    at.selectbox(key="adj_criterion").set_value("All criteria").run()
    assert head(at).startswith("Debate #3")


def test_rubric_and_overlap_are_edited_on_studies_and_shown_on_adjudication(synthetic, store):
    at = open_page(app_test(), "studies")
    rubric = "1. Correct beats fluent.\n2. Both bad: neither answers.\n![](http://tracker.invalid/x.png) **not bold**"
    at.text_area(key="studies_rubric::synthetic").input(rubric)
    at.number_input(key="studies_overlap::synthetic").set_value(2)
    at.button(key="FormSubmitter:studies_guidelines-Save guidelines").click().run()
    assert problems(at) == []
    assert store.studies.settings("synthetic") == {"rubric": rubric, "overlap": 2, "reviewers": []}
    assert any("Guidelines saved" in s.value for s in at.success)
    open_page(at, "adjudication")
    sign_in(at, "ann")
    assert rubric in [t.value for t in at.text]  # beside the item, as plain text (no image, no bold)
    assert "each debate needs 2 annotators" in at.get("progress")[0].proto.text


def test_an_overlap_of_two_moves_a_debate_out_once_two_people_decided_and_shows_alpha(synthetic, store):
    store.studies.update_settings("synthetic", overlap=2)
    ann, ben = (sign_in(open_page(app_test(), "adjudication"), name) for name in ("ann", "ben"))
    assert any("Agreement appears once two people" in c.value for c in ann.caption)
    for verdicts in (("adj_one", "adj_one"), ("adj_two", "adj_tie"), ("adj_tie", "adj_tie")):
        for at, key in zip((ann, ben), verdicts):
            at.button(key=key).click().run()
            assert problems(at) == []
    carl = sign_in(open_page(app_test(), "adjudication"), "carl")
    # 1-3 have their two decisions; 4 still needs two people, but ann's and ben's pages show it and so hold it
    # (two leases fill an overlap of two, issue 13): carl is told so instead of being offered it.
    assert head(carl) == "Agreement between annotators"  # no debate shown
    assert any("The 1 debate(s) that still need you are being decided by others" in i.value for i in carl.info)
    assert "1 still need you · 3 complete · each debate needs 2 annotators" in carl.get("progress")[0].proto.text
    alpha = [m.value for m in carl.markdown if "Krippendorff's alpha over all 2 annotators" in m.value]
    assert len(alpha) == 1 and "on 3 debate(s)" in alpha[0]
    # ann: model_a, model_b, tie; ben: model_a, tie, tie -> 2 of 3 pairs agree; nominal alpha by hand:
    # coincidences o(a,a)=2, o(b,t)=o(t,b)=1, o(t,t)=2, n=6, D_o=2/6, D_e=1-(2*1+1*0+3*2)/(6*5)=22/30.
    assert "**0.545**" in alpha[0]
    assert ann.subheader[0].value.startswith("Debate #4")
    ann.button(key="adj_one").click().run()
    assert any("Queue empty" in s.value for s in ann.success)
    carl.button(key="adj_check").click().run()  # ann's decision + ben's lease still fill it
    assert any("being decided by others" in i.value for i in carl.info)
    ben.button(key="adj_two").click().run()
    carl.button(key="adj_check").click().run()
    assert any("Queue empty" in s.value for s in carl.success) and "0 still need you · 4 complete" in carl.get(
        "progress")[0].proto.text


def test_undo_still_works_from_the_empty_queue(synthetic, store):
    store.studies.update_settings("synthetic", overlap=1)
    for debate_id in (2, 3, 4):
        store.debates.adjudicate(debate_id, "someone", "tie")
    at = sign_in(open_page(app_test(), "adjudication"), "last")
    at.button(key="adj_one").click().run()
    assert any("Queue empty" in s.value for s in at.success)
    at.button(key="adj_undo").click().run()
    assert head(at).startswith("Debate #1") and store.debates.adjudications("synthetic")["annotator"].tolist() == ["someone"] * 3
