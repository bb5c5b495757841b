"""Judge identities: a judge is its whole configuration.

Two runs of one model that differ in backend, model, base URL, method, template (or
its version), criterion, temperature, samples, max tokens, seed or role are two judges,
never one name that silently keeps the first run's verdicts. This module holds the pure
rules; :meth:`peercore.store.Store.judges.resolve` applies them to a study.

Names
-----
A run asks for a name, ``backend:model`` by default (``openai:gpt-4o``) or one the user
gives (``NAME=spec``). In a study:

* if a stored judge has the same configuration (same :func:`fingerprint`), that is the
  judge: re-running a configuration always finds the same name;
* else, if the name is free, the configuration takes it;
* else, if the user gave the name explicitly, the run is refused before any call, with
  what differs (:func:`differences`);
* else the configuration gets a *variant* name: the base name, ``~``, and the settings
  that set it apart from the judge already holding the base name (or, when that judge
  was imported and has no recorded configuration, the method), e.g.
  ``openai:gpt-4o~logprobs`` or ``local:qwen2.5-coder-1.5b~verdict,temperature=0.9``.
  More settings are added while the name is taken; a short hash ends the search.

The dashboard groups variants under their base name (:func:`base_name`), and a judge
that is also a contestant is recognised through its base name (:func:`model_of`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

__all__ = [
    "IDENTITY_FIELDS", "VARIANT_MARK", "fingerprint", "canonical_identity", "differences", "variant_name",
    "base_name", "model_of", "judge_kind", "describe_differences",
]

VARIANT_MARK = "~"
# The order in which settings are named in a variant (most telling first).
IDENTITY_FIELDS = ("role", "method", "template", "criterion", "temperature", "samples", "max_tokens", "max_rounds",
                   "turns", "layout_seed", "base_url", "seed", "label", "discussion_template", "fallback", "backend",
                   "model", "template_version", "discussion_template_version", "rubric_version", "agents")
_BARE = ("role", "method")  # named by their value alone in a variant (``~logprobs``)
KINDS = ("human", "debate", "adjudicator", "vote")


def canonical_identity(identity: Mapping) -> dict:
    """The identity with JSON-safe values, ``None`` fields dropped, numbers as floats (0 == 0.0)."""
    out = {}
    for key, value in identity.items():
        if value is None:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)  # 0 and 0.0 are one temperature
        out[str(key)] = json.loads(json.dumps(value, sort_keys=True, default=str))
    return dict(sorted(out.items()))


def fingerprint(identity: Mapping) -> str:
    """SHA-256 (first 16 hex digits) of the canonical identity: equal configurations, equal prints."""
    blob = json.dumps(canonical_identity(identity), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def differences(stored: Mapping | None, requested: Mapping) -> dict[str, tuple]:
    """field -> (stored value, requested value) for every field that differs.

    A stored judge without a configuration (imported) differs in every requested field.
    """
    old = canonical_identity(stored or {})
    new = canonical_identity(requested)
    keys = [k for k in IDENTITY_FIELDS if k in old or k in new] + sorted((set(old) | set(new)) - set(IDENTITY_FIELDS))
    return {k: (old.get(k), new.get(k)) for k in keys if old.get(k) != new.get(k)}


def describe_differences(diff: Mapping[str, tuple]) -> str:
    """``method 'verdict' -> 'logprobs', temperature 0.0 -> 0.9`` for messages."""
    return ", ".join(f"{k} {_short(a)} -> {_short(b)}" for k, (a, b) in diff.items())


def _short(value) -> str:
    text = "(none)" if value is None else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _token(field: str, value) -> str:
    if field in _BARE:
        return str(value).replace(" ", "-")
    if isinstance(value, (list, dict)):
        value = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:6]
    elif isinstance(value, float):
        value = f"{value:g}"  # 7 and 0.9, not 7.0
    return f"{field}={value}"


def variant_name(requested: str, identity: Mapping, *, base_identity: Mapping | None,
                 taken: Iterable[str]) -> str:
    """A readable, stable variant name for ``identity`` when ``requested`` is held by another judge.

    Parameters
    ----------
    requested : the name the run asked for (``openai:gpt-4o``).
    identity : the run's configuration.
    base_identity : the configuration of the judge holding ``requested`` (None when it
        was imported: then the method names the variant).
    taken : every judge name in the study.

    Returns
    -------
    str
        ``requested~<settings>``, the settings being those that differ from
        ``base_identity`` (in :data:`IDENTITY_FIELDS` order), extended until the name is
        free, and a 6-digit hash as the last resort.
    """
    taken = set(taken)
    new = canonical_identity(identity)
    base = base_name(requested)
    if base_identity is not None:
        order = list(differences(base_identity, new))
    else:
        order = [f for f in ("role", "method") if f in new and not (f == "role" and new[f] == "review")]
    order += [f for f in IDENTITY_FIELDS if f in new and f not in order and f not in ("backend", "model")]
    order = [f for f in order if new.get(f) is not None and not (f == "role" and new[f] == "review")]
    tokens: list[str] = []
    for field in order or ["role"]:
        if field in new:
            tokens.append(_token(field, new[field]))
        candidate = f"{base}{VARIANT_MARK}{','.join(tokens)}" if tokens else base
        if tokens and candidate not in taken:
            return candidate
    return f"{base}{VARIANT_MARK}{','.join(tokens + ['#' + fingerprint(new)[:6]])}"


def base_name(name: str) -> str:
    """The name without its variant suffix: ``openai:gpt-4o~logprobs`` -> ``openai:gpt-4o``."""
    return str(name).split(VARIANT_MARK, 1)[0]


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def judge_kind(name: str, registered: str | None = None) -> str:
    """The kind of a judge: the one rule every part of PeerBoard uses.

    The kind the judge was registered with when there is one (``registered``, from the
    store); else its name's prefix, ``human:``, ``debate:``, ``adjudicator:`` or
    ``vote:``, compared without regard to ASCII case (``Human:alice`` is a human, as
    SQLite's ``LIKE`` and every spreadsheet would read it); else ``llm``.
    """
    if registered:
        return str(registered)
    text = str(name)
    prefix = text.split(":", 1)[0].translate(_ASCII_LOWER) if ":" in text else ""
    return prefix if prefix in KINDS else "llm"


def model_of(judge: str, contestants: Iterable[str], stored: Mapping[str, str] | None = None) -> str | None:
    """The contestant a judge is, by one rule used everywhere (CLI, dashboard, exports).

    In order: the alias stored for the judge (e.g. set on the Studies page or by an
    import), the judge's own name, its base name (without a variant suffix), and its
    base name without the ``backend:`` prefix, whichever is a contestant first. Humans,
    debate panels, adjudicators and derived votes are never contestants.
    """
    contestants = set(contestants)
    stored = stored or {}
    if judge_kind(judge) != "llm":
        return None
    candidates = [stored.get(judge), judge, base_name(judge)]
    if ":" in base_name(judge):
        candidates.append(base_name(judge).split(":", 1)[1])
    for candidate in candidates:
        if candidate and candidate in contestants:
            return candidate
    return None
