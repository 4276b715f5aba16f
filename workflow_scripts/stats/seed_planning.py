"""Seed planning from the calibrated interval (stats/calibrated.py): how many seeds per arm
would give a target half-width, settle a test whose estimate lies a margin from its
threshold, or detect a difference. Every answer is the calibrated t of the variance terms
rescaled to n seeds by what each estimates (`terms_at`); None where the examples alone keep
the interval too wide.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from scipy import stats

from workflow_scripts.stats.bootstrap_inputs import as_block, check_open_unit, check_plan_targets
from workflow_scripts.stats.calibrated import (
    Term,
    half_width,
    mean_interval,
    variance_components,
)


def terms_at(terms: Sequence[Term], n: int) -> list[Term]:
    """The variance terms as n seeds per random-seed arm would give them in expectation: each
    seed and residual term (coef / S) scaled by S / n, its df to n - 1 seeds; each example
    term less the share of the seed x example noise that averages out with more seeds
    (its expectation is sigma2_example / Q + sigma2_residual / (S Q): the residual terms'
    sum r becomes r S / n), the example terms scaled together by (X - r + r S / n) / X."""
    x = sum(t.coef * t.ms for t in terms if t.part == "examples" and t.coef > 0)
    shed = sum(-t.coef * t.ms * (1 - t.seeds / n) for t in terms
               if t.part == "examples" and t.coef < 0 and t.seeds)
    factor = max(x - shed, 0.0) / x if x > 0 else 1.0
    out = []
    for t in terms:
        if t.seeds:
            out.append(dataclasses.replace(
                t, coef=t.coef * t.seeds / n, seeds=n,
                df=(n - 1) * (t.df / (t.seeds - 1) if t.seeds > 1 else 1.0)))
        elif t.part == "examples" and t.coef > 0:
            out.append(dataclasses.replace(t, coef=t.coef * factor))
        else:
            out.append(t)
    return out


def seeds_for_margin(terms: Sequence[Term], margin: float, ci: float = 0.95) -> int | None:
    """Seeds per random-seed arm at which an estimate with these variance terms (a result's
    `terms`) gets a calibrated half-width of at most `margin` (`terms_at`: every term
    scaled by what it estimates): what would settle a test whose estimate lies `margin` from
    its threshold, or reach a target half-width. None when the examples alone keep it wider,
    or no term depends on the seeds. The claims and the stats stage both plan with it."""
    check_open_unit("ci", ci)
    if not (math.isfinite(margin) and margin > 0) or not any(t.seeds for t in terms):
        return None

    def enough(n: int) -> bool:
        scaled = terms_at(terms, n)
        return half_width(scaled, ci) <= margin  # the reported interval's, tails calibrated

    return _fewest_seeds(enough)


MAX_SEEDS = 100_000  # the planner's search range; beyond it the answer is "not reachable"


def _fewest_seeds(enough) -> int | None:
    """Smallest n in [2, MAX_SEEDS] with enough(n), for enough monotone in n; else None."""
    if not enough(MAX_SEEDS):
        return None
    low, high = 1, MAX_SEEDS  # enough(high) holds; n = low is below the range
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def seeds_needed(scores, *, half_width: float | None = None, delta: float | None = None,
                 power: float = 0.8, alpha: float = 0.05, ci: float = 0.95) -> dict[str, Any]:
    """Seeds for a target CI half-width and/or to detect delta, with t quantiles.

    half_width: `seeds_for_margin` on the calibrated interval's terms (the planner the claims
    use): with n seeds on these E examples Var(mean) = v_seed / n + v_ex, v_seed = sigma2_seed
    + sigma2_residual / E, v_ex = sigma2_example / E; None if v_ex alone keeps it wider.
    delta: seeds per arm for two arms with independent seeds on the same examples (example
    effects cancel), two-sided level alpha, Welch df 2 (n - 1): smallest n with
    (t_{1-alpha/2} + t_power) sqrt(2 v_seed / n) <= |delta|. Both at least 2.
    half_width_now is the calibrated interval's at the seeds given.
    """
    check_plan_targets(half_width, delta, power=power, alpha=alpha, ci=ci)
    comp = variance_components(scores)
    n_s, n_e = as_block(scores, "scores").shape
    v_seed = comp["sigma2_seed"] + comp["sigma2_residual"] / n_e
    now = mean_interval(scores, ci=ci)
    out: dict[str, Any] = {
        "n_seeds": n_s, "n_examples": n_e, **comp,
        "half_width_now": (now.ci_high - now.ci_low) / 2,
        "seeds_for_half_width": None, "seeds_for_delta": None,
    }
    t = stats.t.ppf
    if half_width is not None:
        out["seeds_for_half_width"] = seeds_for_margin(now.terms, half_width, ci)
    if delta is not None:

        def detects(n: int) -> bool:
            df = 2 * (n - 1)  # Welch's df for two arms of n seeds with equal variances
            return (t(1 - alpha / 2, df) + t(power, df)) * math.sqrt(2 * v_seed / n) <= abs(
                delta)

        out["seeds_for_delta"] = _fewest_seeds(detects)
    return out
