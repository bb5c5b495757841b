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
    template : an NLG template name (default ``nlg_compare``) or a template object of
        kind ``classifier``, ``review`` or ``generative``.

    Raises
    ------
    ValueError
        As :class:`~peercore.jobs.review.ReviewJob`, and for an empty attribute.
    """

    kind = "nlg-compare"

    def __init__(self, study: str, judges: Sequence, *, attribute: str, contestants: Sequence[str] | None = None,
                 questions: Sequence[str] | None = None, strategy: str = "all", comparisons: int | None = None,
                 budget: int | None = None, seed: int = 0, method: str | None = None,
                 template: str | PromptTemplate | None = None, max_tokens: int = 512) -> None:
        from peercore.nlg.prompts import COMPARE_TEMPLATE, load_nlg_template

        if not isinstance(attribute, str) or not attribute.strip():
            raise ValueError(f"attribute must be a non-empty name (e.g. 'coherence'), got {attribute!r}")
        tpl = template if isinstance(template, PromptTemplate) else load_nlg_template(template or COMPARE_TEMPLATE)
        self.attribute = attribute
        super().__init__(study, judges, contestants=contestants, questions=questions, strategy=strategy,
                         comparisons=comparisons, budget=budget, seed=seed, method=method, template=tpl,
                         criterion=attribute, max_tokens=max_tokens)

    def _settings(self, reviewer: Judge) -> ReviewSettings:
        from peercore.nlg.prompts import aspect_of

        settings = super()._settings(reviewer)
        return dataclasses.replace(settings, fields={**settings.fields, "aspect": aspect_of(self.criterion)})

    def config(self) -> dict:
        out = super().config()
        out["template"] = self.template.name
        out["template_version"] = self.template.version
        out["attribute"] = self.attribute
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
    from peercore.jobs.resume import _judge
    from peercore.jobs.scoring import ScoreJob
    from peercore.nlg.prompts import load_nlg_template

    if kind not in ("nlg-compare", "score"):
        raise ValueError(f"kind must be 'nlg-compare' or 'score' for an NLG run, got {kind!r}")
    template = load_nlg_template(config["template"])
    if config.get("template_version") not in (None, template.version):
        raise ValueError(f"the run used template {config['template']!r} version {config['template_version']}, this "
                         f"peercore ships version {template.version}; start a new run")
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
                         method=config.get("method"), template=template, max_tokens=config["max_output"])
