"""The application layer: every use case is one function over a study's read model.

The CLI (:mod:`peercore.cli`), the dashboard (:mod:`peercore.ui` and ``pages/``) and the
exports (:mod:`peercore.io.export`) call these functions with the same defaults, so they
show the same numbers:

* :class:`Study` -- a stored study or a judgment file, its read model once per revision;
* :func:`leaderboard`, :func:`leaderboards_by` -- rankings (:class:`RankOptions`);
* :func:`agreement`, :func:`alpha`, :func:`meta_evaluation` -- judges against references;
* :func:`bias_report`, :func:`health`, :func:`judge_bias`, :func:`discussion_bias` -- biases.
"""

from peercore.app.agreement import MetaEvaluation, agreement, agreement_table, alpha, meta_evaluation
from peercore.app.bias import BiasReport, bias_report, discussion_bias, judge_bias
from peercore.app.health import flagged_judges, health
from peercore.app.leaderboard import (GroupedRanking, RankOptions, Ranking, default_baseline, leaderboard,
                                      leaderboards_by)
from peercore.app.study import Study

__all__ = [
    "Study", "RankOptions", "Ranking", "GroupedRanking", "leaderboard", "leaderboards_by", "default_baseline",
    "agreement", "agreement_table", "alpha", "meta_evaluation", "MetaEvaluation", "bias_report", "BiasReport",
    "health", "flagged_judges", "judge_bias", "discussion_bias",
]
