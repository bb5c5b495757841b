"""Prompt templates: TOML data files beside this module, a loader and a renderer.

Each ``*.toml`` file in this folder (except ``scaleeval_rubrics.toml``) is one template
with the keys ``name, title, kind, scheme, labels, source, system, user`` and optional
``prefill`` and ``[defaults]``. ``system`` and ``user`` hold ``{field}`` placeholders;
only placeholders are substituted (other braces are left alone and field values are
never re-interpreted), so answers containing braces or code are safe.

Shipped templates
-----------------
``prd_review``, ``prd_review_coding``, ``prd_review_math``
    PRD reviewer prompts (Li, Patel, Du 2023, Table 8): last line 1, 2 or 3 (tie).
``prd_review_discussion``
    PRD's initial review before a discussion (Table 8; bcdnlp/PRD
    ``prompt_review_generation_lfqa``, explicit aspects): last line 1 or 2, no tie.
``prd_discussion``
    PRD's two-reviewer discussion (Table 1): a chat in which each turn is followed by a
    reminder addressed to the next reviewer (:attr:`PromptTemplate.reminder`); last
    line 1 or 2.
``liusie_classifier``, ``liusie_classifier_numeric``
    Liusie et al. (2024) prompt-based classifier: label probabilities after a prefill.
``liusie_generative``
    Liusie et al. generative comparison ending with ``Verdict: Response A|B``.
``scaleeval_initial``, ``scaleeval_discussion``
    ScaleEval (Chern et al. 2024) judge-agent prompts with a 1-5 rubric; last line 1, 2
    or 0 (tie).
``scaleeval_compact_initial``, ``scaleeval_compact_discussion``
    The same ScaleEval protocol for small local models with a short reply budget: the
    reply starts with ``Verdict: 1|2|0`` on its own line, then one or two sentences of
    reasons, so the verdict survives ``max_tokens``.

Templates of kind ``score`` (absolute scoring of one answer, scheme ``score``) list the
scale's labels (``["1", ..., "9"]``) instead of two answer labels; the NLG assessment
ships its own (``peercore/nlg/templates``, read with :func:`template_from_mapping`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Mapping, Sequence

from ..errors import PeercoreError

__all__ = ["PromptTemplate", "TemplateError", "load_template", "list_templates", "format_turns", "KINDS"]

KINDS = ("review", "discussion", "classifier", "generative", "debate_initial", "debate_discussion", "score")
_SCHEMES = ("prd", "scaleeval", "ab", "score")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NOT_TEMPLATES = {"scaleeval_rubrics"}


class TemplateError(PeercoreError):
    """A template file is malformed, unknown, or rendered without a required field."""


@dataclass(frozen=True)
class PromptTemplate:
    """One chat prompt template.

    Attributes
    ----------
    name : identifier (the file stem).
    title : one-line description for menus.
    kind : one of :data:`KINDS`.
    scheme : the verdict scheme for :func:`peercore.prompts.parse_verdict`
        (``"prd"``, ``"scaleeval"`` or ``"ab"``).
    labels : the two tokens naming the first and second answer (``("1", "2")`` or
        ``("A", "B")``): what a classifier reads probabilities for; for kind ``score``,
        the scale's labels in increasing order (``("1", ..., "9")``).
    source : the paper/table and origin of the wording (with licence).
    system, user : the message texts with ``{field}`` placeholders.
    prefill : text the assistant reply starts with (classifier templates), or None.
    defaults : values for fields the caller may omit.
    reminder : discussion templates: the text appended after every turn, addressed to
        the reviewer who speaks next (PRD's per-turn prompt: ``{reviewer}`` is that
        reviewer, ``{other}`` the one who just spoke), or None.
    """

    name: str
    title: str
    kind: str
    scheme: str
    labels: tuple[str, ...]
    source: str
    system: str
    user: str
    prefill: str | None = None
    defaults: Mapping[str, str] = field(default_factory=dict)
    reminder: str | None = None

    @property
    def version(self) -> str:
        """First 8 hex digits of SHA-256 over everything that shapes the prompt or its reading.

        Part of a judge's identity (:mod:`peercore.judges`): editing a template's wording
        makes its runs a new judge variant.
        """
        import hashlib
        import json

        blob = json.dumps([self.kind, self.scheme, list(self.labels), self.system, self.user, self.prefill,
                           dict(sorted(self.defaults.items())), self.reminder], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:8]

    @property
    def fields(self) -> tuple[str, ...]:
        """Every placeholder, in order of first appearance."""
        seen: dict[str, None] = {}
        for text in (self.system, self.user):
            for match in _PLACEHOLDER.finditer(text):
                seen.setdefault(match.group(1), None)
        return tuple(seen)

    @property
    def required(self) -> tuple[str, ...]:
        """Placeholders without a default."""
        return tuple(f for f in self.fields if f not in self.defaults)

    def render(self, **values: object) -> tuple[dict, ...]:
        """The chat messages: ``({"role": "system", ...}, {"role": "user", ...})``.

        Values not used by the template are ignored (callers may pass a standard set such
        as ``question, answer_1, answer_2, criterion`` to any template).

        Raises
        ------
        TemplateError
            If a required field is missing (the message names the template and fields).
        """
        merged = {**self.defaults, **{k: v for k, v in values.items() if v is not None}}
        missing = [f for f in self.fields if f not in merged]
        if missing:
            raise TemplateError(f"template {self.name!r} needs field(s) {missing}; got {sorted(values)}")

        def fill(text: str) -> str:
            return _PLACEHOLDER.sub(lambda m: str(merged[m.group(1)]), text)

        messages = []
        if self.system:
            messages.append({"role": "system", "content": fill(self.system)})
        messages.append({"role": "user", "content": fill(self.user)})
        return tuple(messages)

    def render_reminder(self, **values: object) -> str:
        """The per-turn :attr:`reminder` with its fields filled ('' when the template has none)."""
        if not self.reminder:
            return ""
        merged = {**self.defaults, **{k: v for k, v in values.items() if v is not None}}
        missing = [m.group(1) for m in _PLACEHOLDER.finditer(self.reminder) if m.group(1) not in merged]
        if missing:
            raise TemplateError(f"template {self.name!r}: its reminder needs field(s) {missing}")
        return _PLACEHOLDER.sub(lambda m: str(merged[m.group(1)]), self.reminder)


def list_templates() -> list[str]:
    """Names of the shipped templates, sorted."""
    return sorted(_template_files())


def load_template(name: str | PromptTemplate) -> PromptTemplate:
    """A shipped template by name (a :class:`PromptTemplate` is returned as it is).

    Raises
    ------
    TemplateError
        If the name is unknown (the known names are listed) or the file is malformed.
    """
    if isinstance(name, PromptTemplate):
        return name
    return _load(name)


def format_turns(turns: Sequence[tuple[str, str]], *, header: str = "[{speaker}]") -> str:
    """Render earlier discussion turns as text blocks for a ``{discussion}`` field.

    Parameters
    ----------
    turns : ``(speaker, text)`` pairs in order, e.g. ``[("Reviewer 1", "...1")]``.
    header : format of each block's first line; ``{speaker}`` is substituted.

    Returns
    -------
    str
        ``"[Reviewer 1]\\n...\\n\\n[Reviewer 2]\\n...\\n\\n"``, or ``""`` for no turns.
    """
    return "".join(f"{header.format(speaker=speaker)}\n{text.strip()}\n\n" for speaker, text in turns)


@lru_cache(maxsize=1)
def _template_files() -> dict[str, str]:
    folder = resources.files(__package__)
    out = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".toml") and entry.name[:-5] not in _NOT_TEMPLATES:
            out[entry.name[:-5]] = entry.name
    return out


@lru_cache(maxsize=None)
def _load(name: str) -> PromptTemplate:
    files = _template_files()
    if name not in files:
        raise TemplateError(f"template must be one of {sorted(files)}; got {name!r}")
    data = tomllib.loads(resources.files(__package__).joinpath(files[name]).read_text(encoding="utf-8"))
    return template_from_mapping(data, origin=files[name])


def template_from_mapping(data: Mapping, *, origin: str = "<mapping>") -> PromptTemplate:
    """Build and validate a template from a parsed TOML/JSON mapping (user templates too)."""
    for key in ("name", "kind", "scheme", "labels", "user"):
        if key not in data:
            raise TemplateError(f"{origin}: missing key {key!r}")
    if data["kind"] not in KINDS:
        raise TemplateError(f"{origin}: kind must be one of {KINDS}, got {data['kind']!r}")
    if data["scheme"] not in _SCHEMES:
        raise TemplateError(f"{origin}: scheme must be one of {_SCHEMES}, got {data['scheme']!r}")
    labels = tuple(str(x) for x in data["labels"])
    if (data["kind"] == "score") != (data["scheme"] == "score"):
        raise TemplateError(f"{origin}: kind 'score' goes with scheme 'score' (and only with it), got kind "
                            f"{data['kind']!r} and scheme {data['scheme']!r}")
    if data["kind"] == "score":
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise TemplateError(f"{origin}: a score template's labels must be two or more distinct score tokens, "
                                f"got {data['labels']!r}")
    elif len(labels) != 2 or labels[0] == labels[1]:
        raise TemplateError(f"{origin}: labels must be two distinct tokens, got {data['labels']!r}")
    return PromptTemplate(
        name=str(data["name"]),
        title=str(data.get("title", data["name"])),
        kind=data["kind"],
        scheme=data["scheme"],
        labels=labels,  # type: ignore[arg-type]
        source=str(data.get("source", "")),
        system=str(data.get("system", "")),
        user=str(data["user"]),
        prefill=data.get("prefill") or None,
        defaults={str(k): str(v) for k, v in dict(data.get("defaults", {})).items()},
        reminder=data.get("reminder") or None,
    )
