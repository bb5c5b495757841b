"""Prompt templates (data files), criteria rubrics and their variations, verdict parsing.

Templates are TOML files in this folder (see :mod:`peercore.prompts.templates` for the
list and the format); rubrics are in ``scaleeval_rubrics.toml``. Nothing here calls a
model: :mod:`peercore.reviewers.judging` combines templates, backends and parsing.
"""

from peercore.prompts.criteria import (
    VARIATIONS,
    Rubric,
    RubricError,
    criteria_variation,
    list_rubrics,
    load_rubric,
    split_criterion,
)
from peercore.prompts.templates import (
    KINDS,
    PromptTemplate,
    TemplateError,
    format_turns,
    list_templates,
    load_template,
    template_from_mapping,
)
from peercore.prompts.verdicts import MAX_LINES, SCHEMES, ParsedVerdict, parse_verdict

__all__ = [
    "KINDS",
    "MAX_LINES",
    "SCHEMES",
    "VARIATIONS",
    "ParsedVerdict",
    "PromptTemplate",
    "Rubric",
    "RubricError",
    "TemplateError",
    "criteria_variation",
    "format_turns",
    "list_rubrics",
    "list_templates",
    "load_rubric",
    "split_criterion",
    "load_template",
    "parse_verdict",
    "template_from_mapping",
]
