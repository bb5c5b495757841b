"""LLM backends and pairwise judging built on one protocol (:mod:`peercore.reviewers.base`).

``make_backend("openai:gpt-4o" | "anthropic:<model>" | "compatible:<model>@<url>" |
"local:qwen2.5-coder-1.5b" | "local:/path/x.gguf", **settings)`` builds a backend;
:func:`compare` runs one comparison on it (through the runner's call when given).
SDKs and llama.cpp are imported only when a backend makes its first call.
"""

from peercore.reviewers.anthropic_backend import AnthropicBackend
from peercore.reviewers.base import (
    Backend,
    BackendError,
    Capabilities,
    ChatRequest,
    Completion,
    MissingCredentials,
    RetryableError,
)
from peercore.reviewers.compatible import CompatibleBackend
from peercore.reviewers.credentials import Secret, resolve_api_key
from peercore.reviewers.judging import (
    METHODS,
    Comparison,
    SymmetricComparison,
    compare,
    compare_both_orders,
    debiased_probability,
    label_probability,
    resolve_method,
)
from peercore.reviewers.local import LocalBackend, unload_local_models
from peercore.reviewers.local_model import (
    LOCAL_MODELS,
    ModelIntegrityError,
    ModelNotInstalled,
    model_cache_dir,
    resolve_model_path,
)
from peercore.reviewers.openai_backend import OpenAIBackend
from peercore.reviewers.registry import BACKENDS, make_backend, parse_spec

__all__ = [
    "AnthropicBackend",
    "BACKENDS",
    "Backend",
    "BackendError",
    "Capabilities",
    "ChatRequest",
    "CompatibleBackend",
    "Comparison",
    "Completion",
    "LOCAL_MODELS",
    "LocalBackend",
    "METHODS",
    "MissingCredentials",
    "ModelIntegrityError",
    "ModelNotInstalled",
    "OpenAIBackend",
    "RetryableError",
    "Secret",
    "SymmetricComparison",
    "compare",
    "compare_both_orders",
    "debiased_probability",
    "label_probability",
    "make_backend",
    "model_cache_dir",
    "parse_spec",
    "resolve_api_key",
    "resolve_method",
    "resolve_model_path",
    "unload_local_models",
]
