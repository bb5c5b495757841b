"""The offline local judge: llama.cpp (``llama-cpp-python``) on a GGUF file.

Two uses (LOCAL_JUDGE.md):

* **Prompt-based classifier** (Liusie et al. 2024, eq. 3). The model's own chat template
  (``tokenizer.chat_template`` in the GGUF) is rendered, the assistant prefill is
  appended (``ChatRequest.prefill``, e.g. ``"The better answer is Answer "``), the text
  is tokenized with ``add_bos=False, special=True`` (the template writes any BOS
  itself), evaluated once, and the next-token logits are read with
  ``llama_cpp.llama_get_logits_ith(ctx, -1)`` (``Llama.scores`` is all zeros unless
  ``logits_all=True``). The log-softmax of those logits is returned in
  ``Completion.top_logprobs``: the ``top_logprobs`` most likely tokens plus always the
  candidates ``"1"``, ``"2"``, ``"A"``, ``"B"`` (with and without a leading space), so
  p = P(1) / (P(1) + P(2)), and the digit score tokens ``"0"`` ... ``"9"`` (with and
  without a leading space; ``"10"`` too where the tokenizer has it as one token, which
  Qwen's does not), so an absolute score's expected value over a 1-9 scale can be read
  from one call (:mod:`peercore.nlg.scoring`; Liusie et al. 2024's prompt-scoring baseline).
* **Prompt (KV) cache.** Requests that share a prompt prefix (comparisons of one
  context: the same instructions and context, often the same first candidate) reuse
  llama.cpp's key/value cache: the tokens that match the previous call's prompt are not
  evaluated again, only the rest is (``prefix_cache=True``, the default; the reply's
  ``raw["reused_tokens"]`` says how many were reused). The logits differ from a fresh
  evaluation only by floating-point rounding of the batch split in the quantised model
  (label probabilities within 0.014 of each other on TopicalChat, 9-10x faster there:
  ``benchmarks/results/nlg_topicalchat.md``).
* **Generation** (answers, discussions): sampled token by token with the chat template,
  stopping at an end-of-generation token, a stop string or ``max_tokens``.

Determinism: one ``Llama`` per (file, context size, threads) is cached for the process
and guarded by a lock (llama.cpp contexts are not thread-safe); calls run in a worker
thread (``asyncio.to_thread``) so the event loop stays free. The sampling seed is
``request.seed`` if given, else ``seed + request.sample_index``, so K samples differ
from each other but each is reproducible. Temperature 0 is greedy.

Speed on 2 cores (AVX2 build): about 5 s per ~390-token comparison for the 1.5B judge.
Build llama-cpp-python with ``CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"``: the
native build crashes on some CPUs (AMX path in ggml).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from .base import Backend, BackendError, Capabilities, ChatRequest, Completion
from .local_model import LOCAL_MODELS, ModelNotInstalled, resolve_model_path

__all__ = ["LocalBackend", "unload_local_models", "CANDIDATE_TOKENS", "SCORE_TOKENS", "LLAMA_CPP_INSTALL"]

CANDIDATE_TOKENS = ("1", "2", " 1", " 2", "A", "B", " A", " B")
# Absolute scores (prompt scoring): every digit, and "10" for tokenizers that have it as one token.
SCORE_TOKENS = (*(str(d) for d in range(10)), *(f" {d}" for d in range(10)), "10", " 10")
LLAMA_CPP_INSTALL = 'CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" pip install llama-cpp-python==0.3.36'


@dataclass
class _Loaded:
    llama: object
    formatter: object
    lock: threading.Lock
    candidates: dict[str, int]
    vocab: object

    def is_eog(self, token: int) -> bool:
        """End-of-generation token (EOS, <|im_end|>, ...), as llama.cpp's vocabulary says."""
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, int(token)))


_MODELS: dict[tuple, _Loaded] = {}
_MODELS_LOCK = threading.Lock()


def unload_local_models() -> int:
    """Free every cached llama.cpp model; returns how many were unloaded."""
    with _MODELS_LOCK:
        loaded = list(_MODELS.values())
        _MODELS.clear()
    for entry in loaded:
        with entry.lock:
            close = getattr(entry.llama, "close", None)
            if close is not None:
                close()
    return len(loaded)


# Free the models while llama_cpp is still importable: left to Llama.__del__ at interpreter
# teardown, the release finds llama.cpp's functions already gone and prints a TypeError.
atexit.register(unload_local_models)


class LocalBackend(Backend):
    """A GGUF model run in-process by llama.cpp (``local:<name>`` or ``local:<path>``).

    Parameters
    ----------
    model : ``"qwen2.5-coder-1.5b"`` (the bundled judge, see
        :mod:`peercore.reviewers.local_model` for provenance), ``"smollm2-135m"`` (a
        weak contestant) or a path to any ``.gguf`` file.
    n_ctx : context size in tokens (prompt + reply must fit).
    n_threads : CPU threads for llama.cpp.
    seed : base sampling seed (see the module docstring).
    cache_dir : where bundled models are assembled; default
        :func:`~peercore.reviewers.local_model.model_cache_dir`.
    name : the judge name; default ``"local:<model>"``.
    prefix_cache : reuse llama.cpp's key/value cache for the prompt prefix a call shares
        with the previous one (see the module docstring); False evaluates every prompt
        from scratch (to measure the speed-up).

    The model file is resolved (and a bundled one assembled and verified) on the first
    call, or by :meth:`load`.
    """

    backend = "local"
    capabilities = Capabilities(logprobs=True, logits=True, prefill=True, seed=True)

    def __init__(self, model: str = "qwen2.5-coder-1.5b", *, n_ctx: int = 4096, n_threads: int = 2, seed: int = 0,
                 cache_dir: str | os.PathLike | None = None, name: str | None = None,
                 prefix_cache: bool = True) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a bundled model name or a GGUF path, got {model!r}")
        if model not in LOCAL_MODELS and not model.lower().endswith(".gguf"):
            raise ValueError(f"model must be one of {sorted(LOCAL_MODELS)} or a path ending in .gguf, got {model!r}")
        for label, value, low in (("n_ctx", n_ctx, 256), ("n_threads", n_threads, 1)):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{label} must be an integer >= {low}, got {value!r}")
        self.model = model
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = int(seed)
        self.cache_dir = cache_dir
        self._name = name
        self.prefix_cache = bool(prefix_cache)
        self._path: Path | None = None

    @property
    def name(self) -> str:
        return self._name or f"local:{self.model}"

    def __repr__(self) -> str:
        return f"LocalBackend(model={self.model!r}, n_ctx={self.n_ctx}, n_threads={self.n_threads}, seed={self.seed})"

    @property
    def path(self) -> Path:
        """The GGUF file (bundled models are assembled and verified on first access)."""
        if self._path is None:
            self._path = resolve_model_path(self.model, cache_dir=self.cache_dir)
        return self._path

    def load(self) -> None:
        """Resolve and load the model now (otherwise the first call does it)."""
        self._loaded()

    async def complete(self, request: ChatRequest) -> Completion:
        """Generate, or read next-token log-probabilities when ``top_logprobs`` is set."""
        return await asyncio.to_thread(self._complete_sync, request)

    # -- model cache -----------------------------------------------------------------
    def _loaded(self) -> _Loaded:
        key = (str(self.path), self.n_ctx, self.n_threads)
        with _MODELS_LOCK:
            entry = _MODELS.get(key)
            if entry is None:
                entry = _load(self.path, n_ctx=self.n_ctx, n_threads=self.n_threads, seed=self.seed)
                _MODELS[key] = entry
        return entry

    # -- the call --------------------------------------------------------------------
    def _complete_sync(self, request: ChatRequest) -> Completion:
        entry = self._loaded()
        llama = entry.llama
        with entry.lock:
            prompt = entry.formatter(messages=[dict(m) for m in request.messages]).prompt
            if request.prefill:
                prompt += request.prefill
            tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            budget = self.n_ctx - len(tokens)
            if budget < 1:
                raise BackendError(f"{self.name}: prompt is {len(tokens)} tokens, n_ctx is {self.n_ctx}; "
                                   "shorten the prompt or raise n_ctx")
            max_tokens = max(1, min(int(request.max_tokens), budget))
            top = None
            if request.top_logprobs:
                top, best, reused = self._first_token_logprobs(entry, tokens, int(request.top_logprobs))
                if max_tokens <= 1 or request.temperature == 0 and entry.is_eog(best):
                    text = "" if entry.is_eog(best) else _detok(llama, [best])
                    return Completion(text=text, prompt_tokens=len(tokens), completion_tokens=1, top_logprobs=top,
                                      finish_reason="stop" if entry.is_eog(best) else "length",
                                      raw={"model": self.name, "prompt_tokens": len(tokens),
                                           "reused_tokens": reused})
            text, n_out, finish = self._generate(entry, tokens, request, max_tokens)
        return Completion(text=text, prompt_tokens=len(tokens), completion_tokens=n_out, top_logprobs=top,
                          finish_reason=finish, raw={"model": self.name, "prompt_tokens": len(tokens)})

    def _first_token_logprobs(self, entry: _Loaded, tokens: list[int], k: int) -> tuple[dict[str, float], int, int]:
        import llama_cpp
        import numpy as np

        llama = entry.llama
        reused = _reuse_prefix(llama, tokens) if self.prefix_cache else 0
        if not reused:
            llama.reset()
        llama.eval(tokens[reused:])
        n_vocab = llama.n_vocab()
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama.ctx, -1), shape=(n_vocab,))
        logits = logits.astype(np.float64)
        shifted = logits - logits.max()
        logprobs = shifted - np.log(np.exp(shifted).sum())
        k = max(1, min(k, n_vocab))
        best_ids = np.argpartition(-logprobs, k - 1)[:k]
        best_ids = best_ids[np.argsort(-logprobs[best_ids])]
        top: dict[str, float] = {}
        for token_id in best_ids:
            piece = _detok(llama, [int(token_id)])
            value = float(logprobs[token_id])
            top[piece] = value if piece not in top else float(np.logaddexp(top[piece], value))
        for piece, token_id in entry.candidates.items():
            top.setdefault(piece, float(logprobs[token_id]))
        return top, int(best_ids[0]), reused

    def _generate(self, entry: _Loaded, tokens: list[int], request: ChatRequest, max_tokens: int):
        llama = entry.llama
        seed = request.seed if request.seed is not None else self.seed + int(request.sample_index)
        llama.set_seed(int(seed) & 0xFFFFFFFF)
        temperature = max(0.0, float(request.temperature))
        out: list[int] = []
        finish = "length"
        text = ""
        for token in llama.generate(tokens, temp=temperature, top_k=40, top_p=0.95, min_p=0.05,
                                    repeat_penalty=1.0, reset=True):
            if entry.is_eog(token):
                finish = "stop"
                break
            out.append(token)
            if request.stop:
                text = _detok(llama, out)
                cut = _first_stop(text, request.stop)
                if cut is not None:
                    text, finish = text[:cut], "stop"
                    break
            if len(out) >= max_tokens:
                break
        else:
            finish = "stop"
        if finish != "stop" or not request.stop:
            text = _detok(llama, out)
        return text, len(out), finish


def _reuse_prefix(llama, tokens: list[int]) -> int:
    """Keep the key/value cache of the longest prefix ``tokens`` shares with the evaluated ones.

    Returns how many tokens are kept (0: nothing in common, or llama.cpp cannot remove
    part of its cache). At least the last token is always evaluated again, so that the
    logits read afterwards are this prompt's.
    """
    import numpy as np

    evaluated = int(llama.n_tokens)
    limit = min(evaluated, len(tokens) - 1)
    if limit <= 0:
        return 0
    same = np.asarray(llama.input_ids[:limit]) == np.asarray(tokens[:limit])
    keep = limit if same.all() else int(np.argmin(same))
    if keep <= 0 or not llama._ctx.kv_cache_seq_rm(-1, keep, -1):
        return 0
    llama.n_tokens = keep
    return keep


def _first_stop(text: str, stops) -> int | None:
    positions = [text.find(s) for s in stops if s and s in text]
    return min(positions) if positions else None


def _detok(llama, ids: list[int]) -> str:
    return llama.detokenize(ids).decode("utf-8", errors="replace")


def _load(path: Path, *, n_ctx: int, n_threads: int, seed: int) -> _Loaded:
    try:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    except ImportError as exc:
        raise ModelNotInstalled(f"the local backend needs llama-cpp-python: {LLAMA_CPP_INSTALL}") from exc
    try:
        llama = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                                seed=seed, logits_all=False, verbose=False)
    except (ValueError, RuntimeError, OSError) as exc:
        raise BackendError(f"llama.cpp could not load {path}: {exc}") from exc
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        raise BackendError(f"{path} has no tokenizer.chat_template in its metadata; "
                           "use an instruct/chat GGUF (the local backend renders the model's own template)")
    model = llama._model
    eos_id, bos_id = llama.token_eos(), llama.token_bos()
    eos = model.token_get_text(eos_id) if eos_id != -1 else ""
    bos = model.token_get_text(bos_id) if bos_id != -1 else ""
    formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
    candidates = {}
    for piece in (*CANDIDATE_TOKENS, *SCORE_TOKENS):
        ids = llama.tokenize(piece.encode("utf-8"), add_bos=False, special=False)
        if len(ids) == 1:
            candidates[piece] = ids[0]
    return _Loaded(llama=llama, formatter=formatter, lock=threading.Lock(), candidates=candidates, vocab=model.vocab)
