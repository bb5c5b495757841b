"""make_backend specs, key resolution order, and the no-SDK-at-import rule."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from peercore.reviewers import (
    AnthropicBackend,
    CompatibleBackend,
    LocalBackend,
    MissingCredentials,
    OpenAIBackend,
    Secret,
    make_backend,
    parse_spec,
    resolve_api_key,
)


@pytest.fixture
def clean(monkeypatch, tmp_path):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PEERBOARD_SECRETS", "X_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.mark.parametrize(("spec", "cls", "model", "name"), [
    ("openai:gpt-4o", OpenAIBackend, "gpt-4o", "openai:gpt-4o"),
    ("anthropic:claude-sonnet-4-5", AnthropicBackend, "claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
    ("compatible:llama3.1:8b@http://127.0.0.1:11434/v1", CompatibleBackend, "llama3.1:8b",
     "compatible:llama3.1:8b@http://127.0.0.1:11434/v1"),
    ("openai-compatible:qwen@https://host/v1/", CompatibleBackend, "qwen", "compatible:qwen@https://host/v1"),
    ("local:qwen2.5-coder-1.5b", LocalBackend, "qwen2.5-coder-1.5b", "local:qwen2.5-coder-1.5b"),
    ("local:smollm2-135m", LocalBackend, "smollm2-135m", "local:smollm2-135m"),
    ("local:/models/x.gguf", LocalBackend, "/models/x.gguf", "local:/models/x.gguf"),
])
def test_make_backend(spec, cls, model, name):
    backend = make_backend(spec)
    assert type(backend) is cls
    assert backend.model == model and backend.name == name


def test_make_backend_passes_settings_and_rejects_unknown_ones():
    backend = make_backend("openai:gpt-4o", timeout=3, name="judge-x")
    assert backend.timeout == 3.0 and backend.name == "judge-x"
    with pytest.raises(ValueError, match=r"\['n_ctx'\].*OpenAIBackend"):
        make_backend("openai:gpt-4o", n_ctx=10)
    assert make_backend("local:smollm2-135m", n_ctx=1024, seed=3).n_ctx == 1024


@pytest.mark.parametrize("spec", ["gpt-4o", "cohere:command", "openai:", "compatible:llama3",
                                  "compatible:llama3@localhost:8080", "local:model.bin"])
def test_bad_specs_are_quoted(spec):
    with pytest.raises(ValueError) as err:
        make_backend(spec)
    assert repr(spec.split(":")[0]) in str(err.value) or repr(spec) in str(err.value) or \
        repr(spec.partition(":")[2]) in str(err.value)


def test_parse_spec_keeps_colons_in_model_names():
    assert parse_spec("compatible:llama3.1:8b@http://h:1/v1") == ("compatible", "llama3.1:8b", "http://h:1/v1")


def test_capabilities_per_backend():
    assert make_backend("openai:m").capabilities.logprobs
    assert not make_backend("anthropic:m").capabilities.logprobs
    assert make_backend("anthropic:m", prefill=True).capabilities.prefill
    assert not make_backend("compatible:m@http://h/v1", logprobs=False).capabilities.logprobs
    local = make_backend("local:qwen2.5-coder-1.5b").capabilities
    assert local.logits and local.prefill


# -------------------------------------------------------------------------------- keys
def test_key_resolution_order(clean, monkeypatch):
    secrets = clean / ".streamlit"
    secrets.mkdir()
    (secrets / "secrets.toml").write_text('X_KEY = "from-file"\nOTHER = 1\n')
    assert resolve_api_key("X_KEY").reveal() == "from-file"
    monkeypatch.setenv("X_KEY", "from-env")
    assert resolve_api_key("X_KEY").reveal() == "from-env"
    assert resolve_api_key("X_KEY", api_key="explicit").reveal() == "explicit"


def test_empty_values_count_as_missing(clean, monkeypatch):
    monkeypatch.setenv("X_KEY", "   ")
    (clean / ".streamlit").mkdir()
    (clean / ".streamlit" / "secrets.toml").write_text('X_KEY = ""\n')
    with pytest.raises(MissingCredentials) as err:
        resolve_api_key("X_KEY", api_key="")
    assert str(err.value) == "set X_KEY (environment or .streamlit/secrets.toml)"


def test_home_secrets_and_override_path(clean, monkeypatch):
    home = clean / "home" / ".streamlit"
    home.mkdir(parents=True)
    (home / "secrets.toml").write_text('X_KEY = "home"\n')
    assert resolve_api_key("X_KEY").reveal() == "home"
    other = clean / "elsewhere.toml"
    other.write_text('X_KEY = "override"\n')
    monkeypatch.setenv("PEERBOARD_SECRETS", str(other))
    assert resolve_api_key("X_KEY").reveal() == "override"


def test_broken_secrets_file_is_ignored(clean):
    (clean / ".streamlit").mkdir()
    (clean / ".streamlit" / "secrets.toml").write_text("this is not toml = = =")
    with pytest.raises(MissingCredentials, match="set X_KEY"):
        resolve_api_key("X_KEY")


def test_secret_hides_its_value():
    secret = Secret("sk-very-secret")
    assert "sk-very" not in repr(secret) and "sk-very" not in str(secret) and "sk-very" not in f"{secret}"
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    assert secret == Secret("sk-very-secret") and secret.reveal() == "sk-very-secret"


def test_backend_repr_never_shows_an_explicit_key():
    for backend in (OpenAIBackend("m", api_key="sk-abc-123"), AnthropicBackend("m", api_key="sk-abc-123"),
                    CompatibleBackend("m", base_url="http://h/v1", api_key="sk-abc-123")):
        assert "sk-abc-123" not in repr(backend)


def test_importing_reviewers_loads_no_sdk_and_no_streamlit():
    code = ("import sys, peercore.reviewers, peercore.prompts; "
            "print(sorted(m for m in ('openai', 'anthropic', 'llama_cpp', 'streamlit', 'httpx2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_local_backend_validates_its_options():
    with pytest.raises(ValueError, match="'mystery-model'"):
        LocalBackend("mystery-model")
    with pytest.raises(ValueError, match="n_ctx.*100"):
        LocalBackend("smollm2-135m", n_ctx=100)
    with pytest.raises(ValueError, match="n_threads.*0"):
        LocalBackend("smollm2-135m", n_threads=0)
    backend = LocalBackend("/tmp/x.gguf", seed=5)
    assert backend.name == "local:/tmp/x.gguf" and "seed=5" in repr(backend)
    assert backend.capabilities.logits


def test_backend_options_are_validated():
    with pytest.raises(ValueError, match="model"):
        OpenAIBackend("")
    with pytest.raises(ValueError, match="timeout.*-1"):
        AnthropicBackend("m", timeout=-1)
    with pytest.raises(ValueError, match="base_url.*'localhost:8080'"):
        CompatibleBackend("m", base_url="localhost:8080")
