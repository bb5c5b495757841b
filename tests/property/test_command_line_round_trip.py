"""The Leaderboard page's command line reads back as the page's view (``peercore rank --study``).

The page shows, under its table, the ``peercore rank`` command that computes the same table
(:func:`peercore.cli.analysis.rank_command_line`). Whatever the selection and options, and
whatever the names hold (quotes, ``$(...)``, a leading ``-``, spaces, non-ASCII), the CLI's
own parser must read that command back into the same :class:`Selection` and
:class:`RankOptions`: this is what makes "the same table" true.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from peercore.app.leaderboard import RankOptions
from peercore.cli.analysis import rank_command_line, rank_options
from peercore.cli.common import selection_of
from peercore.cli.parsers import build_parser
from peercore.domain.options import (Control, Intervals, KindChoice, Method, PeerWeights, WeightNormalisation,
                                     WeightsFrom, values)
from peercore.domain.selection import Selection

names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=12)
some = lambda strategy: st.none() | st.lists(strategy, min_size=1, max_size=3, unique=True).map(tuple)  # noqa: E731

selections = st.builds(
    Selection, judges=some(names), kinds=some(st.sampled_from(values(KindChoice))), contestants=some(names),
    categories=some(names), criteria=some(names), turns=some(st.integers(-3, 9)), final_only=st.booleans(),
    repeated_votes=st.sampled_from(["majority", "each"]), common_contestants=st.booleans())

option_fields = st.fixed_dictionaries({
    "method": st.sampled_from(values(Method)), "peer_weights": st.sampled_from(values(PeerWeights)),
    "weights_from": st.sampled_from(values(WeightsFrom)), "bootstrap": st.integers(0, 1000),
    "seed": st.integers(-5, 2**31), "elo_shuffles": st.integers(0, 300), "soft": st.booleans(),
    "weight_normalisation": st.sampled_from(values(WeightNormalisation)), "baseline": st.none() | names,
    "controls": st.lists(st.sampled_from(values(Control)), max_size=2, unique=True).map(tuple),
    "intervals": st.sampled_from(values(Intervals)), "reweight": st.booleans(),
    "prior": st.none() | st.floats(1e-3, 1e4, allow_nan=False), "min_battles": st.integers(0, 100),
    "style_reg": st.none() | st.floats(0, 10, allow_nan=False), "lc_rounds": st.integers(0, 500)})


def _read_back(command: str):
    words = shlex.split(command)
    assert words[:2] == ["peercore", "rank"]
    args = build_parser().parse_args(words[1:])
    return args.study, selection_of(args), rank_options(args)


@settings(max_examples=300, deadline=None)
@given(study=names, selection=selections, fields=option_fields)
def test_the_command_line_reads_back_as_the_view(study, selection, fields):
    try:
        options = RankOptions(**fields)
    except ValueError:  # a combination the page cannot offer either (e.g. a baseline with Bradley-Terry)
        assume(False)
    assert _read_back(rank_command_line(study, selection, options)) == (study, selection, options)


def test_the_defaults_write_no_option():
    assert rank_command_line("prd-vicuna80", Selection(), RankOptions()) == "peercore rank --study prd-vicuna80"


def test_a_hostile_name_stays_one_quoted_word():
    judge = "x'; rm -rf ~ #$(touch /tmp/pwned)"
    command = rank_command_line("-study", Selection(judges=(judge, "--kind")), RankOptions(method="winrate"))
    assert command == ("peercore rank --study=-study --judge 'x'\"'\"'; rm -rf ~ #$(touch /tmp/pwned)' "
                       "--judge=--kind --method winrate")
    assert _read_back(command)[:2] == ("-study", Selection(judges=(judge, "--kind")))


@settings(max_examples=100, deadline=None)
@given(study=names, selection=selections, method=st.sampled_from(["bt", "winrate"]), soft=st.booleans(),
       prior=st.none() | st.floats(1e-3, 1e4, allow_nan=False), reweight=st.booleans())
def test_the_audit_command_reads_back_as_the_audited_view(study, selection, method, soft, prior, reweight):
    # The robustness audit of the page's leaderboard (Huang et al., ICLR 2026): `peercore audit` with its options.
    assume(method == "bt" or (prior is None and not reweight))
    options = RankOptions(method=method, soft=soft, prior=prior, reweight=reweight)
    words = shlex.split(rank_command_line(study, selection, options, command="audit"))
    args = build_parser().parse_args(words[1:])
    assert words[:2] == ["peercore", "audit"] and args.study == study and selection_of(args) == selection
    assert (args.method, args.soft, args.prior, args.reweight) == (method, soft, prior, reweight)


def test_the_audit_command_refuses_what_audit_does_not_take():
    with pytest.raises(ValueError, match="--bootstrap"):
        rank_command_line("s", Selection(), RankOptions(bootstrap=7), command="audit")
