"""Verdict parsing: the last verdict line, read robustly, never guessed."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from peercore.prompts import MAX_LINES, parse_verdict

A, B, T = "model_a", "model_b", "tie"


@pytest.mark.parametrize(("text", "scheme", "expected"), [
    # PRD: a bare last line 1 / 2 / 3 (Table 8 asks for exactly this)
    ("Assistant 1 is more detailed.\n\n1", "prd", A),
    ("Long review...\n2", "prd", B),
    ("They are about the same.\n3", "prd", T),
    ("review\n\n2\n\n[The End of Reviewer 1's Evaluation]", "prd", B),  # PRD discussion transcripts
    ("2.", "prd", B),
    ("  **1**  ", "prd", A),
    ("`2`", "prd", B),
    ("> 1", "prd", A),
    ("### 2", "prd", B),
    # named references
    ("Answer 1", "prd", A),
    ("**Assistant 2**", "prd", B),
    ("Response (b)", "ab", B),
    ("Output (a)", "ab", A),
    ("Submission 2", "scaleeval", B),
    # keyword lines with trailing text
    ("Verdict: Answer 1", "prd", A),
    ("**Verdict:** Answer 2", "prd", B),
    ("Final verdict: Response A, because it is correct.", "ab", A),
    ("Final answer: 2", "prd", B),
    ("My choice is Assistant 1.", "prd", A),
    ("Therefore, I choose \"2\".", "scaleeval", B),
    ("So I would choose Answer 1 over Answer 2.", "prd", A),
    ("The better answer is Answer 1", "prd", A),
    ("The better response is Response B.", "ab", B),
    ("Overall, the better response is Response A", "ab", A),
    ("Verdict: tie", "prd", T),
    ("Verdict: Tie (both good)", "ab", T),
    # MT-Bench brackets
    ("I think A is clearer. [[A]]", "ab", A),
    ("Final verdict: [[B]]", "ab", B),
    ("[[C]]", "ab", T),
    ("[[2]]", "prd", B),
    ("[[tie]]", "scaleeval", T),
    # ScaleEval 1 / 2 / 0
    ("Both are fine but the second is better.\n2", "scaleeval", B),
    ("0", "scaleeval", T),
    # comparative sentences
    ("Answer 1 is clearly better than Answer 2.", "prd", A),
    ("Based on these evaluations, Answer 1 is the better response to the question.", "prd", A),
    ("I prefer Response B.", "ab", B),
    ("Both answers are equally good.", "prd", T),
    ("It's a tie.", "ab", T),
    # trailing text after the verdict line is skipped
    ("Verdict: Answer 1\n\nI hope this helps!", "prd", A),
    ("2\nThank you for reading.", "prd", B),
    # the LAST verdict line wins
    ("Verdict: Answer 1\n...on reflection...\nVerdict: Answer 2", "prd", B),
    ("[[A]]\nAfter the discussion I change my mind.\n[[B]]", "ab", B),
    # CRLF and unicode quotes
    ("review\r\n\r\nVerdict: \u201cAnswer 2\u201d\r\n", "prd", B),
])
def test_readable_verdicts(text, scheme, expected):
    parsed = parse_verdict(text, scheme=scheme)
    assert (parsed.verdict, parsed.valid) == (expected, True)
    assert parsed.raw == text


@pytest.mark.parametrize(("text", "scheme"), [
    ("", "prd"),
    (None, "prd"),
    ("I hope this helps!", "prd"),
    ("Both answers have strengths and weaknesses.", "prd"),
    ("Verdict: 1 or 2", "prd"),
    ("Verdict: Answer 1 / Answer 2", "prd"),
    ("Answer 1 is not better.", "prd"),
    ("Final answer: 42", "prd"),
    ("5", "prd"),                     # a score, not a label
    ("3", "scaleeval"),               # 3 is PRD's tie, not ScaleEval's
    ("0", "prd"),                     # 0 is ScaleEval's tie, not PRD's
    ("1", "ab"),                      # the ab scheme needs letters
    ("[[D]]", "ab"),
    ("[[A]] or maybe [[B]]", "ab"),
    ("**Answer 1:**\n- clear\n**Answer 2:**", "prd"),  # headings are not verdicts
    ("Verdict: I cannot decide", "prd"),
])
def test_unclear_outputs_are_invalid_never_guessed(text, scheme):
    parsed = parse_verdict(text, scheme=scheme)
    assert parsed.verdict is None and parsed.valid is False
    assert parsed.raw == ("" if text is None else text)


def test_an_unclear_last_verdict_line_does_not_fall_back_to_an_earlier_one():
    parsed = parse_verdict("Verdict: Answer 1\nVerdict: 1 or 2", scheme="prd")
    assert (parsed.verdict, parsed.valid, parsed.line) == (None, False, "Verdict: 1 or 2")


def test_only_the_last_lines_are_searched():
    filler = "\n".join(f"More discussion, paragraph {i}." for i in range(MAX_LINES))
    assert not parse_verdict("Verdict: Answer 1\n" + filler, scheme="prd").valid
    short = "\n".join(f"More discussion, paragraph {i}." for i in range(MAX_LINES - 1))
    assert parse_verdict("Verdict: Answer 1\n" + short, scheme="prd").verdict == A


def test_line_is_reported():
    parsed = parse_verdict("blah\n**Verdict:** Answer 2\nthanks", scheme="prd")
    assert parsed.line == "**Verdict:** Answer 2"


# ----------------------------------------------------------------------- verdict first


@pytest.mark.parametrize(("text", "scheme", "expected"), [
    ("Verdict: 1\nReason: Submission 1 is correct.", "scaleeval", A),
    ("Verdict: 0\nReason: both are equally good.", "scaleeval", T),
    ("**Verdict:** 2\n\nReason: the other one is vague.", "scaleeval", B),
    ("  Verdict: 2.\nReason: ok", "scaleeval", B),
    ("\nVerdict: [1]\nReason: ok", "scaleeval", A),
    ("Verdict: 3\nReason: equivalent", "prd", T),
    ("Verdict: B\nReason: clearer", "ab", B),
    # the reasons below a leading verdict are not read as verdicts ...
    ("Verdict: 2\nReason: Submission 1 is not better than Submission 2.", "scaleeval", B),  # negated: unclear alone
    ("Verdict: 1\nReason: Submission 2 is better written, but Submission 1 is correct.", "scaleeval", A),
    ("Verdict: 1\nScore: 4\nReason: fine", "scaleeval", A),  # a rubric score is not a verdict
    # ... however many lines they take (beyond MAX_LINES), or if cut off by max_tokens
    ("Verdict: 2\n" + "\n".join(f"Reason {i}." for i in range(MAX_LINES + 2)), "scaleeval", B),
    ("Verdict: 2\nReason: Submission 2 gives 17:25 while Submission 1 is bet", "scaleeval", B),
    # a later restatement that agrees is fine
    ("Verdict: 1\nReason: it is correct.\nFinal verdict: 1", "scaleeval", A),
])
def test_a_first_line_verdict_decides(text, scheme, expected):
    parsed = parse_verdict(text, scheme=scheme)
    assert (parsed.verdict, parsed.valid) == (expected, True)
    assert parsed.line == next(line for line in text.splitlines() if line.strip())


@pytest.mark.parametrize(("text", "scheme", "line"), [
    # a later verdict statement that disagrees or is unclear: the reply contradicts itself
    ("Verdict: 1\nReason: on reflection...\nVerdict: 2", "scaleeval", "Verdict: 2"),
    ("Verdict: 1\nReason: hmm\n2", "scaleeval", "2"),
    ("Verdict: 1\nReason: hmm\nSubmission 2", "scaleeval", "Submission 2"),
    ("Verdict: 2\n[[1]]", "scaleeval", "[[1]]"),
    ("Verdict: 1\nFinal verdict: 1 or 2", "scaleeval", "Final verdict: 1 or 2"),
    # a small model continuing as another speaker
    ("Verdict: 1\nReason: correct.\n\n[Speaker 2]\nVerdict: 0\nReason: same", "scaleeval", "Verdict: 0"),
])
def test_a_first_line_verdict_contradicted_later_is_invalid(text, scheme, line):
    parsed = parse_verdict(text, scheme=scheme)
    assert (parsed.verdict, parsed.valid, parsed.line) == (None, False, line)


@pytest.mark.parametrize(("text", "scheme", "expected"), [
    # not exactly "Verdict: <label>": the usual bottom-up reading applies
    ("Verdict: 4\nReason: helpful.", "scaleeval", None),   # a score, not a label; nothing below reads
    ("Verdict: 3\nReason: fine.\n2", "scaleeval", B),     # 3 is not a ScaleEval label: the last line decides
    ("Verdict: 1 because it is right\nReason: hmm\nVerdict: 2", "scaleeval", B),
    ("Verdict: Answer 1\n...on reflection...\nVerdict: Answer 2", "prd", B),  # named labels: the last wins
    ("Verdict: 0, they are equally good\nReason: same", "scaleeval", T),
])
def test_other_first_lines_fall_back_to_the_last_lines(text, scheme, expected):
    assert parse_verdict(text, scheme=scheme).verdict == expected


def test_unknown_scheme_is_quoted():
    with pytest.raises(ValueError, match="'mtbench'"):
        parse_verdict("1", scheme="mtbench")


# ------------------------------------------------------------------------------ properties
LABELS = {"prd": {A: ["1", "Answer 1", "Assistant 1"], B: ["2", "Answer 2", "Assistant 2"], T: ["3", "tie"]},
          "scaleeval": {A: ["1", "Submission 1"], B: ["2", "Submission 2"], T: ["0", "tie"]},
          "ab": {A: ["A", "Response A", "[[A]]"], B: ["B", "Response B", "[[B]]"], T: ["[[C]]", "tie"]}}
DECORATIONS = ["{}", "**{}**", "Verdict: {}", "Final verdict: {}", "`{}`", "{}.", "**Verdict:** {}", "- {}"]
prose = st.text(alphabet=st.sampled_from(list("abcdefghij klmnopqrstuvwxyz,;")), max_size=80)


@given(scheme=st.sampled_from(sorted(LABELS)), winner=st.sampled_from([A, B, T]), data=st.data(),
       before=st.lists(prose, max_size=5), after=st.sampled_from(["", "\n", "\nI hope this helps.",
                                                                   "\n\nThanks!"]))
def test_decorated_verdict_lines_are_read(scheme, winner, data, before, after):
    label = data.draw(st.sampled_from(LABELS[scheme][winner]))
    line = data.draw(st.sampled_from(DECORATIONS)).format(label)
    text = "\n".join(before + [line]) + after
    parsed = parse_verdict(text, scheme=scheme)
    assert (parsed.verdict, parsed.valid) == (winner, True)


@given(text=st.text(alphabet=st.sampled_from(list("efghijklmnopqrsuvwxyz .,!?\n")), max_size=200),
       scheme=st.sampled_from(["prd", "scaleeval", "ab"]))
def test_text_without_labels_or_digits_is_never_a_verdict(text, scheme):
    # no digits, no 'a'/'b'/'c'/'t' letters: there is nothing to read
    parsed = parse_verdict(text, scheme=scheme)
    assert parsed.verdict is None and not parsed.valid


@given(text=st.text(max_size=300), scheme=st.sampled_from(["prd", "scaleeval", "ab"]))
def test_never_raises_and_keeps_raw(text, scheme):
    parsed = parse_verdict(text, scheme=scheme)
    assert parsed.raw == text
    assert parsed.valid == (parsed.verdict is not None)
    assert parsed.verdict in (None, A, B, T)


@given(winner=st.sampled_from([A, B]))
def test_conflicting_labels_on_the_verdict_line_are_invalid(winner):
    first, second = ("1", "2") if winner == A else ("2", "1")
    assume(first != second)
    assert not parse_verdict(f"Verdict: {first} or {second}", scheme="prd").valid
