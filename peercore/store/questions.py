"""Questions and answers: :class:`Questions`, the repository ``store.questions`` of :class:`peercore.store.Store`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from peercore import db as _db
from peercore.store.core import insert_many, Repository, WriteCounts, _require, _text_or


class Questions(Repository):
    """Questions and answers."""

    # ---------------------------------------------------------- questions & answers

    def add(self, study: str, questions: pd.DataFrame) -> WriteCounts:
        """Insert questions (``question_id, text`` [, ``category``, ``reference``, ``metadata``]).

        Existing ids are skipped (the stored text wins; :meth:`question_conflicts` finds
        ids whose text differs). ``metadata`` is a dict per row (e.g. MT-Bench's later
        turns), stored as JSON.
        """
        _require(questions, ("question_id", "text"), "questions")
        sid = self._study_id(study)
        n = len(questions)
        category = questions["category"] if "category" in questions.columns else [""] * n
        reference = questions["reference"] if "reference" in questions.columns else [None] * n
        metadata = questions["metadata"] if "metadata" in questions.columns else [None] * n
        rows = [
            (sid, str(q), str(t), _text_or(c, ""), _text_or(r, None), json.dumps(m or {}, ensure_ascii=False))
            for q, t, c, r, m in zip(questions["question_id"], questions["text"], category, reference, metadata)
        ]
        return insert_many(
            self._store, sid,
            "INSERT OR IGNORE INTO questions (study_id, question_id, text, category, reference, metadata) "
            "VALUES (?, ?, ?, ?, ?, ?)", rows
        )

    def add_answers(self, study: str, answers: pd.DataFrame, *, run_id: str | None = None) -> WriteCounts:
        """Insert answers (``question_id, model, answer`` [, ``turn``]); an existing (question, model, turn) is skipped."""
        _require(answers, ("question_id", "model", "answer"), "answers")
        sid = self._study_id(study)
        turns = answers["turn"] if "turn" in answers.columns else pd.Series(1, index=answers.index)
        rows = [
            (sid, str(q), str(m), int(t) if pd.notna(t) else 1, str(a), run_id)
            for q, m, t, a in zip(answers["question_id"], answers["model"], turns, answers["answer"])
        ]
        return insert_many(
            self._store, sid,
            "INSERT OR IGNORE INTO answers (study_id, question_id, model, turn, text, run_id) VALUES (?, ?, ?, ?, ?, ?)",
            rows
        )

    def table(self, study: str, *, with_metadata: bool = False) -> pd.DataFrame:
        """``question_id, text, category, reference`` (+ ``metadata`` dicts when asked), in insertion order."""
        frame = _db.read_sql_query(
            "SELECT question_id, text, category, reference, metadata FROM questions WHERE study_id = ? ORDER BY rowid",
            self._store.connect(), params=(self._study_id(study),),
        ).astype({"question_id": "str", "text": "str", "category": "str"})
        if with_metadata:
            frame["metadata"] = frame["metadata"].map(json.loads)
            return frame
        return frame.drop(columns="metadata")

    def answers(self, study: str) -> pd.DataFrame:
        """``question_id, model, turn, answer``."""
        return _db.read_sql_query(
            "SELECT question_id, model, turn, text AS answer FROM answers WHERE study_id = ? ORDER BY rowid",
            self._store.connect(), params=(self._study_id(study),),
        ).astype({"question_id": "str", "model": "str", "answer": "str"})

    def answer_models(self, study: str) -> set[str]:
        """The models with a stored answer (``SELECT DISTINCT``: the answers' texts are not read)."""
        rows = self._store.connect().execute("SELECT DISTINCT model FROM answers WHERE study_id = ?",
                                             (self._study_id(study),))
        return {str(r[0]) for r in rows}

    def question_conflicts(self, study: str, questions: pd.DataFrame) -> pd.DataFrame:
        """Rows of ``questions`` whose id is stored with a different text (columns + ``stored_text``)."""
        if not self._store.studies.exists(study) or len(questions) == 0:
            return questions.iloc[:0].assign(stored_text=pd.Series(dtype=object))
        stored = dict(self._store.connect().execute(
            "SELECT question_id, text FROM questions WHERE study_id = ?", (self._study_id(study),)))
        texts = [stored.get(str(q)) for q in questions["question_id"]]
        mask = np.array([t is not None and t != str(x) for t, x in zip(texts, questions["text"])], dtype=bool)
        return questions[mask].assign(stored_text=[t for t, m in zip(texts, mask) if m])

    def answer_conflicts(self, study: str, answers: pd.DataFrame) -> pd.DataFrame:
        """Rows of ``answers`` whose (question, model, turn) is stored with a different text."""
        if not self._store.studies.exists(study) or len(answers) == 0:
            return answers.iloc[:0].assign(stored_answer=pd.Series(dtype=object))
        stored = {(q, m, t): a for q, m, t, a in self._store.connect().execute(
            "SELECT question_id, model, turn, text FROM answers WHERE study_id = ?", (self._study_id(study),))}
        turns = answers["turn"] if "turn" in answers.columns else pd.Series(1, index=answers.index)
        texts = [stored.get((str(q), str(m), int(t) if pd.notna(t) else 1))
                 for q, m, t in zip(answers["question_id"], answers["model"], turns)]
        mask = np.array([t is not None and t != str(x) for t, x in zip(texts, answers["answer"])], dtype=bool)
        return answers[mask].assign(stored_answer=[t for t, m in zip(texts, mask) if m])
