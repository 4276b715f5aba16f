"""Multi-Bootstrap (Sellam et al. 2022, "The MultiBERTs") over seeds and examples.

One bootstrap sample draws seeds and examples with replacement; every drawn seed contributes its
metric (the mean score) on the drawn examples, and the sample is the mean over drawn seeds, with
multiplicity. This module is the public API: input checks, intervals, p-values and the result
types. The samples come from the vectorized engine in bootstrap_engine.py; `threads` (None: the
CPUs this process may use) only sets how many groups of samples it computes at once.

Imports numpy and scipy only, so notebooks can use it without torch or snakemake.
docs/multibootstrap.md documents the semantics, the exact draw order and examples.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from workflow_scripts.stats.bootstrap_engine import GROUP, Arm, acceleration, bootstrap_samples
from workflow_scripts.stats.bootstrap_inputs import (
    ALTERNATIVES,
    AXES,
    DESIGNS,
    METHODS,
    MIN_NBOOT,
    arm_blocks,
    as_block,
    check_args,
    check_open_unit,
    check_plan_targets,
    check_sizes,
    flat_row,
    seed_ids,
    two_arms,
)
from workflow_scripts.stats.variance_terms import arm_example_variance, variance_components

__all__ = ["ALTERNATIVES", "AXES", "DESIGNS", "GROUP", "METHODS", "MIN_NBOOT", "BootstrapResult",
           "EquivalenceResult", "bootstrap_mean", "compare", "equivalence", "instance_agreement",
           "seeds_needed", "variance_parts"]


@dataclass(frozen=True, kw_only=True)
class BootstrapResult:
    """Point estimate (on the full data), interval, p-value and the bootstrap distribution."""

    estimate: float
    ci_low: float
    ci_high: float
    p_value: float | None
    nboot: int
    design: str  # "mean" for bootstrap_mean, else the compare design
    resample: tuple[str, ...]
    ci: float
    method: str
    seed: int
    threshold: float | None = None
    alternative: str | None = None
    benchmarks: tuple[str, ...] | None = None
    samples: np.ndarray = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Flat row without `samples`; tuples are joined with "," so parquet gets strings."""
        return flat_row(self, "samples")


@dataclass(frozen=True, kw_only=True)
class EquivalenceResult(BootstrapResult):
    """TOST result: `p_value` = max(p_lower, p_upper); the interval is the (1 - 2 alpha) one."""

    epsilon: float
    alpha: float
    p_lower: float
    p_upper: float
    equivalent: bool


def _interval(samples, estimate, ci, method, accel) -> tuple[float, float]:
    probs = np.array([(1 - ci) / 2, (1 + ci) / 2])
    if method == "bca":
        n = len(samples)
        # z0 from the share below the estimate, clipped so an all-one-side sample stays finite.
        z0 = stats.norm.ppf(np.clip(np.mean(samples < estimate), 0.5 / n, 1 - 0.5 / n))
        z = stats.norm.ppf(probs)
        probs = stats.norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
    lo, hi = np.quantile(samples, probs, method="linear")
    return float(lo), float(hi)


def _p_values(samples, threshold, nboot) -> dict[str, float]:
    """One-sided p's floored at 1/nboot; two-sided = min(1, 2 * the smaller one-sided p)."""
    greater = max(float(np.mean(samples <= threshold)), 1 / nboot)  # H0: delta <= threshold
    less = max(float(np.mean(samples >= threshold)), 1 / nboot)  # H0: delta >= threshold
    return {"greater": greater, "less": less, "two-sided": min(1.0, 2 * min(greater, less))}


def _bootstrap(arms, keys, design, nboot, ci, seed, resample, method, threads) -> dict:
    """Run the engine on checked arms: the result fields all functions share."""
    check_sizes(arms, resample)
    estimate = float(sum(a.sign * np.mean([blk.mean() for blk in a.blocks]) for a in arms))
    threads = None if threads is None else int(threads)
    samples = bootstrap_samples(arms, int(nboot), int(seed), resample, threads)
    accel = acceleration(arms, resample) if method == "bca" else 0.0
    lo, hi = _interval(samples, estimate, float(ci), method, accel)
    return {
        "estimate": estimate, "ci_low": lo, "ci_high": hi, "nboot": int(nboot), "design": design,
        "resample": resample, "ci": float(ci), "method": method, "seed": int(seed),
        "benchmarks": None if keys is None else tuple(str(k) for k in keys), "samples": samples,
    }


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------
def bootstrap_mean(scores, *, nboot: int, ci: float = 0.95, seed: int,
                   resample: Sequence[str] = AXES, method: str = "percentile",
                   threads: int | None = None) -> BootstrapResult:
    """Multi-Bootstrap interval of the mean score over seeds and examples.

    scores: [seeds, examples], [seeds, runs, examples] (runs averaged within a seed, never
    resampled) or a mapping benchmark -> such array sharing the seed axis (stratified: examples
    resampled within each benchmark, one seed draw for all; aggregate = unweighted mean of the
    per-benchmark means). threads: groups of samples computed at once (None: the CPUs this
    process may use); the result does not depend on it.
    """
    resample = check_args(nboot, ci, seed, resample, method, threads)
    keys, blocks = arm_blocks(scores, "scores")
    arms = [Arm(blocks, 1.0, 0, "scores")]
    run = _bootstrap(arms, keys, "mean", nboot, ci, seed, resample, method, threads)
    return BootstrapResult(p_value=None, **run)


def compare(a, b, *, design: str = "paired", threshold: float = 0.0,
            alternative: str = "greater", nboot: int, ci: float = 0.95, seed: int,
            resample: Sequence[str] = AXES, method: str = "percentile",
            seeds_a: Sequence | None = None, seeds_b: Sequence | None = None,
            threads: int | None = None) -> BootstrapResult:
    """Multi-Bootstrap test of delta = metric(b) - metric(a).

    p_value tests H0: delta <= threshold ("greater"), delta >= threshold ("less"), or is
    min(1, 2 * min of both) ("two-sided"). seeds_a / seeds_b are seed ids (default 0..n-1);
    the paired design aligns b to a's seed order and needs the same id sets. threads: as in
    bootstrap_mean.
    """
    resample = check_args(nboot, ci, seed, resample, method, threads)
    if alternative not in ALTERNATIVES:
        raise ValueError(f"unknown alternative {alternative!r}; expected one of {ALTERNATIVES}")
    if not math.isfinite(float(threshold)):
        raise ValueError(f"threshold must be finite; got {threshold!r}")
    arms, keys = two_arms(a, b, design, seeds_a, seeds_b)
    run = _bootstrap(arms, keys, design, nboot, ci, seed, resample, method, threads)
    p = _p_values(run["samples"], float(threshold), int(nboot))[alternative]
    return BootstrapResult(p_value=p, threshold=float(threshold), alternative=alternative, **run)


def equivalence(a, b, *, epsilon: float, design: str = "paired", alpha: float = 0.05,
                nboot: int, seed: int, resample: Sequence[str] = AXES,
                method: str = "percentile", seeds_a: Sequence | None = None,
                seeds_b: Sequence | None = None,
                threads: int | None = None) -> EquivalenceResult:
    """Is |delta| < epsilon? Two one-sided tests on the bootstrap distribution of delta.

    p_lower = P*(delta <= -epsilon), p_upper = P*(delta >= epsilon), each floored at 1/nboot;
    p_value = max of both; equivalent = p_value < alpha. The interval is the (1 - 2 alpha) one.
    threads: as in bootstrap_mean.
    """
    check_open_unit("alpha", alpha)
    if not float(alpha) < 0.5:
        raise ValueError(f"alpha must be below 0.5 (the interval is 1 - 2 alpha); got {alpha!r}")
    if not (math.isfinite(float(epsilon)) and float(epsilon) > 0):
        raise ValueError(f"epsilon must be a positive number; got {epsilon!r}")
    ci = 1 - 2 * float(alpha)
    resample = check_args(nboot, ci, seed, resample, method, threads)
    arms, keys = two_arms(a, b, design, seeds_a, seeds_b)
    run = _bootstrap(arms, keys, design, nboot, ci, seed, resample, method, threads)
    p_lower = max(float(np.mean(run["samples"] <= -epsilon)), 1 / nboot)
    p_upper = max(float(np.mean(run["samples"] >= epsilon)), 1 / nboot)
    p = max(p_lower, p_upper)
    return EquivalenceResult(p_value=p, epsilon=float(epsilon), alpha=float(alpha),
                             p_lower=p_lower, p_upper=p_upper, equivalent=bool(p < alpha), **run)


def variance_parts(scores, *, nboot: int, seed: int,
                   threads: int | None = None) -> list[dict[str, Any]]:
    """Share of the bootstrap variance of the mean that comes from seeds vs from examples.

    Per group (each benchmark of a mapping, then "all" = the stratified aggregate; an array is
    the one group "all"): var_joint, var_seeds and var_examples are the variances (ddof=1) of
    the joint, seed-only and example-only bootstrap distributions, all run with `seed`;
    share_seeds = var_seeds / var_joint, share_examples = var_examples / var_joint and
    share_interaction = 1 - both (what neither axis explains alone; ~0 if effects are additive).
    threads: as in bootstrap_mean.
    """
    groups = [("all", scores)]
    if isinstance(scores, Mapping):
        groups[:0] = [(str(k), scores[k]) for k in sorted(scores, key=str)]
    rows = []
    for name, x in groups:
        joint, seeds, examples = (
            float(np.var(bootstrap_mean(x, nboot=nboot, seed=seed, resample=axes,
                                        threads=threads).samples, ddof=1))
            for axes in (AXES, ("seeds",), ("examples",))
        )
        share_s = seeds / joint if joint > 0 else math.nan
        share_e = examples / joint if joint > 0 else math.nan
        rows.append({
            "group": name, "var_joint": joint, "var_seeds": seeds, "var_examples": examples,
            "share_seeds": share_s, "share_examples": share_e,
            "share_interaction": 1 - share_s - share_e,
        })
    return rows


def seeds_needed(scores, *, half_width: float | None = None, delta: float | None = None,
                 versus=None, power: float = 0.8, alpha: float = 0.05, ci: float = 0.95
                 ) -> dict[str, Any]:
    """Seeds for a target CI half-width and/or to detect delta, from variance components.

    With n seeds on these E examples Var(mean) = v_seed / n + sigma2_example / E where
    v_seed = sigma2_seed + sigma2_residual / E. Half-width: smallest n with
    z_{(1+ci)/2} * sqrt(Var) <= half_width, None if sigma2_example / E alone is too large.
    delta: seeds per arm for this arm and `versus` (another arm's scores on the same
    examples) with independent seeds, two-sided level alpha: Var = (v_a + v_b) / n + v_int,
    v_int = variance_terms.arm_example_variance / E (example main effects cancel, the arm x
    example interaction does not), n = (v_a + v_b) z^2 / (delta^2 - z^2 v_int) with z =
    z_{1-alpha/2} + z_power; None without versus or where v_int alone is too large. Both are
    at least 2.
    """
    check_plan_targets(half_width, delta, power=power, alpha=alpha, ci=ci)
    comp = variance_components(scores)
    n_s, n_e = as_block(scores, "scores").shape
    v_seed = comp["sigma2_seed"] + comp["sigma2_residual"] / n_e
    v_ex = comp["sigma2_example"] / n_e
    z_ci = float(stats.norm.ppf((1 + ci) / 2))
    out: dict[str, Any] = {
        "n_seeds": n_s, "n_examples": n_e, **comp,
        "half_width_now": z_ci * math.sqrt(v_seed / n_s + v_ex),
        "seeds_for_half_width": None, "seeds_for_delta": None, "arm_example_sd": None,
    }
    if half_width is not None:
        room = (half_width / z_ci) ** 2 - v_ex
        out["seeds_for_half_width"] = max(2, math.ceil(v_seed / room)) if room > 0 else None
    if delta is not None and versus is not None:
        other = variance_components(versus)
        v_pair = v_seed + other["sigma2_seed"] + other["sigma2_residual"] / n_e
        v_int = arm_example_variance(scores, versus)
        out["arm_example_sd"] = math.sqrt(v_int)
        z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
        room = delta**2 - z**2 * v_int / n_e
        out["seeds_for_delta"] = max(2, math.ceil(v_pair * z**2 / room)) if room > 0 else None
    return out


def instance_agreement(scores, *, outcome_threshold: float | None = None,
                       seeds: Sequence | None = None) -> list[dict[str, Any]]:
    """Per pair of seeds: agreement of per-example binary outcomes and Spearman rho of scores.

    scores: [seeds, examples] (or [seeds, runs, examples], runs averaged) of per-example scores,
    or a boolean [seeds, examples] outcome matrix. Outcome = score >= outcome_threshold; without
    a threshold (and non-boolean scores) `agreement` is None. Rho is NaN for a constant seed.
    """
    x = np.asarray(scores)
    if x.dtype == bool:
        if x.ndim != 2:
            raise ValueError(f"a boolean outcome matrix must be [seeds, examples]; got {x.shape}")
        outcomes, x = x, x.astype(np.float64)
    else:
        x = as_block(x, "scores")
        outcomes = None if outcome_threshold is None else x >= outcome_threshold
    ids = seed_ids(seeds, x.shape[0], "seeds")
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        for i in range(len(ids)):
            for j in range(i + 1, len(ids)):
                agree = None if outcomes is None else float(np.mean(outcomes[i] == outcomes[j]))
                rho = float(stats.spearmanr(x[i], x[j]).statistic)
                rows.append({"seed_a": ids[i], "seed_b": ids[j], "agreement": agree,
                             "spearman": rho})
    return rows
