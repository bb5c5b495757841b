"""NLG assessment: candidates ranked per context and measured against human scores.

Liusie, Manakul, Gales (2024), "LLM Comparative Assessment" (EACL), and the
Product-of-Experts follow-up (Liusie et al. 2024, EMNLP). One module per part, imported
where used (this package is loaded by the CLI on every start, so nothing heavy here):

- :mod:`peercore.nlg.evaluation`: per-context correlations averaged over contexts with
  intervals, the PoE scorers raw and debiased, pairwise accuracy;
- :mod:`peercore.nlg.study`: :class:`~peercore.nlg.study.NLGStudy`, the one layer the CLI,
  the page and the benchmark share;
- :mod:`peercore.nlg.scoring`: reading absolute scores (text, never guessed; expected score);
- :mod:`peercore.nlg.jobs`: :class:`~peercore.nlg.jobs.ComparisonJob` (absolute scoring is
  :class:`peercore.jobs.scoring.ScoreJob`);
- :mod:`peercore.nlg.prompts`: the NLG templates (``templates/*.toml``) and attribute wording;
- :mod:`peercore.nlg.report`: the papers' table shape and the benchmark report;
- :mod:`peercore.nlg.charts`: the page's figures;
- ``peercore nlg ...`` is :mod:`peercore.cli.nlg`.

Human scores and judges' scores are stored in tables of their own
(:meth:`peercore.store.Store.scores.add_human_scores`, :meth:`~peercore.store.Store.scores.add_judge_scores`)
and imported by :mod:`peercore.io.scores`. See ``docs/NLG.md``.
"""

__all__ = ["evaluation", "study", "scoring", "jobs", "prompts", "report", "charts", "commands"]
