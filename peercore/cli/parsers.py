"""The ``peercore`` command line as argparse sees it: every command, its options and its handler's name.

Parsing loads nothing heavy (no pandas, no numpy, no SDK): ``peercore --help`` and a
usage error answer at once. A command's handler is named here as ``module:function``
and imported only when that command runs (:func:`peercore.cli.main`).
"""

from __future__ import annotations

import argparse

from peercore.assignment import DEFAULT_LEASE_SECONDS, ENV_LEASE_SECONDS
from peercore.cli.common import (Parser, add_db_option, add_selection_options, add_study_options, int_at_least,
                                 non_negative_float, non_negative_int, positive_float)
from peercore.domain.options import (Control, Grouping, Intervals, Method, PeerWeights, ReferenceMode, Ties, Unparsed,
                                     WeightNormalisation, WeightsFrom, values)
from peercore.io.formats import EXPORT_FORMATS, EXPORT_WHAT, FORMATS, ORDER_POLICIES

__all__ = ["build_parser"]

_positive_int = int_at_least(1)
_non_negative_int = non_negative_int


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = Parser(prog="peercore", description="Rank LLMs by peer review and meta-evaluate LLM judges.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in (add_analysis, add_guarantees, add_data, add_runs, add_adjudicate, add_nlg, add_dashboard):
        add(commands)
    return parser


def add_analysis(commands) -> None:
    """``rank``, ``agree`` and ``bias`` (:mod:`peercore.cli.analysis`)."""
    rank = commands.add_parser("rank", help="leaderboard from judgments",
                               description="Rank contestants from a judgment file or a stored study. The "
                               "Leaderboard page computes the same table with the same defaults.")
    rank.add_argument("file", nargs="?", help="judgments: .csv, .jsonl or .parquet in the canonical shape")
    add_study_options(rank)
    rank.add_argument("--method", choices=values(Method), default=Method.BT.value,
                      help="win rate (PRD), online Elo (PRD), Bradley-Terry on the Elo scale (Chatbot Arena, "
                           "default), or Product-of-Experts scores (Liusie et al.)")
    add_selection_options(rank)
    rank.add_argument("--peer-weights", choices=values(PeerWeights), default=PeerWeights.NONE.value,
                      help="weigh each judge by its own score as a contestant (PRD Peer Rank)")
    rank.add_argument("--weights-from", choices=values(WeightsFrom), default=WeightsFrom.WINRATE.value,
                      help="the score Peer Rank's weights come from (default winrate, as PRD Table 2's weighted win "
                           "rates); elo-per-shuffle, with --method elo --peer-weights prd: PRD's notebook weighted Elo "
                           "(within each shuffle 5 rounds of Elo, each weighted by min-max weights of the previous "
                           "round, W/mean(W); Table 2's 'All (weighted)' Elo)")
    rank.add_argument("--weight-normalisation", choices=values(WeightNormalisation),
                      default=WeightNormalisation.SUM.value,
                      help="weighted Elo with fixed weights: weights summing to 1 (default) or W/mean(W) "
                           "(Algorithm 1, the notebook's rescaling)")
    rank.add_argument("--soft", action="store_true",
                      help="count the judges' probabilities p_a as fractional wins where given (soft verdicts)")
    rank.add_argument("--bootstrap", type=non_negative_int, default=100, metavar="N",
                      help="bootstrap rounds for 95%% intervals (default 100, as the Leaderboard page; 0: none)")
    rank.add_argument("--seed", type=int, default=0)
    rank.add_argument("--elo-shuffles", type=non_negative_int, default=100, metavar="R",
                      help="Elo: average over R random battle orders (0 = file order; default 100)")
    rank.add_argument("--baseline", metavar="MODEL",
                      help="with --method winrate: AlpacaEval's columns against this model (win_rate, "
                           "discrete_win_rate, standard_error, n_wins, n_wins_base, n_draws, avg_length, lc_win_rate; "
                           "percent), the length-controlled win rate from the answers' lengths; 'auto': the model "
                           "in every chosen comparison (the most battles if several), as the Leaderboard's default")
    rank.add_argument("--control", action="append", choices=values(Control), metavar="STYLE",
                      help="with --method bt: style control (Chatbot Arena's contextual Bradley-Terry) for the answers' "
                           "length and/or Markdown (headers, lists, bold); repeatable. Needs the answers: a study's "
                           "stored answers, or answer_a / answer_b columns in FILE (length_a / length_b for length)")
    rank.add_argument("--intervals", choices=values(Intervals), default=Intervals.BOOTSTRAP.value,
                      help="Bradley-Terry: the interval that sets the ranks; the sandwich (robust) interval is always "
                           "reported beside the bootstrap (default bootstrap)")
    rank.add_argument("--reweight", action="store_true",
                      help="Bradley-Terry: weigh each battle by 1/max(battles of its pair, 50), as LMArena does")
    rank.add_argument("--prior", type=positive_float, metavar="SD",
                      help="Bradley-Terry: a weak Gaussian prior on the ratings with this standard deviation in Elo "
                           "points (e.g. 200: five verdicts stay within 1000 +- 200)")
    rank.add_argument("--min-battles", type=non_negative_int, default=None, metavar="N",
                      help="mark contestants with fewer battles than N preliminary (default 30)")
    rank.add_argument("--style-reg", type=non_negative_float, default=None, metavar="R",
                      help="style control: ridge on the style coefficients, on arena-rank's scale (default 1e-3; "
                           "arena-rank's own default is 1.0)")
    rank.add_argument("--lc-rounds", type=non_negative_int, default=None, metavar="N",
                      help="bootstrap rounds over instructions for the length-controlled win rate's standard error "
                           "(default 200)")
    rank.add_argument("--by", choices=values(Grouping),
                      help="one leaderboard per question category, criterion or turn, side by side with counts")
    rank.add_argument("--group", action="append", metavar="VALUE",
                      help="with --by: only these groups (repeatable; default all)")
    rank.add_argument("--format", choices=("table", "csv", "json"), default="table")
    rank.set_defaults(handler="peercore.cli.analysis:rank_command")

    agree = commands.add_parser("agree", help="agreement of judges with a reference (never with their own votes)")
    agree.add_argument("file", nargs="?")
    add_study_options(agree)
    agree.add_argument("--judge", required=True, action="append", metavar="NAME_OR_PREFIX",
                       help="the judge, or a prefix ending in ':' for several (e.g. human: for annotator agreement); "
                            "with --alpha, repeatable: the raters")
    agree.add_argument("--alpha", action="store_true",
                       help="Krippendorff's alpha (nominal) among the --judge raters, with a bootstrap 95%% interval "
                            "over units (no --reference)")
    agree.add_argument("--rounds", type=non_negative_int, default=1000, metavar="N",
                       help="--alpha: bootstrap rounds (default 1000)")
    agree.add_argument("--seed", type=int, default=0)
    agree.add_argument("--reference", metavar="NAME_OR_PREFIX",
                       help="reference judge, or a prefix ending in ':' for several (e.g. human:); a judge is never "
                            "compared with its own votes (leave-one-out)")
    agree.add_argument("--ties", choices=values(Ties), default=Ties.INCLUDE.value)
    agree.add_argument("--reference-mode", choices=values(ReferenceMode), default=ReferenceMode.MAJORITY.value,
                       help="majority: the reference's majority on each comparison (PRD Table 3, the Meta-evaluation "
                            "page's default); votes: every reference vote (MT-Bench, FastChat)")
    agree.add_argument("--unparsed", choices=values(Unparsed), default=Unparsed.MISS.value,
                       help="a judge reply with no readable verdict counts as a disagreement (ScaleEval eq. 2, "
                            "default) or is left out")
    agree.add_argument("--all-rounds", action="store_true", help="also count debate agents' initial verdicts")
    agree.add_argument("--format", choices=("table", "json"), default="table")
    agree.set_defaults(handler="peercore.cli.analysis:agree_command")

    bias = commands.add_parser("bias", help="position bias, swap consistency and health of each judge")
    bias.add_argument("file", nargs="?")
    add_study_options(bias)
    bias.add_argument("--model", action="store_true",
                      help="judge bias as a model: each judge's position, self/family preference and length bias "
                           "estimated together (contextual Bradley-Terry), in Elo points and as probability shifts "
                           "with 95%% intervals")
    bias.add_argument("--family", action="append", metavar="MODEL=FAMILY",
                      help="--model: put contestants in one family for self-preference (repeatable; default: each "
                           "model its own family)")
    bias.add_argument("--judge", action="append", metavar="NAME", help="--model: only these judges (repeatable; a "
                      "name ending in ':' is a prefix)")
    bias.add_argument("--format", choices=("table", "json"), default="table")
    bias.set_defaults(handler="peercore.cli.analysis:bias_command")


def add_guarantees(commands) -> None:
    """``calibrate`` (:mod:`peercore.cli.calibrate`), ``audit``, ``judges``, ``escalate`` (:mod:`.guarantees`)."""
    calibrate = commands.add_parser(
        "calibrate", help="a judge's leaderboard anchored to human labels (prediction-powered inference)",
        description="The leaderboard the reference (people) would have produced on all the judge's comparisons, "
                    "from the judge's verdicts and the reference's votes on some of them, with 95% intervals "
                    "(PPI++, Angelopoulos et al. 2023; Boyeau et al. 2024), beside the judge-only and the "
                    "humans-only estimates.")
    calibrate.add_argument("--study", required=True, metavar="NAME")
    add_db_option(calibrate)
    calibrate.add_argument("--judge", required=True, metavar="NAME", help="the judge whose verdicts are anchored")
    calibrate.add_argument("--reference", required=True, metavar="NAMES",
                           help="the labels: a judge, or a prefix ending in ':' (e.g. human:), or several "
                                "comma-separated: human:,adjudicator: counts imported human votes and the "
                                "decisions made on the Adjudication page (judges adjudicator:<annotator>); each "
                                "vote is a label")
    calibrate.add_argument("--method", choices=("winrate", "bt"), default="winrate",
                           help="win rate (PRD eq. 1, default) or Bradley-Terry on the Elo scale, as peercore rank")
    calibrate.add_argument("--baseline", metavar="MODEL", help="with --method winrate: win rates against this model")
    calibrate.add_argument("--labels", type=_positive_int, metavar="N",
                           help="use a random N of the reference's votes as labels (default: all)")
    calibrate.add_argument("--request", type=_positive_int, metavar="K",
                           help="queue K label requests instead: K of the judge's comparisons the reference has not "
                                "labelled, drawn with probability proportional to the judge's uncertainty mixed "
                                "with uniform (active inference, Zrnic & Candes 2024), for people to decide on the "
                                "Adjudication page; prints them (a comparison already requested is not queued "
                                "twice). Decide them, then run without --request with --reference "
                                "human:,adjudicator: (or adjudicator:) to count the decisions")
    calibrate.add_argument("--seed", type=int, metavar="K",
                           help="with --labels or --request: the seed of the draw (default 0)")
    calibrate.add_argument("--format", choices=("table", "json"), default="table")
    calibrate.set_defaults(handler="peercore.cli.calibrate:calibrate_command")

    audit = commands.add_parser(
        "audit", help="the votes whose removal swaps adjacent models of a leaderboard",
        description="For each pair of models adjacent in the leaderboard peercore rank gives with the same options, "
                    "the votes whose removal swaps them (Huang et al., ICLR 2026): Bradley-Terry by influence (AMIP) "
                    "then exact refits, an upper bound on the fewest; win rates, the exact minimum.")
    audit.add_argument("file", nargs="?", help="judgments: .csv, .jsonl or .parquet in the canonical shape")
    add_study_options(audit)
    audit.add_argument("--method", choices=("bt", "winrate"), default="bt")
    add_selection_options(audit)
    audit.add_argument("--soft", action="store_true", help="count the judges' probabilities p_a as fractional wins")
    audit.add_argument("--prior", type=positive_float, metavar="SD", help="Bradley-Terry: as peercore rank --prior")
    audit.add_argument("--reweight", action="store_true", help="Bradley-Terry: as peercore rank --reweight")
    audit.add_argument("--cap", type=_positive_int, metavar="N",
                       help="most votes removed for one pair (default: no cap)")
    audit.add_argument("--format", choices=("table", "json"), default="table")
    audit.set_defaults(handler="peercore.cli.guarantees:audit_command")

    judges = commands.add_parser(
        "judges", help="evaluator leaderboard: each LLM judge's agreement with humans, biases, stability, cost",
        description="AlpacaEval's annotator leaderboard and more, one row per LLM judge of the study.")
    judges.add_argument("--study", required=True, metavar="NAME")
    add_db_option(judges)
    judges.add_argument("--format", choices=("table", "json"), default="table")
    judges.set_defaults(handler="peercore.cli.guarantees:judges_command")

    escalate = commands.add_parser(
        "escalate", help="run a cascade of judges with a guaranteed agreement with humans; queue the rest for people "
                         "(--dry-run: the plan)",
        description="Trust or Escalate (Jung et al., ICLR 2025): each judge of the cascade keeps the verdicts it "
                    "is confident in, thresholds chosen on human-labelled comparisons so that agreement with the "
                    "human majority on kept verdicts is at least --target-agreement with probability at least "
                    "1 - --risk. A stage is a judge of the study (its verdicts as stored) or a judge spec as "
                    "peercore review takes it (e.g. openai:gpt-4o-mini), which is run: a review, through the cache, "
                    "of the labelled comparisons it has not judged and of what the stages before it did not keep. "
                    "What no stage keeps becomes label requests in the adjudication queue. A re-run pays for "
                    "nothing twice and queues nothing twice. --dry-run prints the plan from the stored verdicts.")
    escalate.add_argument("--study", required=True, metavar="NAME")
    add_db_option(escalate)
    escalate.add_argument("--cascade", action="append", required=True, metavar="JUDGE_OR_SPEC",
                          help="a stage, cheapest first (repeatable): a judge of the study, or a judge spec to run "
                               "(backend:model[?option=value], as peercore review --reviewer)")
    escalate.add_argument("--reference", required=True, metavar="NAME_OR_PREFIX",
                          help="the human labels: a judge, a prefix ending in ':' (human:), or a comma-separated "
                               "list of them (human:,adjudicator: counts decided label requests too)")
    escalate.add_argument("--target-agreement", type=_unit_interval, required=True, metavar="A",
                          help="agreement with the human majority to guarantee on kept verdicts (e.g. 0.85)")
    escalate.add_argument("--risk", type=_unit_interval, required=True, metavar="DELTA",
                          help="tolerated probability that the guarantee fails (e.g. 0.1)")
    escalate.add_argument("--ties", choices=("exclude", "disagree"), default="exclude",
                          help="a human-majority tie: left out of calibration (default) or a disagreement")
    escalate.add_argument("--dry-run", action="store_true",
                          help="print the plan calibrated on the stored verdicts; run nothing, queue nothing")
    escalate.add_argument("--timeout", type=positive_float, metavar="SECONDS",
                          help="seconds per request of the judges run (default: each backend's)")
    escalate.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    escalate.add_argument("--format", choices=("table", "json"), default="table")
    escalate.set_defaults(handler="peercore.cli.guarantees:escalate_command")


def _unit_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def add_data(subparsers) -> None:
    """``import``, ``export`` and ``copy``."""

    imp = subparsers.add_parser(
        "import", help="import a file or folder (canonical, Arena, FastChat, AlpacaEval, PRD, ScaleEval, human votes)",
        description="Import a file or folder into a study. Prints what was added and what was skipped as "
                    "already present. Nothing is written unless the whole input is valid.")
    imp.add_argument("path", help="file (.csv, .jsonl, .json, .parquet) or folder")
    imp.add_argument("--study", metavar="NAME", help="study to import into (created if needed; default: the "
                     "file or folder name)")
    imp.add_argument("--format", choices=FORMATS, default="auto", help="default: detected from the layout and fields")
    imp.add_argument("--order", choices=ORDER_POLICIES, default=None,
                     help="whether model_a is the answer each judge saw first: known, unknown, or auto (known for "
                          "the pairs a judge judged in both orientations); default: what the format records (PRD, "
                          "ScaleEval, Arena, FastChat pairs: known; AlpacaEval: unknown; canonical files: auto, or "
                          "their order_known column)")
    add_db_option(imp)
    imp.set_defaults(handler="peercore.cli.data:_import")

    exp = subparsers.add_parser("export", help="export a study's judgments, leaderboard or audit log",
                                description="Write a study's judgments, leaderboard or audit log (who changed "
                                            "what) as CSV (formula cells neutralised), JSONL or Parquet.")
    exp.add_argument("--study", required=True, metavar="NAME")
    exp.add_argument("--what", choices=(*EXPORT_WHAT, "audit"), required=True)
    exp.add_argument("--format", choices=EXPORT_FORMATS, required=True)
    exp.add_argument("--output", "-o", metavar="FILE", help="file to write (default: standard output)")
    add_db_option(exp)
    exp.add_argument("--judge", action="append", metavar="NAME",
                     help="only this judge (repeatable; a name ending in ':' is a prefix, e.g. human:)")
    exp.add_argument("--method", choices=("winrate", "elo", "bt"), default="bt", help="leaderboard method")
    exp.add_argument("--peer-weights", choices=("none", "prd", "fixed-point"), default="none")
    exp.add_argument("--bootstrap", type=int, default=0, metavar="N")
    exp.add_argument("--seed", type=int, default=0)
    exp.set_defaults(handler="peercore.cli.data:_export")

    copy = subparsers.add_parser(
        "copy", help="copy a whole database (every study, run, cached response, debate and decision) into an empty one",
        description="Copy every study of SOURCE into the empty database TARGET, with its runs, the responses "
                    "they paid for (so resumes stay free), judges, debates and adjudications: a SQLite file into "
                    "the team's PostgreSQL store, or back. All or nothing: a refusal or a failure leaves TARGET "
                    "as it was.")
    copy.add_argument("source", metavar="SOURCE", help="SQLite file or postgresql:// URL to copy from (must exist)")
    copy.add_argument("target", metavar="TARGET", help="SQLite file or postgresql:// URL to copy into (empty)")
    copy.set_defaults(handler="peercore.cli.data:_copy")


def add_runs(subparsers) -> None:
    """Register the job commands on the ``peercore`` parser."""
    answer = subparsers.add_parser("answer", help="generate answers: each contestant answers each question")
    _common(answer)
    answer.add_argument("--contestant", action="append", required=True, metavar="SPEC",
                        help="backend:model answering (repeatable), e.g. local:smollm2-135m")
    answer.add_argument("--question", action="append", metavar="ID", help="only this question (repeatable)")
    answer.add_argument("--temperature", type=float, default=0.0)
    answer.add_argument("--max-tokens", type=_positive_int, default=512)
    answer.add_argument("--system", default=None, metavar="TEXT", help="system prompt (default: a short generic one)")
    answer.set_defaults(handler="peercore.cli.runs:_answer", job_parser=answer)

    review = subparsers.add_parser("review", help="pairwise peer review of the study's answers")
    _common(review)
    review.add_argument("--reviewer", action="append", required=True, metavar="SPEC",
                        help="[NAME=]backend:model[?temperature=T] (repeatable)")
    _pairs(review)
    review.add_argument("--method", choices=("verdict", "logprobs", "logits", "samples", "auto"), default=None,
                        help="how a verdict is read. Default per backend: the label-probability classifier "
                             "(Liusie et al., p_a stored) for local models and OpenAI-compatible servers that "
                             "return log-probabilities; the verdict prompt with its reasoning (PRD) for the "
                             "OpenAI and Anthropic APIs. verdict = the reply's verdict line, logprobs / logits = "
                             "label probabilities, samples = share of K sampled verdicts, auto = the best the "
                             "backend can do")
    review.add_argument("--template", default=None, help="prompt template (default prd_review for verdict, "
                                                         "liusie_classifier_numeric for probabilities)")
    review.add_argument("--criterion", default=None, help="criterion stored with the judgments (and its rubric)")
    review.add_argument("--samples", type=_positive_int, default=1, metavar="K",
                        help="samples per comparison with --method samples")
    review.add_argument("--temperature", type=float, default=None,
                        help="sampling temperature for --method samples (default 1.0); a single verdict is greedy "
                             "unless the reviewer spec sets ?temperature=")
    review.add_argument("--max-tokens", type=_positive_int, default=512)
    _batch_options(review)
    review.set_defaults(handler="peercore.cli.runs:_review", job_parser=review)

    discuss = subparsers.add_parser("discuss", help="PRD peer discussions between two reviewers")
    _common(discuss)
    discuss.add_argument("--reviewer", action="append", required=True, metavar="SPEC",
                         help="exactly two: [NAME=]backend:model")
    _pairs(discuss)
    discuss.add_argument("--turns", type=_non_negative_int, default=4, help="discussion turns after the reviews")
    discuss.add_argument("--one-order", action="store_true", help="only the first reviewer leads (default: both orders)")
    discuss.add_argument("--temperature", type=float, default=0.0)
    discuss.add_argument("--max-tokens", type=_positive_int, default=512)
    discuss.add_argument("--review-template", default="prd_review_discussion", metavar="NAME",
                         help="template of the initial reviews (default prd_review_discussion, PRD Table 8: 1 or 2; "
                              "prd_review is the Vicuna80 prompt with a tie)")
    _batch_options(discuss)
    discuss.set_defaults(handler="peercore.cli.runs:_discuss", job_parser=discuss)

    debate = subparsers.add_parser("debate", help="ScaleEval multi-agent debates; unresolved ones go to adjudication")
    _common(debate)
    debate.add_argument("--agent", action="append", required=True, metavar="SPEC",
                        help="[NAME=]backend:model[?temperature=T&seed=N] (two or more)")
    _pairs(debate)
    debate.add_argument("--criterion", action="append", default=None, metavar="NAME",
                        help="criterion rubric (repeatable; default helpfulness)")
    debate.add_argument("--max-rounds", type=_positive_int, default=3, metavar="D",
                        help="rounds including the initial verdicts (default 3)")
    debate.add_argument("--name", default=None,
                        help="panel name: the consensus judge is debate:<name> (default scaleeval; another "
                             "configuration of an existing panel gets a variant name unless you force one)")
    debate.add_argument("--temperature", type=float, default=0.0)
    debate.add_argument("--max-tokens", type=_positive_int, default=256)
    debate.add_argument("--initial-template", default="scaleeval_initial", metavar="NAME",
                        help="template of the initial verdicts (default scaleeval_initial; "
                             "scaleeval_compact_initial puts the verdict first, for small models)")
    debate.add_argument("--discussion-template", default="scaleeval_discussion", metavar="NAME",
                        help="template of the discussion rounds (default scaleeval_discussion; "
                             "scaleeval_compact_discussion puts the verdict first)")
    _batch_options(debate)
    debate.set_defaults(handler="peercore.cli.runs:_debate", job_parser=debate)

    runs = subparsers.add_parser("runs", help="the study's runs: status, items, and where every paid call ended")
    runs.add_argument("--study", required=True, help="study name in the database")
    add_db_option(runs)
    runs.add_argument("--json", action="store_true", help="print the runs as JSON")
    runs.set_defaults(handler="peercore.cli.runs:_runs")


def _common(parser) -> None:
    parser.add_argument("--study", required=True, help="study name in the database")
    add_db_option(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the estimate of calls, tokens and cost; spend nothing")
    parser.add_argument("--show-prompts", type=_positive_int, default=None, metavar="N",
                        help="print the exact messages of the job's first N calls whose prompt is fixed before the run "
                             "(reviews, a discussion's initial reviews, a debate's initial verdicts; with --json as "
                             "JSON); spend nothing")
    parser.add_argument("--concurrency", type=_positive_int, default=8, help="calls in flight at once (default 8)")
    parser.add_argument("--limit", action="append", default=[], metavar="WHO:rpm=N,tpm=N,concurrency=N",
                        help="rate limits for a provider (openai) or judge (openai:gpt-4o), repeatable")
    parser.add_argument("--max-attempts", type=_positive_int, default=6, help="attempts per call (default 6)")
    parser.add_argument("--timeout", type=float, default=None, metavar="S", help="HTTP timeout per request")
    parser.add_argument("--prices", default=None, metavar="TOML", help="price table overriding the bundled one")
    parser.add_argument("--run-id", default=None, help="resume this run (default: the job's own id)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the estimate or result as JSON")


def _batch_options(parser) -> None:
    parser.add_argument("--batch", action="store_true",
                        help="send the calls through the provider's batch API (OpenAI Batch, Anthropic Message "
                             "Batches; openai: and anthropic: judges only) at the batch price; a debate sends one "
                             "batch per round, a discussion one per turn. Interrupted: run the same command (or "
                             "--run-id) to resume the batches")
    parser.add_argument("--poll-seconds", type=_positive_float, default=30.0, metavar="S",
                        help="with --batch: seconds between two reads of a running batch (default 30)")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def _pairs(parser) -> None:
    parser.add_argument("--contestant", action="append", default=None, metavar="MODEL",
                        help="compare only these contestants' answers (repeatable)")
    parser.add_argument("--question", action="append", default=None, metavar="ID", help="only this question (repeatable)")
    parser.add_argument("--strategy", choices=("all", "random", "no-repeat", "symmetric", "greedy"), default="all",
                        help="comparison selection (Liusie et al. section 3.4); default all ordered pairs (both "
                             "presentation orders). no-repeat and greedy show each pair in one order only, so "
                             "they cannot measure position bias")
    parser.add_argument("--comparisons", type=_positive_int, default=None, metavar="K",
                        help="comparisons per question with a selection strategy")
    parser.add_argument("--budget", type=_positive_int, default=None, metavar="CALLS",
                        help="at most this many calls: sets K when --comparisons is not given; when the job "
                             "needs more, keeps whole questions (chosen at random, seeded) while they fit and "
                             "says what was left out")
    parser.add_argument("--max-questions", type=_positive_int, default=None, metavar="N",
                        help="judge at most N questions, chosen at random (seeded by --seed)")
    parser.add_argument("--seed", type=int, default=0)


def add_adjudicate(subparsers) -> None:
    """``peercore adjudicate``: take the next debate, decide one, or give up a lease, from a terminal."""
    parser = subparsers.add_parser(
        "adjudicate", help="take the next debate to adjudicate (a lease) or store a decision",
        description="Adjudicate a study's unresolved debates from a terminal, with the same leases and overlap as "
                    "the Adjudication page. --next prints the debate you now hold as JSON (one line); --decide "
                    "ID DECISION stores your decision; --release gives your lease back.")
    parser.add_argument("--study", required=True, metavar="NAME")
    parser.add_argument("--annotator", required=True, metavar="NAME", help="your name (decisions are kept under it)")
    add_db_option(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--next", action="store_true", help="take (or renew) a lease on the next debate for you")
    action.add_argument("--decide", nargs=2, metavar=("DEBATE_ID", "DECISION"),
                        help="store your decision: model_a, model_b, tie or both_bad")
    action.add_argument("--release", action="store_true", help="give back the debate you hold")
    parser.add_argument("--note", default="", help="with --decide: why you decided so")
    parser.add_argument("--lease-seconds", metavar="S", default=None,
                        help=f"lease length (default ${ENV_LEASE_SECONDS} or {DEFAULT_LEASE_SECONDS:g})")
    parser.add_argument("--scenario", metavar="NAME", help="with --next: only debates of this scenario")
    parser.add_argument("--criterion", metavar="NAME", help="with --next: only debates of this criterion")
    parser.set_defaults(handler="peercore.cli.adjudicate:_command")


def add_nlg(subparsers) -> None:
    """Register ``peercore nlg`` and its subcommands."""
    nlg = subparsers.add_parser("nlg", help="NLG assessment: candidates ranked per context, scored against humans",
                                description="Comparative assessment vs absolute scoring, per context, against human "
                                            "scores (Liusie et al. 2024; the Product-of-Experts follow-up).")
    commands = nlg.add_subparsers(dest="nlg_command", required=True, parser_class=type(nlg))

    compare = commands.add_parser("compare", help="pairwise comparisons of each context's candidates on an attribute")
    _run_options(compare)
    compare.add_argument("--strategy", choices=("all", "symmetric", "random", "no-repeat", "greedy"), default="all",
                         help="which pairs (default all: every ordered pair, the symmetric set)")
    compare.add_argument("--comparisons", type=_positive_int, default=None, metavar="K",
                         help="comparisons per context with a selection strategy")
    compare.add_argument("--seed", type=int, default=0)
    compare.add_argument("--method", choices=("auto", "logprobs", "logits", "samples", "verdict"), default=None,
                         help="default per backend: the label-probability classifier for local models")
    compare.set_defaults(handler="peercore.cli.nlg:_compare")

    score = commands.add_parser("score", help="absolute scores of each candidate on an attribute (prompt scoring)")
    _run_options(score)
    score.add_argument("--scale", default=None, metavar="LOW-HIGH",
                       help="score scale (default 1-9: single-token scores for the probability reading)")
    score.add_argument("--method", choices=("auto", "logits", "logprobs", "text"), default=None,
                       help="default per backend: expected score over the score tokens for local models, the "
                            "reply's text for the OpenAI and Anthropic APIs")
    score.add_argument("--temperature", type=float, default=None, help="temperature of text replies (default 0)")
    score.set_defaults(handler="peercore.cli.nlg:_score")

    evaluate = commands.add_parser("evaluate", help="per-context correlation with human scores (the papers' table)")
    _nlg_study_options(evaluate)
    evaluate.add_argument("--attribute", required=True)
    evaluate.add_argument("--judge", default=None, help="comparative judge (default: the one with most comparisons "
                                                        "on the attribute)")
    evaluate.add_argument("--criterion", default=None, help="criterion of the judge's verdicts (default: the attribute)")
    evaluate.add_argument("--score-judge", default=None, help="absolute-scoring judge (default: most scores)")
    evaluate.add_argument("--all-contexts", action="store_true",
                          help="each approach on every context it covers (default: the contexts both cover)")
    evaluate.add_argument("--rounds", type=_positive_int, default=2000, help="bootstrap rounds (default 2000)")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--format", choices=("table", "csv", "json"), default="table")
    evaluate.set_defaults(handler="peercore.cli.nlg:_evaluate")

    curves = commands.add_parser("curves", help="Spearman with humans against comparisons per context "
                                                "(random vs greedy, raw vs debiased)")
    _nlg_study_options(curves)
    curves.add_argument("--attribute", required=True)
    curves.add_argument("--judge", default=None)
    curves.add_argument("--criterion", default=None)
    curves.add_argument("--method", action="append", choices=("win_ratio", "bt", "avg_prob", "poe_bt", "poe_gaussian"),
                        default=None, help="scorer (repeatable; default win_ratio, poe_bt, poe_gaussian)")
    curves.add_argument("--repeats", type=_positive_int, default=10)
    curves.add_argument("--seed", type=int, default=0)
    curves.add_argument("--format", choices=("table", "csv", "json"), default="table")
    curves.set_defaults(handler="peercore.cli.nlg:_curves")

    judges = commands.add_parser("judges", help="attributes with human scores, comparative and scoring judges")
    _nlg_study_options(judges)
    judges.add_argument("--json", action="store_true")
    judges.set_defaults(handler="peercore.cli.nlg:_judges")

    export = commands.add_parser("export", help="export human scores (generic table) or judges' absolute scores")
    _nlg_study_options(export)
    export.add_argument("--what", choices=("human", "judge-scores"), default="human")
    export.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv")
    export.add_argument("--output", "-o", default=None, metavar="PATH", help="file to write (default: stdout)")
    export.set_defaults(handler="peercore.cli.nlg:_export")


def _nlg_study_options(parser) -> None:
    parser.add_argument("--study", required=True, help="study name in the database")
    add_db_option(parser)


def _run_options(parser) -> None:
    _nlg_study_options(parser)
    parser.add_argument("--judge", action="append", required=True, metavar="SPEC",
                        help="[NAME=]backend:model[?temperature=T] (repeatable)")
    parser.add_argument("--attribute", required=True, help="the attribute (e.g. coherence)")
    parser.add_argument("--contestant", action="append", default=None, metavar="MODEL",
                        help="only these candidates (repeatable)")
    parser.add_argument("--question", action="append", default=None, metavar="ID", help="only this context (repeatable)")
    parser.add_argument("--dry-run", action="store_true", help="print the estimate; spend nothing")
    parser.add_argument("--concurrency", type=_positive_int, default=8)
    parser.add_argument("--max-attempts", type=_positive_int, default=6)
    parser.add_argument("--max-tokens", type=_positive_int, default=None)
    parser.add_argument("--timeout", type=float, default=None, metavar="S")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the estimate or result as JSON")


def add_dashboard(subparsers) -> None:
    app = subparsers.add_parser("app", help="open the PeerBoard dashboard in the browser (streamlit run app.py)")
    add_db_option(app)
    app.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    app.add_argument("--address", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    app.add_argument("--headless", action="store_true", help="do not open a browser window")
    app.set_defaults(handler="peercore.cli.dashboard:_app")
