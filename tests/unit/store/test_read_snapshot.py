"""A reader of a study's verdicts sees one moment of the database, on SQLite and PostgreSQL.

Names are integer codes (``labels``); a reader reads the labels, then the verdicts that use
them. A writer that commits new names and verdicts between those two queries used to give
the reader codes its labels lacked: ``pyarrow.lib.ArrowIndexError: Index 1 out of bounds``
(seen in ``test_runs_on_both_backends.py``: a polling reader during a run on PostgreSQL), and
in the read model a packing width too small for the new codes. Both readers now read inside
:meth:`Store.snapshot`. The writer is made to commit exactly between the two queries (no
timing: the test calls it from inside the reader).
"""

from __future__ import annotations

import pandas as pd

from peercore.store import Store
from peercore.store import verdict_reader
from peercore.store.judgments import Verdicts


def first_verdicts(store: Store) -> None:
    store.studies.create("s")
    store.verdicts.add("s", pd.DataFrame([{"question_id": "q1", "model_a": "m1", "model_b": "m2",
                                           "judge": "j1", "winner": "model_a"}]))


def commit_new_names(location) -> None:
    """Another connection commits verdicts whose names (and so label codes) are new."""
    with Store(location) as writer:
        writer.verdicts.add("s", pd.DataFrame([{"question_id": f"q{k}", "model_a": f"new-{k}", "model_b": "m1",
                                                "judge": f"judge-{k}", "winner": "model_b"} for k in range(2, 6)]))


def test_judgments_read_the_labels_and_the_verdicts_of_one_moment(db, monkeypatch):
    store = Store(db)
    first_verdicts(store)
    real = Verdicts._labels

    def labels_then_a_commit(self, study_id):
        labels = real(self, study_id)
        commit_new_names(db)
        return labels

    monkeypatch.setattr(Verdicts, "_labels", labels_then_a_commit)
    seen = store.verdicts.table("s")
    assert list(seen["model_a"]) == ["m1"]  # the moment the read began: the commit is not half-seen
    monkeypatch.undo()
    assert len(store.verdicts.table("s")) == 5  # the next read sees it whole
    store.close()


def test_the_read_model_reads_the_labels_and_the_verdicts_of_one_moment(db, monkeypatch):
    store = Store(db)
    first_verdicts(store)
    real = verdict_reader.study_span

    def span_after_a_commit(store_, study_id):
        commit_new_names(db)  # after the labels were read, before the verdicts are
        return real(store_, study_id)

    monkeypatch.setattr(verdict_reader, "study_span", span_after_a_commit)
    seen = verdict_reader.read_verdicts(store, "s")
    assert len(seen) == 1 and list(seen.judges) == ["j1"]
    monkeypatch.undo()
    again = verdict_reader.read_verdicts(store, "s")
    assert len(again) == 5 and set(again.judges) >= {"judge-2", "judge-5"}
    store.close()
