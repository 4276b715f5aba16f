"""Calibrated intervals for few seeds: a variance-components t interval over seeds x examples.

Why not the Multi-Bootstrap alone: at 3 seeds its nominal 95% interval of a paired difference
covers ~74% when seeds dominate and ~99% when they do not matter (docs/methods.md; `python -m
validation.coverage` measures both).

The model, per arm and benchmark: score[s, e] = mu + seed[s] + example[e] + residual[s, e]
(two-way crossed random effects). The estimate is the Multi-Bootstrap's: sum over arms of
sign * (unweighted mean over benchmarks of the grand mean). Its variance is estimated from
mean squares (variance_terms.py): per random-seed arm a seed term M (which holds the seed x
example noise r too), the example terms X (which hold r as well) and the residual terms r.

The rule, with constants c = DfRule.floor = 1/2 and kappa = DfRule.kappa = 0.1:

  V_hat = X - r + max(M, c r) summed over the seed terms, at least sum M and c X
  df = df_seed * V_hat / sum(max(M - kappa r, 0))     (df_seed = S - 1; several seed terms:
                                                       each one's df over its share, the
                                                       smallest)

at least df_seed, at most the example terms' smallest df (Q - 1), and the example terms'
Satterthwaite df when no charge is left. The example part is taken as known (hundreds of df).
Why: each seed mean square rests on S - 1 df; dividing the df by its share once (Satterthwaite
divides by the share squared) keeps a nominal 95% interval at 2 seed df within 93-97% whatever
the share. r is charged to the example term, which estimates it whole; where seeds do not
matter M is all r, and charging M whole would keep the df near S - 1 (1.87x the
known-variance width for binary outcomes at 3 seeds) and let the df collapse when X - r nearly
cancels. (kappa, c) is a frontier: more floor and less margin over-cover where seeds do not
matter, the reverse under-covers where seeds carry most of V. (0.1, 1/2) keeps every
simulated cell with >= 3 seeds within 93.2-96.6%, at 1.3x (continuous) to 1.65x (binary) the
known-variance width where seeds do not matter (docs/methods.md; `python -m
validation.coverage_edges --theory` and its simulation). With the seed part alone it is
exactly Student's t with S - 1 df; p-values, the TOST and the seed planner (seed_planning.py)
use the same t.

With an arm of 2 seeds (df_seed 1) the df are instead df_seed (w1 - w0) / (share - w0), share =
sum(M) / V_hat, (w0, w1) = (DfRule.w0, DfRule.w1) = (0.1, 0.3), with no margin and the floor
c = 0.1 (DfRule.two_floor): t_1 from a seed share of 0.3 up, the normal at 0.1 and below. t_1's
quantile is so steep (12.7 against 4.3 at 2 df) that dividing by the share covers 89.9-91.5%
where seeds carry most but not all of V; this rule keeps 93.7-96.1% over every share by exact
integration (docs/methods.md, "2 seeds: the df ramp").

The rule itself, vectorised, with its constants a `DfRule` value: df_rule.py; this module
applies it to a result's terms, and the p-value and interval are calibrated in their tails
(tail_calibration.py). Imports numpy and scipy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from workflow_scripts.stats import tail_calibration
from workflow_scripts.stats.bootstrap_engine import Arm
from workflow_scripts.stats.bootstrap_inputs import (
    ALTERNATIVES,
    AXES,
    arm_blocks,
    check_open_unit,
    check_resample,
    check_sizes,
    flat_row,
    two_arms,
)
from workflow_scripts.stats.df_rule import DEFAULT_RULE, DfRule, variance_and_df
from workflow_scripts.stats.variance_terms import Term, sum_terms, variance_terms

METHOD = "calibrated"
__all__ = ["METHOD", "PLAIN_FROM_SEED_DF", "CalibratedEquivalence", "CalibratedResult",
           "calibrated_df", "compare", "equivalence", "half_width", "mean_interval", "reduced",
           "t_half_width", "total_variance"]


@dataclass(frozen=True, kw_only=True)
class CalibratedResult:
    """Estimate, interval and p-value. se = sqrt(the variance estimate); df = the calibrated
    degrees of freedom of its t interval (module docstring)."""

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
# The rule applied to a result's terms, and its tail calibration
# ---------------------------------------------------------------------------------------
def _seed_arms(terms: Sequence[Term]) -> list[tuple[float, float, float]]:
    """Per seed term: (M, r, df), M = coef * ms of the seed term, r = the seed x example
    noise it holds (its arm's residual terms, as a positive variance), df its df."""
    resid: dict[str, float] = {}
    for t in terms:
        if t.part == "examples" and t.coef < 0:
            resid[t.arm] = resid.get(t.arm, 0.0) - t.coef * t.ms
    return [(t.coef * t.ms, resid.get(t.arm, 0.0) if t.arm else 0.0, t.df)
            for t in terms if t.part == "seeds"]


def _example_terms(terms: Sequence[Term]) -> list[Term]:
    """The example terms proper (variance over examples; the residual terms excluded)."""
    return [t for t in terms if t.part == "examples" and t.coef > 0]


def _rule_inputs(terms: Sequence[Term]) -> tuple[list, list, list, float, float, float]:
    """df_rule.variance_and_df's arguments from a result's terms: per seed term M, r and df;
    X, the example terms' Satterthwaite df f and their smallest df (the cap)."""
    examples = _example_terms(terms)
    arms = _seed_arms(terms)
    x = sum(t.coef * t.ms for t in examples)
    f = sum_terms(examples)[1] if examples else math.inf
    cap = min((t.df for t in examples), default=math.inf)
    return [a[0] for a in arms], [a[1] for a in arms], [a[2] for a in arms], x, f, cap


def total_variance(terms: Sequence[Term], rule: DfRule = DEFAULT_RULE) -> float:
    """V = X + sum over seed terms of max(M - r, (c - 1) r), never below sum M or c X
    (module docstring, df_rule.py): X the example terms, M a seed term, r the residual
    noise it holds."""
    return float(variance_and_df(*_rule_inputs(terms), rule)[0])


def calibrated_df(terms: Sequence[Term], rule: DfRule = DEFAULT_RULE) -> float:
    """The t interval's degrees of freedom (module docstring, df_rule.py): the seed terms'
    df (several terms' merged by each one's share of the charge) divided by their charge's
    share of V, the charge being each seed term less kappa times the residual noise it
    holds; never below the seed df, never more than the fewest examples give (the smallest
    example term's df). No charge left (seeds that do not vary, or not resampled): the
    example terms' Satterthwaite df."""
    return float(variance_and_df(*_rule_inputs(terms), rule)[1])


PLAIN_FROM_SEED_DF = 19  # from 20 seeds the plug-in t holds at every level by quadrature
# (worst P(p <= a) / a at a = 4.27e-5: 1.81 at 10 seeds, 1.03 at 15, 1.00 at 20)


def reduced(terms: Sequence[Term]) -> tail_calibration.Reduced | None:
    """What the tail calibration needs (tail_calibration.py), where it applies: seed terms of
    fewer than 20 seeds with the examples resampled too; else None (the plain t). Several
    seed terms (unpaired arms, a borrowed one beside the random arm's) are calibrated as one
    of the smallest df, r their residual noise summed: the worst split of the seed variance
    is one arm carrying it, whose df are the smallest (`python -m validation.tail_levels_arms`
    checks the supremum over both arms' seed variances)."""
    seeds = [t for t in terms if t.part == "seeds"]
    examples = _example_terms(terms)
    if (not seeds or not examples or any(t.arm == "" for t in seeds)
            or min(t.df for t in seeds) >= PLAIN_FROM_SEED_DF):
        return None
    arms = _seed_arms(terms)
    r, k = sum(a[1] for a in arms), min(a[2] for a in arms)
    x, f = sum_terms(examples)
    if not (r > 0 and x > 0):
        return None
    return tail_calibration.Reduced(float(k), float(f), float(min(t.df for t in examples)),
                                    (x - r) / r, DEFAULT_RULE)


def half_width(terms: Sequence[Term], ci: float) -> float:
    """The interval's half-width from its terms (`_calibrated_half`)."""
    return _calibrated_half(total_variance(terms), calibrated_df(terms), reduced(terms), ci)


def _calibrated_half(var: float, df: float, red: tail_calibration.Reduced | None,
                     ci: float) -> float:
    """The calibrated test inverted: t's quantile at the plug-in level whose calibrated p is
    the interval's one-sided level (tail_calibration.py); with red None, the plain t's."""
    level = tail_calibration.calibrated_level((1 - float(ci)) / 2, red)
    return t_half_width(var, df, 1 - 2 * level)


def t_half_width(var: float, df: float, ci: float) -> float:
    # special.stdtrit / stdtr are t's quantile and cdf without scipy.stats' per-call overhead
    return float(special.stdtrit(df, (1 + ci) / 2)) * math.sqrt(var) if var > 0 else 0.0


def _p_value(estimate: float, var: float, df: float, threshold: float,
             alternative: str, red: tail_calibration.Reduced | None = None) -> float:
    """p-value of H0: delta <= threshold ("greater"), >= ("less"), or two-sided (2 * the
    smaller one-sided), from t_df, each side calibrated in its tail where `red` says how
    (tail_calibration.py). With no variance at all, 0 or 1."""
    x = estimate - threshold
    if not var > 0:
        greater, less = float(x <= 0), float(x >= 0)
    else:
        tx = x / math.sqrt(var)
        greater = tail_calibration.calibrated_p(float(special.stdtr(df, -tx)), red)
        less = tail_calibration.calibrated_p(float(special.stdtr(df, tx)), red)
    return {"greater": greater, "less": less, "two-sided": min(1.0, 2 * min(greater, less))
            }[alternative]


# ---------------------------------------------------------------------------------------
# Intervals and tests
# ---------------------------------------------------------------------------------------
def _check(ci, resample) -> tuple[str, ...]:
    check_open_unit("ci", ci)
    return check_resample(resample)


def _fit(arms, keys, design, ci, resample, borrowed: Sequence[Term] = ()) -> dict:
    """The result fields every function shares; `borrowed`: a one-seed arm's seed terms
    (borrowed_seeds.py), its residual term only where examples are resampled too."""
    check_sizes(arms, resample)
    if borrowed and design != "single-baseline":
        raise ValueError("borrowed seed terms are for the single-baseline design's one-seed "
                         f"arm; got design {design!r}")
    estimate = float(sum(a.sign * np.mean([blk.mean() for blk in a.blocks]) for a in arms))
    extra = [t for t in borrowed if "seeds" in resample and (t.part == "seeds"
                                                             or resample == AXES)]
    terms = tuple(variance_terms(arms, resample)) + tuple(extra)
    var, df = total_variance(terms), calibrated_df(terms)
    red = reduced(terms)
    h = _calibrated_half(var, df, red, ci)
    return {"estimate": estimate, "ci_low": estimate - h, "ci_high": estimate + h,
            "se": math.sqrt(var), "df": df, "design": design, "resample": resample,
            "ci": float(ci), "terms": terms, "reduced": red,
            "benchmarks": None if keys is None else tuple(str(k) for k in keys)}


def mean_interval(scores, *, ci: float = 0.95, resample: Sequence[str] = AXES
                  ) -> CalibratedResult:
    """Calibrated interval of the mean score; `scores` as in multibootstrap.bootstrap_mean:
    [seeds, examples], [seeds, runs, examples] or a mapping benchmark -> such arrays."""
    resample = _check(ci, resample)
    keys, blocks = arm_blocks(scores, "scores")
    fit = _fit([Arm(blocks, 1.0, 0, "scores")], keys, "mean", ci, resample)
    fit.pop("reduced")
    return CalibratedResult(p_value=None, **fit)


def compare(a, b, *, design: str = "paired", threshold: float = 0.0,
            alternative: str = "greater", ci: float = 0.95, resample: Sequence[str] = AXES,
            seeds_a: Sequence | None = None, seeds_b: Sequence | None = None,
            borrowed: Sequence[Term] = ()) -> CalibratedResult:
    """Calibrated test of delta = metric(b) - metric(a); arguments as multibootstrap.compare's
    (no nboot, seed or threads: nothing is resampled). borrowed: single-baseline only, the
    fixed arm's seed noise borrowed from the study's multi-seed arms
    (borrowed_seeds.borrowed_terms)."""
    resample = _check(ci, resample)
    if alternative not in ALTERNATIVES:
        raise ValueError(f"unknown alternative {alternative!r}; expected one of {ALTERNATIVES}")
    if not math.isfinite(float(threshold)):
        raise ValueError(f"threshold must be finite; got {threshold!r}")
    arms, keys = two_arms(a, b, design, seeds_a, seeds_b)
    fit = _fit(arms, keys, design, ci, resample, borrowed)
    red = fit.pop("reduced")
    p = _p_value(fit["estimate"], fit["se"] ** 2, fit["df"], float(threshold), alternative,
                 red)
    return CalibratedResult(p_value=p, threshold=float(threshold), alternative=alternative,
                            **fit)


def equivalence(a, b, *, epsilon: float, design: str = "paired", alpha: float = 0.05,
                resample: Sequence[str] = AXES, seeds_a: Sequence | None = None,
                seeds_b: Sequence | None = None, borrowed: Sequence[Term] = ()
                ) -> CalibratedEquivalence:
    """Is |delta| < epsilon? Two one-sided tests: p_lower of H0 delta <= -epsilon, p_upper of
    H0 delta >= epsilon; equivalent = max of both < alpha. borrowed: as compare's."""
    check_open_unit("alpha", alpha)
    if not float(alpha) < 0.5:
        raise ValueError(f"alpha must be below 0.5 (the interval is 1 - 2 alpha); got {alpha!r}")
    if not (math.isfinite(float(epsilon)) and float(epsilon) > 0):
        raise ValueError(f"epsilon must be a positive number; got {epsilon!r}")
    resample = _check(1 - 2 * float(alpha), resample)
    arms, keys = two_arms(a, b, design, seeds_a, seeds_b)
    fit = _fit(arms, keys, design, 1 - 2 * float(alpha), resample, borrowed)
    var, df, red = fit["se"] ** 2, fit["df"], fit.pop("reduced")
    p_lower = _p_value(fit["estimate"], var, df, -float(epsilon), "greater", red)
    p_upper = _p_value(fit["estimate"], var, df, float(epsilon), "less", red)
    p = max(p_lower, p_upper)
    return CalibratedEquivalence(p_value=p, epsilon=float(epsilon), alpha=float(alpha),
                                 p_lower=p_lower, p_upper=p_upper,
                                 equivalent=bool(p < alpha), **fit)

