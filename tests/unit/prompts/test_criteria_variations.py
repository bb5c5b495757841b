"""1-5 rubrics and ScaleEval's five criteria variations (Chern et al. 2024, Table 5)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from peercore.prompts import VARIATIONS, Rubric, RubricError, criteria_variation, list_rubrics, load_rubric

SIMPLE = Rubric("clarity", "Clarity", {1: "Unclear - The answer is confusing and hard to follow.",
                                       2: "Clear - The answer is easy to follow. It uses plain words."})


def test_shipped_rubrics_have_five_levels():
    assert list_rubrics() == ["creativity", "helpfulness", "interpretability", "reasoning"]
    for name in list_rubrics():
        rubric = load_rubric(name)
        assert list(rubric.levels) == [1, 2, 3, 4, 5]
        assert all(" - " in text for text in rubric.levels.values())
    with pytest.raises(RubricError, match="'fluency'"):
        load_rubric("fluency")


def test_render():
    assert SIMPLE.render().splitlines()[0] == "1: Unclear - The answer is confusing and hard to follow."


def test_general_is_the_rubric_itself():
    assert criteria_variation(SIMPLE, "general", seed=4) is SIMPLE


def test_shortened_drops_the_titles_only_as_scaleeval_does():
    # ScaleEval (Chern et al. 2024) section 8 / Table 5, its released helpfulness-2: the level titles removed,
    # the descriptions kept whole (main cut each level to its first sentence as well).
    short = criteria_variation(SIMPLE, "shortened")
    assert short.levels == {1: "The answer is confusing and hard to follow.",
                            2: "The answer is easy to follow. It uses plain words."}
    assert short.name == "clarity-shortened" and short.title == "Clarity"  # the judge is not told the variation


@pytest.mark.golden
def test_shortened_matches_scaleevals_own_helpfulness_2():
    import json

    from peerboard_testing import require_dataset

    folder = require_dataset("scaleeval")
    criteria: dict[str, dict[int, str]] = {}
    current = None
    for line in (folder / "criteria" / "metaeval_helpfulness.yaml").read_text(encoding="utf-8").splitlines():
        block = re.match(r"^  (helpfulness-\d):\s*$", line)
        level = re.match(r'^    "(\d)": (".*")\s*$', line)
        if block:
            current = criteria.setdefault(block.group(1), {})
        elif level and current is not None:
            current[int(level.group(1))] = json.loads(level.group(2))
    general = Rubric("helpfulness", "Helpfulness", criteria["helpfulness-1"])
    assert criteria_variation(general, "shortened").levels == criteria["helpfulness-2"]


def test_a_variation_is_loaded_by_name():
    varied = load_rubric("helpfulness/gibberish")
    assert varied.levels != load_rubric("helpfulness").levels and varied.title == "Helpfulness"
    assert load_rubric("helpfulness:masked").name == "helpfulness-masked"
    with pytest.raises(RubricError, match="optionally /<variation>"):
        load_rubric("fluency/gibberish")


def test_flipped_reverses_each_word_keeping_punctuation():
    flipped = criteria_variation(SIMPLE, "flipped")
    assert flipped.levels[2] == "raelC - ehT rewsna si ysae ot wollof. tI sesu nialp sdrow."
    assert criteria_variation(flipped, "flipped").levels[2].startswith("Clear - The answer")


def test_shuffled_keeps_every_word_in_another_order():
    for level, text in SIMPLE.levels.items():
        shuffled = criteria_variation(SIMPLE, "shuffled", seed=1).levels[level]
        assert sorted(shuffled.split()) == sorted(text.split())
        assert shuffled != text


@pytest.mark.parametrize(("kind", "symbols"), [("gibberish", set("$#@%&*!/0347")), ("masked", {"_"})])
def test_character_noise_kinds(kind, symbols):
    rubric = load_rubric("helpfulness")
    varied = criteria_variation(rubric, kind, seed=0)
    for level, text in rubric.levels.items():
        noisy = varied.levels[level]
        assert len(noisy) == len(text)
        changed = [(a, b) for a, b in zip(text, noisy) if a != b]
        assert changed and all(a.isalpha() and b in symbols for a, b in changed)
        letters = sum(ch.isalpha() for ch in text)
        assert 0.15 < len(changed) / letters < 0.6


@pytest.mark.parametrize("kind", ["gibberish", "shuffled", "masked"])
def test_seeded_kinds_are_deterministic_and_seed_dependent(kind):
    rubric = load_rubric("creativity")
    assert criteria_variation(rubric, kind, seed=3) == criteria_variation(rubric, kind, seed=3)
    assert criteria_variation(rubric, kind, seed=3).levels != criteria_variation(rubric, kind, seed=4).levels


@pytest.mark.parametrize("kind", VARIATIONS)
def test_level_numbers_survive_every_variation(kind):
    varied = criteria_variation(load_rubric("reasoning"), kind, seed=9)
    assert list(varied.levels) == [1, 2, 3, 4, 5]
    assert [line.split(":")[0] for line in varied.render().splitlines()] == ["1", "2", "3", "4", "5"]


def test_unknown_kind_is_quoted():
    with pytest.raises(ValueError, match="'reversed'"):
        criteria_variation(SIMPLE, "reversed")


def test_from_mapping_accepts_scaleeval_style_keys():
    rubric = Rubric.from_mapping("h", {"2": "two", "1": "one"})
    assert list(rubric.levels.items()) == [(1, "one"), (2, "two")]
    with pytest.raises(RubricError, match="integers"):
        Rubric.from_mapping("h", {"one": "x"})


words = st.lists(st.text(alphabet="abcdefghijklmnop", min_size=1, max_size=8), min_size=1, max_size=12)


@given(words=words, seed=st.integers(0, 10_000), kind=st.sampled_from(VARIATIONS))
def test_variations_are_pure_functions_of_rubric_kind_and_seed(words, seed, kind):
    rubric = Rubric("r", "R", {1: " ".join(words) + ".", 2: "Fixed text here."})
    once = criteria_variation(rubric, kind, seed)
    assert once == criteria_variation(rubric, kind, seed)
    if kind in ("shuffled", "flipped"):
        assert sorted(re.sub(r"\W", "", w) for w in once.levels[1].split()) == sorted(
            re.sub(r"\W", "", w if kind == "shuffled" else w[::-1]) for w in (" ".join(words) + ".").split())
