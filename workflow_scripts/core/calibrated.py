"""Calibrated intervals for few seeds: a variance-components pivot over seeds x examples.

Why not the Multi-Bootstrap alone: with 3 seeds its nominal 95% interval of a paired difference
covers ~74% when seeds dominate (3 seed values resampled show about two thirds of their spread)
and ~99% when seeds do not matter (resampling both axes counts the seed x example noise twice).
bench/coverage.py measures both; docs/statistics.md has the table and the reasoning.

The model, per arm and benchmark: score[s, e] = mu + seed[s] + example[e] + residual[s, e]
(two-way crossed random effects; runs of one seed are averaged first). The estimate is the
Multi-Bootstrap's: sum over arms of sign * (unweighted mean over benchmarks of the grand mean).
Its variance is a sum of two parts, each a linear combination of mean squares (`Term`s):

  seed part     per arm whose seeds are random: var over seeds of the seed's metric / S
                (the seed's metric = its mean over examples, averaged over benchmarks)
  example part  per benchmark: var over examples of the signed sum of the arms' seed-means,
                / (K^2 Q); minus, per random-seed arm and benchmark, MS_residual / (K^2 Q S),
                the seed x example noise the seed part already holds. Clipped at 0.

For one [S, Q] array that is (MS_seed + MS_example - MS_residual) / (S Q). Paired arms are one
array of differences; single-baseline has no seed term for its fixed model; unpaired arms have
one seed term each; a mapping of benchmarks is the stratified mean with one seed axis shared
by all benchmarks. resample=("seeds",) keeps the seed part only (examples fixed),
("examples",) the example terms only (seeds fixed).

The interval is a generalized pivot (Weerahandi 1993): each mean square is its observed value
times df / chi2_df, so the variance V has a known distribution given the data, and
estimate - delta ~ Z * sqrt(V). The half-width h solves E_V[P(|Z| sqrt(V) > h)] = 1 - ci,
p-values are E_V[P(Z sqrt(V) > |estimate - threshold|)] on the tested side. With a single
term that is exactly Student's t with S - 1 df; with several it accounts for how uncertain each
part is, which a plug-in degrees-of-freedom formula (Satterthwaite) does not when the seed part
rests on 2 df: bench/coverage.py prints both. Unpaired arms' seed terms are drawn as one
term with Welch's df (see `welch`). The chi2 draws are a fixed Latin hypercube, so a
result depends on the data only.

Imports numpy and scipy only, like multibootstrap.py, whose input checks it shares.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from workflow_scripts.core.bootstrap_engine import Arm
from workflow_scripts.core.bootstrap_inputs import (
    ALTERNATIVES,
    AXES,
    arm_blocks,
    as_block,
    check_open_unit,
    check_resample,
    check_sizes,
    flat_row,
    two_arms,
)

METHOD = "calibrated"
DRAWS = 2048  # chi2 draws per mean square: the Latin hypercube makes 2048 as good as ~1e5
__all__ = ["DRAWS", "METHOD", "CalibratedEquivalence", "CalibratedResult", "Term", "compare",
           "equivalence", "mean_interval", "satterthwaite", "seeds_for_margin", "seeds_needed",
           "variance_components", "variance_terms", "welch"]


@dataclass(frozen=True)
class Term:
    """One mean square of the variance: coef * ms, with df degrees of freedom, in `part`
    "seeds" or "examples" (module docstring)."""

    name: str
    part: str
    coef: float
    ms: float
    df: float
    seeds: int = 0  # the seed count coef divides by (seed and residual terms); 0: none


@dataclass(frozen=True, kw_only=True)
class CalibratedResult:
    """Estimate, interval and p-value. se = sqrt(the variance estimate); df = its Satterthwaite
    degrees of freedom (for reading only: the interval integrates over the terms instead)."""

    estimate: float
    ci_low: float
    ci_high: float
    p_value: float | None
    se: float
    df: float
    design: str  # "mean" for mean_interval, else the compare design
    resample: tuple[str, ...]
    ci: float
    method: str = METHOD
    threshold: float | None = None
    alternative: str | None = None
    benchmarks: tuple[str, ...] | None = None
    terms: tuple[Term, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Flat row without `terms`; tuples joined with "," as in BootstrapResult.to_dict."""
        return flat_row(self, "terms")


@dataclass(frozen=True, kw_only=True)
class CalibratedEquivalence(CalibratedResult):
    """TOST: p_value = max(p_lower, p_upper); the interval is the 1 - 2 alpha one."""

    epsilon: float
    alpha: float
    p_lower: float
    p_upper: float
    equivalent: bool


# ---------------------------------------------------------------------------------------
# The variance: terms, point estimate, and its distribution given the data
# ---------------------------------------------------------------------------------------
def _residual_ms(x: np.ndarray) -> float:
    """Mean square of the seed x example residual of one [S, Q] block."""
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    return float(np.sum(resid**2) / ((x.shape[0] - 1) * (x.shape[1] - 1)))


def variance_terms(arms: list[Arm], resample: tuple[str, ...]) -> list[Term]:
    """The mean squares whose combination is the variance of the estimate (module docstring).

    arms as bootstrap_inputs builds them: `stream` None marks a fixed (one-model) arm.
    """
    n_bench = len(arms[0].blocks)
    random_seeds = [a for a in arms if a.stream is not None]
    terms = []
    if "seeds" in resample:
        for arm in random_seeds:
            metric = np.mean([blk.mean(axis=1) for blk in arm.blocks], axis=0)
            n = len(metric)
            terms.append(Term(f"seeds of {arm.name}", "seeds", 1 / n,
                              float(np.var(metric, ddof=1)), n - 1, n))
    if "examples" in resample:
        for k in range(n_bench):
            d = sum(a.sign * a.blocks[k].mean(axis=0) for a in arms)
            q = len(d)
            terms.append(Term(f"examples of benchmark {k}", "examples", 1 / (n_bench**2 * q),
                              float(np.var(d, ddof=1)), q - 1))
    if resample == AXES:
        for arm in random_seeds:
            for k, blk in enumerate(arm.blocks):
                s, q = blk.shape
                terms.append(Term(f"residual of {arm.name}, benchmark {k}", "examples",
                                  -1 / (n_bench**2 * q * s), _residual_ms(blk),
                                  (s - 1) * (q - 1), s))
    return terms


def _variance(terms: Sequence[Term], scale: Sequence) -> Any:
    """Seed part + example part clipped at 0, with each ms multiplied by its `scale`."""
    seeds = sum((t.coef * t.ms * f for t, f in zip(terms, scale, strict=True)
                 if t.part == "seeds"), 0.0)
    examples = sum((t.coef * t.ms * f for t, f in zip(terms, scale, strict=True)
                    if t.part == "examples"), 0.0)
    return seeds + np.maximum(examples, 0.0)


def _combine(terms: Sequence[Term]) -> tuple[float, float]:
    """sum(coef * ms) and its Satterthwaite df, sum^2 / sum((coef * ms)^2 / df)."""
    var = sum(t.coef * t.ms for t in terms)
    denom = sum((t.coef * t.ms) ** 2 / t.df for t in terms)
    return var, (var**2 / denom if denom > 0 else math.inf)


def satterthwaite(terms: Sequence[Term]) -> tuple[float, float]:
    """(variance estimate, Satterthwaite df): the plug-in t interval's ingredients. The
    example part is dropped when it estimates below 0 (its true value is >= 0). When the
    example part nearly cancels, the formula's df collapses towards 0 (its terms are large,
    their net tiny); the df is kept at least the seed terms' smallest, as if the example
    part were known."""
    var = float(_variance(terms, [1.0] * len(terms)))
    examples = sum(t.coef * t.ms for t in terms if t.part == "examples")
    _, df = _combine([t for t in terms if t.part == "seeds" or examples > 0])
    seed_dfs = [t.df for t in terms if t.part == "seeds"]
    return var, max(df, min(seed_dfs)) if seed_dfs else df


def welch(terms: Sequence[Term]) -> list[Term]:
    """The seed terms of several arms (unpaired) merged into one, with Welch-Satterthwaite's
    df. Drawing each arm's chi2 on its own is the Fisher-Behrens interval, which covers ~99%
    for a nominal 95% with 3 seeds per arm and equal variances; Welch's df is the better
    calibrated answer to that Behrens-Fisher problem (bench/coverage.py)."""
    seeds = [t for t in terms if t.part == "seeds"]
    if len(seeds) < 2:
        return list(terms)
    var, df = _combine(seeds)
    if math.isinf(df):  # no seed variance at all: any df draws the same zero
        df = max(t.df for t in seeds)
    merged = Term("seeds of all arms (Welch)", "seeds", 1.0, var, df)
    return [merged, *(t for t in terms if t.part != "seeds")]


@functools.cache
def _strata(slot: int) -> np.ndarray:
    """DRAWS stratified probabilities, shuffled: column `slot` of a Latin hypercube (the
    columns, one per term, are independent)."""
    u = (np.random.default_rng(slot).permutation(DRAWS) + 0.5) / DRAWS
    u.flags.writeable = False
    return u


@functools.lru_cache(maxsize=1024)
def _chi2_scale(df: float, slot: int) -> np.ndarray:
    """df / chi2_df at column `slot`'s probabilities."""
    scale = df / stats.chi2.ppf(_strata(slot), df)
    scale.flags.writeable = False
    return scale


def _sd_draws(terms: Sequence[Term]) -> np.ndarray:
    """[DRAWS] draws of sqrt(V) given the data (the generalized pivot of the variance)."""
    terms = welch(terms)
    return np.sqrt(_variance(terms, [_chi2_scale(t.df, i) for i, t in enumerate(terms)]))


def _tail(x: float, sd: np.ndarray) -> float:
    """P(Z * sqrt(V) > x) over the draws of sqrt(V); a draw of V = 0 is the point 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.mean(np.where(sd > 0, special.ndtr(-x / sd), float(x < 0))))


def _half_width(sd: np.ndarray, ci: float) -> float:
    """h with P(|Z| sqrt(V) > h) = 1 - ci; 0 when V = 0 is that likely already."""
    target = (1 - ci) / 2
    if _tail(0.0, sd) <= target:
        return 0.0
    high = float(sd.max() * special.ndtri(1 - target))  # tail there is <= target
    return float(optimize.brentq(lambda h: _tail(h, sd) - target, 0.0, high, xtol=1e-12 * high))


def _p_value(estimate: float, sd: np.ndarray, threshold: float, alternative: str) -> float:
    """Generalized p-value of H0: delta <= threshold ("greater"), >= ("less"), or two-sided
    (2 * the smaller one-sided). With no variance at all, 0 or 1."""
    x = estimate - threshold
    if not sd.max() > 0:
        greater, less = float(x <= 0), float(x >= 0)
    else:
        greater, less = _tail(x, sd), _tail(-x, sd)
    return {"greater": greater, "less": less, "two-sided": min(1.0, 2 * min(greater, less))
            }[alternative]


# ---------------------------------------------------------------------------------------
# Intervals and tests
# ---------------------------------------------------------------------------------------
def _check(ci, resample) -> tuple[str, ...]:
    check_open_unit("ci", ci)
    return check_resample(resample)


def _fit(arms, keys, design, ci, resample) -> tuple[dict, np.ndarray]:
    """The result fields every function shares, and the draws of sqrt(V)."""
    check_sizes(arms, resample)
    estimate = float(sum(a.sign * np.mean([blk.mean() for blk in a.blocks]) for a in arms))
    terms = tuple(variance_terms(arms, resample))
    var, df = satterthwaite(terms)
    sd = _sd_draws(terms)
    h = _half_width(sd, ci)
    return {"estimate": estimate, "ci_low": estimate - h, "ci_high": estimate + h,
            "se": math.sqrt(var), "df": df, "design": design, "resample": resample,
            "ci": float(ci), "terms": terms,
            "benchmarks": None if keys is None else tuple(str(k) for k in keys)}, sd


def mean_interval(scores, *, ci: float = 0.95, resample: Sequence[str] = AXES
                  ) -> CalibratedResult:
    """Calibrated interval of the mean score; `scores` as in multibootstrap.bootstrap_mean:
    [seeds, examples], [seeds, runs, examples] or a mapping benchmark -> such arrays."""
    resample = _check(ci, resample)
    keys, blocks = arm_blocks(scores, "scores")
    fit, _ = _fit([Arm(blocks, 1.0, 0, "scores")], keys, "mean", ci, resample)
    return CalibratedResult(p_value=None, **fit)


def compare(a, b, *, design: str = "paired", threshold: float = 0.0,
            alternative: str = "greater", ci: float = 0.95, resample: Sequence[str] = AXES,
            seeds_a: Sequence | None = None, seeds_b: Sequence | None = None
            ) -> CalibratedResult:
    """Calibrated test of delta = metric(b) - metric(a); arguments as multibootstrap.compare's
    (no nboot, seed or threads: nothing is resampled)."""
    resample = _check(ci, resample)
    if alternative not in ALTERNATIVES:
        raise ValueError(f"unknown alternative {alternative!r}; expected one of {ALTERNATIVES}")
    if not math.isfinite(float(threshold)):
        raise ValueError(f"threshold must be finite; got {threshold!r}")
    arms, keys = two_arms(a, b, design, seeds_a, seeds_b)
    fit, sd = _fit(arms, keys, design, ci, resample)
    p = _p_value(fit["estimate"], sd, float(threshold), alternative)
    return CalibratedResult(p_value=p, threshold=float(threshold), alternative=alternative,
                            **fit)


def equivalence(a, b, *, epsilon: float, design: str = "paired", alpha: float = 0.05,
                resample: Sequence[str] = AXES, seeds_a: Sequence | None = None,
                seeds_b: Sequence | None = None) -> CalibratedEquivalence:
    """Is |delta| < epsilon? Two one-sided tests: p_lower of H0 delta <= -epsilon, p_upper of
    H0 delta >= epsilon; equivalent = max of both < alpha."""
    check_open_unit("alpha", alpha)
    if not float(alpha) < 0.5:
        raise ValueError(f"alpha must be below 0.5 (the interval is 1 - 2 alpha); got {alpha!r}")
    if not (math.isfinite(float(epsilon)) and float(epsilon) > 0):
        raise ValueError(f"epsilon must be a positive number; got {epsilon!r}")
    resample = _check(1 - 2 * float(alpha), resample)
    arms, keys = two_arms(a, b, design, seeds_a, seeds_b)
    fit, sd = _fit(arms, keys, design, 1 - 2 * float(alpha), resample)
    p_lower = _p_value(fit["estimate"], sd, -float(epsilon), "greater")
    p_upper = _p_value(fit["estimate"], sd, float(epsilon), "less")
    p = max(p_lower, p_upper)
    return CalibratedEquivalence(p_value=p, epsilon=float(epsilon), alpha=float(alpha),
                                 p_lower=p_lower, p_upper=p_upper,
                                 equivalent=bool(p < alpha), **fit)


# ---------------------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------------------
def seeds_for_margin(terms: Sequence[Term], margin: float, ci: float = 0.95) -> int | None:
    """Seeds per random-seed arm at which an estimate with these variance terms (a result's
    `terms`) gets a plug-in t half-width (Satterthwaite df) of at most `margin`, the examples
    as they are: what would settle a test whose estimate lies `margin` from its threshold.
    Seed and residual terms scale as seeds / n (their df with n); None when the example
    part alone keeps it wider, or no term depends on the seeds."""
    check_open_unit("ci", ci)
    if not (math.isfinite(margin) and margin > 0) or not any(t.seeds for t in terms):
        return None

    def at(n: int) -> list[Term]:
        return [t if not t.seeds else dataclasses.replace(
            t, coef=t.coef * t.seeds / n, seeds=n,
            df=(n - 1) * (t.df / (t.seeds - 1) if t.seeds > 1 else 1.0)) for t in terms]

    def enough(n: int) -> bool:
        var, df = satterthwaite(at(n))
        return float(stats.t.ppf((1 + ci) / 2, df)) * math.sqrt(var) <= margin

    return _fewest_seeds(enough)


def variance_components(scores) -> dict[str, float]:
    """Two-way crossed random-effects ANOVA of [seeds, examples] (runs averaged).

    score[s, e] = mu + seed[s] + example[e] + residual; method-of-moments estimates, clipped at 0.
    """
    x = as_block(scores, "scores")
    n_s, n_e = x.shape
    if n_s < 2 or n_e < 2:
        raise ValueError(f"variance components need at least 2 seeds and 2 examples; got {x.shape}")
    ms_seed = n_e * float(np.var(x.mean(axis=1), ddof=1))
    ms_ex = n_s * float(np.var(x.mean(axis=0), ddof=1))
    ms_res = _residual_ms(x)
    return {
        "sigma2_seed": max(0.0, (ms_seed - ms_res) / n_e),
        "sigma2_example": max(0.0, (ms_ex - ms_res) / n_s),
        "sigma2_residual": ms_res,
    }


_MAX_SEEDS = 100_000  # the planner's search range; beyond it the answer is "not reachable"


def _fewest_seeds(enough) -> int | None:
    """Smallest n in [2, _MAX_SEEDS] with enough(n), for enough monotone in n; else None."""
    if not enough(_MAX_SEEDS):
        return None
    low, high = 1, _MAX_SEEDS  # enough(high) holds; n = low is below the range
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def seeds_needed(scores, *, half_width: float | None = None, delta: float | None = None,
                 power: float = 0.8, alpha: float = 0.05, ci: float = 0.95) -> dict[str, Any]:
    """Seeds for a target CI half-width and/or to detect delta, with t quantiles.

    With n seeds on these E examples, Var(mean) = v_seed / n + v_ex, where
    v_seed = sigma2_seed + sigma2_residual / E and v_ex = sigma2_example / E, and the interval
    uses Satterthwaite's df of those two parts (n - 1 and E - 1): the smallest n whose half-width
    t * sqrt(Var) <= half_width; None if v_ex alone keeps it wider. delta: seeds per arm for two
    arms with independent seeds on the same examples (example effects cancel), two-sided level
    alpha, Welch df 2 (n - 1): smallest n with (t_{1-alpha/2} + t_power) sqrt(2 v_seed / n)
    <= |delta|. Both at least 2. half_width_now is the calibrated interval's at the seeds given.
    """
    if half_width is None and delta is None:
        raise ValueError("give half_width and/or delta")
    if half_width is not None and not (math.isfinite(half_width) and half_width > 0):
        raise ValueError(f"half_width must be a positive number; got {half_width!r}")
    if delta is not None and not (math.isfinite(delta) and delta != 0):
        raise ValueError(f"delta must be a non-zero number; got {delta!r}")
    for name, value in (("power", power), ("alpha", alpha), ("ci", ci)):
        check_open_unit(name, value)
    comp = variance_components(scores)
    n_s, n_e = as_block(scores, "scores").shape
    v_seed = comp["sigma2_seed"] + comp["sigma2_residual"] / n_e
    v_ex = comp["sigma2_example"] / n_e
    now = mean_interval(scores, ci=ci)
    out: dict[str, Any] = {
        "n_seeds": n_s, "n_examples": n_e, **comp,
        "half_width_now": (now.ci_high - now.ci_low) / 2,
        "seeds_for_half_width": None, "seeds_for_delta": None,
    }
    t = stats.t.ppf
    if half_width is not None:

        def half_width_at(n: int) -> float:
            var = v_seed / n + v_ex
            denom = (v_seed / n) ** 2 / (n - 1) + v_ex**2 / (n_e - 1)
            return float(t((1 + ci) / 2, var**2 / denom)) * math.sqrt(var) if denom else 0.0

        out["seeds_for_half_width"] = _fewest_seeds(lambda n: half_width_at(n) <= half_width)
    if delta is not None:

        def detects(n: int) -> bool:
            df = 2 * (n - 1)  # Welch's df for two arms of n seeds with equal variances
            return (t(1 - alpha / 2, df) + t(power, df)) * math.sqrt(2 * v_seed / n) <= abs(
                delta)

        out["seeds_for_delta"] = _fewest_seeds(detects)
    return out
