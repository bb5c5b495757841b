"""Issue 17, item 6, on the page: the page and ``peercore adjudicate`` share the store's rules.

Before this change another annotator could decide, from the command line, the debate the
page held for ann; ann's own click was then refused ("already has the 1 decision(s) it
needs (by ben)"). Now ben's decision is refused and ann's is saved, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from app_studies import app_test, open_page, problems
from peercore.cli import main
from peercore.store import Store


def test_the_holder_on_the_page_decides_the_debate_the_command_line_cannot_take(synthetic_on_both, capsys):
    location = str(synthetic_on_both["db"])
    with Store(location, create=False) as store:
        store.studies.update_settings("synthetic", overlap=1)
    ann = open_page(app_test(), "adjudication")
    ann.text_input(key="annotator").input("ann").run()
    assert problems(ann) == [] and ann.subheader[0].value.startswith("Debate #1")
    capsys.readouterr()
    code = main(["adjudicate", "--study", "synthetic", "--db", location, "--annotator", "ben", "--decide", "1",
                 "model_b"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and "debate #1 is held by ann" in err[0]
    ann.button(key="adj_one").click().run()
    assert problems(ann) == [] and [e.value for e in ann.error] == []
    assert any("Saved: debate #1" in s.value for s in ann.success)
    with Store(location, create=False) as store:
        decided = store.debates.adjudications("synthetic")
    assert decided[["debate_id", "annotator", "verdict"]].values.tolist() == [[1, "ann", "model_a"]]
