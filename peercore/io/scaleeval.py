"""ScaleEval results folders (Chern et al. 2024, GAIR-NLP/scaleeval ``responses/`` + ``results/``).

Layout::

    responses/<model>/<scenario>.jsonl                      {prompt, category, response}, row k = id k+1
    results/<A>_vs_<B>/<criterion>/<judge>_score/<scenario>.jsonl          single judge: [{ID, Score, Reasoning}]
    results/<A>_vs_<B>/<criterion>/multiagent_score/<scenario>.jsonl       debates: [{id, Question,
        "Submission 1", "Submission 2", "Speaker k - Initial Evaluation": {reasoning, score},
        "Speaker k - Discussion Round r": {...}}]

(the ``.jsonl`` result files are JSON arrays). Scores: 1 = Submission 1 better, 2 =
Submission 2 better, 0 = tie; anything else (None, "4", "150", ...: about 140 verdicts in
the released data) is an unparsed verdict and is kept as invalid, never guessed.

Mapping to PeerBoard:

- **question** ``<scenario>:<id>`` with the prompt as text and the scenario as category;
  the responses become answers. The pair folder's names are resolved against the
  ``responses/`` folders (``claude`` -> ``claude-instant``).
- **presentation order**. ScaleEval shuffled which model was Submission 1 *per example
  and criterion* (in the released data about half the debates show the pair folder's
  second model first). The order is recovered by matching the debate's ``Submission 1``
  / ``Submission 2`` texts with the responses: ``model_a`` is the model whose answer was
  Submission 1. A single-judge verdict takes the order of the debate on the same
  example (its Initial Evaluation is the very same call, word for word). Verdicts whose
  order cannot be recovered (no debate file for that example, or no responses folder)
  are kept as invalid verdicts, with the reason in ``raw``: a guessed order would be
  wrong half the time. A record may instead give the order explicitly with
  ``model_a`` / ``model_b`` fields.
- **single judges** -> canonical judgments by ``scaleeval:<judge>`` (``scaleeval:gpt4_turbo``,
  ...), criterion = the criterion folder, rationale = the judge's reasoning.
- **debates** -> debate records (key ``<pair>/<criterion>/<scenario>/<id>``, scenario
  stored) with every speaker's verdict in every round (round 0 = initial evaluation).
  Speaker identity rotates between examples; each speaker is identified by matching
  its Initial Evaluation reasoning with the single-judge files for the same example
  (and the last one by elimination); unmatched speakers are ``scaleeval:speaker_<k>``.
  A record may give ``speakers`` (judge names in speaker order) explicitly.
  A debate is **agreed** when every speaker gives the same parsed verdict in the last
  round present, and its consensus becomes a judgment by ``debate:scaleeval``;
  otherwise it is **unresolved** (the adjudication queue's input).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd

from peercore.errors import JudgmentError
from peercore.io._common import Bundle, check_identifiers, fail, json_records, quote, record_text, record_whole_number
from peercore.io.rules import INTEGER_BOUNDS, column_list
from peercore.io.canonical import _careful_canonical

__all__ = ["read_scaleeval", "read_scaleeval_file", "read_scaleeval_path", "parse_score", "SCALEEVAL_DEBATE_JUDGE", "is_scaleeval_folder"]

SCALEEVAL_DEBATE_JUDGE = "debate:scaleeval"
DEBATE_FOLDER = "multiagent_score"
_SPEAKER_KEY = re.compile(r"^Speaker (?P<k>\d+) - (?:Initial Evaluation|Discussion Round (?P<r>\d+))$")
_SUBMISSION = {1: "model_a", 2: "model_b", 0: "tie"}


def parse_score(score: object) -> str | None:
    """ScaleEval score -> canonical winner in the debate's own order; None when unparsed.

    1 / "1" -> model_a (Submission 1), 2 -> model_b, 0 -> tie; anything else -> None.
    """
    if isinstance(score, bool):
        return None
    if isinstance(score, (int, float)) and score in (0, 1, 2):
        return _SUBMISSION[int(score)]
    if isinstance(score, str) and score.strip() in ("0", "1", "2"):
        return _SUBMISSION[int(score.strip())]
    return None


def is_scaleeval_folder(folder: Path) -> bool:
    results = folder / "results" if (folder / "results").is_dir() else folder
    return any(results.glob("*_vs_*/*/*_score"))


def read_scaleeval(folder: str | Path) -> Bundle:
    """Read a ScaleEval folder (``responses/`` optional, ``results/`` required).

    Raises
    ------
    JudgmentError
        Naming the file, record line and field: a record without ``ID`` / ``Score`` /
        ``Reasoning``, a repeated id, a debate without speakers or with a speaker missing
        from a round, a speaker entry without ``score``, a submission that matches neither
        model's response, ...
    """
    folder = Path(folder)
    results = folder / "results" if (folder / "results").is_dir() else folder
    pairs = sorted(p for p in results.glob("*_vs_*") if p.is_dir())
    if not pairs or not is_scaleeval_folder(folder):
        fail("no results/<A>_vs_<B>/<criterion>/<judge>_score/ folders; is this a ScaleEval folder?", source=folder)
    responses_dir = folder / "responses" if (folder / "responses").is_dir() else None
    reader = _Reader(responses_dir, source=str(folder))
    for pair_dir in pairs:
        for criterion_dir in sorted(p for p in pair_dir.iterdir() if p.is_dir()):
            reader.read_criterion(pair_dir.name, criterion_dir)
    return reader.bundle(source=str(folder))


def read_scaleeval_path(path: str | Path) -> Bundle:
    """A ScaleEval folder (:func:`read_scaleeval`) or one result file (:func:`read_scaleeval_file`)."""
    return read_scaleeval(path) if Path(path).is_dir() else read_scaleeval_file(path)


def read_scaleeval_file(path: str | Path) -> Bundle:
    """One ScaleEval result file (single-judge or debate).

    Inside the ScaleEval layout the pair, criterion and judge come from the folder
    names; elsewhere each record must carry ``model_a``, ``model_b`` and ``criterion``
    (and ``question_id``, else ``<scenario>:<id>`` with the file stem as scenario).
    """
    path = Path(path)
    parts = path.resolve().parts
    layout = len(parts) >= 4 and "_vs_" in parts[-4] and parts[-2].endswith("_score")
    responses_dir = None
    if layout:
        root = Path(*parts[:-4])
        candidate = (root.parent if root.name == "results" else root) / "responses"
        responses_dir = candidate if candidate.is_dir() else None
    reader = _Reader(responses_dir, source=str(path))
    if layout:
        reader.read_criterion(parts[-4], Path(*parts[:-2]), only=(parts[-2], path.name))
    else:
        records, lines = json_records(path)
        if any(_SPEAKER_KEY.match(k) for k in records[0]):
            reader.read_debates(path, pair=None, criterion=None, singles={}, records=(records, lines))
        else:
            reader.read_singles_standalone(path, records, lines)
    return reader.bundle(source=str(path))


class _Reader:
    """Accumulates questions, answers, verdicts and debates over a ScaleEval tree."""

    def __init__(self, responses_dir: Path | None, *, source: str) -> None:
        self.source = source
        self.responses: dict[tuple[str, str], list[dict]] = {}
        self.models: list[str] = []
        self.files: list[Path] = []
        self.question_rows: dict[str, dict] = {}
        self.answer_rows: list[dict] = []
        self.rows: list[dict] = []
        self.row_lines: list[tuple[str, int | None]] = []
        self.debates: list[tuple[dict, list[dict]]] = []
        self.notes = Counter()
        if responses_dir is not None:
            self._read_responses(responses_dir)

    # ------------------------------------------------------------------ responses

    def _read_responses(self, responses_dir: Path) -> None:
        for model_dir in sorted(p for p in responses_dir.iterdir() if p.is_dir()):
            self.models.append(model_dir.name)
            for path in sorted(model_dir.glob("*.jsonl")):
                records, lines = json_records(path)
                scenario = path.stem
                for index, (record, line) in enumerate(zip(records, lines), start=1):
                    for field in ("prompt", "response"):
                        if not isinstance(record.get(field), str):
                            fail(f"missing or non-text field {quote(field)} of a ScaleEval response",
                                 source=path.name, line=line, column=field, value=quote(record.get(field)))
                    qid = f"{scenario}:{index}"
                    question = self.question_rows.setdefault(qid, {
                        "question_id": qid, "text": record["prompt"], "category": scenario, "reference": None,
                        "metadata": {"scenario": scenario, "id": index}})
                    if question["text"] != record["prompt"]:
                        fail(f"prompt of {scenario} #{index} differs from the other models' prompt for that id",
                             source=path.name, line=line, column="prompt")
                    self.answer_rows.append({"question_id": qid, "model": model_dir.name, "turn": 1,
                                             "answer": record["response"]})
                self.responses[(model_dir.name, scenario)] = records
                self.files.append(path)

    def model_name(self, short: str) -> str:
        """Pair-folder name -> responses folder name (``claude`` -> ``claude-instant``)."""
        if not self.models or short in self.models:
            return short
        candidates = [m for m in self.models if m.startswith(short + "-") or m.startswith(short)]
        return candidates[0] if len(candidates) == 1 else short

    def response(self, model: str, scenario: str, index: int) -> str | None:
        records = self.responses.get((model, scenario))
        if records is None or not 1 <= index <= len(records):
            return None
        return records[index - 1]["response"]

    # ---------------------------------------------------------------- per criterion

    def read_criterion(self, pair: str, criterion_dir: Path, *, only: tuple[str, str] | None = None) -> None:
        criterion = criterion_dir.name
        judge_dirs = sorted(p for p in criterion_dir.glob("*_score") if p.is_dir())
        scenarios = sorted({f.name for d in judge_dirs for f in d.glob("*.json*")})
        for file_name in scenarios:
            singles: dict[str, tuple[Path, dict[int, dict], list[int]]] = {}
            for judge_dir in judge_dirs:
                if judge_dir.name == DEBATE_FOLDER:
                    continue
                path = judge_dir / file_name
                if path.is_file():
                    singles[judge_dir.name.removesuffix("_score")] = self._single_file(path)
            debate_path = criterion_dir / DEBATE_FOLDER / file_name
            orders = {}
            if debate_path.is_file() and (only is None or only[0] == DEBATE_FOLDER):
                orders = self.read_debates(debate_path, pair=pair, criterion=criterion, singles=singles)
            elif debate_path.is_file():
                orders = self.read_debates(debate_path, pair=pair, criterion=criterion, singles=singles, write=False)
            for judge, (path, by_id, lines) in singles.items():
                if only is not None and only[0] != f"{judge}_score":
                    continue
                self._single_rows(path, by_id, lines, judge=judge, pair=pair, criterion=criterion,
                                  scenario=Path(file_name).stem, orders=orders)

    def _single_file(self, path: Path) -> tuple[Path, dict[int, dict], list[int]]:
        records, lines = json_records(path)
        by_id: dict[int, dict] = {}
        line_of: dict[int, int] = {}
        for record, line in zip(records, lines):
            for field in ("ID", "Score", "Reasoning"):
                if field not in record:
                    fail(f"missing field {quote(field)} of a ScaleEval single-judge verdict (found: {column_list(record)})",
                         source=path.name, line=line, column=field)
            ident = record["ID"]
            if isinstance(ident, bool) or not isinstance(ident, int):
                fail(f"ID {quote(ident)} is not a whole number", source=path.name, line=line, column="ID",
                     value=quote(ident))
            _check_id(ident, "ID", name=path.name, line=line)
            if ident in by_id:
                fail(f"ID {ident} appears twice (first on line {line_of[ident]})", source=path.name, line=line,
                     column="ID", value=ident)
            by_id[ident], line_of[ident] = record, line
        self.files.append(path)
        return path, by_id, [line_of[i] for i in by_id]

    def _single_rows(self, path, by_id, lines, *, judge, pair, criterion, scenario, orders) -> None:
        first, second = (self.model_name(m) for m in pair.split("_vs_", 1))
        for (ident, record), line in zip(by_id.items(), lines):
            self.notes["single_verdicts"] += 1
            winner = parse_score(record["Score"])
            order = orders.get(ident)
            raw = None
            if winner is None:
                raw = json.dumps({"score": record["Score"]})
                self.notes["single_verdicts_unparsed"] += 1
            if order is None:
                raw = json.dumps({"score": record["Score"], "problem": "which model was Submission 1 is unknown "
                                  "(no debate record on this example to match the submissions)"})
                self.notes["single_verdicts_order_unknown"] += 1
                order = (first, second)
            self._add_row(path, line, question_id=f"{scenario}:{ident}", model_a=order[0], model_b=order[1],
                          judge=f"scaleeval:{judge}", winner=winner if raw is None else None, criterion=criterion,
                          rationale=record["Reasoning"] if isinstance(record["Reasoning"], str) else None, raw=raw)

    def read_singles_standalone(self, path: Path, records: list[dict], lines: list[int]) -> None:
        for record, line in zip(records, lines):
            for field in ("model_a", "model_b", "criterion", "judge"):
                if field not in record:
                    fail(f"missing field {quote(field)}: outside the ScaleEval folder layout a verdict must name "
                         "model_a, model_b (Submission 1 and 2), criterion and judge", source=path.name, line=line,
                         column=field)
            for field in ("ID", "Score"):
                if field not in record:
                    fail(f"missing field {quote(field)} of a ScaleEval verdict", source=path.name, line=line, column=field)
            winner = parse_score(record["Score"])
            self.notes["single_verdicts"] += 1
            if winner is None:
                self.notes["single_verdicts_unparsed"] += 1
            ident = record_whole_number(record, "ID", source=path.name, line=line)
            question_id = record_text(record, "question_id", source=path.name, line=line, required=False)
            self._add_row(path, line, question_id=question_id or f"{path.stem}:{ident}",
                          model_a=record["model_a"], model_b=record["model_b"],
                          judge=record_text(record, "judge", source=path.name, line=line),
                          winner=winner, criterion=record["criterion"], rationale=record.get("Reasoning"),
                          raw=None if winner is not None else json.dumps({"score": record["Score"]}))
        self.files.append(path)

    def _add_row(self, path: Path, line: int | None, **row) -> None:
        self.rows.append(row)
        self.row_lines.append((path.name, line))

    # ------------------------------------------------------------------- debates

    def read_debates(self, path: Path, *, pair: str | None, criterion: str | None, singles: dict,
                     records=None, write: bool = True) -> dict[int, tuple[str, str]]:
        """Debate records of one file; returns id -> (model of Submission 1, of Submission 2)."""
        records, lines = records or json_records(path)
        scenario = path.stem
        name = path.name
        orders: dict[int, tuple[str, str]] = {}
        pair_models = [self.model_name(m) for m in pair.split("_vs_", 1)] if pair else None
        seen: dict[int, int] = {}
        for record, line in zip(records, lines):
            ident = record.get("id", record.get("ID"))
            if ident is None or isinstance(ident, bool) or not isinstance(ident, int):
                fail(f"missing or non-integer debate id ({quote(ident)})", source=name, line=line, column="id",
                     value=quote(ident))
            _check_id(ident, "id", name=name, line=line)
            if ident in seen:
                fail(f"debate id {ident} appears twice (first on line {seen[ident]})", source=name, line=line,
                     column="id", value=ident)
            seen[ident] = line
            order, order_source = self._order(record, pair_models, scenario, ident, name=name, line=line)
            if order is not None:
                orders[ident] = order
            if not write:
                continue
            rounds = _rounds(record, name=name, line=line)
            speakers = sorted(rounds[0])
            names = self._speakers(record, speakers, singles, ident, name=name, line=line)
            question_id = record_text(record, "question_id", source=name, line=line, required=False) \
                or f"{scenario}:{ident}"
            if "Question" in record and isinstance(record["Question"], str):
                self.question_rows.setdefault(question_id, {
                    "question_id": question_id, "text": record["Question"], "category": scenario, "reference": None,
                    "metadata": {"scenario": scenario, "id": ident}})
            debate_criterion = criterion or record_text(record, "criterion", source=name, line=line, required=False)
            if debate_criterion is None:
                fail("missing field 'criterion': outside the ScaleEval folder layout a debate must name its criterion",
                     source=name, line=line, column="criterion")
            model_a, model_b = order if order is not None else (pair_models or (None, None))
            if model_a is None:
                fail("missing fields 'model_a' / 'model_b' (the models of Submission 1 and 2)", source=name, line=line,
                     column="model_a")
            turns, verdicts = [], {}
            for r in sorted(rounds):
                for k in speakers:
                    entry = rounds[r][k]
                    verdict = parse_score(entry["score"])
                    self.notes["debate_turns"] += 1
                    if verdict is None:
                        self.notes["debate_turns_unparsed"] += 1
                    turns.append({"round": r, "position": k - 1, "speaker": names[k], "verdict": verdict,
                                  "rationale": entry.get("reasoning") if isinstance(entry.get("reasoning"), str) else "",
                                  "raw": None if verdict is not None else json.dumps(entry["score"])})
                    verdicts[(r, k)] = verdict
            last = max(rounds)
            final = [verdicts[(last, k)] for k in speakers]
            agreed = all(v is not None for v in final) and len(set(final)) == 1
            self.notes["debates"] += 1
            self.notes["agreed_debates" if agreed else "unresolved_debates"] += 1
            identified = sum(not names[k].startswith("scaleeval:speaker_") for k in speakers)
            self.notes["speakers_unidentified"] += len(speakers) - identified
            debate = {
                "debate_key": f"{pair}/{debate_criterion}/{scenario}/{ident}" if pair else f"{scenario}/{ident}",
                "kind": "debate", "question_id": question_id, "model_a": model_a, "model_b": model_b,
                "criterion": debate_criterion, "scenario": scenario,
                "status": "agreed" if agreed else "unresolved", "consensus": final[0] if agreed else None,
                "n_rounds": last,
                "metadata": {"source": "scaleeval", "pair": pair, "id": ident, "speakers": [names[k] for k in speakers],
                             "speakers_identified": identified, "submission_order": order_source,
                             "initial": {names[k]: verdicts[(0, k)] for k in speakers},
                             "final": {names[k]: verdicts[(last, k)] for k in speakers}},
            }
            self.debates.append((debate, turns))
            if agreed:
                raw = None if order is not None else json.dumps({"problem": "submission order unknown"})
                self._add_row(path, line, question_id=question_id, model_a=model_a, model_b=model_b,
                              judge=SCALEEVAL_DEBATE_JUDGE, winner=final[0] if raw is None else None,
                              criterion=debate_criterion, raw=raw,
                              rationale=f"consensus of {len(speakers)} agents after {last} discussion round(s)")
        if write:
            self.files.append(path)
        return orders

    def _order(self, record, pair_models, scenario, ident, *, name, line):
        """(model of Submission 1, model of Submission 2) and how it was found, or (None, reason)."""
        if "model_a" in record or "model_b" in record:
            if not (isinstance(record.get("model_a"), str) and isinstance(record.get("model_b"), str)):
                fail("model_a and model_b must both be given as names", source=name, line=line, column="model_a")
            return (record["model_a"], record["model_b"]), "given"
        if pair_models is None:
            return None, "unknown"
        first, second = pair_models
        answer_1, answer_2 = self.response(first, scenario, ident), self.response(second, scenario, ident)
        if answer_1 is None or answer_2 is None:
            return None, "unknown (no responses to match)"
        s1, s2 = record.get("Submission 1"), record.get("Submission 2")
        if not isinstance(s1, str) or not isinstance(s2, str):
            fail("missing field 'Submission 1' / 'Submission 2' (needed to tell which model was shown first)",
                 source=name, line=line, column="Submission 1")
        s1, s2, answer_1, answer_2 = s1.strip(), s2.strip(), answer_1.strip(), answer_2.strip()
        if answer_1 == answer_2:
            return (first, second), "identical answers"
        if s1 == answer_1 and s2 == answer_2:
            return (first, second), "matched"
        if s1 == answer_2 and s2 == answer_1:
            return (second, first), "matched"
        fail(f"Submission 1 / 2 match neither {first}'s nor {second}'s response to {scenario} #{ident}",
             source=name, line=line, column="Submission 1")

    def _speakers(self, record, speakers, singles, ident, *, name, line) -> dict[int, str]:
        given = record.get("speakers")
        if given is not None:
            if not isinstance(given, list) or len(given) != len(speakers) or not all(isinstance(s, str) for s in given):
                fail(f"speakers must list {len(speakers)} judge names, got {quote(given)}", source=name, line=line,
                     column="speakers", value=given)
            return {k: s for k, s in zip(speakers, given)}
        initial = {k: _entry(record, f"Speaker {k} - Initial Evaluation", name=name, line=line) for k in speakers}
        matches: dict[int, str] = {}
        for k in speakers:
            reasoning = initial[k].get("reasoning")
            hits = [judge for judge, (_path, by_id, _lines) in singles.items()
                    if ident in by_id and by_id[ident].get("Reasoning") == reasoning]
            if len(hits) != 1:
                hits = [judge for judge, (_path, by_id, _lines) in singles.items()
                        if ident in by_id and isinstance(reasoning, str)
                        and str(by_id[ident].get("Reasoning", "")).strip() == reasoning.strip()]
            if len(hits) == 1:
                matches[k] = hits[0]
        counts = Counter(matches.values())
        matches = {k: j for k, j in matches.items() if counts[j] == 1}  # one judge cannot be two speakers
        unknown = [k for k in speakers if k not in matches]
        left = [j for j in singles if j not in matches.values()]
        if len(unknown) == 1 and len(left) == 1 and len(singles) == len(speakers):
            matches[unknown[0]] = left[0]
        return {k: f"scaleeval:{matches[k]}" if k in matches else f"scaleeval:speaker_{k}" for k in speakers}

    # -------------------------------------------------------------------- bundle

    def bundle(self, *, source: str) -> Bundle:
        out = Bundle(source=source, format="scaleeval", order="known", files=list(dict.fromkeys(self.files)))
        if self.question_rows:
            out.questions = pd.DataFrame(list(self.question_rows.values())).astype(
                {"question_id": "str", "text": "str", "category": "str"})
        if self.answer_rows:
            out.answers = pd.DataFrame(self.answer_rows).astype({"question_id": "str", "model": "str", "answer": "str"})
        if self.rows:
            frame = pd.DataFrame(self.rows)
            frame["valid"] = frame["winner"].notna().astype(int)
            frame["winner"] = frame["winner"].where(frame["valid"] == 1, None)
            try:
                check_identifiers(frame, ("question_id", "model_a", "model_b", "judge", "criterion"),
                                  source=source, line_of=None)
                out.judgments = _careful_canonical(frame, name=source, line_of=None, judge_prefix=None)
            except JudgmentError as exc:  # name the file and record line the row came from
                if exc.row is None:
                    raise
                file, line = self.row_lines[exc.row]
                raise JudgmentError(exc.problem, source=file, line=line, column=exc.column, value=exc.value) from None
            out.judgment_lines = lambda row: self.row_lines[row]
            judges = pd.unique(out.judgments["judge"])
            out.judges = [{"name": str(j), "kind": "debate" if j.startswith("debate:") else "llm"} for j in judges]
        speakers = sorted({t["speaker"] for _d, turns in self.debates for t in turns})
        known = {j["name"] for j in out.judges}
        out.judges += [{"name": s, "kind": "llm"} for s in speakers if s not in known]
        out.debates = self.debates
        out.notes = dict(sorted(self.notes.items()))
        return out


def _check_id(ident: int, field: str, *, name: str, line: int | None) -> None:
    low, high = INTEGER_BOUNDS[field]
    if not low <= ident <= high:
        fail(f"{field} {quote(ident)} is out of range (a whole number from {low:,} to {high:,})", source=name,
             line=line, column=field, value=quote(ident))


def _entry(record: dict, key: str, *, name: str, line: int | None) -> dict:
    entry = record.get(key)
    if not isinstance(entry, dict) or "score" not in entry:
        fail(f"{quote(key)} must be an object with 'score' and 'reasoning', got {quote(entry)}", source=name,
             line=line, column=key)
    return entry


def _rounds(record: dict, *, name: str, line: int | None) -> dict[int, dict[int, dict]]:
    """round -> speaker -> entry, checking every speaker speaks in every round."""
    rounds: dict[int, dict[int, dict]] = {}
    for key in record:
        match = _SPEAKER_KEY.match(key)
        if match:
            r = int(match["r"]) if match["r"] else 0
            rounds.setdefault(r, {})[int(match["k"])] = _entry(record, key, name=name, line=line)
    if 0 not in rounds:
        fail("a debate record without 'Speaker k - Initial Evaluation' fields", source=name, line=line,
             column="Speaker 1 - Initial Evaluation")
    speakers = set(rounds[0])
    for r in sorted(rounds):
        if set(rounds[r]) != speakers:
            missing = sorted(speakers - set(rounds[r]))
            label = "Initial Evaluation" if r == 0 else f"Discussion Round {r}"
            fail(f"speaker(s) {missing or sorted(set(rounds[r]) - speakers)} missing from {label}", source=name,
                 line=line, column=f"Speaker {(missing or [1])[0]} - {label}")
    expected = list(range(max(rounds) + 1))
    if sorted(rounds) != expected:
        fail(f"discussion rounds {sorted(rounds)} skip a round", source=name, line=line)
    return rounds

