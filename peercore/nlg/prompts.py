"""The NLG assessment's prompt templates and the words each attribute puts into them.

Templates are TOML data files in ``peercore/nlg/templates`` (read and validated with
:func:`peercore.prompts.template_from_mapping`, like the shipped review templates):

``nlg_compare`` (kind ``classifier``)
    The prompt-based classifier of Liusie, Manakul, Gales (2024, eq. 3) for two
    responses to one context: "Which response is {aspect} as the next turn of this
    conversation, Response 1 or Response 2?", prefill ``The better response is
    Response ``; p = P(1) / (P(1) + P(2)).
``nlg_compare_generative`` (kind ``generative``)
    The same question for judges read by their reply (``--method verdict`` / ``samples``,
    the OpenAI and Anthropic APIs' default): a short explanation, then ``Verdict:
    Response 1|2`` on the last line.
``nlg_score`` (kind ``score``)
    Prompt scoring of one response (the paper's absolute baseline; FastChat's
    single-answer grading): "How {quality} is this response ...? Score it from {low} to
    {high}", prefill ``Score: ``.

Both put the context (the study's question text) first, so that every call about one
context shares the longest possible prompt prefix (llama.cpp's prompt cache,
:class:`peercore.reviewers.local.LocalBackend`).
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources

from peercore.prompts.templates import PromptTemplate, TemplateError, template_from_mapping

__all__ = ["ASPECTS", "COMPARE_TEMPLATE", "GENERATIVE_COMPARE_TEMPLATE", "SCORE_TEMPLATE", "load_nlg_template", "nlg_templates", "aspect_of",
           "quality_of"]

COMPARE_TEMPLATE = "nlg_compare"
GENERATIVE_COMPARE_TEMPLATE = "nlg_compare_generative"
SCORE_TEMPLATE = "nlg_score"
# attribute -> (comparative phrase for "Which response is ...", adjective for "How ... is this response").
# USR's attributes (Mehri & Eskenazi 2020) and SummEval's (Fabbri et al. 2021).
ASPECTS: dict[str, tuple[str, str]] = {
    "coherence": ("more coherent", "coherent"),
    "engagingness": ("more engaging", "engaging"),
    "naturalness": ("more natural", "natural"),
    "understandability": ("more understandable", "understandable"),
    "groundedness": ("better grounded in the fact", "well grounded in the fact"),
    "overall": ("better overall", "good overall"),
    "consistency": ("more consistent with the source", "consistent with the source"),
    "fluency": ("more fluent", "fluent"),
    "relevance": ("more relevant", "relevant"),
}


def aspect_of(attribute: str | None) -> str:
    """The comparative phrase for ``attribute`` (``"more coherent"``); ``"better"`` without one."""
    if not attribute:
        return "better"
    return ASPECTS.get(attribute, (f"better in {attribute}", ""))[0]


def quality_of(attribute: str | None) -> str:
    """The adjective for ``attribute`` (``"coherent"``); ``"good"`` without one."""
    if not attribute:
        return "good"
    return ASPECTS.get(attribute, ("", f"good in {attribute}"))[1]


def nlg_templates() -> list[str]:
    """Names of the NLG templates, sorted."""
    folder = resources.files(__package__).joinpath("templates")
    return sorted(entry.name[:-5] for entry in folder.iterdir() if entry.name.endswith(".toml"))


@lru_cache(maxsize=None)
def load_nlg_template(name: str) -> PromptTemplate:
    """An NLG template by name (``nlg_compare``, ``nlg_score``).

    Raises
    ------
    TemplateError
        If the name is unknown (the known names are listed) or the file is malformed.
    """
    known = nlg_templates()
    if name not in known:
        raise TemplateError(f"NLG template must be one of {known}; got {name!r}")
    text = resources.files(__package__).joinpath("templates", f"{name}.toml").read_text(encoding="utf-8")
    return template_from_mapping(tomllib.loads(text), origin=f"peercore/nlg/templates/{name}.toml")
