"""The calibrated interval (workflow_scripts/stats/calibrated.py): its variance terms, degrees
of freedom and interval against hand computations, Student's t, every design, the tests built
on it, and its coverage at 3 seeds in both regimes where the Multi-Bootstrap fails and in the
one where the plug-in Satterthwaite t fails (validation/coverage.py has the full table)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import multibootstrap as mb
from workflow_scripts.stats import seed_planning, tail_calibration
from workflow_scripts.stats import variance_terms as vt
from workflow_scripts.stats.df_rule import DEFAULT_RULE

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


# A second matrix whose seed effects are large enough that the seed rule sets the df.
Y = np.array([[0.2, 0.5, 0.9, 0.4, 0.6],
              [0.5, 0.7, 1.0, 0.7, 0.8],
              [0.1, 0.4, 0.7, 0.3, 0.4]])


def test_variance_df_and_interval_by_hand():
    """V = (MS_seed + MS_example - MS_residual) / (S Q) (MS_seed is above the floor here);
    df = the seed term's 2 df divided by the share of V its charge MS_seed - kappa
    MS_residual carries, at most Q - 1; the interval is mean +- t_df(1 - l) sqrt(V) and a
    p-value the t tail beyond (mean - threshold)/sqrt(V), both through the tail calibration
    (l = its level for 2.5%: 0.0228 and 0.0225 here, tests/unit/stats/test_tail_calibration.py). The
    mean squares, V and df were worked by hand."""
    expected = {  # MS_seed, MS_example, MS_residual, V, df, ci_low, ci_high
        "X": (0.0308333, 0.2341667, 0.0175, 0.020625, 3.0, 0.016936, 0.966397),
        "Y": (0.1646667, 0.1426667, 0.0021667, 0.0203444, 3.711361, 0.122066, 0.971267)}
    for name, x in (("X", X), ("Y", Y)):
        (n_s, n_e), (ms_s, ms_e, ms_r) = x.shape, mean_squares(x)
        r = cal.mean_interval(x)
        assert r.estimate == pytest.approx(x.mean())
        var = (ms_s + ms_e - ms_r) / (n_s * n_e)
        assert r.se == pytest.approx(math.sqrt(var), rel=1e-12)
        assert ms_s >= DEFAULT_RULE.floor * ms_r
        charge = ms_s - DEFAULT_RULE.kappa * ms_r
        df = min((n_s - 1) * var / (charge / (n_s * n_e)), n_e - 1)
        assert r.df == pytest.approx(df, rel=1e-12)
        red = cal.reduced(r.terms)
        half = stats.t.ppf(1 - tail_calibration.calibrated_level(0.025, red), df) * math.sqrt(var)
        assert (r.ci_low, r.ci_high) == pytest.approx((x.mean() - half, x.mean() + half))
        p = cal.compare(np.zeros_like(x), x, threshold=0.4).p_value
        plain = stats.t.sf((x.mean() - 0.4) / math.sqrt(var), df)
        assert p == pytest.approx(tail_calibration.calibrated_p(plain, red)) and p >= plain
        assert (ms_s, ms_e, ms_r, var, r.df, r.ci_low, r.ci_high) == pytest.approx(
            expected[name], abs=1e-6), name
    # X: 4 examples cap the seed rule's df at 3; Y: the seed charge carries 54% of V, so
    # 2 / 0.5389 = 3.711 df, below its 5 examples' 4.
    comp = vt.variance_components(X)
    ms_s, ms_e, ms_r = mean_squares(X)
    assert comp["sigma2_residual"] == pytest.approx(ms_r)
    assert comp["sigma2_seed"] == pytest.approx(max(0.0, (ms_s - ms_r) / 4))
    assert comp["sigma2_example"] == pytest.approx(max(0.0, (ms_e - ms_r) / 3))


def test_df_divide_by_the_seed_share_once():
    """Satterthwaite's df would divide by the share squared: the calibrated df are never more
    (with hundreds of examples the seed rule sets them), equal when the seed charge carries
    all of V."""
    rng = np.random.default_rng(2)
    for seed_sd in (0.005, 0.02, 0.2):
        x = (0.5 + rng.normal(0, seed_sd, (3, 1)) + rng.normal(0, 0.2, (1, 300))
             + rng.normal(0, 0.05, (3, 300)))
        r = cal.mean_interval(x)
        seed, resid = (r.terms[i].coef * r.terms[i].ms for i in (0, 2))
        # the charge: the seed term less kappa times the residual noise (resid < 0)
        share = (seed + DEFAULT_RULE.kappa * resid) / r.se**2
        assert r.df == pytest.approx(min(2 / share, 299)) and r.df <= 2 / share**2
    seeds_only = cal.mean_interval(X, resample=("seeds",))
    assert seeds_only.df == 2 == vt.satterthwaite(seeds_only.terms)[1]


def test_one_term_is_exactly_students_t():
    """Seeds only: the t interval of the 3 seed means; examples only: of the 4 example
    means. The Latin hypercube of chi2 draws reproduces t to 1e-4 of the half-width."""
    for axis, resample in ((1, ("seeds",)), (0, ("examples",))):
        m = X.mean(axis=axis)
        half = stats.t.ppf(0.975, len(m) - 1) * m.std(ddof=1) / math.sqrt(len(m))
        r = cal.mean_interval(X, resample=resample)
        assert (r.ci_high - r.ci_low) / 2 == pytest.approx(half, rel=1e-4)
        assert r.df == len(m) - 1


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
    terms = vt.variance_terms(*_one_arm(x))
    examples = sum(t.coef * t.ms for t in terms if t.part == "examples")
    seeds = sum(t.coef * t.ms for t in terms if t.part == "seeds")
    var, df = vt.satterthwaite(terms)
    assert var == pytest.approx(seeds + max(examples, 0.0))
    if examples <= 0:
        assert df == 2


def _one_arm(x):
    from workflow_scripts.stats.bootstrap_engine import Arm

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
        # the tail calibration raises the smaller side only; the larger is the plain t's
        assert g + less >= 1.0 - 1e-12 and r.p_value == pytest.approx(min(1, 2 * min(g, less)))
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
    plan = seed_planning.seeds_needed(x, half_width=0.03, delta=0.02)
    z_plan = mb.seeds_needed(x, half_width=0.03, delta=0.02)
    comp = vt.variance_components(x)
    v_seed = comp["sigma2_seed"] + comp["sigma2_residual"] / 400
    v_ex = comp["sigma2_example"] / 400

    def half(n):  # the calibrated t of the two parts at n seeds
        var = v_seed / n + v_ex
        df = max(n - 1, 1 / (v_seed / n / var / (n - 1) + (v_ex / var) ** 2 / 399))
        return stats.t.ppf(0.975, df) * math.sqrt(var)

    n = plan["seeds_for_half_width"]
    assert half(n) <= 0.03 < half(n - 1)
    assert n >= z_plan["seeds_for_half_width"]  # t quantiles ask for at least as many seeds
    # delta needs a second arm (the arm x example interaction): planned by the test's power
    assert plan["seeds_for_delta"] is None
    y = 0.5 + rng.normal(0, 0.02, (3, 1)) + rng.normal(0, 0.05, (3, 400)) + (x.mean(axis=0)
                                                                              - x.mean())
    nd = seed_planning.seeds_needed(x, delta=0.02, versus=y)["seeds_for_delta"]
    pair = cal.compare(x, y, design="unpaired").terms
    assert seed_planning.power_at(pair, 0.02, nd) >= 0.8 > seed_planning.power_at(
        pair, 0.02, nd - 1)
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
        (lambda: seed_planning.seeds_needed(X), "half_width and/or delta"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------------------
# Coverage at 3 seeds: the case every study of this workflow has
# ---------------------------------------------------------------------------------------
def coverage(seed_sd: float, queries: int, trials: int, rng_seed: int) -> tuple[float, float]:
    """Paired difference, 3 seeds, as validation/coverage.py: query sd 0.2 (cancels), each arm
    its own query x arm interaction (sd 0.02), seed effects and noise (sd 0.05); truth delta
    = 0.01. Coverage of the calibrated interval and of the plug-in Satterthwaite t on the
    same terms."""
    rng = np.random.default_rng(rng_seed)
    hits = np.zeros(2)

    def arm(mean, q):
        return (mean + q + rng.normal(0, 0.02, queries) + rng.normal(0, seed_sd, (3, 1))
                + rng.normal(0, 0.05, (3, queries)))

    for _ in range(trials):
        q = rng.normal(0, 0.2, queries)
        a, b = arm(0.5, q), arm(0.51, q)
        r = cal.compare(a, b, design="paired")
        var, df = vt.satterthwaite(r.terms)
        h = stats.t.ppf(0.975, df) * math.sqrt(var)
        hits += (r.ci_low <= 0.01 <= r.ci_high, abs(r.estimate - 0.01) <= h)
    return hits[0] / trials, hits[1] / trials


# 2,000 trials (~1 s each): the binomial standard error at 95% is 0.5 points, so [93%, 97%]
# is 4 standard errors either side. The Multi-Bootstrap covers ~75% (seed-dominated) and
# ~99% (seed-free) here. In the mixed regime, where the seed term carries ~90% of the variance,
# the plug-in Satterthwaite t covers ~92% (validation/coverage.py, 10,000 trials): on the same
# draws the calibrated interval must cover clearly more.
@pytest.mark.parametrize(("seed_sd", "queries", "regime"), [
    (0.02, 100, "seed-dominated"), (0.0, 100, "seed-free"), (0.005, 300, "mixed")])
def test_coverage_at_three_seeds(seed_sd, queries, regime):
    cover, plug_in = coverage(seed_sd, queries, trials=2000, rng_seed=2026)
    assert 0.93 <= cover <= 0.97, (regime, cover)
    if regime == "mixed":
        assert plug_in <= cover - 0.01, (plug_in, cover)


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


def test_unpaired_seed_terms_merge_by_share_and_welch_is_the_reference():
    """Two arms of 3 seeds, equal sample seed variances x: Welch (1947), the reference
    `welch` keeps, gives (2x)^2 / (2 x^2 / 4) - 2 = 6 df; compare merges by each arm's share
    (df_rule.merged_seed_df: 2 / 0.5 = 4, the pooled df); one arm alone keeps its own 2."""
    a = np.array([[0.1], [0.2], [0.3]]) + np.zeros((3, 30))
    b = a + 0.05
    terms = cal.compare(a, b, design="unpaired", resample=("seeds",)).terms
    merged = vt.welch(terms)
    assert len(merged) == 1 and merged[0].df == pytest.approx(6.0)
    assert merged[0].coef * merged[0].ms == pytest.approx(sum(t.coef * t.ms for t in terms))
    r = cal.compare(a, b, design="unpaired", resample=("seeds",))
    half = stats.t.ppf(0.975, 4) * math.sqrt(2 * np.var([0.1, 0.2, 0.3], ddof=1) / 3)
    assert (r.ci_high - r.ci_low) / 2 == pytest.approx(half, rel=1e-12)
    flat = np.full((3, 30), 0.2)  # b's seeds agree: the merged term is a's alone, 2 df
    assert vt.welch(cal.compare(a, flat, design="unpaired",
                                 resample=("seeds",)).terms)[0].df == pytest.approx(2.0)
    paired_terms = cal.compare(a, b).terms
    assert vt.welch(paired_terms) == list(paired_terms)  # one seed term: nothing to merge
