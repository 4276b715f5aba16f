"""The seed planner (stats/seed_planning.py): every term scaled by what it estimates, the seed x
example share of the example term included, checked against a simulation from known
components; the claims (seeds_for_margin) and the stats stage (seeds_needed) plan alike."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import seed_planning as sp

Q = 300
SD_SEED, SD_EXAMPLE, SD_RESIDUAL = 0.004, 0.05, 0.3  # residual-heavy, as binary outcomes are


def expected_terms(seeds: int) -> list[cal.Term]:
    """The terms of one [seeds, Q] array with every mean square at its expectation."""
    ms_seed = Q * SD_SEED**2 + SD_RESIDUAL**2
    ms_example = seeds * SD_EXAMPLE**2 + SD_RESIDUAL**2
    return [cal.Term("seeds of x", "seeds", 1 / seeds, ms_seed / Q, seeds - 1, seeds, "x"),
            cal.Term("examples of benchmark 0", "examples", 1 / Q, ms_example / seeds, Q - 1),
            cal.Term("residual of x, benchmark 0", "examples", -1 / (Q * seeds),
                     SD_RESIDUAL**2, (seeds - 1) * (Q - 1), seeds, "x")]


def test_terms_at_n_seeds_are_their_expectations_at_n():
    """Scaled from 3 seeds to n, the terms equal the terms n seeds would give: the seed
    term, the residual term, and the example term, whose residual share shrinks as 3 / n."""
    for n in (2, 5, 30):
        scaled = {t.name: t.coef * t.ms for t in sp.terms_at(expected_terms(3), n)}
        direct = {t.name: t.coef * t.ms for t in expected_terms(n)}
        assert scaled == pytest.approx(direct, rel=1e-12)
        var = SD_SEED**2 / n + SD_EXAMPLE**2 / Q + SD_RESIDUAL**2 / (n * Q)
        assert sum(scaled.values()) == pytest.approx(var, rel=1e-12)


def _half_widths(n: int, trials: int, rng) -> np.ndarray:
    out = []
    for _ in range(trials):
        x = (rng.normal(0, SD_SEED, (n, 1)) + rng.normal(0, SD_EXAMPLE, (1, Q))
             + rng.normal(0, SD_RESIDUAL, (n, Q)))
        r = cal.mean_interval(x)
        out.append((r.ci_high - r.ci_low) / 2)
    return np.array(out)


@pytest.mark.parametrize("target", [0.02, 0.015])
def test_planned_seeds_reach_the_target_half_width(target):
    """Planned from the components at 3 seeds, n seeds reach the target: the median
    half-width of 400 simulated studies with n seeds is at most the target, and one seed
    fewer is within Monte Carlo error of it (the plan wastes at most one seed). Keeping the
    example term at its 3-seed value (the claims' planner before) finds no n at all: its
    example part alone is 1.96 sqrt((3 sd_ex^2 + sd_res^2) / (3 Q)) = 0.0204 wide."""
    n = sp.seeds_for_margin(expected_terms(3), target)
    assert n is not None
    rng = np.random.default_rng(7)
    assert np.median(_half_widths(n, 400, rng)) <= target
    assert np.median(_half_widths(n - 1, 400, rng)) >= 0.95 * target
    fixed_examples = 1.959964 * math.sqrt(expected_terms(3)[1].coef * expected_terms(3)[1].ms)
    assert fixed_examples > 0.02


def test_stats_stage_and_claims_plan_with_the_same_function():
    rng = np.random.default_rng(3)
    x = (rng.normal(0, SD_SEED, (3, 1)) + rng.normal(0, SD_EXAMPLE, (1, Q))
         + rng.normal(0, SD_RESIDUAL, (3, Q)))
    for target in (0.01, 0.02, 0.05):
        plan = sp.seeds_needed(x, half_width=target)
        assert plan["seeds_for_half_width"] == sp.seeds_for_margin(
            cal.mean_interval(x).terms, target)


def test_examples_alone_too_wide_gives_none():
    """The example effects alone (sd_ex^2 / Q) keep the half-width above 1.96 * 0.05 /
    sqrt(300) = 0.0057: no number of seeds reaches 0.005."""
    assert sp.seeds_for_margin(expected_terms(3), 0.005) is None
