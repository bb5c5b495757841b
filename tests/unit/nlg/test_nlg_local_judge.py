"""The local backend for NLG assessment: digit score tokens are read, the prompt prefix is reused.

The prefix logic is tested on a stand-in for llama.cpp's context; one short test runs the
real offline judge (about 10 s; skipped when llama-cpp-python or the model is missing).
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from peercore.reviewers.base import ChatRequest
from peercore.reviewers.local import SCORE_TOKENS, LocalBackend, _reuse_prefix


class _Context:
    def __init__(self, removable: bool = True) -> None:
        self.removable = removable
        self.removed_from: list[int] = []

    def kv_cache_seq_rm(self, seq: int, start: int, end: int) -> bool:
        self.removed_from.append(start)
        return self.removable


class _Llama:
    """What _reuse_prefix reads of llama_cpp.Llama: n_tokens, input_ids, _ctx."""

    def __init__(self, evaluated: list[int], *, removable: bool = True) -> None:
        self.input_ids = np.zeros(64, dtype=np.intc)
        self.input_ids[: len(evaluated)] = evaluated
        self.n_tokens = len(evaluated)
        self._ctx = _Context(removable)


def test_the_shared_prefix_is_kept_and_the_rest_evaluated():
    llama = _Llama([1, 2, 3, 4, 5, 6])
    assert _reuse_prefix(llama, [1, 2, 3, 9, 9]) == 3  # context + first response shared, the rest differs
    assert llama.n_tokens == 3 and llama._ctx.removed_from == [3]


def test_at_least_the_last_token_is_evaluated_again():
    llama = _Llama([1, 2, 3, 4])
    assert _reuse_prefix(llama, [1, 2, 3, 4]) == 3  # the same prompt: its last token gives the logits
    llama = _Llama([1, 2, 3, 4, 5])
    assert _reuse_prefix(llama, [1, 2, 3]) == 2  # a shorter prompt inside the evaluated one


def test_nothing_is_reused_without_a_common_prefix_or_partial_removal():
    assert _reuse_prefix(_Llama([7, 2, 3]), [1, 2, 3]) == 0
    assert _reuse_prefix(_Llama([]), [1, 2, 3]) == 0
    llama = _Llama([1, 2, 3, 4], removable=False)  # llama.cpp cannot drop part of its cache: start over
    assert _reuse_prefix(llama, [1, 2, 3, 9]) == 0 and llama.n_tokens == 4


def test_the_digits_are_score_tokens():
    assert {str(d) for d in range(10)} <= set(SCORE_TOKENS) and " 7" in SCORE_TOKENS


def _local_judge() -> LocalBackend:
    pytest.importorskip("llama_cpp")
    from peercore.reviewers.local_model import ModelNotInstalled

    backend = LocalBackend("qwen2.5-coder-1.5b")
    try:
        backend.load()
    except ModelNotInstalled as exc:
        pytest.skip(str(exc))
    return backend


@pytest.mark.slow
def test_the_offline_judge_gives_digit_probabilities_and_reuses_its_prompt():
    backend = _local_judge()
    messages = ({"role": "user", "content": "Rate from 1 to 9 how fluent this sentence is: 'The cat sat on the "
                                            "mat.' Reply with the score only."},)
    request = ChatRequest(messages=messages, max_tokens=1, top_logprobs=5, prefill="Score: ")
    first = asyncio.run(backend.complete(request))
    digits = {d: first.top_logprobs[d] for d in "123456789"}
    assert all(math.isfinite(v) for v in digits.values())  # every digit is read, not only the top 5
    again = asyncio.run(backend.complete(request))
    assert again.raw["reused_tokens"] == again.prompt_tokens - 1  # only the last token evaluated again
    fresh = asyncio.run(LocalBackend("qwen2.5-coder-1.5b", prefix_cache=False).complete(request))
    assert fresh.raw["reused_tokens"] == 0
    for d in "123456789":
        assert math.exp(again.top_logprobs[d]) == pytest.approx(math.exp(fresh.top_logprobs[d]), abs=0.02)
