"""Write the rule x format matrix of malformed inputs (the files beside this script) and expected.json.

Every file holds a few valid records and one bad one. ``expected.json`` maps each file
to where the bad record is (line, or row for Parquet), the field to blame, and a
regular expression for the problem, so ``tests/unit/io/test_corpus_matrix.py`` can check
the one error line of ``peercore import`` on the file as it is (the small, row-by-row
path) and padded past 1 MiB with valid records before the bad one (the large path).
The padding is done by the test, with the ``pad`` rule named here.

Rules (see peercore/io/rules.py): non-finite numbers (NaN, -NaN, Infinity, and the
text 'NaN' / 'inf' in CSV, NaN in Parquet), out-of-range numbers, integer overflow
(1e20, 2**63, 10**30), negative vote, booleans as numbers, a list or an object where
one value belongs, nesting deeper than 64 levels, lone surrogates, a field repeated in
a record, two records on one line, a NUL byte. The line-length rule needs a 17 MB file
and the symlink rule a link to a file outside the folder: the test makes those.

Run ``python tests/corpus/matrix/make_matrix.py`` to rewrite the files (deterministic).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEEP = "[" * 100 + "]" * 100  # nested 101 levels inside the record (limit 64)

# -------------------------------------------------------------------------- formats
# Each format: how a valid record k looks, how records are written, and how the test pads.


def canonical(k: int) -> dict:
    return {"question_id": f"q{k}", "model_a": "alpha", "model_b": "beta", "judge": "judge-1", "winner": "model_a",
            "p_a": 0.75, "turn": 1}


def arena(k: int) -> dict:
    return {"question_id": f"battle{k}", "model_a": "alpha", "model_b": "beta", "winner": "tie (bothbad)",
            "judge": "arena_user_7", "turn": 1, "anony": True, "language": "English", "tstamp": 1700000000.5 + k}


def fastchat(k: int) -> dict:
    return {"question_id": 81 + k, "model_1": "alpha", "model_2": "beta", "g1_winner": "model_1",
            "g2_winner": "model_2", "judge": ["gpt-4", "pair-v2"], "g1_judgment": "[[A]]", "g2_judgment": "[[B]]",
            "turn": 1, "tstamp": 1687000000.0}


def alpaca(k: int) -> dict:
    return {"instruction": f"Write poem number {k}.", "output_1": "Roses are red.", "output_2": "Violets are blue.",
            "generator_1": "alpha", "generator_2": "beta", "annotator": "weighted_alpaca_eval_gpt4_turbo",
            "preference": 1.25, "dataset": "helpful_base"}


def prd(k: int) -> dict:
    return {"question_id": k + 1, "score": 1, "text": "Answer A is better. 1"}


def scaleeval(k: int) -> dict:
    return {"ID": k + 1, "Score": 1, "Reasoning": "Submission 1 is clearer.", "model_a": "alpha", "model_b": "beta",
            "criterion": "helpfulness", "judge": "scaleeval:gpt4_turbo"}


def answers(k: int) -> dict:
    return {"question_id": "q1", "model": f"model-{k}", "answer": "Four.", "turn": 1}


def human(k: int) -> dict:
    return {"question_id": f"q{k}", "model_a": "alpha", "model_b": "beta", "annotator": "alice", "winner": "model_a",
            "turn": 1, "note": "clear"}


FORMATS = {
    # name: (valid record, writer, file name pattern)
    "canonical_csv": (canonical, "csv", "{name}.csv"),
    "canonical_jsonl": (canonical, "jsonl", "{name}.jsonl"),
    "canonical_parquet": (canonical, "parquet", "{name}.parquet"),
    "arena": (arena, "jsonl", "{name}.jsonl"),
    "fastchat": (fastchat, "jsonl", "{name}_pair.jsonl"),
    "alpacaeval": (alpaca, "array", "{name}.json"),
    "prd": (prd, "prd", "{name}"),
    "scaleeval": (scaleeval, "jsonl", "{name}.jsonl"),
    "answers_jsonl": (answers, "jsonl", "{name}.jsonl"),
    "answers_csv": (answers, "csv", "{name}.csv"),
    "human_csv": (human, "csv", "{name}.csv"),
    "human_jsonl": (human, "jsonl", "{name}.jsonl"),
}

# ---------------------------------------------------------------------------- rules
# A rule sets a field of the bad record, either to a Python value (written by json /
# pandas) or to raw text (spliced into the JSON line or CSV cell as is).


class Raw(str):
    """Text written into the file as is (JSON tokens such as NaN, or a CSV cell)."""


JSON_RULES = {
    # rule: (value, problem regex, blames the field?)
    "nan": (Raw("NaN"), r"is nan: NaN is not valid JSON", True),
    "minus_nan": (Raw("-NaN"), r"not valid JSON \(Expecting value", True),
    "infinity": (Raw("Infinity"), r"is inf: Infinity is not valid JSON", True),
    "minus_infinity": (Raw("-Infinity"), r"is -inf: -Infinity is not valid JSON", True),
    "list": (["alpha", "gamma"], r"(is a list|is not)", True),
    "object": ({"name": "alpha"}, r"(is an object|is not)", True),
    "deep": (Raw(DEEP), r"nested more than 64 levels deep \(limit 64\)", True),
    "surrogate": (Raw('"alpha\\ud800"'), r"lone surrogate", True),
    "boolean": (True, r"True is not", True),
    "overflow": (Raw("1e20"), r"(out of range|is not)", True),
    "big_integer": (Raw("100000000000000000000"), r"(out of range|is not)", True),
    "negative": (-1, r"(out of range|is not)", True),
}
FRAMING_RULES = {
    "duplicate_field": r"field '{field}' appears twice in one record",
    "two_records_on_a_line": r"not valid JSON \(Extra data",
}
CSV_RULES = {
    "nan_text": ("NaN", r"'NaN' is not a (number|whole number)"),
    "infinity_text": ("Infinity", r"'Infinity' is (outside \[0, 1\]|not a whole number)"),
    "overflow_text": ("1e20", r"'1e20' is out of range"),
    "negative_text": ("-1", r"'-1' is out of range"),
    "nul_byte": ("x\x00y", r"the file holds a NUL byte"),
}
PARQUET_RULES = {
    "nan": (float("nan"), r"'NaN' is not a (number|whole number)"),
    "infinity": (float("inf"), r"'inf' is (outside \[0, 1\]|not a whole number)"),
    "overflow": (2**62, r"is out of range"),
    "negative": (-1, r"is out of range"),
    "list": (["alpha", "gamma"], r"is a list"),
    "boolean": (True, r"True is not"),
}

# Which field each rule breaks, per format (a rule absent here does not apply to the format).
FIELDS = {
    "canonical_jsonl": {"nan": "p_a", "minus_nan": "p_a", "infinity": "p_a", "minus_infinity": "turn",
                        "list": "model_a", "object": "question_id", "deep": "rationale", "surrogate": "judge",
                        "boolean": "p_a", "overflow": "turn", "big_integer": "round", "negative": "vote",
                        "duplicate_field": "winner", "two_records_on_a_line": None},
    "arena": {"nan": "turn", "minus_nan": "turn", "infinity": "turn", "minus_infinity": "p_a", "list": "model_b",
              "object": "question_id", "deep": "conversation_a", "surrogate": "model_a", "boolean": "turn",
              "overflow": "turn", "big_integer": "turn", "negative": "turn", "duplicate_field": "winner",
              "two_records_on_a_line": None},
    "fastchat": {"nan": "turn", "minus_nan": "turn", "infinity": "turn", "minus_infinity": "turn",
                 "list": "model_1", "object": "question_id", "deep": "g1_judgment", "surrogate": "model_2",
                 "boolean": "turn", "overflow": "turn", "big_integer": "turn", "negative": "turn",
                 "duplicate_field": "g1_winner", "two_records_on_a_line": None},
    "alpacaeval": {"nan": "preference", "minus_nan": "preference", "infinity": "preference",
                   "minus_infinity": "preference", "list": "generator_1", "object": "annotator", "deep": "output_1",
                   "surrogate": "generator_2", "boolean": "preference", "overflow": "preference",
                   "big_integer": "preference", "negative": "preference", "duplicate_field": "instruction"},
    "prd": {"nan": "score", "minus_nan": "score", "infinity": "score", "minus_infinity": "score",
            "list": "question_id", "object": "question_id", "deep": "text", "surrogate": "text", "boolean": "score",
            "overflow": "score", "big_integer": "score", "duplicate_field": "score",
            "two_records_on_a_line": None},  # a negative score (-1) is PRD's "unparsed", kept as a tie
    "scaleeval": {"nan": "ID", "minus_nan": "Score", "infinity": "ID", "minus_infinity": "Score",
                  "list": "judge", "object": "criterion", "deep": "Reasoning", "surrogate": "judge", "boolean": "ID",
                  "overflow": "ID", "big_integer": "ID", "negative": "ID", "duplicate_field": "Score",
                  "two_records_on_a_line": None},
    "answers_jsonl": {"nan": "turn", "minus_nan": "turn", "infinity": "turn", "minus_infinity": "turn",
                      "list": "model", "object": "question_id", "deep": "answer", "surrogate": "answer",
                      "boolean": "turn", "overflow": "turn", "big_integer": "turn", "negative": "turn",
                      "duplicate_field": "answer", "two_records_on_a_line": None},
    "human_jsonl": {"nan": "turn", "minus_nan": "turn", "infinity": "turn", "minus_infinity": "turn",
                    "list": "annotator", "object": "model_a", "deep": "note", "surrogate": "annotator",
                    "boolean": "turn", "overflow": "turn", "big_integer": "turn", "negative": "turn",
                    "duplicate_field": "annotator", "two_records_on_a_line": None},
    "canonical_csv": {"nan_text": "p_a", "infinity_text": "p_a", "overflow_text": "turn", "negative_text": "vote",
                      "nul_byte": "rationale"},
    "answers_csv": {"nan_text": "turn", "infinity_text": "turn", "overflow_text": "turn", "negative_text": "turn",
                    "nul_byte": "answer"},
    "human_csv": {"nan_text": "turn", "infinity_text": "turn", "overflow_text": "turn", "negative_text": "turn",
                  "nul_byte": "note"},
    "canonical_parquet": {"nan": "p_a", "infinity": "p_a", "overflow": "turn", "negative": "vote", "list": "model_a",
                          "boolean": "turn"},
}
# Peer formats word some problems their own way (the field and line are still named).
SPECIAL = {
    ("alpacaeval", "overflow"): r"preference 1e\+20 is not 1 \(output_1\)",
    ("alpacaeval", "big_integer"): r"preference 100000000000000000000 is not 1 \(output_1\)",
    ("alpacaeval", "negative"): r"preference -1(\.0)? is not 1 \(output_1\)",
    ("alpacaeval", "boolean"): r"preference True is not 1 \(output_1\)",
    ("alpacaeval", "list"): r"generator_1 is a list",
    ("prd", "overflow"): r"score 1e\+20 is not one of",
    ("prd", "big_integer"): r"score 100000000000000000000 is not one of",
    ("prd", "boolean"): r"score True is not one of",
    ("prd", "list"): r"question_id is a list",
    ("prd", "object"): r"question_id is an object",
    ("scaleeval", "nan"): r"is nan: NaN is not valid JSON",
    ("scaleeval", "boolean"): r"ID True is not a whole number",
    ("scaleeval", "overflow"): r"ID 1e\+20 is out of range",
    ("scaleeval", "big_integer"): r"ID 100000000000000000000 is out of range",
    ("scaleeval", "negative"): r"ID -1 is out of range",
    ("fastchat", "list"): r"model_1 is a list",
}
# Where the padding goes and how much the bad record moves: see tests/unit/io/test_corpus_matrix.py.
BAD_AT = 3  # the bad record is the 3rd record of each file


def json_line(record: dict, field: str | None, value) -> str:
    """One JSON record with ``field`` set to ``value`` (raw text spliced in as is)."""
    if field is None:
        return json.dumps(record)
    if isinstance(value, Raw):
        marker = "__RAW__"
        return json.dumps({**record, field: marker}).replace(json.dumps(marker), str(value))
    return json.dumps({**record, field: value})


def bad_json_line(make, rule: str, field: str | None) -> str:
    record = make(BAD_AT - 1)
    if rule == "duplicate_field":
        text = json.dumps(record)
        return text[:-1] + f", {json.dumps(field)}: {json.dumps(record.get(field, 'x'))}}}"
    if rule == "two_records_on_a_line":
        return json.dumps(record) + " " + json.dumps(make(99))
    return json_line(record, field, JSON_RULES[rule][0])


def write_matrix() -> dict:
    for path in HERE.iterdir():
        if path.name not in ("make_matrix.py", "README.md"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    expected: dict[str, dict] = {}
    for fmt, rules in FIELDS.items():
        make, writer, pattern = FORMATS[fmt]
        for rule, field in rules.items():
            name = pattern.format(name=f"{fmt}__{rule}")
            entry = {"format": fmt, "rule": rule, "field": field, "writer": writer}
            if writer in ("jsonl", "array", "prd"):
                lines = [json.dumps(make(k)) for k in range(BAD_AT - 1)]
                lines.append(bad_json_line(make, rule, field))
                lines.append(json.dumps(make(BAD_AT)))
                problem = FRAMING_RULES.get(rule, "").format(field=field) or JSON_RULES.get(rule, ("", ""))[1]
                if writer == "array":
                    text = "[\n" + ",\n".join(lines) + "\n]\n"
                    line = BAD_AT + 1
                else:
                    text = "\n".join(lines) + "\n"
                    line = BAD_AT
                target = HERE / name
                if writer == "prd":
                    target = HERE / name / "ratings-gpt4" / "answer_alpha-vs-answer_beta-gpt4-reviewer_threeclass.jsonl"
                    target.parent.mkdir(parents=True)
                    entry["file"] = target.name
                target.write_text(text, encoding="utf-8")
                entry.update(line=line, row=None)
            elif writer == "csv":
                value, problem = CSV_RULES[rule]
                records = [make(k) for k in range(BAD_AT + 1)]
                columns = list(records[0]) + (["rationale"] if "rationale" not in records[0] and field == "rationale"
                                              else []) + (["vote"] if field == "vote" else [])
                rows = []
                for k, record in enumerate(records):
                    cells = {c: record.get(c, "") for c in columns}
                    if "vote" in columns:
                        cells["vote"] = k
                    if k == BAD_AT - 1:
                        cells[field] = value
                    rows.append(",".join(str(cells[c]) for c in columns))
                (HERE / name).write_bytes(("\n".join([",".join(columns), *rows]) + "\n").encode("utf-8"))
                entry.update(line=BAD_AT + 1, row=None)
            else:  # parquet
                import pandas as pd

                value, problem = PARQUET_RULES[rule]
                records = [make(k) for k in range(BAD_AT + 1)]
                for k, record in enumerate(records):
                    record["vote"] = k
                frame = pd.DataFrame(records)
                if rule == "list":
                    frame[field] = [[v] for v in frame[field]]
                    frame.at[BAD_AT - 1, field] = value
                elif rule == "boolean":
                    frame[field] = [k % 2 == 0 for k in range(len(frame))]
                else:
                    frame[field] = frame[field].astype("float64" if isinstance(value, float) else "int64")
                    frame.at[BAD_AT - 1, field] = value
                import pyarrow as pa
                import pyarrow.parquet as pq

                table = pa.Table.from_pandas(frame, preserve_index=False)
                if isinstance(value, float):  # pandas would write NaN as null: write the float itself
                    column = table.schema.get_field_index(field)
                    table = table.set_column(column, field, pa.array(frame[field].to_numpy(), from_pandas=False))
                pq.write_table(table, HERE / name)
                entry.update(line=None, row=0 if rule in ("boolean", "list") else BAD_AT - 1)
            entry["problem"] = SPECIAL.get((fmt, rule), problem)
            entry["blames_field"] = rule not in ("two_records_on_a_line", "nul_byte")
            expected[name] = entry
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    return expected


if __name__ == "__main__":
    print(f"{len(write_matrix())} files")
