"""Shared pieces of the job definitions: judges, item keys, seeded randomness, inputs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from peercore.reviewers.base import Backend

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["Judge", "as_judges", "item_key", "parse_item_key", "describe_item", "progress_line", "seeded_rng",
           "load_questions", "load_answers", "backend_config", "judge_identity", "resolve_judge_names"]


@dataclass(frozen=True)
class Judge:
    """A backend in the role of a judge, reviewer or debate agent.

    Parameters
    ----------
    backend : the :class:`~peercore.reviewers.base.Backend` that is called.
    name : the judge name written in judgments (default ``backend.name``, e.g.
        ``local:qwen2.5-coder-1.5b``); give distinct names to several configurations of
        one model (e.g. three debate agents at different temperatures).
    temperature : sampling temperature for this judge, or None for the job's default.
    seed : sampling seed sent with this judge's generated turns (``ChatRequest.seed``) in
        answers, discussion turns and debates, or None for the backend's own. Two judges
        of one model at one temperature need distinct seeds to sample differently (and
        distinct requests, or they would share one cached reply).
    """

    backend: Backend
    name: str | None = None
    temperature: float | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ValueError(f"seed must be an integer or None, got {self.seed!r}")

    @property
    def label(self) -> str:
        return self.name or self.backend.name

    def describe(self) -> dict:
        out = {"name": self.label, **backend_config(self.backend), "temperature": self.temperature}
        if getattr(self.backend, "api_key_env", None):  # where the key comes from (a variable's name, never the key)
            out["api_key_env"] = self.backend.api_key_env
        if self.seed is not None:  # only when set: run ids of unseeded judges stay as they were
            out["seed"] = self.seed
        return out


def judge_identity(judge: Judge, **fields) -> dict:
    """A judge's whole configuration, for :mod:`peercore.judges`.

    The backend (``backend``, ``model``, ``base_url``: never credentials), the judge's
    seed when set, its name when the user chose one (``NAME=spec``: a chosen name is a
    distinct judge), and the role's ``fields`` (method, template and version,
    criterion, temperature, samples, max tokens ...: what the requests carry).
    """
    out = {**backend_config(judge.backend), **fields}
    if judge.seed is not None:
        out["seed"] = judge.seed
    if judge.name is not None:
        out["label"] = judge.name
    return out


def resolve_judge_names(store: "Store", study: str, judges: Sequence[Judge], identities: dict[str, dict], *,
                        contestants: Sequence[str] = (), register: bool, kind: str = "llm",
                        labels_are_roles: bool = False) -> dict[str, str]:
    """label -> the judge name its verdicts are stored under (:meth:`Store.judges.resolve`).

    With ``register=False`` nothing is written (estimates); with True the judges are
    registered (origin ``run``, identity as settings) before the run's first item.
    ``labels_are_roles``: the ``NAME=`` labels only tell the job's judges apart (debate
    agents ``a``, ``b``, ``c``), so another configuration under a taken label gets a
    variant name instead of a refusal (the panel's own name is what a user forces).

    Raises
    ------
    peercore.errors.JudgeConflict
        If a user-chosen name belongs to another configuration (before any call).
    """
    names = {}
    for judge in judges:
        label = judge.label
        names[label] = store.judges.resolve(
            study, label, identities[label], explicit=judge.name is not None and not labels_are_roles, kind=kind,
            model_alias=label if label in set(contestants) else None, register=register)
    return names


def backend_config(backend: Backend) -> dict:
    """What identifies a backend in a run configuration (never credentials)."""
    return {"backend": backend.backend, "model": backend.model, "base_url": backend.base_url}


def as_judges(judges: Iterable[Backend | Judge], *, what: str = "reviewers") -> list[Judge]:
    """Wrap backends as :class:`Judge`; refuse an empty list and duplicate names.

    Raises
    ------
    ValueError
        If there are none, if an element is neither, or two judges share a name (named).
    """
    out = []
    for judge in judges:
        if isinstance(judge, Judge):
            out.append(judge)
        elif isinstance(judge, Backend):
            out.append(Judge(judge))
        else:
            raise ValueError(f"{what} must be Backend or Judge objects, got {type(judge).__name__}: {judge!r}")
    if not out:
        raise ValueError(f"{what} is empty: give at least one")
    names = [j.label for j in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{what} has duplicate names {duplicates}; name each configuration (e.g. NAME=spec)")
    return out


def item_key(*parts: object) -> str:
    """A run item key: the JSON list of its parts (readable, unambiguous)."""
    return json.dumps([str(p) for p in parts], ensure_ascii=False)


def parse_item_key(key: str) -> list[str]:
    return json.loads(key)


#: How an item of each job kind reads: its key's parts, named.
_ITEM_WORDS = {
    "review": "question {0}: {1} vs {2}, judged by {3}",
    "discussion": "question {0}: {1} vs {2}, led by {3}",
    "debate": "question {0}: {1} vs {2} on {3}",
    "answers": "question {0}, answered by {1}",
    "score": "question {0}: {1}, scored by {2}",
}


def describe_item(key: str, kind: str | None = None) -> str:
    """An item key in words (``question q1: alpha vs bravo, judged by gpt4``), never a raw list.

    A key that is not a JSON list of strings is returned as it is.
    """
    try:
        parts = parse_item_key(key)
    except (TypeError, ValueError):
        return str(key)
    if not isinstance(parts, list):
        return str(key)
    template = _ITEM_WORDS.get(kind or "")
    if template is None or template.count("{") != len(parts):
        template = {4: _ITEM_WORDS["review"], 2: _ITEM_WORDS["answers"], 3: _ITEM_WORDS["score"]}.get(len(parts))
    return template.format(*parts) if template else ", ".join(map(str, parts))


def progress_line(event, kind: str | None = None) -> str:
    """One readable log line of a run's progress event: ``3/18 running — done: question q1: a vs b, judged by j``.

    The runner's message names the last item by its key (a JSON list); here it is put in words.
    """
    message = event.message or ""
    status, _, rest = message.partition(" ")
    if rest.startswith("["):
        try:
            parts, end = json.JSONDecoder().raw_decode(rest)
        except ValueError:
            pass
        else:
            message = f"{status}: {describe_item(json.dumps(parts), kind)}{rest[end:]}"
    return f"{event.done}/{event.total} {event.status}" + (f" — {message}" if message else "")


def seeded_rng(seed: int, *parts: object) -> np.random.Generator:
    """A generator determined by ``seed`` and ``parts`` (stable across runs and machines)."""
    digest = hashlib.sha256(json.dumps([int(seed), *[str(p) for p in parts]]).encode("utf-8")).digest()
    return np.random.default_rng([int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)])


def load_questions(store: "Store", study: str, *, questions: Sequence[str] | None = None) -> dict[str, str]:
    """question_id -> text (in store order), restricted to ``questions`` when given.

    Raises
    ------
    ValueError
        If the study has no questions, or a requested question is missing (named).
    """
    frame = store.questions.table(study)
    texts = dict(zip(frame["question_id"].astype(str), frame["text"].astype(str)))
    if not texts:
        raise ValueError(f"study {study!r} has no questions; import some first (peercore import)")
    if questions is not None:
        missing = [q for q in questions if q not in texts]
        if missing:
            raise ValueError(f"questions {missing[:10]} are not in study {study!r}")
        texts = {q: texts[q] for q in questions}
    return texts


def load_answers(store: "Store", study: str) -> dict[tuple[str, str], str]:
    """(question_id, model) -> answer text (first turn)."""
    frame = store.questions.answers(study)
    frame = frame[frame["turn"].fillna(1).astype(int) == 1]
    return {(str(q), str(m)): str(a) for q, m, a in zip(frame["question_id"], frame["model"], frame["answer"])}


def accounting_line(accounting: dict) -> str:
    """Where every call the run paid for ended up (stored verdicts, debates, answers, failed items)."""
    stored = [f"{accounting['verdicts']:,} verdicts stored ({accounting['valid']:,} valid + "
              f"{accounting['invalid']:,} invalid)"]
    if accounting.get("debates"):
        stored.append(f"{accounting['debates']:,} debates")
    if accounting.get("answers"):
        stored.append(f"{accounting['answers']:,} answers")
    text = (f"paid calls: {accounting['calls_paid']:,} calls paid by this run -> " + ", ".join(stored)
            + f", {accounting['items_failed']:,} failed items")
    if accounting.get("unaccounted"):
        text += f"; {accounting['unaccounted']:,} items paid but stored nothing (run again: the cache has them)"
    return text
