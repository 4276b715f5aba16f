"""A one-seed arm's seed noise, borrowed from the study's multi-seed arms
(stats/borrowed_seeds.py): the 3-vs-1-seed comparison keeps its coverage where holding the
one seed fixed covered 79-88% (seed sd 0.005-0.02), in the calibrated interval and in the
claims alike."""

from __future__ import annotations

import numpy as np
import pytest

from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats.borrowed_seeds import borrowed_terms, caveat

Q = 300


def _study(rng, seed_sd, others=3):
    """One-seed arm a, 3-seed arm b (true delta 0.01) and `others` 3-seed arms, all with
    the same seed sd, on the same queries."""
    q = rng.normal(0, 0.2, Q)

    def arm(mean, seeds):
        return (mean + q + rng.normal(0, 0.02, Q) + rng.normal(0, seed_sd, (seeds, 1))
                + rng.normal(0, 0.05, (seeds, Q)))

    return arm(0.5, 1), arm(0.51, 3), [arm(0.5, 3) for _ in range(others)]


@pytest.mark.parametrize("seed_sd", [0.0, 0.01, 0.02])
def test_three_vs_one_seed_coverage(seed_sd):
    """1,200 simulated studies per seed sd (binomial se 0.63 points): within [93, 97]%
    (3,000 studies measured 94.3% at sd 0.01 and 94.2% at 0.02); the one seed held fixed
    covers far less where seeds matter."""
    rng = np.random.default_rng(31)
    hits = fixed = 0
    trials = 1200
    for _ in range(trials):
        a, b, rest = _study(rng, seed_sd)
        r = cal.compare(a[0], b, design="single-baseline", alternative="two-sided",
                        borrowed=borrowed_terms([b, *rest]))
        c = cal.compare(a[0], b, design="single-baseline", alternative="two-sided")
        hits += r.ci_low <= 0.01 <= r.ci_high
        fixed += c.ci_low <= 0.01 <= c.ci_high
    assert 0.93 <= hits / trials <= 0.97, hits / trials
    if seed_sd >= 0.01:
        assert fixed / trials < 0.9, fixed / trials


def test_borrowed_terms_pool_the_seed_variance_of_multi_seed_arms():
    rng = np.random.default_rng(2)
    x, y = rng.normal(0, 1, (3, 50)), rng.normal(0, 1, (5, 50))
    seed, resid = borrowed_terms([x, y, rng.normal(0, 1, (1, 50))])  # one-seed arm skipped
    assert seed.df == 2 + 4 and seed.coef == 1.0 and resid.coef == -1.0
    assert seed.ms == pytest.approx((2 * np.var(x.mean(1), ddof=1)
                                     + 4 * np.var(y.mean(1), ddof=1)) / 6)
    assert "6 df" in caveat("r/top1", [seed, resid])
    assert borrowed_terms([rng.normal(0, 1, (1, 50))]) == []
    assert "unknown" in caveat("r/top1", [])
    with pytest.raises(ValueError, match="single-baseline"):
        cal.compare(x, x, design="paired", borrowed=[seed, resid])


def test_claims_borrow_or_say_the_noise_is_unknown():
    """In the claims, a comparison with a one-seed arm gets the borrowed seed term (a wider
    interval than the one seed held fixed); with no arm of 2 seeds the caveat says the seed
    noise is unknown."""
    from test_claims import one_seed_arm_verdicts

    flags = {gap: (v, "fragile: inconclusive with the borrowed seed sd doubled" in
                   table.iloc[1]["caveats"])
             for gap, (v, table) in one_seed_arm_verdicts().items()}
    assert flags[0.2] == ("supported", False)  # far from the threshold: robust
    assert ("supported", True) in flags.values(), flags  # near it: supported, but fragile
    assert all(f is False for v, f in flags.values() if v == "inconclusive")


def test_a_ratio_members_planner_scales_the_borrowed_terms_as_its_test():
    """b - rho * a with a one-seed arm a: the test scales a's borrowed seed terms by rho^2
    (the fixed arm is rho * a), and the seed planner must plan with those same terms, not
    the unscaled ones (which, at rho = 3, understate the seed noise ninefold)."""
    from workflow_scripts.claims import contrast
    from workflow_scripts.stats import seed_planning

    rng = np.random.default_rng(7)
    examples = rng.normal(0.5, 0.2, 200)
    a = (examples + rng.normal(0, 0.01, 200))[None, :]  # b is about 3 a: seeds dominate
    b = 3 * examples + rng.normal(0, 0.05, (3, 1)) + rng.normal(0, 0.01, (3, 200))
    donors = [examples + rng.normal(0, 0.05, (3, 1)) + rng.normal(0, 0.01, (3, 200))]
    borrowed = borrowed_terms(donors)
    c = contrast.Contrast(a, b, "single-baseline", {"borrowed": borrowed},
                          ("seeds", "examples"), [])
    rho, margin = 3.0, 0.05
    tested = contrast.kwargs_at(c, rho)["borrowed"]
    assert [t.coef for t in tested] == pytest.approx([t.coef * rho**2 for t in borrowed])
    terms = cal.compare(*c.sides(rho), design="single-baseline", ci=0.95,
                               resample=c.resample, borrowed=tested).terms
    want = seed_planning.seeds_for_margin(terms, margin, 0.95)
    unscaled = cal.compare(*c.sides(rho), design="single-baseline", ci=0.95,
                                  resample=c.resample, borrowed=borrowed).terms
    assert want is not None and want != seed_planning.seeds_for_margin(unscaled, margin, 0.95)
    plan = contrast.seeds_needed((c, rho, margin, "calibrated"), 0.95)
    assert plan["seeds_at_margin"] == float(max(want, 4))  # more than the 3 seeds now
    assured = seed_planning.seeds_for_assurance(terms, margin, 0.95)
    assert assured.seeds != seed_planning.seeds_for_assurance(unscaled, margin, 0.95).seeds
    assert plan["seeds_needed"] == float(max(assured.seeds, 4))
