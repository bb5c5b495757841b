"""PRD (Li, Patel & Du 2023) opinion holding / altering on the released discussion examples.

Data: ``../shared/data/prd_discussion_examples/data.json`` (bcdnlp/PR_LLM_EVAL, 4 LFQA
examples, each discussed by two of GPT-4, Claude and GPT-3.5 in both leader orders:
8 discussions of 4 turns after the two initial reviews; preference 1 / 2 = answer 1 / 2
better). Section 5's rule: a turn's verdict is *held* or *altered* only when the other
reviewer disagrees with the speaker's opinion at that point; a change while both
agreed is counted apart. Fig. 6 splits the counts by leader / follower.

Expected values, by hand from the transcripts' verdicts (leader initial | follower
initial, then turns 1-4 alternating leader, follower; 1 / 2 = the answer preferred):

====  ================  =========  ===========  ======================================
 #    leader-follower   initial    turns        held (H) / altered (A) / after agr. (C)
====  ================  =========  ===========  ======================================
 1    gpt4-claude       1 | 1      1 2 1 1      t2 claude C, t3 gpt4 H, t4 claude A
 2    claude-gpt4       1 | 1      1 1 1 1      -
 3    gpt35-claude      2 | 1      2 1 1 1      t1 gpt35 H, t2 claude H, t3 gpt35 A
 4    claude-gpt35      1 | 2      1 2 1 2      H H H H
 5    gpt4-claude       1 | 2      1 1 1 1      t1 gpt4 H, t2 claude A
 6    claude-gpt4       2 | 1      1 1 2 1      t1 claude A, t3 claude C, t4 gpt4 H
 7    gpt4-gpt35        1 | 2      1 2 1 2      H H H H
 8    gpt35-gpt4        2 | 1      2 2 2 2      t1 gpt35 H, t2 gpt4 A
====  ================  =========  ===========  ======================================

Total 14 held, 5 altered, 2 changes after agreement; the old count (every repeated
verdict held, every change altered) gave 25 held / 7 altered.
"""

from __future__ import annotations

import json

import pytest

from peerboard_testing import require_dataset
from peercore.discussion import (
    discussions_from_prd_examples,
    leader_adoption,
    leader_effect,
    opinion_altering_holding,
    verdict_changes,
)

pytestmark = pytest.mark.golden


@pytest.fixture(scope="module")
def tables():
    folder = require_dataset("prd_discussion_examples")
    return discussions_from_prd_examples(json.loads((folder / "data.json").read_text(encoding="utf-8")))


def test_eight_discussions_of_four_turns(tables):
    debates, turns = tables
    assert len(debates) == 8 and len(turns) == 8 * 6
    assert [m["leader"] for m in debates["metadata"]] == ["gpt4", "claude", "gpt35", "claude",
                                                         "gpt4", "claude", "gpt4", "gpt35"]
    assert turns["verdict"].notna().all()


def test_held_altered_and_changes_after_agreement(tables):
    counts = opinion_altering_holding(*tables)
    totals = counts[["held", "altered", "changed_after_agreement"]].sum().to_dict()
    assert totals == {"held": 14, "altered": 5, "changed_after_agreement": 2}


def test_the_old_count_for_comparison(tables):
    _, turns = tables
    changes = verdict_changes(turns)
    assert ((~changes["altered"]).sum(), changes["altered"].sum()) == (25, 7)


def test_leader_effect_per_model(tables):
    # From the table above: per model, (held, altered) as leader and as follower.
    effect = leader_effect(*tables)
    got = {model: (row["leader_held"], row["leader_altered"], row["follower_held"], row["follower_altered"])
           for model, row in effect.iterrows()}
    assert got == {"gpt4": (4, 0, 1, 1), "claude": (2, 1, 1, 2), "gpt35": (2, 1, 4, 0)}
    assert effect["leader_changed_after_agreement"].to_dict() == {"claude": 1, "gpt35": 0, "gpt4": 0}
    assert effect["follower_changed_after_agreement"].to_dict() == {"claude": 1, "gpt35": 0, "gpt4": 0}
    # Leaders held 8 / altered 2, followers held 6 / altered 3.
    assert effect[["leader_held", "leader_altered", "follower_held", "follower_altered"]].sum().tolist() == [8, 2, 6, 3]


def test_leader_adoption_share(tables):
    # Split at first, agreed at the end: #3 (on the follower's 1), #5 and #8 (on the leader's).
    assert leader_adoption(*tables).to_dict("index") == {
        "gpt35": {"debates": 2, "ended_on_leader_verdict": 1, "share": 0.5},
        "gpt4": {"debates": 1, "ended_on_leader_verdict": 1, "share": 1.0},
    }


def test_the_reading_with_the_initial_reviews_excluded(tables):
    # PRD section 5 / Fig. 6 do not say whether the initial reviews are opinions a turn holds or alters (issue 22,
    # item 5). With them excluded, each reviewer's first turn (t1 leader, t2 follower) states its opinion and only
    # t3 / t4 are classified against the other's latest turn; from the table above:
    #   #1 t3 gpt4 H, t4 claude A;  #3 t3 gpt35 A;  #4 H H;  #6 t3 claude C, t4 gpt4 H;  #7 H H  ->  6 H, 2 A, 1 C.
    debates, turns = tables
    excluded = opinion_altering_holding(debates, turns, initial_reviews="excluded")
    assert excluded[["held", "altered", "changed_after_agreement"]].sum().to_dict() == \
        {"held": 6, "altered": 2, "changed_after_agreement": 1}
    # the default reading is the one every number above uses: the initial reviews as turn 0
    assert opinion_altering_holding(debates, turns, initial_reviews="turn0").equals(opinion_altering_holding(*tables))
    effect = leader_effect(debates, turns, initial_reviews="excluded")
    assert effect[["leader_held", "leader_altered", "follower_held", "follower_altered"]].sum().tolist() == [3, 1, 3, 1]
    with pytest.raises(ValueError, match=r"initial_reviews must be one of \('turn0', 'excluded'\), got 'both'"):
        opinion_altering_holding(debates, turns, initial_reviews="both")
