"""Issue 17, item 6: one set of adjudication rules for the page and ``peercore adjudicate``, in the store.

Before this change the command line accepted decisions the page never offers: deciding an
agreed debate (its consensus already is its gold label) stored a second, opposite gold
label; and anyone could decide a debate another annotator held a lease on, after which the
holder's own decision was refused. The store now accepts a decision only on a debate the
page could offer (:func:`peercore.assignment.offerable`), whoever asks. Each test drives the
real command line (``peercore.cli.main``, what ``python -m peercore`` runs) on a SQLite
file and on PostgreSQL; a refused decision exits 2 with one line and leaves every table as
it was.
"""

from __future__ import annotations

import json

import pytest

from integration.test_cli_on_postgres import dump
from peercore.cli import main
from peercore.store import Store
from peercore.app import Study


@pytest.fixture
def location(db) -> str:
    """A study 'team' (overlap 1): debates #1 and #2 unresolved, #3 agreed on model_a, #4 a PRD discussion."""
    store = Store(db)
    store.studies.create("team")
    store.debates.add_many("team", [
        ({"debate_key": f"d{k}", "question_id": f"q{k}", "model_a": "a", "model_b": "b", "status": "unresolved"},
         [{"round": 0, "position": 0, "speaker": "x", "verdict": "model_a"},
          {"round": 0, "position": 1, "speaker": "y", "verdict": "model_b"}]) for k in (1, 2)])
    store.debates.add("team", {"debate_key": "d3", "question_id": "q3", "model_a": "a", "model_b": "b",
                               "status": "agreed", "consensus": "model_a", "panel": "debate:panel"},
                     [{"round": 0, "position": 0, "speaker": "x", "verdict": "model_a"},
                      {"round": 0, "position": 1, "speaker": "y", "verdict": "model_a"}])
    store.debates.add("team", {"debate_key": "p4", "question_id": "q4", "model_a": "a", "model_b": "b",
                               "status": "unresolved", "kind": "discussion"}, [])
    store.studies.update_settings("team", overlap=1)
    store.close()
    return str(db)


def adjudicate(capsys, location: str, who: str, *action: str) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    code = main(["adjudicate", "--study", "team", "--db", location, "--annotator", who, *action])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def refused(capsys, location: str, who: str, *action: str) -> str:
    """A decision the store refuses: exit 2, one line on stderr, nothing on stdout, every table unchanged."""
    before = dump(location)
    code, out, err = adjudicate(capsys, location, who, *action)
    assert (code, out, len(err)) == (2, "", 1), (code, out, err)
    assert dump(location) == before
    return err[0].removeprefix("peercore: error: ")


def gold(location: str) -> list[tuple[int, str, str]]:
    with Store(location, create=False) as store:
        frame = Study(store, "team").gold()
        return sorted(zip(frame["debate_id"], frame["judge"], frame["winner"]))


def test_an_agreed_debate_cannot_be_decided_so_its_gold_label_stays_one(capsys, location):
    assert gold(location) == [(3, "debate:panel", "model_a")]
    message = refused(capsys, location, "ann", "--decide", "3", "model_b")
    assert message == ("debate #3 is not waiting for people: its agents agreed (model_a), and that consensus is its "
                       "gold label; ann's decision was not stored. Only unresolved debates are adjudicated (ask for "
                       "the next one).")
    assert gold(location) == [(3, "debate:panel", "model_a")]  # before: a second, opposite label (adjudicator:ann)
    # the same with overlap 0 (no lease rule at all), and for a PRD discussion
    with Store(location, create=False) as store:
        store.studies.update_settings("team", overlap=0)
    assert refused(capsys, location, "ann", "--decide", "3", "tie").startswith("debate #3 is not waiting for people")
    code, _, err = adjudicate(capsys, location, "ann", "--decide", "4", "tie")
    assert code == 2 and err == ["peercore: error: --decide: study 'team' has no debate #4 (take one with --next)"]


def test_a_debate_another_annotator_holds_is_refused_and_the_holder_decides_it(capsys, location):
    code, out, _ = adjudicate(capsys, location, "ann", "--next")
    assert code == 0 and json.loads(out)["debate_id"] == 1
    message = refused(capsys, location, "ben", "--decide", "1", "model_b")
    assert message.startswith("debate #1 is held by ann, which fills the 1 decision(s) it needs; ben's decision was "
                              "not stored")
    code, out, _ = adjudicate(capsys, location, "ann", "--decide", "1", "model_a")  # before: refused, "by ben"
    assert code == 0 and json.loads(out)["stored"] == "new"
    assert gold(location) == [(1, "adjudicator:ann", "model_a"), (3, "debate:panel", "model_a")]
    # a debate nobody holds or decided is open to a decision without --next, as the page would offer it
    code, out, _ = adjudicate(capsys, location, "ben", "--decide", "2", "tie")
    assert code == 0 and json.loads(out)["stored"] == "new"
    # once decided (overlap 1) nobody else may decide it; the decider may change their mind
    assert refused(capsys, location, "cat", "--decide", "2", "model_a").startswith(
        "debate #2 already has the 1 decision(s) it needs (by ben)")
    code, out, _ = adjudicate(capsys, location, "ben", "--decide", "2", "model_b")
    assert code == 0 and json.loads(out)["stored"] == "replaced"


def test_overlap_two_keeps_a_place_for_each_holder(capsys, location):
    with Store(location, create=False) as store:
        store.studies.update_settings("team", overlap=2)
    for who in ("ann", "ben"):
        assert json.loads(adjudicate(capsys, location, who, "--next")[1])["debate_id"] == 1
    assert refused(capsys, location, "cat", "--decide", "1", "tie").startswith(
        "debate #1 is held by ann, ben, which fills the 2 decision(s) it needs; cat's decision was not stored")
    assert adjudicate(capsys, location, "ann", "--decide", "1", "model_a")[0] == 0
    assert refused(capsys, location, "cat", "--decide", "1", "tie").startswith(
        "debate #1 is held by ben and decided by ann, which fills the 2 decision(s) it needs")
    assert adjudicate(capsys, location, "ben", "--decide", "1", "model_b")[0] == 0
    with Store(location, create=False) as store:
        assert sorted(store.debates.adjudications("team")["annotator"]) == ["ann", "ben"]
