"""Tests of workflow_scripts.stats.multibootstrap against a plain-Python-loop Multi-Bootstrap.

The loop regenerates the index draws from the documented draw order (docs/multibootstrap.md):
children = default_rng(seed).spawn(2 + n_benchmarks); children[0] seeds of arm a (or the only
arm), children[1] seeds of arm b, children[2 + k] examples of benchmark k (sorted keys); each
child spawns one generator per group of GROUP samples (workflow_scripts/stats/bootstrap_engine.py),
which draws integers(0, n, size=(rows in the group, n)).
"""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from workflow_scripts.stats import bootstrap_engine as engine
from workflow_scripts.stats import multibootstrap as mb
from workflow_scripts.stats.variance_terms import arm_example_variance

BOTH, SEEDS, EXAMPLES = ("seeds", "examples"), ("seeds",), ("examples",)
RESAMPLES = [BOTH, SEEDS, EXAMPLES]
NBOOT = 150


# ---------------------------------------------------------------------------------------
# Reference: the paper's definition, one bootstrap sample at a time.
# ---------------------------------------------------------------------------------------
def as_blocks(x):
    """Array or mapping -> list of [seeds, examples] blocks in sorted key order, runs averaged."""
    items = [x[k] for k in sorted(x)] if isinstance(x, dict) else [x]
    return [np.asarray(v).mean(axis=1) if np.ndim(v) == 3 else np.asarray(v) for v in items]


def metric(blocks, seeds, examples):
    """Mean over drawn seeds (with multiplicity) of the seed's mean score on the drawn examples
    (stratified: unweighted mean over benchmarks, each with its own example draw)."""
    per_seed = [
        sum(float(np.mean(blk[s, ex])) for blk, ex in zip(blocks, examples, strict=True))
        / len(blocks)
        for s in seeds
    ]
    return sum(per_seed) / len(per_seed)


def loop_bootstrap(design, a, b, *, nboot, seed, resample, order=None):
    """Plain loop over bootstrap samples. a: blocks of arm a (None for the mean);
    b: blocks of arm b (or the only arm); order: a's seed order as indices into b's seeds."""
    children = np.random.default_rng(seed).spawn(2 + len(b))

    def draw(child, n, axis):
        if axis not in resample:
            return np.tile(np.arange(n), (nboot, 1))  # axis fixed: every unit once
        starts = range(0, nboot, engine.GROUP)
        return np.vstack([gen.integers(0, n, size=(min(engine.GROUP, nboot - g0), n))
                          for gen, g0 in zip(child.spawn(len(starts)), starts, strict=True)])

    ex = [draw(children[2 + k], blk.shape[1], "examples") for k, blk in enumerate(b)]
    out = []
    if design == "mean":
        s0 = draw(children[0], b[0].shape[0], "seeds")
    elif design == "paired":
        s0 = draw(children[0], a[0].shape[0], "seeds")
        b = [blk[order] for blk in b]
    else:
        sb = draw(children[1], b[0].shape[0], "seeds")
        sa = draw(children[0], a[0].shape[0], "seeds") if design == "unpaired" else None
    for i in range(nboot):
        exi = [e[i] for e in ex]
        if design == "mean":
            out.append(metric(b, s0[i], exi))
        elif design == "paired":
            out.append(metric(b, s0[i], exi) - metric(a, s0[i], exi))
        elif design == "unpaired":
            out.append(metric(b, sb[i], exi) - metric(a, sa[i], exi))
        else:  # single-baseline: a's one seed re-scored on every example draw
            out.append(metric(b, sb[i], exi) - metric(a, [0], exi))
    return np.array(out)


def full_metric(blocks):
    return metric(blocks, range(blocks[0].shape[0]), [range(blk.shape[1]) for blk in blocks])


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------
def scores(rng, n_seeds, n_ex, runs=None):
    shape = (n_seeds, n_ex) if runs is None else (n_seeds, runs, n_ex)
    seed_fx = rng.normal(0, 0.1, (n_seeds,) + (1,) * (len(shape) - 1))
    return rng.random(shape) + seed_fx + rng.normal(0, 0.2, n_ex)


def arm_data(kind, n_seeds, rng, baseline=False):
    if baseline:  # one seed, its runs explicit: [1, runs, examples]
        if kind == "stratified":
            return {"nq": scores(rng, 1, 13, runs=3), "fiqa": scores(rng, 1, 21)}
        return scores(rng, 1, 17, runs=3)
    if kind == "stratified":
        return {"nq": scores(rng, n_seeds, 13, runs=2), "fiqa": scores(rng, n_seeds, 21)}
    return scores(rng, n_seeds, 17, runs=3 if kind == "runs" else None)


# ---------------------------------------------------------------------------------------
# Engine == loop, on identical draws
# ---------------------------------------------------------------------------------------
@pytest.fixture(params=["one-block", "many-blocks"])
def threads(request, monkeypatch):
    """Run each equality test twice: one group of 250 samples in one block on the default
    threads, and groups of 7 samples in blocks of 3, 3 and 1 rows on two threads (row offsets,
    block and group edges, a partial last group and more groups than threads all exercised).
    The value is the `threads` argument to pass."""
    if request.param == "one-block":
        return None
    monkeypatch.setattr(engine, "GROUP", 7)
    monkeypatch.setattr(engine, "BLOCK_BYTES", 8 * 21 * 3)
    monkeypatch.setattr(engine, "_THREAD_MIN_DRAWS", 0)
    return 2


@pytest.mark.parametrize("resample", RESAMPLES)
@pytest.mark.parametrize("kind", ["plain", "runs", "stratified"])
def test_bootstrap_mean_matches_loop(kind, resample, threads):
    x = arm_data(kind, 5, np.random.default_rng(1))
    res = mb.bootstrap_mean(x, nboot=NBOOT, seed=7, resample=resample, threads=threads)
    ref = loop_bootstrap("mean", None, as_blocks(x), nboot=NBOOT, seed=7, resample=resample)
    np.testing.assert_allclose(res.samples, ref, rtol=0, atol=1e-12)
    assert res.estimate == pytest.approx(full_metric(as_blocks(x)), abs=1e-12)
    assert res.resample == resample and res.p_value is None and res.design == "mean"


def compare_data(kind, design):
    """Arms a and b for `design`, the seed ids paired arms pass, and a's seed order in b."""
    rng = np.random.default_rng(2)
    a = arm_data(kind, 5, rng, baseline=design == "single-baseline")
    b = arm_data(kind, 4 if design == "unpaired" else 5, rng)
    if design != "paired":
        return a, b, {}, None
    kw = {"seeds_a": [10, 11, 12, 13, 14], "seeds_b": [12, 14, 10, 11, 13]}  # b in another order
    return a, b, kw, [kw["seeds_b"].index(s) for s in kw["seeds_a"]]


@pytest.mark.parametrize("resample", RESAMPLES)
@pytest.mark.parametrize("design", mb.DESIGNS)
@pytest.mark.parametrize("kind", ["runs", "stratified"])
def test_compare_matches_loop(kind, design, resample, threads):
    a, b, kw, order = compare_data(kind, design)
    res = mb.compare(a, b, design=design, nboot=NBOOT, seed=3, resample=resample,
                     threads=threads, **kw)
    blocks_a = as_blocks(a)
    if design == "single-baseline":  # [runs, examples] -> one seed
        blocks_a = [np.asarray(v).reshape(-1, v.shape[-1]).mean(axis=0, keepdims=True)
                    for v in ([a[k] for k in sorted(a)] if isinstance(a, dict) else [a])]
    ref = loop_bootstrap(design, blocks_a, as_blocks(b), nboot=NBOOT, seed=3,
                         resample=resample, order=order)
    np.testing.assert_allclose(res.samples, ref, rtol=0, atol=1e-12)
    want = full_metric(as_blocks(b)) - full_metric(blocks_a)
    assert res.estimate == pytest.approx(want, abs=1e-12)
    assert res.benchmarks == (("fiqa", "nq") if kind == "stratified" else None)


def test_result_does_not_depend_on_block_size(monkeypatch):
    rng = np.random.default_rng(4)
    a, b = arm_data("stratified", 5, rng), arm_data("stratified", 6, rng)
    monkeypatch.setattr(engine, "GROUP", 64)
    whole = mb.compare(a, b, design="unpaired", nboot=NBOOT, seed=5).samples  # 1 block/group
    n = max(blk.shape[1] for blk in a.values())
    monkeypatch.setattr(engine, "BLOCK_BYTES", 8 * n * 5)
    assert engine.block_rows(n) == 5
    assert [len(blocks) for blocks in engine.plan(NBOOT, 5)] == [13, 13, 5]  # 64, 64, 22 rows
    blocked = mb.compare(a, b, design="unpaired", nboot=NBOOT, seed=5).samples
    np.testing.assert_allclose(blocked, whole, rtol=0, atol=1e-13)
    ref = loop_bootstrap("unpaired", as_blocks(a), as_blocks(b), nboot=NBOOT, seed=5,
                         resample=("seeds", "examples"), order=sorted(a))
    np.testing.assert_allclose(whole, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("design", ("mean",) + mb.DESIGNS)
def test_threads_give_identical_results(design, monkeypatch):
    """Each group has its own generators and its own rows of the output, so the samples are
    the same bits on 1, 2 and 3 threads (groups of 7 in blocks of 3: 22 groups)."""
    monkeypatch.setattr(engine, "GROUP", 7)
    monkeypatch.setattr(engine, "BLOCK_BYTES", 8 * 21 * 3)
    monkeypatch.setattr(engine, "_THREAD_MIN_DRAWS", 0)
    a, b, kw, _ = compare_data("stratified", design if design != "mean" else "paired")
    for resample in RESAMPLES:
        runs = [mb.bootstrap_mean(b, nboot=NBOOT, seed=9, resample=resample, threads=t)
                if design == "mean" else
                mb.compare(a, b, design=design, nboot=NBOOT, seed=9, resample=resample,
                           threads=t, **kw) for t in (1, 2, 3)]
        for res in runs[1:]:
            assert np.array_equal(res.samples, runs[0].samples) and res == runs[0]


def test_threads_give_identical_results_at_default_sizes():
    """Above _THREAD_MIN_DRAWS with the real GROUP and block size (3 groups)."""
    x = scores(np.random.default_rng(12), 4, 2_500)
    assert engine._THREAD_MIN_DRAWS < 600 * (2_500 + 4)
    runs = [mb.bootstrap_mean(x, nboot=600, seed=4, threads=t).samples for t in (1, 2, 3, None)]
    for samples in runs[1:]:
        assert np.array_equal(samples, runs[0])


def test_threads_reach_the_engine(monkeypatch):
    """Every public function that runs the engine passes `threads` on; None means the CPUs
    this process may use (capped at the number of groups)."""
    workers = []

    class Pool(engine.ThreadPoolExecutor):
        def __init__(self, max_workers):
            workers.append(max_workers)
            super().__init__(max_workers=max_workers)

    monkeypatch.setattr(engine, "ThreadPoolExecutor", Pool)
    monkeypatch.setattr(engine, "GROUP", 7)
    monkeypatch.setattr(engine, "_THREAD_MIN_DRAWS", 0)
    monkeypatch.setattr(engine, "usable_cpus", lambda: 5)
    x = scores(np.random.default_rng(3), 4, 30)
    mb.bootstrap_mean(x, nboot=NBOOT, seed=1, threads=3)
    mb.compare(x, x + 0.1, nboot=NBOOT, seed=1, threads=3)
    mb.equivalence(x, x, epsilon=0.1, nboot=NBOOT, seed=1, threads=3)
    mb.variance_parts(x, nboot=NBOOT, seed=1, threads=3)
    assert workers == [3] * 6
    mb.bootstrap_mean(x, nboot=NBOOT, seed=1)
    mb.bootstrap_mean(x, nboot=NBOOT, seed=1, threads=1)  # one thread: no pool
    mb.bootstrap_mean(x, nboot=100, seed=1, threads=np.int64(40))  # 15 groups
    assert workers == [3] * 6 + [5, 15]


def test_default_threads_are_the_usable_cpus(monkeypatch):
    if hasattr(os, "sched_getaffinity"):
        assert engine.usable_cpus() == len(os.sched_getaffinity(0))
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    assert engine.usable_cpus() == (os.cpu_count() or 1)


def test_draws_continue_the_stream_and_add_offsets():
    """A group's rows drawn block by block are its rows drawn at once (also over odd counts of
    32-bit values, where numpy keeps a raw output's high half for the next call)."""
    ref = np.random.default_rng(3).integers(0, 7, size=(5, 7))
    gen = np.random.default_rng(3)
    first = engine.draw(gen, 7, 1)
    offsets = np.arange(4)[:, None] * 7
    rest = engine.draw(gen, 7, 4, offsets)
    np.testing.assert_array_equal(np.vstack([first, rest - offsets]), ref)


def test_fewer_samples_are_a_prefix_of_more():
    x = scores(np.random.default_rng(8), 4, 30)
    few = mb.bootstrap_mean(x, nboot=100, seed=3).samples
    many = mb.bootstrap_mean(x, nboot=1000, seed=3).samples
    np.testing.assert_allclose(many[:100], few, rtol=0, atol=1e-13)


def test_same_result_without_threadpoolctl(monkeypatch):
    """threadpoolctl is optional: without it BLAS keeps its threads and the numbers stay."""
    x = scores(np.random.default_rng(6), 4, 30)
    with_ctl = mb.bootstrap_mean(x, nboot=300, seed=2).samples
    monkeypatch.setattr(engine, "_blas_controller", lambda: None)
    np.testing.assert_allclose(mb.bootstrap_mean(x, nboot=300, seed=2).samples, with_ctl,
                               rtol=0, atol=1e-13)


def test_reproducible_from_seed_alone():
    x = scores(np.random.default_rng(0), 4, 30)
    r1, r2 = (mb.bootstrap_mean(x, nboot=200, seed=11) for _ in range(2))
    assert np.array_equal(r1.samples, r2.samples) and r1 == r2
    assert not np.array_equal(r1.samples, mb.bootstrap_mean(x, nboot=200, seed=12).samples)


# ---------------------------------------------------------------------------------------
# p-values, intervals, BCa
# ---------------------------------------------------------------------------------------
def test_p_values_and_percentile_interval():
    rng = np.random.default_rng(5)
    a = scores(rng, 5, 40)
    b = a + 0.02 + rng.normal(0, 0.05, a.shape)
    for alt in mb.ALTERNATIVES:
        res = mb.compare(a, b, threshold=0.01, alternative=alt, nboot=400, seed=1, ci=0.9)
        s = res.samples
        greater = max(np.mean(s <= 0.01), 1 / 400)
        less = max(np.mean(s >= 0.01), 1 / 400)
        want = {"greater": greater, "less": less, "two-sided": min(1, 2 * min(greater, less))}
        assert res.p_value == pytest.approx(want[alt])
        want_ci = np.quantile(s, [0.05, 0.95], method="linear")
        np.testing.assert_allclose([res.ci_low, res.ci_high], want_ci, rtol=1e-12)
    far = mb.compare(a, a + 1.0, nboot=400, seed=1)
    assert far.p_value == 1 / 400  # floored, never 0


def brute_acceleration(design, a, b, resample):
    """Leave each resampled unit out for real and apply Efron's jackknife formula."""
    def est(xa, xb):
        return full_metric(xb) - full_metric(xa)

    groups = []  # jackknife estimates per resampled group of units
    if "seeds" in resample:
        arms = [("b", b)] if design == "single-baseline" else [("a", a), ("b", b)]
        if design == "paired":
            groups.append([est([np.delete(x, s, 0) for x in a], [np.delete(x, s, 0) for x in b])
                           for s in range(a[0].shape[0])])
            arms = []
        for name, blocks in arms:
            loo = [[np.delete(x, s, 0) for x in blocks] for s in range(blocks[0].shape[0])]
            groups.append([est(d, b) if name == "a" else est(a, d) for d in loo])
    if "examples" in resample:
        for k in range(len(b)):
            def drop(blocks, e, k=k):
                return [np.delete(x, e, 1) if j == k else x for j, x in enumerate(blocks)]
            groups.append([est(drop(a, e), drop(b, e)) for e in range(b[k].shape[1])])
    d = np.concatenate([np.mean(g) - np.array(g) for g in groups])
    return np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)


@pytest.mark.parametrize("design", mb.DESIGNS)
def test_bca_matches_formula_with_brute_force_jackknife(design):
    rng = np.random.default_rng(6)
    a = {"nq": rng.exponential(1, (1 if design == "single-baseline" else 5, 15)),
         "fiqa": rng.exponential(1, (1 if design == "single-baseline" else 5, 9))}
    b = {"nq": rng.exponential(1.5, (5, 15)) ** 2, "fiqa": rng.exponential(1, (5, 9)) ** 2}
    for resample in RESAMPLES:
        res = mb.compare(a, b, design=design, nboot=300, seed=2, method="bca", resample=resample)
        accel = brute_acceleration(design, as_blocks(a), as_blocks(b), resample)
        z0 = stats.norm.ppf(np.mean(res.samples < res.estimate))
        z = stats.norm.ppf([0.025, 0.975])
        probs = stats.norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
        want = np.quantile(res.samples, probs, method="linear")
        np.testing.assert_allclose([res.ci_low, res.ci_high], want, rtol=1e-10)
        assert res.method == "bca" and accel != 0


# ---------------------------------------------------------------------------------------
# Coverage with known truth
# ---------------------------------------------------------------------------------------
def test_coverage_of_joint_interval_and_undercoverage_of_single_axes():
    """score[s, e] = mu + seed[s] + example[e] + noise; truth is mu (random seeds and examples).

    Both effects matter (sd of the mean from seeds 0.019, from examples 0.021): the joint 95%
    interval covers mu 93-97% of 500 trials; seed-only and example-only ones under-cover (the
    first 250 trials show it well enough).
    """
    n_seeds, n_ex, trials, mu = 10, 200, 500, 0.5
    rng = np.random.default_rng(2024)
    hits = {axes: 0 for axes in RESAMPLES}
    for t in range(trials):
        x = (mu + rng.normal(0, 0.06, (n_seeds, 1)) + rng.normal(0, 0.3, (1, n_ex))
             + rng.normal(0, 0.35, (n_seeds, n_ex)))
        for axes in RESAMPLES if t < trials // 2 else [BOTH]:
            r = mb.bootstrap_mean(x, nboot=500, seed=t, resample=axes)
            hits[axes] += r.ci_low <= mu <= r.ci_high
    cover = {BOTH: hits[BOTH] / trials, **{a: hits[a] / (trials // 2) for a in (SEEDS, EXAMPLES)}}
    assert 0.93 <= cover[BOTH] <= 0.97, cover
    assert cover[SEEDS] < 0.85 and cover[EXAMPLES] < 0.90, cover


# ---------------------------------------------------------------------------------------
# Equivalence, variance parts, planner, agreement
# ---------------------------------------------------------------------------------------
def test_equivalence_tost():
    rng = np.random.default_rng(8)
    a = scores(rng, 6, 80)
    near = mb.equivalence(a, a + 0.002, epsilon=0.05, nboot=400, seed=1)
    assert near.equivalent and near.p_value == near.p_lower == near.p_upper == 1 / 400
    far = mb.equivalence(a, a + 0.05 + rng.normal(0, 0.1, a.shape), epsilon=0.05, nboot=400,
                         seed=1, alpha=0.1)
    s = far.samples
    assert far.p_lower == max(np.mean(s <= -0.05), 1 / 400)
    assert far.p_upper == max(np.mean(s >= 0.05), 1 / 400)
    assert far.p_value == max(far.p_lower, far.p_upper) and not far.equivalent
    assert far.ci == pytest.approx(0.8)
    want_ci = np.quantile(s, [0.1, 0.9], method="linear")
    np.testing.assert_allclose([far.ci_low, far.ci_high], want_ci, rtol=1e-12)
    same = mb.compare(a, a + 0.002, nboot=400, seed=1)
    assert np.array_equal(same.samples, near.samples)


def test_variance_parts():
    rng = np.random.default_rng(9)
    seedy = 0.5 + rng.normal(0, 0.3, (8, 1)) + rng.normal(0, 0.01, (8, 300))
    exy = 0.5 + rng.normal(0, 0.3, (1, 300)) + rng.normal(0, 0.01, (8, 300))
    rows = mb.variance_parts({"seedy": seedy, "exy": exy}, nboot=300, seed=1)
    by = {r["group"]: r for r in rows}
    assert [r["group"] for r in rows] == ["exy", "seedy", "all"]
    assert by["seedy"]["share_seeds"] > 0.9 and by["seedy"]["share_examples"] < 0.1
    assert by["exy"]["share_examples"] > 0.9 and by["exy"]["share_seeds"] < 0.1
    joint = mb.bootstrap_mean(seedy, nboot=300, seed=1).samples
    assert by["seedy"]["var_joint"] == pytest.approx(np.var(joint, ddof=1))
    r = by["seedy"]
    assert r["share_interaction"] == pytest.approx(1 - r["share_seeds"] - r["share_examples"])


def test_seeds_needed_recovers_components_and_applies_formula():
    rng = np.random.default_rng(10)
    n_s, n_e = 40, 1500
    examples = rng.normal(0, 0.5, (1, n_e))
    x = rng.normal(0, 0.2, (n_s, 1)) + examples + rng.normal(0, 0.3, (n_s, n_e))
    out = mb.seeds_needed(x, half_width=0.05, delta=0.05)
    assert out["sigma2_seed"] == pytest.approx(0.04, rel=0.5)
    assert out["sigma2_example"] == pytest.approx(0.25, rel=0.15)
    assert out["sigma2_residual"] == pytest.approx(0.09, rel=0.05)
    v_seed = out["sigma2_seed"] + out["sigma2_residual"] / n_e
    v_ex = out["sigma2_example"] / n_e
    z = stats.norm.ppf(0.975)
    assert out["seeds_for_half_width"] == max(2, math.ceil(v_seed / ((0.05 / z) ** 2 - v_ex)))
    assert out["seeds_for_delta"] is None  # one arm cannot show the arm x example term
    y = (rng.normal(0, 0.2, (n_s, 1)) + examples + rng.normal(0, 0.1, (1, n_e))  # interaction
         + rng.normal(0, 0.3, (n_s, n_e)))
    pair = mb.seeds_needed(x, delta=0.05, versus=y)
    v_pair = v_seed + sum(mb.seeds_needed(y, half_width=1.0)[k] / d for k, d in
                          (("sigma2_seed", 1), ("sigma2_residual", n_e)))
    v_int = arm_example_variance(x, y) / n_e
    assert pair["arm_example_sd"] == pytest.approx(0.1, rel=0.1)
    z2 = (z + stats.norm.ppf(0.8)) ** 2
    assert pair["seeds_for_delta"] == max(2, math.ceil(v_pair * z2 / (0.05**2 - z2 * v_int)))
    # the planner's current half-width agrees with the bootstrap's
    boot = mb.bootstrap_mean(x, nboot=1000, seed=1)
    assert out["half_width_now"] == pytest.approx((boot.ci_high - boot.ci_low) / 2, rel=0.2)
    # example variance alone exceeds a tiny target: no number of seeds reaches it
    assert mb.seeds_needed(x, half_width=0.01)["seeds_for_half_width"] is None


def test_instance_agreement():
    x = np.array([[1.0, 0.5, 0.0, 1.0], [1.0, 0.2, 0.3, 0.0], [0.9, 0.1, 0.0, 1.0]])
    rows = mb.instance_agreement(x, outcome_threshold=1.0, seeds=["s0", "s1", "s2"])
    assert [(r["seed_a"], r["seed_b"]) for r in rows] == [("s0", "s1"), ("s0", "s2"),
                                                          ("s1", "s2")]
    assert [r["agreement"] for r in rows] == [0.75, 0.75, 0.5]
    assert rows[0]["spearman"] == pytest.approx(stats.spearmanr(x[0], x[1]).statistic)
    bools = mb.instance_agreement(x >= 1.0)
    assert [r["agreement"] for r in bools] == [0.75, 0.75, 0.5]
    assert mb.instance_agreement(x)[0]["agreement"] is None


# ---------------------------------------------------------------------------------------
# Result object and module hygiene
# ---------------------------------------------------------------------------------------
def test_result_to_dict_and_frozen():
    x = scores(np.random.default_rng(0), 3, 10)
    res = mb.compare(x, x + 0.1, nboot=100, seed=0, design="unpaired")
    row = res.to_dict()
    assert "samples" not in row and row["resample"] == "seeds,examples"
    assert row["design"] == "unpaired" and row["p_value"] == res.p_value and row["nboot"] == 100
    assert res.samples.shape == (100,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.estimate = 0.0
    eq = mb.equivalence(x, x, epsilon=0.1, nboot=100, seed=0).to_dict()
    assert {"epsilon", "alpha", "p_lower", "p_upper", "equivalent"} <= set(eq)


def test_public_names():
    assert set(mb.__all__) <= set(dir(mb)) and mb.GROUP == engine.GROUP == 250
    assert {"bootstrap_mean", "compare", "equivalence", "variance_parts",
            "seeds_needed", "instance_agreement"} <= set(mb.__all__)


def test_imports_only_numpy_and_scipy():
    code = ("import sys, workflow_scripts.stats.multibootstrap; "
            "print([m for m in ('torch', 'snakemake', 'pandas') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------
# Bad input: a ValueError that says what is wrong
# ---------------------------------------------------------------------------------------
_X = np.arange(20.0).reshape(4, 5) / 20
_NAN = _X.copy()
_NAN[1, 2] = np.nan


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: mb.bootstrap_mean(_NAN, nboot=100, seed=0), r"contains NaN.*\(1, 2\)"),
        (lambda: mb.compare(_X, _NAN, nboot=100, seed=0), r"b contains NaN"),
        (lambda: mb.bootstrap_mean(np.where(_X > 0.5, np.inf, _X), nboot=100, seed=0),
         "infinite"),
        (lambda: mb.compare(_X, _X[:, :4], nboot=100, seed=0),
         "same examples.*a has 5 examples, b has 4"),
        (lambda: mb.compare(_X, _X, nboot=100, seed=0, seeds_b=[0, 1, 2, 7]),
         r"same seeds.*a has \[0, 1, 2, 3\], b has \[0, 1, 2, 7\]"),
        (lambda: mb.compare(_X, _X[:3], nboot=100, seed=0), "same seeds"),
        (lambda: mb.bootstrap_mean(_X[:1], nboot=100, seed=0), "1 seed.*at least 2"),
        (lambda: mb.compare(_X[:1], _X[:1], nboot=100, seed=0), "each arm has 1 seed"),
        (lambda: mb.compare(_X[:1], _X[:1], design="unpaired", nboot=100, seed=0),
         "a has 1 seed"),
        (lambda: mb.compare(_X[:1], _X[:1], design="single-baseline", nboot=100, seed=0),
         "b has 1 seed"),
        (lambda: mb.bootstrap_mean(_X, nboot=99, seed=0), "nboot must be an integer >= 100"),
        (lambda: mb.bootstrap_mean(_X, nboot=100, seed=0, ci=1.0), r"ci must be .* \(0, 1\)"),
        (lambda: mb.bootstrap_mean(_X, nboot=100, seed=0, ci=0), r"ci must be"),
        (lambda: mb.compare(_X, _X, nboot=100, seed=0, design="matched"), "unknown design"),
        (lambda: mb.compare(_X, _X, nboot=100, seed=0, alternative="bigger"),
         "unknown alternative"),
        (lambda: mb.bootstrap_mean(_X, nboot=100, seed=0, resample=("runs",)),
         "resample must name"),
        (lambda: mb.bootstrap_mean(_X, nboot=100, seed=0, resample=()), "resample must name"),
        (lambda: mb.bootstrap_mean(_X, nboot=100, seed=0, method="bootstrap-t"),
         "unknown method"),
        (lambda: mb.compare({"nq": _X, "fiqa": _X}, {"nq": _X, "scifact": _X}, nboot=100,
                            seed=0), r"same benchmarks.*\['fiqa'\].*\['scifact'\]"),
        (lambda: mb.bootstrap_mean({"nq": _X, "fiqa": _X[:3]}, nboot=100, seed=0),
         "share the seed axis"),
        (lambda: mb.compare({"nq": _X}, _X, nboot=100, seed=0), "both be arrays or both"),
        (lambda: mb.bootstrap_mean(_X[0], nboot=100, seed=0), "expected \\[seeds, examples\\]"),
        (lambda: mb.compare(_X[:1], _X, design="single-baseline", nboot=100, seed=0,
                            seeds_b=[1, 2]), "seeds_b has 2 ids"),
        # Issue #17: 4 seeds given as the baseline used to be read as 4 runs of one seed.
        (lambda: mb.compare(_X, _X, design="single-baseline", nboot=100, seed=0),
         r"single-baseline arm is one model, but shape \(4, 5\) reads as 4 seeds"),
        (lambda: mb.compare(np.ones((2, 3, 5)), _X, design="single-baseline", nboot=100,
                            seed=0), "single-baseline arm is one seed"),
        (lambda: mb.bootstrap_mean(_X, nboot=100, seed=None), "seed must be"),
        (lambda: mb.equivalence(_X, _X, epsilon=0, nboot=100, seed=0), "epsilon"),
        (lambda: mb.equivalence(_X, _X, epsilon=0.1, alpha=0.5, nboot=100, seed=0), "alpha"),
        (lambda: mb.seeds_needed(_X), "half_width and/or delta"),
        (lambda: mb.instance_agreement(_X, seeds=[1, 1, 2, 3]), "duplicate seed ids"),
        (lambda: mb.bootstrap_mean(_X, nboot=100, seed=0, threads=0), "threads must be"),
        (lambda: mb.compare(_X, _X, nboot=100, seed=0, threads=1.5), "threads must be"),
        (lambda: mb.equivalence(_X, _X, epsilon=0.1, nboot=100, seed=0, threads=True),
         "threads must be"),
        (lambda: mb.variance_parts(_X, nboot=100, seed=0, threads=-2), "threads must be"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
