"""Home (the default page): what PeerBoard is, the gallery of ready studies, and the next steps."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from app_studies import HOSTILE_STUDY, REPO, app_test, open_page, problems
from peercore.store import Store
from peercore.untrusted import escape_markdown


def require_bundles() -> None:
    if not (REPO / "sample_data" / "prd_vicuna80" / "provenance.json").is_file():
        pytest.fail("sample_data/prd_vicuna80/ is missing from the repository")


def cards(at) -> dict[str, str]:
    """Study name -> the counts line of its gallery card (cards in order: a bold name, then its counts caption)."""
    names = [m.group(1) for m in (re.match(r"^\*\*(.+?)\*\*(?: · [a-z ]+)*$", e.value) for e in at.markdown) if m]
    counts = [c.value for c in at.caption if re.match(r"^[\d,]+ (question|model|judgment)", c.value)]
    assert len(names) == len(counts), (names, counts)
    return dict(zip(names, counts))


def links(at) -> dict[str, str]:
    return {p.proto.page: p.proto.label for p in at.get("page_link")}


def test_a_first_run_opens_on_home_with_the_bundled_studies(db_file):
    require_bundles()
    at = app_test(page=None)
    assert problems(at) == []
    assert [t.value for t in at.title] == ["PeerBoard"]
    assert at.session_state["study"] == "sample"  # the sample is still the open study
    shown = cards(at)
    assert list(shown)[0] == "sample" and {"prd-vicuna80", "topicalchat-usr"} <= set(shown)  # bundled, sample first
    assert shown["prd-vicuna80"] == "80 questions · 5 models · 9,760 judgments · 1,760 human votes"
    assert shown["sample"] == "12 questions · 3 models · 250 judgments (+5 unparsed) · 36 human votes · 9 debates to adjudicate"
    captions = "\n".join(c.value for c in at.caption)
    assert "PRD Vicuna80 (Li, Patel \\& Du 2023; MIT)" in captions  # the description from its provenance
    buttons = {b.key: b for b in at.button if b.key.startswith("home_open::")}
    assert {b.label for b in buttons.values()} == {"Open leaderboard"}
    assert "ranked by Peer Rank weighted" in buttons["home_open::prd-vicuna80"].help
    assert any(m.value == "**sample** · bundled · open now" for m in at.markdown)
    assert links(at) == {"data": "Import your data", "reviewers": "Launch a review",
                         "adjudication": "Adjudicate: 9 debate(s) waiting in sample",
                         "studies": "All studies: create, open or delete one"}


def test_opening_the_prd_study_shows_its_peer_rank_leaderboard(db_file, monkeypatch):
    require_bundles()
    import streamlit as st

    switched = []
    at = app_test(page=None)
    monkeypatch.setattr(st, "switch_page", lambda page: switched.append(page))
    at.button(key="home_open::prd-vicuna80").click().run()
    assert problems(at) == []
    assert switched == ["pages/leaderboard.py"]
    assert at.session_state["study"] == "prd-vicuna80"
    assert at.session_state["lb_method"] == "Peer Rank weighted"
    assert at.sidebar.selectbox(key="study").value == "prd-vicuna80"
    open_page(at, "leaderboard")  # where st.switch_page goes (AppTest does not follow it)
    assert problems(at) == []
    weights = next(c.value for c in at.caption if c.value.startswith("Peer Rank weights"))
    assert "gpt4 0.488, claude 0.377, vicuna-13b 0.082, gpt35 0.053, bard 0.000" in weights  # PRD Table 2
    board = next(e.value for e in at.dataframe if {"rank", "model"} <= set(e.value.columns)).set_index("model")
    assert list(board.index) == ["gpt4", "claude", "vicuna-13b", "gpt35", "bard"]


def test_opening_a_study_without_a_method_opens_its_default_not_the_last_studys_choice(db_file, monkeypatch):
    require_bundles()
    import streamlit as st

    monkeypatch.setattr(st, "switch_page", lambda page: None)
    at = app_test(page=None)
    at.session_state["lb_method"] = "Win rate"  # chosen on the sample's Leaderboard
    at.session_state["lb_view_study"] = "sample"
    at.button(key="home_open::topicalchat-usr").click().run()
    # One default per study (issue 21): the sidebar's way to topicalchat-usr opens on Bradley-Terry too.
    assert at.session_state["study"] == "topicalchat-usr" and at.session_state["lb_method"] == "Bradley-Terry"
    assert links(at)["adjudication"] == "Adjudicate"  # nothing waits in that study
    assert "No debate waits in topicalchat-usr" in "\n".join(c.value for c in at.caption)


def test_an_empty_database_says_what_to_do(db_file, monkeypatch):
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    at = app_test(page=None)
    assert problems(at) == []
    assert any("No study holds judgments yet" in i.value for i in at.info)
    assert set(links(at)) == {"data", "reviewers", "adjudication", "studies"}


def test_only_studies_with_judgments_are_shown_and_the_gallery_is_bounded(synthetic):
    from peercore.judgments import judgments_from_frame

    store = Store(synthetic["db"])
    store.studies.create("empty one")
    one = judgments_from_frame(pd.DataFrame({"question_id": ["q"], "model_a": ["a"], "model_b": ["b"],
                                             "judge": ["j"], "winner": ["model_a"]}))
    for number in range(6):
        store.studies.create(f"extra-{number}")
        store.verdicts.add(f"extra-{number}", one)
    at = app_test(page=None)
    assert problems(at) == []
    shown = cards(at)
    assert "empty one" not in shown and len(shown) == 6  # 7 studies hold judgments; 6 are shown
    assert shown["extra-0"] == "2 models · 1 judgment"
    assert any(c.value == "1 more on **Studies**." for c in at.caption)


def test_hostile_study_names_and_descriptions_stay_text(hostile):
    from test_untrusted_text import rendered_from_data

    at = app_test(page=None)
    assert problems(at) == []
    assert rendered_from_data(at) == []
    assert any(escape_markdown(HOSTILE_STUDY) in m.value for m in at.markdown)


def test_a_first_start_draws_the_frame_before_it_prepares_the_studies(db_file, monkeypatch):
    """Issue 21: an empty database showed Streamlit's raw file-name menu (``app, adjudication, ...``) and a blank
    page for seconds while the bundled studies imported. The menu with the pages' titles is set before the import,
    and the import reports its progress. The import is stopped at its second file (an error raised from there):
    the pages are known by then and the progress bar says what was being prepared."""
    require_bundles()
    from peercore.ui import data

    real = data.ensure_sample_study
    seen = []

    def stopped_midway(db, folder, *, progress=None):
        def report(done, total, what):
            seen.append((done, total, what))
            progress(done, total, what)
            if done == 1:
                raise RuntimeError("stopped midway by the test")
        return real(db, folder, progress=report)

    monkeypatch.setattr(data, "ensure_sample_study", stopped_midway)
    at = app_test(page=None)
    assert [e.value for e in at.exception][0].endswith("stopped midway by the test") or \
        "stopped midway by the test" in str(at.exception[0].value)
    assert seen[:2] == [(0, seen[0][1], "sample"), (1, seen[0][1], "sample")] and seen[0][1] > 10
    bars = [p.proto.text for p in at.get("progress")]
    assert bars and bars[-1].startswith("First start: preparing the bundled studies (sample, file 2 of")
    open_page(at, "leaderboard")  # the navigation (titled pages) was registered before the import began
    assert Store(db_file).studies.table().empty  # nothing half-written: the import is one transaction
