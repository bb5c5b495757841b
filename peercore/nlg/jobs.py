"""NLG comparative assessment jobs: the review job with the NLG prompt and the attribute's wording.

:class:`ComparisonJob` is a :class:`peercore.jobs.review.ReviewJob` (same pairs, runner,
cache, judge identities and stored verdicts, with the attribute as the verdicts'
``criterion``) whose prompt is the NLG classifier ``nlg_compare``
(:mod:`peercore.nlg.prompts`): "Which response is {aspect} as the next turn of this
conversation?" with the aspect from the attribute ("more coherent"). By default every
ordered pair of a context's candidates is compared once (strategy ``all``: the
symmetric set, N(N-1) = 30 comparisons for 6 candidates, Liusie et al. 2024), in an
order that keeps the prompt prefix shared: context by context, first candidate by first
candidate.

:class:`peercore.jobs.scoring.ScoreJob` is the absolute-scoring counterpart.
:func:`job_from_config` rebuilds either from a stored run (``peercore nlg resume``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from peercore.jobs.base import Judge
from peercore.jobs.review import ReviewJob, ReviewSettings
from peercore.prompts.templates import PromptTemplate
from peercore.nlg.prompts import COMPARE_TEMPLATE, GENERATIVE_COMPARE_TEMPLATE, aspect_of, load_nlg_template
from peercore.reviewers import judging
from peercore.jobs.resume import _judge
from peercore.jobs.scoring import ScoreJob

__all__ = ["ComparisonJob", "job_from_config"]


class ComparisonJob(ReviewJob):
    """Pairwise comparisons of each context's candidates on one attribute (Liusie et al. 2024).

    Parameters
    ----------
    study : the study (contexts are its questions, candidates its answers).
    judges : backends or :class:`~peercore.jobs.base.Judge` objects.
    attribute : the attribute compared (``"coherence"``); the verdicts' ``criterion``.
    contestants, questions, strategy, comparisons, budget, seed, method, max_tokens :
        as :class:`~peercore.jobs.review.ReviewJob` (strategy ``all`` by default; method
        None = each backend's default: the label-probability classifier for local
        models).
    template : an NLG template name or a template object of kind ``classifier``,
        ``review`` or ``generative``; default per reviewer: ``nlg_compare`` (the
        label-probability classifier) when its method reads probabilities,
        ``nlg_compare_generative`` when it reads a generated verdict.
    samples, temperature : K sampled verdicts for ``method="samples"``, and their
        temperature (as :class:`~peercore.jobs.review.ReviewJob`).

    Raises
    ------
    ValueError
        As :class:`~peercore.jobs.review.ReviewJob`, and for an empty attribute.
    """

    kind = "nlg-compare"
    criterion_fields = (*ReviewJob.criterion_fields, "aspect")  # the attribute reaches the judge as the aspect

    def __init__(self, study: str, judges: Sequence, *, attribute: str, contestants: Sequence[str] | None = None,
                 questions: Sequence[str] | None = None, strategy: str = "all", comparisons: int | None = None,
                 budget: int | None = None, seed: int = 0, method: str | None = None,
                 template: str | PromptTemplate | None = None, samples: int = 1, temperature: float | None = None,
                 max_tokens: int = 512) -> None:

        if not isinstance(attribute, str) or not attribute.strip():
            raise ValueError(f"attribute must be a non-empty name (e.g. 'coherence'), got {attribute!r}")
        self.attribute = attribute
        self._given = template if template is None or isinstance(template, PromptTemplate) else \
            load_nlg_template(template)
        super().__init__(study, judges, contestants=contestants, questions=questions, strategy=strategy,
                         comparisons=comparisons, budget=budget, seed=seed, method=method,
                         template=self._given or load_nlg_template(COMPARE_TEMPLATE), criterion=attribute,
                         samples=samples, temperature=temperature, max_tokens=max_tokens)

    def _template_for(self, reviewer: Judge) -> PromptTemplate:
        """The given template, else ``nlg_compare`` for probability methods and
        ``nlg_compare_generative`` for generated verdicts (per reviewer, as its method)."""

        if self._given is not None:
            return self._given
        method = self.method or judging.default_method(reviewer.backend)
        concrete = judging.resolve_method(method, reviewer.backend.capabilities, k=self.samples)
        return load_nlg_template(COMPARE_TEMPLATE if concrete in ("logprobs", "logits") else GENERATIVE_COMPARE_TEMPLATE)

    def _settings(self, reviewer: Judge) -> ReviewSettings:

        saved, self.template = self.template, self._template_for(reviewer)
        try:
            settings = super()._settings(reviewer)
        finally:
            self.template = saved
        return dataclasses.replace(settings, fields={**settings.fields, "aspect": aspect_of(self.criterion)})

    def config(self) -> dict:
        out = super().config()
        used = list(dict.fromkeys((s.template.name, s.template.version) for s in self.settings.values()))
        out["template"] = used[0][0] if len(used) == 1 else [name for name, _ in used]
        out["template_version"] = used[0][1] if len(used) == 1 else [version for _, version in used]
        out["attribute"] = self.attribute
        if self._given is not None:  # only when given, so default runs keep their ids
            out["given_template"] = self._given.name
        return out

    def _options(self, reviewer: Judge) -> dict:
        out = super()._options(reviewer)
        out["template"] = self.settings[reviewer.label].template
        return out


def job_from_config(kind: str, study: str, config: dict):
    """The NLG job of ``kind`` (``nlg-compare`` or ``score``) described by a run's ``config["job"]``.

    Raises
    ------
    ValueError
        If ``kind`` is not an NLG job kind, or the stored template version differs from
        the shipped template's (the run was made with other wording; start a new run).
    """

    if kind not in ("nlg-compare", "score"):
        raise ValueError(f"kind must be 'nlg-compare' or 'score' for an NLG run, got {kind!r}")
    names = config["template"] if isinstance(config["template"], list) else [config["template"]]
    versions = config.get("template_version")
    versions = versions if isinstance(versions, list) else [versions] * len(names)
    for name, version in zip(names, versions):
        if version not in (None, load_nlg_template(name).version):
            raise ValueError(f"the run used template {name!r} version {version}, this peercore ships version "
                             f"{load_nlg_template(name).version}; start a new run")
    template = load_nlg_template(names[0]) if len(names) == 1 else None
    entries = config["reviewers"] if kind == "nlg-compare" else config["judges"]
    judges = [_judge(e, timeout=None, api_keys={}) for e in entries]
    if kind == "score":
        return ScoreJob(study, judges, attribute=config.get("attribute"), contestants=config.get("contestants"),
                        questions=config.get("questions"), method=config.get("method"), template=template,
                        scale=tuple(config["scale"]), temperature=config.get("temperature"),
                        max_tokens=config["max_output"])
    return ComparisonJob(study, judges, attribute=config["attribute"], contestants=config.get("contestants"),
                         questions=config.get("questions"), strategy=config["strategy"],
                         comparisons=config.get("comparisons"), budget=config.get("budget"), seed=config["seed"],
                         method=config.get("method"), template=None if config.get("given_template") is None
                         else template, samples=config.get("samples", 1), temperature=config.get("temperature"),
                         max_tokens=config["max_output"])
