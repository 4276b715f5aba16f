"""The calibrated interval at the edges (stats/calibrated.py): binary per-example outcomes with
no seed effect, where the example part of the previous rule nearly cancelled (df 0.24, width
546 on a [0, 1] metric) and the seed term's 2 df were charged with all the residual noise
(1.8x the known-variance width); validation/coverage_edges.py has the full table."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import special

from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import variance_terms as vt
from workflow_scripts.stats.df_rule import DEFAULT_RULE


def _binary_pair(rng, seeds=3, queries=300, seed_sd=0.0):
    lg = special.logit(np.clip(rng.beta(0.6, 1.4, queries), 1e-12, 1 - 1e-12))

    def arm(shift):
        p = special.expit(lg + shift + rng.normal(0, seed_sd, (seeds, 1)))
        return (rng.random((seeds, queries)) < p).astype(float)

    return arm(0.0), arm(0.15)


def test_identical_seed_means_keep_a_sane_interval():
    """Three seeds with the same mean over examples (M = 0) and an example term smaller
    than the residual one: the variance stays at least the rule's floor x the example term,
    the df at least the seed df, the width of the order of the known-variance one."""
    rng = np.random.default_rng(5)
    d = rng.choice([-1.0, 0.0, 1.0], size=(3, 300), p=[0.15, 0.7, 0.15])
    d -= d.mean(axis=1, keepdims=True)  # identical seed means: M = 0
    r = cal.mean_interval(d)
    seed, x = r.terms[0].coef * r.terms[0].ms, r.terms[1].coef * r.terms[1].ms
    resid = -r.terms[2].coef * r.terms[2].ms
    assert seed == pytest.approx(0.0, abs=1e-20) and x < resid  # the previous rule: V ~ 0
    assert r.se**2 >= DEFAULT_RULE.floor * x - 1e-15
    assert r.df >= 2
    assert (r.ci_high - r.ci_low) / 2 <= 2.5 * math.sqrt(x)


def test_binary_outcomes_without_seed_effect():
    """The issue's regime (paired, 3 seeds, 300 examples, p ~ Beta(0.6, 1.4), +0.15 logit):
    no df below 2, no width beyond 6x the median, coverage within [93, 97]% over 1,500
    trials (binomial se 0.56 points) and a median width <= 1.8x the known-variance
    interval's (the previous rule: 1.87x; this one: 1.65x over 5,000 trials, 1.77x here
    with the tail calibration, the price of small p-values valid at 3 seeds)."""
    truth = 0.0213  # E[expit(l + 0.15) - expit(l)], l = logit Beta(0.6, 1.4): 2e6 draws
    rng = np.random.default_rng(2026)
    est, half, dfs = [], [], []
    for _ in range(1500):
        a, b = _binary_pair(rng)
        r = cal.compare(a, b, alternative="two-sided")
        est.append(r.estimate)
        half.append((r.ci_high - r.ci_low) / 2)
        dfs.append(r.df)
    est, half = np.array(est), np.array(half)
    assert min(dfs) >= 2
    assert half.max() <= 6 * np.median(half)
    cover = np.mean(np.abs(est - truth) <= half)
    assert 0.93 <= cover <= 0.97, cover
    known = 1.959964 * est.std()
    assert np.median(half) <= 1.8 * known, np.median(half) / known


def test_seed_dominated_interval_is_the_students_t_of_the_seeds():
    """Seeds carry nearly all of V: the charge is the seed term (the residual is tiny), df
    close to 2 and the interval close to the seeds-only Student t."""
    rng = np.random.default_rng(9)
    x = rng.normal(0, 0.05, (3, 1)) + rng.normal(0, 0.2, (1, 500)) + rng.normal(0, 0.01,
                                                                             (3, 500))
    joint, seeds = cal.mean_interval(x), cal.mean_interval(x, resample=("seeds",))
    assert 2 <= joint.df < 2.5
    assert joint.ci_high - joint.ci_low == pytest.approx(seeds.ci_high - seeds.ci_low,
                                                         rel=0.1)


def test_df_never_below_one_at_two_seeds():
    rng = np.random.default_rng(11)
    for _ in range(200):
        a, b = _binary_pair(rng, seeds=2, queries=50)
        r = cal.compare(a, b, alternative="two-sided")
        assert r.df >= 1 and math.isfinite(r.ci_high - r.ci_low)


def _exact_coverage(seeds: int, a: float, r: float, n: int = 400) -> float:
    """Coverage of the nominal 95% interval for a paired design with many examples and
    variance shares a (seed), r (residual), 1 - a - r (example) of V = 1, integrated over the
    seed mean square M = (a + r) chi2_{S-1} / (S - 1) at n quantiles; the estimate is
    N(0, 1), independent of M, so a given M covers with 2 Phi(h) - 1. The terms' rule
    inputs are calibrated.total_variance's and calibrated_df's, with M as an array: one call of
    the vectorised rule for all n quantiles."""
    from scipy import stats

    from workflow_scripts.stats.df_rule import variance_and_df

    q = 10**6  # examples: the example and residual terms are known
    m = (a + r) * stats.chi2.ppf((np.arange(n) + 0.5) / n, seeds - 1) / (seeds - 1)
    terms = [vt.Term("seeds", "seeds", 1.0, 1.0, seeds - 1, seeds, "x"),
             vt.Term("examples", "examples", 1.0, (1 - a - r) + r, q - 1),
             vt.Term("residual", "examples", -1.0, r, (seeds - 1) * (q - 1), seeds, "x")]
    ms, rs, ks, x, f, cap = cal._rule_inputs(terms)
    assert ms == [1.0]  # the one seed term, replaced by the array of M
    var, df = variance_and_df([m], rs, ks, x, f, cap, DEFAULT_RULE)
    h = special.stdtrit(df, 0.975) * np.sqrt(var)
    return float(100 * np.mean(2 * special.ndtr(h) - 1))


@pytest.mark.parametrize("seeds", [2, 3])
def test_exact_coverage_over_every_variance_share(seeds):
    """The df rule integrated exactly over the seed share and the residual share (0 to 1 by
    0.1): within [93, 97]% everywhere, 2 seeds included (dividing the df by the share, the
    3-seed rule, gives 89.9% at 2 seeds with shares (0.8, 0.2); validation/coverage_edges.py
    --theory has the 0.05 grid)."""
    shares = [(a, r) for a in np.linspace(0, 1, 11) for r in np.linspace(0, 1 - a, 11)
              if a + r > 0 and a + r <= 1 + 1e-12]
    cover = {(round(a, 1), round(r, 1)): _exact_coverage(seeds, a, min(r, 1 - a))
             for a, r in shares}
    worst = min(cover, key=cover.get), max(cover, key=cover.get)
    assert cover[worst[0]] >= 93 and cover[worst[1]] <= 97, {k: cover[k] for k in worst}


def test_two_seed_df_from_the_share():
    """At 2 seeds: t_1 when the seed term is at least 0.3 of V, the normal (capped at the
    example df) at 0.1 and below, df_seed (w1 - w0) / (share - w0) between."""
    def df(m, x):
        return cal.calibrated_df([vt.Term("seeds", "seeds", 1.0, m, 1, 2, "x"),
                                  vt.Term("examples", "examples", 1.0, x, 999)])
    assert df(0.5, 0.5) == 1.0  # share 0.5
    assert df(0.2, 0.8) == pytest.approx(0.2 / 0.1)  # share 0.2
    assert df(0.05, 0.95) == 999  # share 0.05: the example df


WELCH_PLAIN = dataclasses.replace(DEFAULT_RULE, merge="welch")


def _unpaired_coverage(seeds_a: int, seeds_b: int, trials: int, rng) -> tuple[float, float]:
    """Coverage of the 95% interval of two unpaired arms of equal seed variance, seeds
    dominating (seed sd 0.05, noise sd 0.05, 100 queries), true delta 0: compare's, and
    the plain t of the same terms with Welch's merge of the seed df (WELCH_PLAIN)."""
    hit = before = 0
    for _ in range(trials):
        q = rng.normal(0, 0.2, 100)

        def arm(s, q=q):
            return (0.5 + q + rng.normal(0, 0.02, 100) + rng.normal(0, 0.05, (s, 1))
                    + rng.normal(0, 0.05, (s, 100)))

        r = cal.compare(arm(seeds_a), arm(seeds_b), design="unpaired")
        hit += r.ci_low <= 0 <= r.ci_high
        half = cal.t_half_width(cal.total_variance(r.terms, WELCH_PLAIN),
                                cal.calibrated_df(r.terms, WELCH_PLAIN), 0.95)
        before += abs(r.estimate) <= half
    return hit / trials, before / trials


def test_unequal_seed_counts_cover():
    """3 vs 20 seeds: Welch's merge with the plain t let the df grow when the 3-seed arm
    happened to look calm (91% on these draws); the per-arm share rule, tail calibrated,
    keeps the band (docs/methods.md)."""
    now, before = _unpaired_coverage(3, 20, 1500, np.random.default_rng(20))
    assert 0.935 <= now <= 0.97 and before < 0.925, (now, before)
