"""The seed plan's sentence (claims/advice.py): one per case the plan's own quantities
select, each naming the level it was planned at, and decide.py writing it as the note of an
inconclusive member."""

from __future__ import annotations

import math

import pytest

from workflow_scripts.claims import advice
from workflow_scripts.stats.seed_planning import ASSURANCE

NAN = math.nan


def test_settled_by_n_says_the_count_its_level_and_that_it_is_an_average():
    note = advice.seeds_note(7.0, 0.81, 4.0, 0.025)
    assert note.startswith(f"7 seeds per arm would settle it at α = 0.025 in {ASSURANCE:.0%} "
                           "of studies like this one")
    assert "on average over the effects its interval leaves open" in note
    assert "coin flip" not in note and "queries" not in note


def test_a_member_leaning_to_refute_names_holms_level():
    """degradation-concentrated's note said α = 0.025 where it was planned at α/6."""
    note = advice.seeds_note(6.0, 0.83, 4.0, 0.025, members=6)
    assert "at α/6 = 0.00417 in" in note
    assert advice.level_text(0.025) == "α = 0.025"


def test_the_examples_limit_it_points_to_more_queries():
    note = advice.seeds_note(NAN, NAN, NAN, 0.025, members=3)
    assert note.startswith("No number of seeds settles it at α/3 = 0.00833")
    assert "more test queries" in note and "ε" not in note
    assert "a wider ε" in advice.seeds_note(NAN, NAN, NAN, 0.025, test="equivalent")


def test_unreachable_at_the_assurance_gives_the_unlimited_share_and_the_coin_flip():
    note = advice.seeds_note(NAN, 0.72, 5.0, 0.025)
    assert note.startswith(f"No number of seeds settles it at α = 0.025 in {ASSURANCE:.0%} of "
                           "studies like this one (unlimited seeds: 72%; 5 seeds per arm: "
                           "about a coin flip)")
    assert "more test queries" in note


@pytest.mark.parametrize("needed", [advice.LARGE_SEEDS, advice.LARGE_SEEDS + 1, 79])
def test_a_large_count_offers_the_coin_flip_count_and_planned_looks(needed):
    note = advice.seeds_note(float(needed), 0.80, 4.0, 0.025)
    large = needed > advice.LARGE_SEEDS
    assert ("4 seeds per arm are about a coin flip" in note) == large
    assert (f"rather than {needed} at once" in note) == large


def test_one_sentence_each():
    """One sentence a newcomer reads: no full stop inside (the rules' table adds none)."""
    for args in ((7.0, 0.8, 4.0, 0.025), (NAN, NAN, NAN, 0.025), (NAN, 0.7, 5.0, 0.025),
                 (79.0, 0.8, 4.0, 0.025, 3)):
        note = advice.seeds_note(*args)
        assert ". " not in note and not note.endswith(".")
