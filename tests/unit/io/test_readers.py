"""The importers on small hand-made files: mapping to the canonical table, detection, folders."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from peercore.errors import JudgmentError
from peercore.io.alpacaeval import alpaca_question_id, read_alpacaeval
from peercore.io.arena import read_arena
from peercore.io.canonical import read_canonical_judgments, read_qa_table, read_questions
from peercore.io.detect import detect_format
from peercore.io.fastchat import read_fastchat_folder, read_fastchat_pairs
from peercore.io.importer import import_path, read_path
from peercore.store import Store
from peercore.app import Study


def jsonl(path, *records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# ---------------------------------------------------------------------- canonical


def test_canonical_csv_jsonl_parquet_read_the_same(tmp_path):
    frame = pd.DataFrame({"question_id": ["1", "2"], "model_a": ["a", "b"], "model_b": ["b", "a"],
                          "judge": ["j", "k"], "winner": ["model_a", "tie"], "p_a": [0.9, None],
                          "criterion": ["help", None], "turn": [1, 2]})
    frame.to_csv(tmp_path / "j.csv", index=False)
    frame.to_json(tmp_path / "j.jsonl", orient="records", lines=True)
    frame.to_parquet(tmp_path / "j.parquet")
    read = [read_canonical_judgments(tmp_path / f"j.{ext}").judgments for ext in ("csv", "jsonl", "parquet")]
    for other in read[1:]:
        pd.testing.assert_frame_equal(read[0], other)
    assert read[0]["winner"].tolist() == ["model_a", "tie"] and read[0]["valid"].tolist() == [1, 1]


def test_large_files_take_the_fast_path_and_get_the_same_result(tmp_path, monkeypatch):
    n = 30_000  # > 1 MiB of JSONL
    rng = np.random.default_rng(0)
    a = rng.integers(0, 9, n)
    frame = pd.DataFrame({"question_id": np.arange(n), "model_a": [f"m{k}" for k in a],
                          "model_b": [f"m{k}" for k in (a + 1 + rng.integers(0, 8, n)) % 9],
                          "judge": [f"voter {k}" for k in rng.integers(0, 50, n)],
                          "winner": rng.choice(["model_a", "model_b", "tie", "tie (bothbad)"], n),
                          "turn": rng.integers(1, 3, n), "tstamp": np.arange(n) * 1.5})
    path = tmp_path / "battles.jsonl"
    frame.to_json(path, orient="records", lines=True)
    assert path.stat().st_size > 1 << 20
    import peercore.io.canonical as canonical

    careful_path = canonical._careful_canonical
    with monkeypatch.context() as patch:  # the fast path must not need the careful one here
        patch.setattr(canonical, "_careful_canonical", lambda *a, **k: pytest.fail("the fast path gave up"))
        fast = read_arena(path).judgments
    assert canonical._careful_canonical is careful_path
    monkeypatch.setattr(canonical, "fast_canonical", lambda raw, **kw: None)  # force the careful path
    careful = read_arena(path).judgments
    pd.testing.assert_frame_equal(fast, careful)
    assert fast["judge"].str.startswith("human:voter ").all()
    assert (fast["winner"] == "tie").sum() == frame["winner"].str.startswith("tie").sum()


def test_fast_path_failure_falls_back_to_a_precise_message(tmp_path):
    rows = [{"question_id": f"q{k}", "model_a": "a", "model_b": "b", "judge": "j", "winner": "model_a",
             "rationale": "x" * 100} for k in range(12_000)]
    rows[11_000]["winner"] = "modelA"
    path = jsonl(tmp_path / "big.jsonl", *rows)
    assert path.stat().st_size > 1 << 20
    with pytest.raises(JudgmentError, match=r"big\.jsonl, line 11001, column 'winner': winner 'modelA'"):
        read_canonical_judgments(path)


def test_questions_with_turns_and_qa_table(tmp_path):
    path = jsonl(tmp_path / "question.jsonl",
                 {"question_id": 81, "category": "writing", "turns": ["Write a poem.", "Now shorter."],
                  "reference": ["A poem."]},
                 {"question_id": 82, "category": "math", "turns": ["2+2?"]})
    questions = read_questions(path).questions
    assert questions["question_id"].tolist() == ["81", "82"] and questions["text"].tolist() == ["Write a poem.", "2+2?"]
    assert questions["metadata"].iloc[0] == {"turns": ["Write a poem.", "Now shorter."]}
    assert questions["reference"].tolist() == ["A poem.", None]
    qa = tmp_path / "qa.csv"
    qa.write_text("question_id,question,model,answer,category\nq1,2+2?,a,4,math\nq1,2+2?,b,5,math\n")
    bundle = read_qa_table(qa)
    assert len(bundle.questions) == 1 and bundle.answers["model"].tolist() == ["a", "b"]


# -------------------------------------------------------------------- peer formats


def test_arena_log_json_array_with_bothbad_and_default_judge(tmp_path):
    path = tmp_path / "clean_battle.json"
    path.write_text(json.dumps([
        {"question_id": "x", "model_a": "gpt-4", "model_b": "claude", "winner": "tie (bothbad)", "anony": True,
         "language": "English", "tstamp": 1.0, "turn": 1},
        {"question_id": "y", "model_a": "claude", "model_b": "gpt-4", "winner": "model_b", "tstamp": 2.0, "turn": 2},
    ], indent=2))
    assert detect_format(path) == "arena"
    out = read_path(path).judgments
    assert out["winner"].tolist() == ["tie", "model_b"]
    assert out["judge"].tolist() == ["human:arena", "human:arena"] and out["turn"].tolist() == [1, 2]


def test_fastchat_pair_games_map_to_shown_positions(tmp_path):
    path = jsonl(tmp_path / "model_judgment" / "gpt-4_pair.jsonl",
                 {"question_id": 81, "model_1": "vicuna", "model_2": "llama", "g1_winner": "model_1",
                  "g2_winner": "model_1", "judge": ["gpt-4", "pair-v2"], "g1_judgment": "[[A]]",
                  "g2_judgment": "[[B]]", "turn": 1},
                 {"question_id": 81, "model_1": "vicuna", "model_2": "llama", "g1_winner": "tie",
                  "g2_winner": "error", "judge": ["gpt-4", "pair-v2-multi-turn"], "g1_judgment": "[[C]]",
                  "g2_judgment": "no verdict", "turn": 2})
    bundle = read_fastchat_pairs(path)
    out = bundle.judgments
    # game 1 shows model_1 first; game 2 shows model_2 first, so "model_1 wins" is model_b there.
    assert out[["model_a", "model_b", "turn"]].values.tolist() == [
        ["vicuna", "llama", 1], ["llama", "vicuna", 1], ["vicuna", "llama", 2], ["llama", "vicuna", 2]]
    assert out["winner"].tolist()[:3] == ["model_a", "model_b", "tie"] and pd.isna(out["winner"].iloc[3])
    assert out["valid"].tolist() == [1, 1, 1, 0] and out["raw"].iloc[3] == "no verdict"
    assert bundle.judges == [{"name": "gpt-4", "kind": "llm", "settings": {"prompt": ["pair-v2", "pair-v2-multi-turn"]}}]


def test_fastchat_folder(tmp_path):
    jsonl(tmp_path / "question.jsonl", {"question_id": 81, "category": "writing", "turns": ["Poem?", "Shorter?"]})
    jsonl(tmp_path / "model_answer" / "vicuna.jsonl",
          {"question_id": 81, "model_id": "vicuna", "choices": [{"index": 0, "turns": ["Roses.", "Rose."]}]})
    jsonl(tmp_path / "model_answer" / "llama.jsonl",
          {"question_id": 81, "model_id": "llama", "choices": [{"index": 0, "turns": ["Violets.", "Violet."]}]})
    jsonl(tmp_path / "reference_answer" / "gpt-4.jsonl",
          {"question_id": 81, "model_id": "gpt-4", "choices": [{"index": 0, "turns": ["A poem."]}]})
    jsonl(tmp_path / "model_judgment" / "gpt-4_pair.jsonl",
          {"question_id": 81, "model_1": "vicuna", "model_2": "llama", "g1_winner": "model_2", "g2_winner": "model_2",
           "judge": ["gpt-4", "pair-v2"], "turn": 1})
    jsonl(tmp_path / "model_judgment" / "gpt-4_single.jsonl", {"question_id": 81, "model": "vicuna", "score": 7})
    assert detect_format(tmp_path) == "fastchat"
    bundle = read_fastchat_folder(tmp_path)
    assert bundle.questions["reference"].tolist() == ["A poem."]
    assert len(bundle.answers) == 4 and sorted(bundle.answers["turn"].unique()) == [1, 2]
    assert bundle.judgments["winner"].tolist() == ["model_b", "model_a"]
    assert bundle.notes["skipped_files"] == ["gpt-4_single.jsonl"]


def test_alpacaeval_preferences(tmp_path):
    path = tmp_path / "annotations.json"
    base = {"output_1": "o1", "output_2": "o2", "generator_1": "gpt4_turbo", "generator_2": "mine",
            "annotator": "weighted_alpaca_eval_gpt4_turbo", "dataset": "helpful_base"}
    path.write_text(json.dumps([{**base, "instruction": f"i{k}", "preference": p}
                                for k, p in enumerate([1, 2, 1.5, 0, 1.73, None])]))
    assert detect_format(path) == "alpacaeval"
    bundle = read_alpacaeval(path)
    out = bundle.judgments
    assert out["winner"].tolist()[:5] == ["model_a", "model_b", "tie", "tie", "model_b"]
    assert out["p_a"].tolist()[:5] == pytest.approx([1.0, 0.0, 0.5, 0.5, 0.27])
    assert out["valid"].tolist() == [1, 1, 1, 1, 1, 0]
    assert out["judge"].iloc[0] == "alpacaeval:weighted_alpaca_eval_gpt4_turbo"
    assert out["question_id"].iloc[0] == alpaca_question_id("i0") and len(bundle.questions) == 6
    assert set(bundle.answers["model"]) == {"gpt4_turbo", "mine"}


# ------------------------------------------------------------------------ folders


def test_a_sample_data_like_folder_imports_in_one_transaction(tmp_path):
    folder = tmp_path / "sample_data"
    jsonl(folder / "questions.jsonl", {"question_id": "q1", "question": "2+2?", "category": "math"},
          {"question_id": "q2", "question": "Colour of sky?", "category": "general"})
    jsonl(folder / "answers.jsonl", {"question_id": "q1", "model": "a", "answer": "4"},
          {"question_id": "q1", "model": "b", "answer": "5"}, {"question_id": "q2", "model": "a", "answer": "blue"})
    (folder / "judgments.csv").write_text("question_id,model_a,model_b,judge,winner,p_a\nq1,a,b,local:qwen,model_a,0.8\n"
                                          "q1,b,a,local:qwen,model_b,0.3\n")
    (folder / "human_votes.csv").write_text("question_id,model_a,model_b,annotator,winner,note\n"
                                            "q1,a,b,ann,model_a,right answer\nq1,a,b,bob,model_a,\n")
    (folder / "debates.csv").write_text(
        "debate_id,question_id,model_a,model_b,criterion,round,speaker,verdict,rationale\n"
        "d1,q1,a,b,helpfulness,0,local:x,model_a,A is right\nd1,q1,a,b,helpfulness,0,local:y,model_b,B\n"
        "d1,q1,a,b,helpfulness,1,local:x,model_a,still A\nd1,q1,a,b,helpfulness,1,local:y,,unparsed\n"
        "d2,q2,a,b,helpfulness,0,local:x,tie,same\nd2,q2,a,b,helpfulness,0,local:y,tie,same\n")
    (folder / "README.md").write_text("# sample")
    assert detect_format(folder) == "folder"
    store = Store(tmp_path / "pb.sqlite")
    report = import_path(folder, store=store)
    assert report.study == "sample_data"
    assert report.notes["files"] == {"answers.jsonl": "answers", "debates.csv": "debates", "human_votes.csv": "human",
                                     "judgments.csv": "canonical", "questions.jsonl": "questions"}
    summary = Study(store, "sample_data").counts()
    assert (summary["questions"], summary["answers"], summary["human_votes"], summary["debates"]) == (2, 3, 2, 2)
    assert summary["unresolved_debates"] == 1 and summary["judgments"] == 2 + 2 + 1  # + the agreed consensus
    judges = store.judges.table("sample_data").set_index("name")["kind"].to_dict()
    assert judges["human:ann"] == "human" and judges["debate:debates"] == "debate"
    turns = store.debates.turns(store.debates.table("sample_data")["id"])
    assert turns["verdict"].isna().sum() == 1
    again = import_path(folder, store=store)
    assert sum(c.added for c in again.counts.values()) == 0


def test_answers_alone_need_their_questions_in_the_study(tmp_path):
    store = Store(tmp_path / "pb.sqlite")
    questions = jsonl(tmp_path / "questions.jsonl", {"question_id": "q1", "text": "2+2?"})
    answers = jsonl(tmp_path / "answers.jsonl", {"question_id": "q1", "model": "a", "answer": "4"},
                    {"question_id": "q2", "model": "a", "answer": "?"})
    with pytest.raises(JudgmentError, match=r"answers\.jsonl, line 1, column 'question_id': answer to question 'q1'"):
        import_path(answers, store=store, study="s")
    assert not store.studies.exists("s")
    import_path(questions, store=store, study="s")
    with pytest.raises(JudgmentError, match=r"answers\.jsonl, line 2, column 'question_id': answer to question 'q2'"):
        import_path(answers, store=store, study="s")
    jsonl(answers, {"question_id": "q1", "model": "a", "answer": "4"})
    assert import_path(answers, store=store, study="s").counts["answers"].added == 1


def test_detection_by_fields(tmp_path):
    cases = {
        "c.csv": "question_id,model_a,model_b,judge,winner\n",
        "h.csv": "question_id,model_a,model_b,annotator,winner\n",
        "a.csv": "question_id,model,answer\n",
        "qa.csv": "question_id,question,model,answer\n",
        "q.csv": "question_id,prompt\n",
        "d.csv": "debate_id,question_id,model_a,model_b,round,speaker,verdict\n",
        "s.json": '[{"ID": 1, "Score": "1", "Reasoning": "x"}]',
    }
    expected = {"c.csv": "canonical", "h.csv": "human", "a.csv": "answers", "qa.csv": "qa", "q.csv": "questions",
                "d.csv": "debates", "s.json": "scaleeval"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text + ("x\n" if name.endswith(".csv") else ""))
        assert detect_format(tmp_path / name) == expected[name], name


def test_an_unparsed_reply_and_a_reference_must_be_text(tmp_path):
    """A list as the raw reply reached SQLite on main (a traceback); an object as a reference was stored as its repr."""
    raw = jsonl(tmp_path / "raw.jsonl", {"question_id": "q1", "model_a": "a", "model_b": "b", "judge": "j",
                                         "winner": None, "valid": 0, "raw": ["no", "verdict"]})
    with pytest.raises(JudgmentError, match=r"^raw\.jsonl, line 1, column 'raw': raw is a list \(\['no', 'verdict'\]\)"):
        read_path(raw)
    kept = jsonl(tmp_path / "kept.jsonl", {"question_id": "q1", "model_a": "a", "model_b": "b", "judge": "j",
                                           "winner": None, "valid": 0, "raw": "  I cannot decide\n"})
    assert read_path(kept).judgments["raw"].tolist() == ["  I cannot decide\n"]  # kept as the judge wrote it
    reference = jsonl(tmp_path / "questions.jsonl", {"question_id": "q1", "question": "hi", "reference": {"a": 1}})
    with pytest.raises(JudgmentError, match=r"^questions\.jsonl, line 1, column 'reference': reference \{'a': 1\} is "
                                            r"not a text or a list of texts"):
        read_path(reference)


def test_messages_quote_values_escaped_and_cut_to_80_characters(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("question_id,model_a,model_b,judge,winner\nq1,a,b,j," + "\x1b[31m" + "w" * 500 + "\n")
    with pytest.raises(JudgmentError) as info:
        read_path(path)
    message = str(info.value)
    quoted = re.search(r"winner ('.*?\.\.\.) is not one of", message)[1]
    assert len(quoted) == 80 and "\\x1b[31m" in quoted and "\x1b" not in message
