"""Reader for the PRD Vicuna80 ratings layout (bcdnlp/PRD, ``data/vicuna80``).

Layout::

    prompts/vicuna_questions.jsonl                 question_id, text, category
    generations/answer_<model>.jsonl               question_id, text (the answer)
    generations_qlora/<size>-guanaco-...jsonl      question_id, generation (Guanaco answers)
    ratings-<reviewer>/answer_<A>-vs-answer_<B>-<reviewer>-reviewer[_threeclass].jsonl

one JSON object per line with ``question_id``, ``score`` and (LLM reviewers) the review
``text``. PRD's score convention is mapped to the canonical table at import:
``1`` -> model_a (answer A better), ``2`` -> model_b, ``3`` -> tie. A handful of LLM
reviews carry ``-1`` (the review could not be parsed); the PRD notebook counts them
as ties, and so do we, so that the paper's numbers reproduce.

Human votes (``ratings-human``) carry no annotator id; each vote becomes one row with
judge ``human:prd`` (repeated votes on one pair are numbered by ``vote``).

Model names are the file names' (``gpt4``, ``claude``, ``vicuna-13b``, ...). The Guanaco
answer files are named by size; QLoRA's ``30b`` file holds the model the rating files
call ``guanaco-33b`` (see the dataset README).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from peercore.errors import JudgmentError
from peercore.io._common import (Bundle, check_identifiers, fail, json_items, json_records, quote, record_text,
                                 table_records)
from peercore.io.rules import MAX_LISTED_RECORDS
from peercore.io.canonical import answers_frame, questions_frame
from peercore.judgments import judgments_from_frame
from peercore.discussion import discussions_from_prd_examples

__all__ = ["read_prd_judgments", "read_prd_folder", "read_prd_file", "read_prd_answers", "prd_file_parts",
           "prd_answers_model", "PRD_HUMAN_JUDGE", "PRD_SCORE_TO_WINNER", "QLORA_MODEL_NAMES", "PRD_REVIEWERS"]

PRD_HUMAN_JUDGE = "human:prd"
PRD_SCORE_TO_WINNER = {1: "model_a", 2: "model_b", 3: "tie", -1: "tie"}
QLORA_MODEL_NAMES = {"7b": "guanaco-7b", "13b": "guanaco-13b", "30b": "guanaco-33b", "33b": "guanaco-33b",
                     "65b": "guanaco-65b"}


# The rating folders PRD released (ratings-<reviewer>/): a single file's name ends with one of them.
PRD_REVIEWERS = ("gpt4", "gpt35", "claude", "bard", "vicuna-13b", "human")
# answer_<A>-vs-answer_<B>-<reviewer>-reviewer[_-threeclass].jsonl; PRD's second GPT-3.5 run uses '-' for '_'.
_RATING_NAME = re.compile(r"^answer[_-](?P<a>.+?)-vs-answer[_-](?P<rest>.+)-reviewer(?:[_-]threeclass)?\.jsonl$")
_ANSWERS_NAME = re.compile(r"^answer_(?P<model>[^/]+?)\.jsonl$")
RATING_NAME_HELP = ("a PRD rating file is named answer_<A>-vs-answer_<B>-<reviewer>-reviewer[_threeclass].jsonl "
                    "(e.g. answer_gpt4-vs-answer_claude-gpt4-reviewer_threeclass.jsonl): the two models and the "
                    "reviewer come from its name")


def prd_file_parts(name: str, folder: str | None = None) -> tuple[str, str, str] | None:
    """``(model_a, model_b, reviewer)`` from a PRD rating file's name, or None when the name does not tell.

    The reviewer is the ``ratings-<reviewer>`` folder's when ``folder`` is one; else the
    name's last part: one of PRD's reviewers (:data:`PRD_REVIEWERS`; model and reviewer
    names may hold ``-``, as ``vicuna-13b``), or, for another reviewer, the part after
    the only ``-`` left between the second model and ``-reviewer``.

    Examples
    --------
    >>> prd_file_parts("answer_gpt4-vs-answer_vicuna-13b-vicuna-13b-reviewer.jsonl")
    ('gpt4', 'vicuna-13b', 'vicuna-13b')
    >>> prd_file_parts("answer_bard-vs-answer_gpt35-llama-reviewer_threeclass.jsonl")
    ('bard', 'gpt35', 'llama')
    """
    match = _RATING_NAME.match(name)
    if match is None:
        return None
    model_a, rest = match["a"], match["rest"]
    if folder is not None and folder.startswith("ratings-"):
        reviewer = folder.removeprefix("ratings-")
        if not rest.endswith(f"-{reviewer}") or len(rest) == len(reviewer) + 1:
            return None
        return model_a, rest[: -len(reviewer) - 1], reviewer
    known = [r for r in PRD_REVIEWERS if rest.endswith(f"-{r}") and len(rest) > len(r) + 1]
    if known:
        reviewer = max(known, key=len)
        return model_a, rest[: -len(reviewer) - 1], reviewer
    if rest.count("-") == 1:
        model_b, reviewer = rest.split("-")
        return (model_a, model_b, reviewer) if model_b and reviewer else None
    return None


def _file_pattern(reviewer: str) -> re.Pattern:
    """answer_<A>-vs-answer_<B>-<reviewer>-reviewer[_-threeclass].jsonl (model names may hold '-')."""
    return re.compile(
        rf"^answer_(?P<a>.+?)-vs-answer_(?P<b>.+)-{re.escape(reviewer)}-reviewer(?:[_-]threeclass)?\.jsonl$"
    )


def read_prd_judgments(
    folder: str | Path,
    *,
    models: list[str] | None = None,
    reviewers: list[str] | None = None,
) -> pd.DataFrame:
    """Read every PRD ratings file under ``folder`` into one canonical judgment table.

    Parameters
    ----------
    folder : the ``vicuna80`` folder holding ``ratings-*/``.
    models : keep only battles between these contestants (PRD's five: bard, claude,
        gpt35, gpt4, vicuna-13b); default all.
    reviewers : keep only these rating folders (``gpt4``, ``human``, ...); default all.

    Notes
    -----
    Only the ``answer_`` (underscore) file names are read. ``ratings-gpt35`` also holds
    ``answer-gpt35-vs-answer-gpt4-...`` (hyphen) files, a second GPT-3.5 run on one
    pair that the PRD notebook does not use; they are skipped.

    Raises
    ------
    JudgmentError
        Naming the file and line of a record that is not valid JSON or has an unknown
        ``score``.
    """
    frames = _rating_frames(Path(folder), models=models, reviewers=reviewers)
    return judgments_from_frame(pd.concat(frames, ignore_index=True), source=str(folder))


def _rating_frames(folder: Path, *, models=None, reviewers=None) -> list[pd.DataFrame]:
    rating_dirs = sorted(p for p in folder.glob("ratings-*") if p.is_dir())
    if not rating_dirs:
        raise JudgmentError("no ratings-*/ folders found; is this a PRD vicuna80 folder?", source=str(folder))
    frames = []
    for rating_dir in rating_dirs:
        reviewer = rating_dir.name.removeprefix("ratings-")
        if reviewers is not None and reviewer not in reviewers:
            continue
        judge = PRD_HUMAN_JUDGE if reviewer == "human" else reviewer
        pattern = _file_pattern(reviewer)
        for path in sorted(rating_dir.glob("answer_*.jsonl")):
            match = pattern.match(path.name)
            if not match:
                continue
            model_a, model_b = match["a"], match["b"]
            if models is not None and (model_a not in models or model_b not in models):
                continue
            frames.append(_read_file(path, model_a, model_b, judge))
    if not frames:
        raise JudgmentError("no PRD ratings matched the requested models and reviewers", source=str(folder))
    return frames


def read_prd_folder(folder: str | Path) -> Bundle:
    """The whole PRD folder as an import bundle: questions, answers, reviews, human votes.

    LLM reviewers are registered with themselves as model alias (a reviewer is also a
    contestant, which Peer Rank needs); ``human:prd`` as a human judge.
    """
    folder = Path(folder)
    frames = _rating_frames(folder)
    judgments = judgments_from_frame(pd.concat(frames, ignore_index=True), source=str(folder))
    judgments["valid"] = 1
    judgments["raw"] = None
    origins = [origin for frame in frames for origin in frame.attrs["origin"]]
    files = sorted(p for p in folder.glob("ratings-*/answer_*.jsonl"))
    bundle = Bundle(source=str(folder), format="prd", order="known", judgments=judgments, files=files,
                    judgment_lines=lambda row: origins[row])
    questions_file = folder / "prompts" / "vicuna_questions.jsonl"
    if questions_file.is_file():
        records, lines = json_records(questions_file)
        bundle.questions = questions_frame(pd.DataFrame.from_records(records), name=questions_file.name,
                                           line_of=lambda row: lines[row])
        bundle.files.append(questions_file)
    answer_frames = []
    for path in sorted((folder / "generations").glob("answer_*.jsonl")):
        answer_frames.append(_answers(path, path.stem.removeprefix("answer_"), "text"))
    for path in sorted((folder / "generations_qlora").glob("*-guanaco-*.jsonl")):
        size = path.name.split("-", 1)[0]
        answer_frames.append(_answers(path, QLORA_MODEL_NAMES.get(size, f"guanaco-{size}"), "generation"))
    if answer_frames:
        bundle.answers = pd.concat(answer_frames, ignore_index=True)
        bundle.files += sorted((folder / "generations").glob("answer_*.jsonl"))
        bundle.files += sorted((folder / "generations_qlora").glob("*-guanaco-*.jsonl"))
    contestants = set(judgments["model_a"]) | set(judgments["model_b"])
    bundle.judges = [
        {"name": str(name), "kind": "human" if name == PRD_HUMAN_JUDGE else "llm",
         "model_alias": str(name) if name in contestants else None}
        for name in pd.unique(judgments["judge"])
    ]
    bundle.notes = {"llm_reviews": int((judgments["judge"] != PRD_HUMAN_JUDGE).sum()),
                    "human_votes": int((judgments["judge"] == PRD_HUMAN_JUDGE).sum())}
    return bundle


def read_prd_file(path: str | Path) -> Bundle:
    """One PRD rating file, uploaded on its own or in its ``ratings-<reviewer>/`` folder.

    The two models and the reviewer come from the file name (:func:`prd_file_parts`;
    the folder's name, when it is ``ratings-<reviewer>``, names the reviewer).

    Raises
    ------
    JudgmentError
        When the name does not tell the models and the reviewer, or (naming the line and
        field) a record is not valid JSON or has an unknown ``score``.
    """
    path = Path(path)
    parts = prd_file_parts(path.name, path.parent.name)
    if parts is None:
        fail(f"cannot tell the two models and the reviewer from the file name; {RATING_NAME_HELP}",
             source=path.name)
    model_a, model_b, reviewer = parts
    if model_a == model_b:
        fail(f"the file name compares {quote(model_a)} with itself; {RATING_NAME_HELP}", source=path.name)
    judge = PRD_HUMAN_JUDGE if reviewer == "human" else reviewer
    frame = _read_file(path, model_a, model_b, judge)
    judgments = judgments_from_frame(frame, source=path.name)
    judgments["valid"] = 1
    judgments["raw"] = None
    origins = frame.attrs["origin"]
    return Bundle(source=str(path), format="prd-file", order="known", judgments=judgments, files=[path],
                  judges=[{"name": judge, "kind": "human" if reviewer == "human" else "llm"}],
                  judgment_lines=lambda row: origins[row], notes={"reviewer": judge, "pair": f"{model_a} vs {model_b}"})


def prd_answers_model(name: str) -> str | None:
    """The contestant a PRD answer file holds, from its name: ``answer_gpt4.jsonl`` -> ``gpt4``;
    QLoRA's ``30b-guanaco-...jsonl`` -> ``guanaco-33b``; None when the name does not tell."""
    match = _ANSWERS_NAME.match(name)
    if match is not None and "-vs-answer" not in name:
        return match["model"]
    size = name.split("-", 1)[0]
    if "-guanaco-" in name and size in QLORA_MODEL_NAMES:
        return QLORA_MODEL_NAMES[size]
    return None


def read_prd_answers(path: str | Path) -> Bundle:
    """One PRD answer file: ``generations/answer_<model>.jsonl`` (``question_id``, ``text``; the model from the
    name, as in the ratings files, else each record's ``model_id``) or QLoRA's ``<size>-guanaco-...jsonl``
    (``question_id``, ``generation``).

    Raises
    ------
    JudgmentError
        Naming the line and field of a missing or non-text answer, a bad ``question_id``
        or a second answer to one question; a file whose name does not tell the model
        and whose records have no ``model_id``.
    """
    path = Path(path)
    frame, line_of = table_records(path)
    field = "generation" if "generation" in frame.columns else "text"
    for column in ("question_id", field):
        if column not in frame.columns:
            fail(f"missing field {quote(column)} of a PRD answer", source=path.name, line=line_of(0), column=column)
    for row, value in enumerate(frame[field].tolist()):
        if not isinstance(value, str):
            fail(f"{field} is {_json_kind(value)}, not the answer's text", source=path.name, line=line_of(row),
                 column=field)
    model = prd_answers_model(path.name)
    if model is not None:
        models = pd.Series([model] * len(frame), dtype=object)
    elif "model_id" in frame.columns:
        models = frame["model_id"]
    else:
        fail("cannot tell the model: the file is not named answer_<model>.jsonl and its records have no "
             "'model_id'", source=path.name)
    table = pd.DataFrame({"question_id": frame["question_id"].to_numpy(), "model": models.to_numpy(),
                          "answer": frame[field].to_numpy()})
    answers = answers_frame(table, name=path.name, line_of=line_of)
    return Bundle(source=str(path), format="prd-answers", answers=answers, files=[path], answer_lines=line_of,
                  notes={"model": ", ".join(map(str, pd.unique(answers["model"])))})


def _json_kind(value: object) -> str:
    """What a JSON value is, in JSON's words (``empty``, ``true``, ``a number``, ``a list``, ``an object``)."""
    if value is None or (isinstance(value, float) and value != value):
        return "empty"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return "a number"
    return "an object" if isinstance(value, dict) else "a list" if isinstance(value, (list, tuple)) else "not text"


def _answers(path: Path, model: str, field: str) -> pd.DataFrame:
    records, lines = json_records(path)
    rows = []
    for record, line in zip(records, lines):
        for name in ("question_id", field):
            if name not in record:
                fail(f"missing field {quote(name)} of a PRD answer", source=path.name, line=line, column=name)
        if not isinstance(record[field], str):
            fail(f"{field} is {type(record[field]).__name__}, not text", source=path.name, line=line, column=field)
        question_id = record_text(record, "question_id", source=path.name, line=line)
        rows.append({"question_id": question_id, "model": model, "turn": 1, "answer": record[field]})
    frame = pd.DataFrame(rows)
    check_identifiers(frame, ("question_id",), source=path.name, line_of=lambda row: lines[row])
    return frame


def _read_file(path: Path, model_a: str, model_b: str, judge: str) -> pd.DataFrame:
    """One rating file as canonical rows (columns built as records stream in; no dict per record kept)."""
    questions, winners, rationales, lines = [], [], [], []
    for number, record in json_items(path, most=MAX_LISTED_RECORDS):
        if "question_id" not in record:
            raise JudgmentError("missing field 'question_id'", source=path.name, line=number, column="question_id")
        score = record.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or score not in PRD_SCORE_TO_WINNER:
            raise JudgmentError(
                f"score {quote(score)} is not one of 1 (A better), 2 (B better), 3 (tie), -1 (unparsed)",
                source=path.name, line=number, column="score", value=quote(score),
            )
        text = record.get("text")
        if text is not None and not isinstance(text, str):
            fail(f"text {quote(text)} is not a text (the review)", source=path.name, line=number, column="text",
                 value=quote(text))
        questions.append(record_text(record, "question_id", source=path.name, line=number))
        winners.append(PRD_SCORE_TO_WINNER[score])
        rationales.append(text if judge != PRD_HUMAN_JUDGE else None)
        lines.append(number)
    n = len(questions)
    frame = pd.DataFrame({"question_id": questions, "model_a": [model_a] * n, "model_b": [model_b] * n,
                          "judge": [judge] * n, "winner": winners, "rationale": rationales})
    check_identifiers(frame, ("question_id", "model_a", "model_b", "judge"), source=path.name,
                      line_of=lambda row: lines[row])
    frame.attrs["origin"] = [(path.name, line) for line in lines]
    return frame


# ------------------------------------------------------------------ discussion examples

PRD_DISCUSSION_FIELDS = ("question", "answer_a", "answer_b", "reviewer_1_model", "reviewer_2_model")
PRD_EXPERT_JUDGE = "human:lfqa-expert"


def read_prd_discussions(path: str | Path) -> Bundle:
    """PRD's released discussion examples (bcdnlp/PR_LLM_EVAL ``discussions_frame/data/data.json``).

    Each record is one LFQA question with two answers, two reviewers' initial reviews,
    the experts' preferences and the same two-reviewer discussion in both leader orders
    (Li, Patel & Du 2023, section 3.2). The import holds, per record:

    * the question (``prd_example:<n>``) and its two answers, as contestants ``answer_1``
      and ``answer_2``;
    * two discussions (one per leader), turn by turn, one speaker per turn
      (:func:`peercore.discussion.discussions_from_prd_examples`), so the Debates page
      shows them and counts opinion holding / altering (PRD section 5);
    * the reviewers' initial reviews (round empty) and their final verdicts in each
      discussion (round = the last turn; vote 0 as leader, 1 as follower), as a
      discussion run stores them;
    * each expert's preference as a vote of ``human:lfqa-expert``.

    Preferences 1 / 2 are answer 1 / answer 2; any other value is an unparsed verdict,
    kept with its raw value.

    Raises
    ------
    JudgmentError
        Naming the file, record and field of the first problem.
    """

    path = Path(path)
    records, lines = json_records(path)
    for number, (record, line) in enumerate(zip(records, lines)):
        for field in PRD_DISCUSSION_FIELDS:
            if not isinstance(record.get(field), str) or not record[field].strip():
                fail(f"missing text field {quote(field)} of a PRD discussion example", source=path.name,
                     line=line, row=None if line else number, column=field)
    try:
        debates, turns = discussions_from_prd_examples(records)
    except ValueError as exc:
        fail(str(exc), source=path.name)
    questions = pd.DataFrame({"question_id": [f"prd_example:{n}" for n in range(len(records))],
                              "question": [r["question"] for r in records], "category": "lfqa"})
    answers = pd.DataFrame([{"question_id": f"prd_example:{n}", "model": model, "turn": 1, "answer": r[field]}
                            for n, r in enumerate(records) for model, field in (("answer_1", "answer_a"),
                                                                                 ("answer_2", "answer_b"))])
    rows = []
    by_id = dict(zip(debates["id"], debates.to_dict("records")))
    for debate_id, part in turns.groupby("debate_id", sort=True):
        debate = by_id[debate_id]
        leader = debate["metadata"]["leader"]
        part = part.sort_values(["round", "position"])
        last = part.groupby("speaker").tail(1)
        for turn in part[part["round"] == 0].itertuples(index=False):  # twice per record: deduplicated below
            rows.append(_verdict_row(debate, turn.speaker, turn.verdict, turn.rationale, turn.raw, round_=None,
                                     vote=0))
        if debate["n_rounds"] > 0:
            for turn in last.itertuples(index=False):
                rows.append(_verdict_row(debate, turn.speaker, turn.verdict, turn.rationale, turn.raw,
                                         round_=int(debate["n_rounds"]), vote=0 if turn.speaker == leader else 1))
    for number, record in enumerate(records):
        for vote, expert in enumerate(record.get("justification_human") or []):
            if isinstance(expert, dict):
                verdict = {1: "model_a", 2: "model_b"}.get(expert.get("preference"))
                rows.append({"question_id": f"prd_example:{number}", "model_a": "answer_1", "model_b": "answer_2",
                             "judge": PRD_EXPERT_JUDGE, "winner": verdict, "rationale": expert.get("justification"),
                             "round": None, "vote": vote, "valid": int(verdict is not None),
                             "raw": None if verdict is not None else str(expert.get("preference"))})
    frame = pd.DataFrame(rows)
    frame = frame.drop_duplicates(["question_id", "judge", "round", "vote"], keep="first").reset_index(drop=True)
    valid = frame["valid"].to_numpy()
    judgments = judgments_from_frame(frame.assign(winner=frame["winner"].where(valid == 1, "tie")), source=path.name)
    judgments["winner"] = judgments["winner"].where(valid == 1)
    judgments["valid"] = valid
    judgments["raw"] = frame["raw"].astype(object).where(frame["raw"].notna(), None).to_numpy()
    judgments["vote"] = frame["vote"].astype(int).to_numpy()
    reviewers = sorted(set(debates["metadata"].map(lambda m: m["leader"])))
    return Bundle(
        source=str(path), format="prd-discussions", order="known",
        questions=questions_frame(questions, name=path.name, line_of=lambda row: lines[row]), answers=answers,
        judgments=judgments, files=[path],
        judges=[*({"name": r, "kind": "llm"} for r in reviewers), {"name": PRD_EXPERT_JUDGE, "kind": "human"}],
        debates=[({k: (None if k == "consensus" and not isinstance(v, str) else v) for k, v in d.items() if k != "id"}, [
            {k: t[k] for k in ("round", "position", "speaker", "verdict", "rationale", "raw")}
            for t in turns[turns["debate_id"] == d["id"]].to_dict("records")]) for d in debates.to_dict("records")],
        notes={"discussions": len(debates), "discussion_turns": int((turns["round"] > 0).sum())},
    )


def _verdict_row(debate: dict, speaker: str, verdict, rationale, raw, *, round_, vote: int) -> dict:
    return {"question_id": debate["question_id"], "model_a": debate["model_a"], "model_b": debate["model_b"],
            "judge": speaker, "winner": verdict, "rationale": rationale or None, "round": round_, "vote": vote,
            "valid": int(verdict is not None), "raw": None if verdict is not None else raw}
