"""The calibrated interval (workflow_scripts/core/calibrated.py): its variance terms against
hand computations, its pivot against a direct Monte Carlo and Student's t, every design, the
tests built on it, and its coverage at 3 seeds in both regimes where the Multi-Bootstrap
fails (bench/coverage.py has the full table)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from workflow_scripts.core import calibrated as cal
from workflow_scripts.core import multibootstrap as mb

# A [3 seeds, 4 examples] matrix small enough to check by hand.
X = np.array([[0.2, 0.5, 0.9, 0.4],
              [0.3, 0.4, 1.0, 0.6],
              [0.1, 0.6, 0.7, 0.2]])


def mean_squares(x: np.ndarray) -> tuple[float, float, float]:
    """Two-way ANOVA mean squares written out as sums, the textbook way."""
    n_s, n_e = x.shape
    g = sum(x[s, e] for s in range(n_s) for e in range(n_e)) / (n_s * n_e)
    row = [sum(x[s]) / n_e for s in range(n_s)]
    col = [sum(x[:, e]) / n_s for e in range(n_e)]
    ms_s = n_e * sum((r - g) ** 2 for r in row) / (n_s - 1)
    ms_e = n_s * sum((c - g) ** 2 for c in col) / (n_e - 1)
    ms_r = sum((x[s, e] - row[s] - col[e] + g) ** 2
               for s in range(n_s) for e in range(n_e)) / ((n_s - 1) * (n_e - 1))
    return ms_s, ms_e, ms_r


def test_variance_is_the_mean_square_combination_by_hand():
    ms_s, ms_e, ms_r = mean_squares(X)
    r = cal.mean_interval(X)
    assert r.estimate == pytest.approx(X.mean())
    var = (ms_s + ms_e - ms_r) / 12  # (MS_seed + MS_example - MS_residual) / (S Q)
    assert r.se == pytest.approx(math.sqrt(var), rel=1e-12)
    terms = [(ms_s / 12, 2), (ms_e / 12, 3), (ms_r / 12, 6)]  # each term / (S Q), with its df
    df = var**2 / sum(v**2 / d for v, d in terms)
    assert r.df == pytest.approx(df, rel=1e-12)
    comp = cal.variance_components(X)
    assert comp["sigma2_residual"] == pytest.approx(ms_r)
    assert comp["sigma2_seed"] == pytest.approx(max(0.0, (ms_s - ms_r) / 4))
    assert comp["sigma2_example"] == pytest.approx(max(0.0, (ms_e - ms_r) / 3))


def test_one_term_is_exactly_students_t():
    """Seeds only: the t interval of the 3 seed means; examples only: of the 4 example
    means. The Latin hypercube of chi2 draws reproduces t to 1e-4 of the half-width."""
    for axis, resample in ((1, ("seeds",)), (0, ("examples",))):
        m = X.mean(axis=axis)
        half = stats.t.ppf(0.975, len(m) - 1) * m.std(ddof=1) / math.sqrt(len(m))
        r = cal.mean_interval(X, resample=resample)
        assert (r.ci_high - r.ci_low) / 2 == pytest.approx(half, rel=1e-4)
        assert r.df == len(m) - 1


def test_pivot_matches_a_direct_monte_carlo():
    """Both parts matter: the half-width h solves P(|Z| sqrt(V) > h) = 5% with
    V = seed part * 2/chi2_2 + max(0, example part * 3/chi2_3 - residual * 6/chi2_6);
    a plain Monte Carlo of that with 2 million draws agrees to 1%."""
    ms_s, ms_e, ms_r = mean_squares(X)
    rng = np.random.default_rng(0)
    n = 2_000_000
    v = (ms_s / 12 * 2 / rng.chisquare(2, n)
         + np.maximum(ms_e / 12 * 3 / rng.chisquare(3, n) - ms_r / 12 * 6 / rng.chisquare(6, n),
                      0))
    pivot = rng.standard_normal(n) * np.sqrt(v)
    r = cal.mean_interval(X)
    assert (r.ci_high - r.ci_low) / 2 == pytest.approx(np.quantile(np.abs(pivot), 0.95), rel=0.01)
    # p-value of H0 mean <= 0.4: P(Z sqrt(V) > estimate - 0.4)
    p = cal.compare(np.zeros_like(X), X, threshold=0.4).p_value
    assert p == pytest.approx(np.mean(pivot > X.mean() - 0.4), abs=0.002)


def test_designs_reduce_to_the_right_terms():
    rng = np.random.default_rng(1)
    a, b = rng.random((3, 40)), rng.random((3, 40))
    # paired = the interval of the mean of b - a
    paired = cal.compare(a, b, design="paired", alternative="two-sided")
    diff = cal.mean_interval(b - a)
    assert (paired.estimate, paired.ci_low, paired.ci_high) == pytest.approx(
        (diff.estimate, diff.ci_low, diff.ci_high))
    # single-baseline: a is one fixed model, so only b's seeds are a seed term
    sb = cal.compare(a[0], b, design="single-baseline")
    assert [t.part for t in sb.terms] == ["seeds", "examples", "examples"]
    assert sb.terms[0].ms == pytest.approx(np.var(b.mean(1), ddof=1))
    assert sb.terms[1].ms == pytest.approx(np.var(b.mean(0) - a[0], ddof=1))
    # unpaired (Welch-Satterthwaite): one seed term per arm, the shared examples once, and
    # each arm's residual removed once
    c = rng.random((5, 40))
    un = cal.compare(a, c, design="unpaired")
    ms = {t.name: t for t in un.terms}
    var = (np.var(a.mean(1), ddof=1) / 3 + np.var(c.mean(1), ddof=1) / 5
           + np.var(c.mean(0) - a.mean(0), ddof=1) / 40
           - mean_squares(a)[2] / 120 - mean_squares(c)[2] / 200)
    assert un.se == pytest.approx(math.sqrt(var))
    assert {t.df for t in ms.values()} == {2, 4, 39, 2 * 39, 4 * 39}
    # stratified: one seed axis for both benchmarks, examples within each
    scores = {"x": a, "y": rng.random((3, 25))}
    st = cal.mean_interval(scores)
    seed_metric = (a.mean(1) + scores["y"].mean(1)) / 2
    var = (np.var(seed_metric, ddof=1) / 3
           + (mean_squares(a)[1] - mean_squares(a)[2]) / (4 * 3 * 40)
           + (mean_squares(scores["y"])[1] - mean_squares(scores["y"])[2]) / (4 * 3 * 25))
    assert st.estimate == pytest.approx((a.mean() + scores["y"].mean()) / 2)
    assert st.se == pytest.approx(math.sqrt(var))
    assert st.benchmarks == ("x", "y")
    # nested runs are averaged within each seed first
    runs = np.stack([a, a + 0.1], axis=1)  # [3 seeds, 2 runs, 40]
    nested = cal.mean_interval(runs)
    plain = cal.mean_interval(a + 0.05)
    assert (nested.ci_low, nested.ci_high) == pytest.approx((plain.ci_low, plain.ci_high))


def test_negative_example_part_is_clipped():
    """No example effect at all: the example part can estimate below 0 and is then 0."""
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (3, 1)) + rng.normal(0, 0.01, (3, 200))
    terms = cal.variance_terms(*_one_arm(x))
    examples = sum(t.coef * t.ms for t in terms if t.part == "examples")
    seeds = sum(t.coef * t.ms for t in terms if t.part == "seeds")
    var, df = cal.satterthwaite(terms)
    assert var == pytest.approx(seeds + max(examples, 0.0))
    if examples <= 0:
        assert df == 2


def _one_arm(x):
    from workflow_scripts.core.bootstrap_engine import Arm

    return [Arm([x], 1.0, 0, "scores")], ("seeds", "examples")


def test_p_values_tost_and_interval_agree():
    rng = np.random.default_rng(4)
    a = rng.random((3, 60))
    for shift in (0.0, 0.02, 0.05, 0.2):
        b = a + shift + rng.normal(0, 0.05, (3, 60)) + rng.normal(0, 0.02, (3, 1))
        r = cal.compare(a, b, alternative="two-sided")
        outside = not r.ci_low <= 0 <= r.ci_high
        assert (r.p_value < 0.05) == outside
        g = cal.compare(a, b, alternative="greater").p_value
        less = cal.compare(a, b, alternative="less").p_value
        assert g + less == pytest.approx(1.0) and r.p_value == pytest.approx(2 * min(g, less))
        eq = cal.equivalence(a, b, epsilon=0.05, alpha=0.05)
        inside = eq.ci_low > -0.05 and eq.ci_high < 0.05  # the 90% interval
        assert eq.equivalent == inside and eq.ci == pytest.approx(0.9)
        assert eq.p_value == max(eq.p_lower, eq.p_upper)


def test_constant_scores_give_a_zero_width_interval():
    x = np.full((3, 10), 0.5)
    r = cal.compare(x, x + 0.1, alternative="greater")
    assert r.ci_low == r.ci_high == pytest.approx(0.1) and r.p_value == 0.0
    assert cal.compare(x, x, alternative="greater").p_value == 1.0


def test_result_depends_on_the_data_only():
    a = np.random.default_rng(5).random((3, 30))
    r1 = cal.compare(a, a[::-1] + 0.01, seeds_a=[1, 2, 3], seeds_b=[3, 2, 1])
    r2 = cal.compare(a, a + 0.01)
    assert (r1.ci_low, r1.ci_high, r1.p_value) == (r2.ci_low, r2.ci_high, r2.p_value)
    assert r1.to_dict()["resample"] == "seeds,examples" and "terms" not in r1.to_dict()


def test_planner_uses_t_quantiles():
    rng = np.random.default_rng(6)
    x = 0.5 + rng.normal(0, 0.02, (3, 1)) + rng.normal(0, 0.2, (1, 400)) + rng.normal(
        0, 0.05, (3, 400))
    plan = cal.seeds_needed(x, half_width=0.03, delta=0.02)
    z_plan = mb.seeds_needed(x, half_width=0.03, delta=0.02)
    comp = cal.variance_components(x)
    v_seed = comp["sigma2_seed"] + comp["sigma2_residual"] / 400
    v_ex = comp["sigma2_example"] / 400

    def half(n):
        var = v_seed / n + v_ex
        df = var**2 / ((v_seed / n) ** 2 / (n - 1) + v_ex**2 / 399)
        return stats.t.ppf(0.975, df) * math.sqrt(var)

    n = plan["seeds_for_half_width"]
    assert half(n) <= 0.03 < half(n - 1)
    assert n >= z_plan["seeds_for_half_width"]  # t quantiles ask for at least as many seeds
    nd = plan["seeds_for_delta"]
    power = [stats.t.ppf(0.975, 2 * (k - 1)) + stats.t.ppf(0.8, 2 * (k - 1)) for k in (nd - 1, nd)]
    assert power[1] * math.sqrt(2 * v_seed / nd) <= 0.02 < power[0] * math.sqrt(
        2 * v_seed / (nd - 1))
    half_now = cal.mean_interval(x)
    assert plan["half_width_now"] == pytest.approx((half_now.ci_high - half_now.ci_low) / 2)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: cal.mean_interval(X, ci=1.0), "ci must be a number in"),
        (lambda: cal.mean_interval(X, resample=("seed",)), "resample must name"),
        (lambda: cal.mean_interval(X[:1]), "1 seed; resampling seeds needs at least 2"),
        (lambda: cal.compare(X, X, alternative="bigger"), "unknown alternative"),
        (lambda: cal.compare(X, X[:, :3]), "same examples"),
        (lambda: cal.compare(X, X, seeds_a=[1, 2, 3], seeds_b=[1, 2, 4]), "same seeds"),
        (lambda: cal.equivalence(X, X, epsilon=0), "epsilon must be a positive"),
        (lambda: cal.seeds_needed(X), "half_width and/or delta"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------------------
# Coverage at 3 seeds: the case every study of this workflow has
# ---------------------------------------------------------------------------------------
def coverage(seed_sd: float, trials: int, rng_seed: int) -> float:
    """Paired difference, 3 seeds x 100 queries: query sd 0.2 (cancels), query x arm
    interaction 0.02, noise 0.05, each arm's own seed effects; truth delta = 0.01."""
    rng = np.random.default_rng(rng_seed)
    hits = 0
    for _ in range(trials):
        q = rng.normal(0, 0.2, 100)
        a = 0.5 + q + rng.normal(0, seed_sd, (3, 1)) + rng.normal(0, 0.05, (3, 100))
        b = (0.51 + q + rng.normal(0, 0.02, 100) + rng.normal(0, seed_sd, (3, 1))
             + rng.normal(0, 0.05, (3, 100)))
        r = cal.compare(a, b, design="paired")
        hits += r.ci_low <= 0.01 <= r.ci_high
    return hits / trials


# 400 trials: the binomial standard error at 95% is 1.1 points, so [92%, 98%] is the
# 99.5% band of a method that truly covers 95% +- 0.5; the Multi-Bootstrap covers ~74%
# (seed sd 0.02) and ~99.5% (seed sd 0) in these regimes and fails it.
@pytest.mark.parametrize(("seed_sd", "regime"), [(0.02, "seed-dominated"), (0.0, "seed-free")])
def test_coverage_at_three_seeds(seed_sd, regime):
    cover = coverage(seed_sd, trials=400, rng_seed=2026)
    assert 0.92 <= cover <= 0.98, (regime, cover)


def test_latin_hypercube_columns_are_independent():
    """Terms with the same df (two arms of 3 seeds) must not share their chi2 draws."""
    first, second = cal._chi2_scale(2, 0), cal._chi2_scale(2, 1)
    assert sorted(first) == pytest.approx(sorted(second))
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.1
    assert list(itertools.islice(first, 3)) == list(itertools.islice(cal._chi2_scale(2, 0), 3))


def test_an_arm_without_seed_variance_has_a_finite_interval():
    """Identical seeds (e.g. a deterministic model): the seed part is 0 and the example part
    carries the interval; identical 0/1 outcomes everywhere give a zero-width one."""
    rng = np.random.default_rng(8)
    row = (rng.random(50) < 0.7).astype(float)
    same = np.tile(row, (3, 1))
    r = cal.mean_interval(same)
    m = row.mean()
    half = stats.t.ppf(0.975, 49) * row.std(ddof=1) / math.sqrt(50)
    assert r.ci_low < m < r.ci_high and (r.ci_high - r.ci_low) / 2 == pytest.approx(half, rel=0.05)
    flat = cal.compare(np.ones((3, 20)), np.ones((3, 20)), alternative="two-sided")
    assert flat.ci_low == flat.ci_high == 0.0 and flat.p_value == 1.0


def test_unpaired_seed_terms_are_drawn_as_one_welch_term():
    """Two arms of 3 seeds with equal seed variance: Welch's df is 4, between one arm's 2 and
    the pooled 4; drawing each arm on its own (Fisher-Behrens) gives a wider interval."""
    a = np.array([[0.1], [0.2], [0.3]]) + np.zeros((3, 30))
    b = a + 0.05
    terms = cal.compare(a, b, design="unpaired", resample=("seeds",)).terms
    merged = cal.welch(terms)
    assert len(merged) == 1 and merged[0].df == pytest.approx(4.0)
    assert merged[0].coef * merged[0].ms == pytest.approx(sum(t.coef * t.ms for t in terms))
    r = cal.compare(a, b, design="unpaired", resample=("seeds",))
    half = stats.t.ppf(0.975, 4) * math.sqrt(2 * np.var([0.1, 0.2, 0.3], ddof=1) / 3)
    assert (r.ci_high - r.ci_low) / 2 == pytest.approx(half, rel=1e-3)
    paired_terms = cal.compare(a, b).terms
    assert cal.welch(paired_terms) == list(paired_terms)  # one seed term: nothing to merge
