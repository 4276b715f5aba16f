"""Small p-values valid at few seeds (stats/tail_calibration.py): its plug-in is calibrated.py's
statistic, the reported p is valid at the levels the claims spend where the plug-in is not,
and the interval is the calibrated test inverted. Fast versions of validation/tail_levels.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import tail_calibration as tc
from workflow_scripts.stats import variance_terms as vt
from workflow_scripts.stats.borrowed_seeds import borrowed_terms
from workflow_scripts.stats.df_rule import merged_seed_df
from workflow_scripts.stats.sequential import look_alphas

LOOK1 = look_alphas([3, 6, 10], 0.025)[0]  # 4.27e-5: the smallest level a default plan spends


def _study(rng, seeds, q, sd_seed=0.05, sd_example=0.2, sd_residual=0.1, benchmarks=1):
    return {f"b{k}": (rng.normal(0, sd_seed, (seeds, 1)) + rng.normal(0, sd_example, (1, q))
                      + rng.normal(0, sd_residual, (seeds, q)))
            for k in range(benchmarks)}


@pytest.mark.parametrize("seeds,benchmarks", [(2, 1), (3, 1), (3, 3), (5, 2), (10, 1)])
def test_the_plug_in_is_calibrated_py_s_statistic(seeds, benchmarks):
    rng = np.random.default_rng(seeds * 10 + benchmarks)
    for sd_seed in (0.0, 0.01, 0.1):
        d = _study(rng, seeds, 40, sd_seed=sd_seed, benchmarks=benchmarks)
        r = cal.compare({k: np.zeros_like(v) for k, v in d.items()}, d)
        red = cal.reduced(r.terms)
        (m, res, _), = cal._seed_arms(r.terms)
        x = sum(t.coef * t.ms for t in r.terms if t.part == "examples" and t.coef > 0)
        var, df = tc.plug_in(m, x, res, red)
        assert float(var) == pytest.approx(r.se**2, rel=1e-12)
        assert float(df) == pytest.approx(r.df, rel=1e-12)


def test_the_plug_in_p_is_too_small_in_the_tail_and_the_reported_one_is_not():
    """Exact, Gaussian: 3 seeds, 200 examples, the worst seed share; the plug-in's rate at
    look 1 is ~56x its level, at alpha / 12 ~3.6x; the reported p's at most the level."""
    red = tc.Reduced(2, 199, 199, 1.0)
    worst = {a: [0.0, 0.0] for a in (0.025, 0.025 / 12, LOOK1)}
    for ratio in (3.0, 10.0, 30.0, 100.0):
        for a in worst:
            plug, rep = tc.exact_rates(a, ratio, red)
            worst[a] = [max(worst[a][0], plug / a), max(worst[a][1], rep / a)]
    assert worst[LOOK1][0] > 40 and worst[0.025 / 12][0] > 3 and worst[0.025][0] > 1.15
    assert all(rep <= 1.03 for _, rep in worst.values()), worst


@pytest.mark.parametrize("k,f", [(1, 99), (3, 29), (4, 199), (9, 199)])
def test_the_reported_p_holds_at_every_level_by_quadrature(k, f):
    red = tc.Reduced(k, f, f, 1.0)
    for ratio in (1.0, 5.0, 20.0, 100.0):
        for a in (0.025, 0.025 / 4, 0.025 / 12, LOOK1):
            _, rep = tc.exact_rates(a, ratio, red)
            assert rep <= 1.05 * a, (ratio, a, rep / a)


def test_three_seeds_cannot_support_a_look_one_level():
    """At 3 seeds no plug-in p is calibrated below look 1's level: the interval at that
    level is unbounded and the p stays above it however large the effect; at 5 seeds it is
    reachable."""
    rng = np.random.default_rng(7)
    d = _study(rng, 3, 200, sd_seed=0.001)["b0"] + 1.0  # an overwhelming effect
    r = cal.compare(np.zeros_like(d), d, ci=1 - 2 * LOOK1)
    assert math.isinf(r.ci_high - r.ci_low) and r.p_value > LOOK1
    assert tc.calibrated_level(LOOK1, cal.reduced(r.terms)) == 0.0
    huge = cal.compare(np.zeros_like(d), d + 1e3)  # a t tail that underflows to 0
    assert huge.p_value >= tc.calibrated_p(1e-12, cal.reduced(huge.terms)) > 1e-4
    d5 = _study(rng, 5, 200, sd_seed=0.001)["b0"] + 1.0
    r5 = cal.compare(np.zeros_like(d5), d5, ci=1 - 2 * LOOK1)
    assert math.isfinite(r5.ci_high) and r5.p_value <= LOOK1


def test_interval_and_p_agree_and_the_price_is_small_where_seeds_do_not_matter():
    rng = np.random.default_rng(11)
    d = _study(rng, 3, 300, sd_seed=0.0)["b0"]
    zeros = np.zeros_like(d)
    r = cal.compare(zeros, d, alternative="greater")
    for thr in (r.ci_low - 1e-9, r.ci_low + 1e-9):  # the interval's end is where p = 2.5%
        p = cal.compare(zeros, d, threshold=thr).p_value
        assert (p <= 0.025) == (thr < r.ci_low), (thr, p)
    plain = special.stdtrit(r.df, 0.975)
    assert 1.0 < (r.ci_high - r.estimate) / (plain * r.se) < 1.06


def test_single_baseline_is_the_paired_statistic_of_the_differences():
    rng = np.random.default_rng(3)
    b = _study(rng, 3, 80)["b0"]
    a = rng.normal(0, 0.2, 80)
    single = cal.compare(a[None, :], b, design="single-baseline")
    paired = cal.compare(np.zeros_like(b), b - a[None, :])
    assert single.p_value == pytest.approx(paired.p_value, rel=1e-12)
    assert (single.ci_low, single.ci_high) == pytest.approx((paired.ci_low, paired.ci_high))


def test_where_it_does_not_apply_the_t_is_plain():
    """Seeds only: exactly Student's t; 20 seeds in every arm: the plain calibrated t (from
    20 seeds it holds at every level, calibrated.PLAIN_FROM_SEED_DF)."""
    rng = np.random.default_rng(5)
    a, b = _study(rng, 3, 50)["b0"], _study(rng, 3, 50)["b0"] + 0.05
    seeds_only = cal.compare(a, b, resample=("seeds",))
    assert cal.reduced(seeds_only.terms) is None
    a20, b20 = _study(rng, 20, 50)["b0"], _study(rng, 20, 50)["b0"] + 0.05
    unpaired = cal.compare(a20, b20, design="unpaired")
    assert cal.reduced(unpaired.terms) is None
    t = (unpaired.estimate) / unpaired.se
    assert unpaired.p_value == pytest.approx(float(stats.t.sf(t, unpaired.df)), rel=1e-12)


def _two_term_results(rng):
    """Unpaired arms of 3v3, 3v10, 2v5 seeds and a one-seed arm with borrowed seed terms."""
    out = []
    for (sa, sb), sd in [((3, 3), 0.05), ((3, 10), 0.02), ((2, 5), 0.05), ((3, 3), 0.0)]:
        a, b = _study(rng, sa, 40, sd_seed=sd)["b0"], _study(rng, sb, 40, sd_seed=sd)["b0"]
        out.append(cal.compare(a, b, design="unpaired"))
    pool = [_study(rng, 3, 40)["b0"] for _ in range(2)]
    one, b = _study(rng, 1, 40)["b0"], _study(rng, 3, 40)["b0"]
    out.append(cal.compare(one, b, design="single-baseline", borrowed=borrowed_terms(pool)))
    return out


def test_two_seed_terms_plug_in_is_calibrated_py_s_and_is_tail_calibrated():
    """Unpaired arms and a borrowed seed term: tc.plug_in_arms is compare's statistic, and
    compare's p is the plug-in calibrated with the smallest seed df (calibrated.reduced)."""
    for r in _two_term_results(np.random.default_rng(8)):
        arms = cal._seed_arms(r.terms)
        assert len(arms) == 2
        ex = [t for t in r.terms if t.part == "examples" and t.coef > 0]
        x = sum(t.coef * t.ms for t in ex)
        red = cal.reduced(r.terms)
        assert red.k == min(d for _, _, d in arms)
        assert red.rho == pytest.approx((x - sum(q for _, q, _ in arms)) / sum(q for _, q, _
                                                                            in arms))
        var, df = tc.plug_in_arms([m for m, _, _ in arms], [q for _, q, _ in arms],
                                  [d for _, _, d in arms], x, red)
        assert float(var) == pytest.approx(r.se**2, rel=1e-12)
        assert float(df) == pytest.approx(r.df, rel=1e-12)
        plain = float(special.stdtr(r.df, -r.estimate / r.se))
        assert r.p_value == pytest.approx(tc.calibrated_p(plain, red), rel=1e-12)


def test_several_seed_terms_merge_by_each_one_s_share():
    """An arm carrying the charge alone keeps its own df; equal charges of 3-seed arms give
    the pooled 4; a 10:1 split 2.2 (Welch 1947 gave 6 and 2.8 there, and the p calibrated
    with the smallest df was above its level: docs/methods.md)."""
    assert merged_seed_df([1.0, 0.0], [2, 2]) == pytest.approx(2.0)
    assert merged_seed_df([1.0, 1.0], [2, 2]) == pytest.approx(4.0)
    assert merged_seed_df([1.0, 0.1], [2, 2]) == pytest.approx(2.2)
    assert merged_seed_df([1.0, 0.1], [2, 2], "welch") == pytest.approx(2.79, abs=0.01)
    assert vt._welch_df([1.0, 0.1], [2, 2]) == pytest.approx(2.79, abs=0.01)


# (the two terms' df and the residual noise each holds, E[M]/r of each, whether the plug-in
# exceeds look 1's level there): the splits where Welch's merge failed (3v3, 4v4), equal seed
# variances (3v10, 3v20), a one-seed arm's seed term borrowed from 1 or 3 other 3-seed arms
# beside a 3-seed arm, at the assumed sd
TWO_TERM_CELLS = [((2, 2), (0.5, 0.5), (139.0, 5.2), True),
                  ((3, 3), (0.5, 0.5), (139.0, 5.2), True),
                  ((2, 9), (10 / 13, 3 / 13), (30.0, 30.0), True),
                  ((2, 19), (20 / 23, 3 / 23), (10.0, 10.0), True),
                  ((2, 2), (0.75, 0.25), (30.0, 30.0), True),
                  ((6, 2), (0.75, 0.25), (30.0, 30.0), False)]


@pytest.mark.parametrize("ks,rs,ratios,excess", TWO_TERM_CELLS)
def test_two_seed_terms_reported_p_holds_by_quadrature(ks, rs, ratios, excess):
    """Exact, Gaussian, 200 examples: the plug-in is several times its level at look 1 (where
    `excess`), the reported p at most its level at every level the claims spend."""
    levels = np.array([0.025, 0.025 / 4, 0.025 / 12, LOOK1])
    red = tc.Reduced(min(ks), 199, 199, 1.0)
    plug, rep = tc.exact_rates_arms(levels, ratios, rs, ks, red)
    assert (plug[-1] > 3 * LOOK1) == excess, plug / levels
    assert np.all(rep <= 1.05 * levels), rep / levels


def test_a_two_seed_arm_lends_no_df_from_the_other_arm():
    """2 vs 5 seeds, the 2-seed arm carrying nearly all the seed variance, 30 examples: with
    the share merge a calm-looking 2-seed arm took the 5-seed arm's df and the reported p was
    1.50x alpha; with the 2-seed arm's 1 df it holds at every level."""
    levels = np.array([0.025, 0.025 / 4, 0.025 / 12, LOOK1])
    red = tc.Reduced(1, 29, 29, 0.1)
    _, rep = tc.exact_rates_arms(levels, (1e5, 5623.4), (5 / 7, 2 / 7), (1, 4), red)
    assert np.all(rep <= 1.05 * levels), rep / levels


def test_unpaired_three_seeds_cannot_support_a_look_one_level():
    rng = np.random.default_rng(9)
    a = _study(rng, 3, 200, sd_seed=0.001)["b0"]
    b = _study(rng, 3, 200, sd_seed=0.001)["b0"] + 1.0  # an overwhelming effect
    r = cal.compare(a, b, design="unpaired", ci=1 - 2 * LOOK1)
    assert math.isinf(r.ci_high - r.ci_low) and r.p_value > LOOK1


def test_simulated_gaussian_seeds_dominate_holds_at_alpha_over_12():
    """A fast simulated cell (validation/tail_levels.py runs 100,000 per cell): 3 seeds, seeds
    carry 80% of V; 20,000 studies; the reported rate within 3 MC se of <= 1.1 x the level."""
    rng = np.random.default_rng(20261204)
    n, s, q, level = 20_000, 3, 30, 0.025 / 12
    d = (math.sqrt(0.8 * s) * rng.normal(0, 1, (n, s, 1))
         + math.sqrt(0.15 * q) * rng.normal(0, 1, (n, 1, q))
         + math.sqrt(0.05 * s * q) * rng.normal(0, 1, (n, s, q)))
    rows, cols = d.mean(axis=2), d.mean(axis=1)
    grand = rows.mean(axis=1)
    resid = d - rows[:, :, None] - cols[:, None, :] + grand[:, None, None]
    m, x = rows.var(axis=1, ddof=1) / s, cols.var(axis=1, ddof=1) / q
    r = np.sum(resid**2, axis=(1, 2)) / ((s - 1) * (q - 1) * q * s)
    var, df = tc.plug_in(m, x, r, tc.Reduced(s - 1, q - 1, q - 1, 1.0))
    p = special.stdtr(df, -grand / np.sqrt(var))
    for i in range(5):  # the vectorised statistic is compare's
        ref = cal.compare(np.zeros_like(d[i]), d[i]).p_value
        red = tc.Reduced(s - 1, q - 1, q - 1, (x[i] - r[i]) / r[i])
        assert tc.calibrated_p(float(p[i]), red) == pytest.approx(ref, rel=1e-9)
    hits_plug = int(np.sum(p <= level))
    hits = sum(tc.calibrated_p(float(p[i]), tc.Reduced(s - 1, q - 1, q - 1,
                                                       (x[i] - r[i]) / r[i])) <= level
               for i in np.flatnonzero(p <= level))
    se = math.sqrt(level / n)
    assert hits_plug / n > 2 * level  # the plug-in's excess is visible at this size
    assert hits / n <= 1.1 * level + 3 * se, (hits / n / level)


def test_tables_shared_through_the_folder_are_the_tabulated_ones(tmp_path, monkeypatch):
    """A table another process left in TABLE_FOLDER_ENV's folder is read, not tabulated again,
    and equals the tabulated one; a cut file is tabulated again and replaced whole; without
    the folder nothing is written."""
    args = (2.0, 57.0, 99.0, 0.25, tc.DEFAULT_RULE)
    fresh = tc._tabulate(*args)
    monkeypatch.setenv(tc.TABLE_FOLDER_ENV, str(tmp_path / "tables"))
    tc._table.cache_clear()
    assert np.array_equal(tc._table(*args), fresh)
    (path,) = (tmp_path / "tables").glob("*.npy")
    assert np.array_equal(np.load(path), fresh)
    tc._table.cache_clear()
    np.save(path, np.full_like(fresh, -1.0))  # read, not tabulated: the file decides
    assert np.array_equal(tc._table(*args), np.full_like(fresh, -1.0))
    tc._table.cache_clear()
    path.write_bytes(path.read_bytes()[:40])  # a cut file
    assert np.array_equal(tc._table(*args), fresh)
    assert np.array_equal(np.load(path), fresh) and not list(path.parent.glob("*.tmp"))
    monkeypatch.delenv(tc.TABLE_FOLDER_ENV)
    tc._table.cache_clear()
    assert np.array_equal(tc._table(2.0, 58.0, 99.0, 0.25, tc.DEFAULT_RULE),
                          tc._tabulate(2.0, 58.0, 99.0, 0.25, tc.DEFAULT_RULE))
    assert len(list((tmp_path / "tables").glob("*.npy"))) == 1
    tc._table.cache_clear()
