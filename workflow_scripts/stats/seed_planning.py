"""Seed planning from the calibrated interval (stats/calibrated.py): how many seeds per arm
would give a target half-width (in expectation: `seeds_for_margin`), settle a test whose
estimate lies a margin from its threshold in a stated share of studies like it
(`seeds_for_assurance`), or detect a difference between two arms with a stated power
(`seeds_for_delta`). Every answer is the calibrated statistic of the variance terms rescaled
to n seeds by what each estimates (`terms_at`); the last two draw what n seeds would show
(decided_share). None where the examples alone keep the interval too wide.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special
from scipy.stats import qmc

from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import tail_calibration
from workflow_scripts.stats.bootstrap_inputs import as_block, check_open_unit, check_plan_targets
from workflow_scripts.stats.calibrated import half_width, mean_interval
from workflow_scripts.stats.variance_terms import (
    Term,
    arm_example_variance,
    sum_terms,
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


def _fewest_seeds(enough, low: int = 2) -> int | None:
    """Smallest n in [low, MAX_SEEDS] with enough(n), for enough monotone in n; else None.
    Galloping up from low, then bisecting: about 2 log2(n - low) calls, few for small n."""
    if not enough(MAX_SEEDS):
        return None
    below, step = low - 1, 1  # enough(below) is taken as false: n = below is out of range
    while below + step < MAX_SEEDS and not enough(below + step):
        below, step = below + step, 2 * step
    high = min(below + step, MAX_SEEDS)  # enough(high) holds
    while high - below > 1:
        mid = (below + high) // 2
        below, high = (below, mid) if enough(mid) else (mid, high)
    return high


# ---------------------------------------------------------------------------------------
# Assurance: the seeds that decide a test in a stated share of studies like this one
# ---------------------------------------------------------------------------------------
ASSURANCE = 0.8  # "n seeds settle it": decided at n in at least this share of studies
DRAWS = 1024  # Monte Carlo draws per planned n (scrambled Sobol, fixed seed: deterministic)
DRAW_SEED = 38  # the Sobol scramble's seed (any fixed value)


@dataclass(frozen=True)
class Assured:
    """A plan with its assurance: `seeds` the fewest seeds per arm at which the test is
    decided in at least `assurance` of studies like this one (None: no count up to
    MAX_SEEDS is); `share` the share decided at `seeds`, or with MAX_SEEDS where seeds is
    None; `at_margin` seeds_for_margin's count (None: the examples limit it)."""

    seeds: int | None
    share: float
    assurance: float
    at_margin: int | None


@functools.lru_cache(maxsize=8)
def _uniforms(dim: int) -> np.ndarray:
    """DRAWS x dim points in (0, 1), the same for every call (common random numbers: the
    share decided at n and at n + 1 differ by the plan, not by the draws)."""
    u = qmc.Sobol(dim, scramble=True, seed=DRAW_SEED).random(DRAWS)
    return np.clip(u, 1e-12, 1 - 1e-12)


EXACT_CHI2_DF = 200  # chi-square quantiles exact (and cached) up to here, Wilson-Hilferty above


@functools.lru_cache(maxsize=1024)
def _chi2(df: float, dim: int, column: int) -> np.ndarray:
    """chi-square(df) quantiles of column `column` of _uniforms(dim); 0 for df 0 (no new
    seeds' sum of squares). Above EXACT_CHI2_DF the Wilson-Hilferty cube (relative error
    below 1e-3 there), since the exact inverse costs a millisecond a call."""
    u = _uniforms(dim)[:, column]
    if not df > 0:
        return np.zeros_like(u)
    if df <= EXACT_CHI2_DF:
        return 2 * special.gammaincinv(df / 2, u)
    c = 2 / (9 * df)
    return df * (1 - c + special.ndtri(u) * math.sqrt(c)) ** 3


def decided_share(terms_n: Sequence[Term], seed_values: np.ndarray, distance: np.ndarray,
                  ci: float) -> float:
    """Share of draws in which the calibrated ci interval at n seeds excludes the threshold
    (`decisions`)."""
    return float(np.mean(decisions(terms_n, seed_values, distance, ci)))


def decisions(terms_n: Sequence[Term], seed_values: np.ndarray, distance: np.ndarray,
              ci: float) -> np.ndarray:
    """Per draw, whether the calibrated ci interval at n seeds excludes the threshold:
    terms_n the terms at n (terms_at: the example and residual terms as n seeds give them),
    seed_values [draws, seed terms] the seed terms' coef * ms drawn at n, distance [draws]
    the n-seed estimate's distance from the threshold. calibrated.total_variance and
    calibrated_df, vectorised over draws (tests/unit/stats/test_seed_planning.py checks them equal);
    the tail calibration's level depends on the example terms only, one per n."""
    arms = cal._seed_arms(terms_n)  # (M, r, df) per seed term; M is drawn here instead
    examples = cal._example_terms(terms_n)
    x = sum(t.coef * t.ms for t in examples)
    cap = min((t.df for t in examples), default=math.inf)
    no_charge = sum_terms(examples)[1] if examples else math.inf
    rule = tail_calibration.Reduced(min(a[2] for a in arms), no_charge, cap, 0.0)
    var, df = tail_calibration.plug_in_arms(list(seed_values.T), [a[1] for a in arms],
                                            [a[2] for a in arms], x, rule)
    level = tail_calibration.calibrated_level((1 - ci) / 2, cal.reduced(terms_n))
    if not level > 0:  # the seeds cannot support this level at n: never decided
        return np.zeros(len(seed_values), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.abs(distance) / np.sqrt(var)
    return special.stdtr(df, -stat) <= level


def _seed_parts(terms: Sequence[Term]) -> list[tuple[float, float, int, float]]:
    """Per seed term: (tau2, floor, S, df): tau2 = coef * ms * S, the variance one seed's
    metric adds to the estimate; floor = S r, the seed x example noise it holds at least."""
    arms = cal._seed_arms(terms)
    seeds = [t for t in terms if t.part == "seeds"]
    return [(m * t.seeds, r * t.seeds, t.seeds, df)
            for (m, r, df), t in zip(arms, seeds, strict=True)]


def seeds_for_assurance(terms: Sequence[Term], margin: float, ci: float = 0.95,
                        assurance: float = ASSURANCE) -> Assured:
    """Fewest seeds per random-seed arm at which a test whose estimate lies `margin` from its
    threshold is decided (its ci interval excludes the threshold) in at least `assurance` of
    studies like this one: the n-seed study keeps the seeds and examples it has and adds
    n - S seeds per arm. Per seed term, with S seeds, df k and observed tau2 (_seed_parts):

      true tau2      tau2 k / chi2_k, at least its residual floor (the seed variance is known
                     to k df: the fiducial / Jeffreys posterior)
      estimate       moves by (n - S) / n (mean of the new seeds - mean of the old), Z ~
                     N(0, tau2 (1 / S + 1 / (n - S))): the true effect is unknown (flat
                     prior), the example part is the same examples' and stays
      seed term      (S - 1) tau2_obs + tau2 chi2_{n - S - 1} + S (n - S) / n Z^2 over n - 1:
                     the n seeds' mean square, the old seeds' part known

    and the example and residual terms as terms_at gives them (hundreds of df: known). The
    share is over DRAWS fixed Sobol draws (decided_share): an average over the true effects
    the flat prior allows, not a promise at any one (docs/methods.md, "At a fixed effect").
    None where seeds_for_margin finds no n (the examples limit it: the looks stop there) or
    the share stays below `assurance` up to MAX_SEEDS (more seeds alone would not settle it
    reliably)."""
    check_open_unit("ci", ci)
    check_open_unit("assurance", assurance)
    at_margin = seeds_for_margin(terms, margin, ci)
    parts = _seed_parts(terms)
    if at_margin is None or not parts:
        return Assured(None, math.nan, assurance, at_margin)
    dim = 3 * len(parts)
    z = special.ndtri(_uniforms(dim)[:, 1::3])
    tau2 = np.column_stack([np.maximum(t2 * k / _chi2(k, dim, 3 * j), floor)
                            for j, (t2, floor, _, k) in enumerate(parts)])
    start = max(s for _, _, s, _ in parts) + 1  # decide.py asks for more seeds than now

    def share(n: int) -> float:
        seed_values, move = [], 0.0
        for j, (t2, _, s, _) in enumerate(parts):
            step = z[:, j] * np.sqrt(tau2[:, j] * (1 / s + 1 / (n - s)))
            ss = ((s - 1) * t2 + tau2[:, j] * _chi2(n - s - 1, dim, 3 * j + 2)
                  + s * (n - s) / n * step**2)
            seed_values.append(ss / (n - 1) / n)
            move = move + (n - s) / n * step
        return decided_share(terms_at(terms, n), np.column_stack(seed_values),
                             abs(margin) + move, ci)

    n = _fewest_seeds(lambda n: share(n) >= assurance, start)
    return Assured(n, share(n if n is not None else MAX_SEEDS), assurance, at_margin)


def power_at(terms: Sequence[Term], delta: float, n: int, alpha: float = 0.05) -> float:
    """Power of the calibrated two-sided level-alpha test at n seeds per arm against a true
    difference delta, for a fresh study of two arms with independent seeds on these examples
    whose components are the terms' (an unpaired comparison's: each arm's seed term, the
    example term of their difference, each arm's residual): per draw each seed mean square is
    its tau2 chi2_{n - 1} / (n - 1), the estimate delta + N(0, V_n) with V_n = sum tau2 / n +
    X - r (X - r: the arm x example interaction of the pair, which seeds do not shrink)."""
    parts = _seed_parts(terms)
    dim = len(parts) + 1
    tau2 = [max(t2, floor) for t2, floor, _, _ in parts]
    scaled = terms_at(terms, n)
    interaction = sum(t.coef * t.ms for t in scaled if t.part == "examples")  # X - r
    sd = math.sqrt(sum(tau2) / n + max(interaction, 0.0))
    seed_values = np.column_stack([t2 * _chi2(n - 1, dim, j) / (n - 1) / n
                                   for j, t2 in enumerate(tau2)])
    z = special.ndtri(_uniforms(dim)[:, -1])
    return decided_share(scaled, seed_values, abs(delta) + sd * z, 1 - alpha)


def seeds_for_delta(terms: Sequence[Term], delta: float, power: float = 0.8,
                    alpha: float = 0.05) -> int | None:
    """Fewest seeds per arm (at least 2) at which power_at reaches `power`; None where the
    arm x example interaction keeps it below at every count (more examples are needed)."""
    if not any(t.part == "seeds" for t in terms):
        return None
    return _fewest_seeds(lambda n: power_at(terms, delta, n, alpha) >= power)


def seeds_needed(scores, *, half_width: float | None = None, delta: float | None = None,
                 versus=None, power: float = 0.8, alpha: float = 0.05, ci: float = 0.95
                 ) -> dict[str, Any]:
    """Seeds for a target CI half-width and/or to detect delta, with the calibrated statistic.

    half_width: `seeds_for_margin` on the calibrated interval's terms (the planner the claims
    use): with n seeds on these E examples Var(mean) = v_seed / n + v_ex, v_seed = sigma2_seed
    + sigma2_residual / E, v_ex = sigma2_example / E; None if v_ex alone keeps it wider.
    delta: seeds per arm for this arm and `versus` (another arm's scores on the same
    examples) with independent seeds, two-sided level alpha, `power` (`seeds_for_delta` on
    their unpaired comparison's terms: the example main effects cancel, the arm x example
    interaction does not); None without `versus` (one arm cannot show the interaction) or
    where the interaction alone keeps the power below. half_width_now is the calibrated
    interval's at the seeds given; arm_example_sd (with versus) the sd over examples of the
    two arms' interaction, sqrt(E (X - r)).
    """
    check_plan_targets(half_width, delta, power=power, alpha=alpha, ci=ci)
    comp = variance_components(scores)
    n_s, n_e = as_block(scores, "scores").shape
    now = mean_interval(scores, ci=ci)
    out: dict[str, Any] = {
        "n_seeds": n_s, "n_examples": n_e, **comp,
        "half_width_now": (now.ci_high - now.ci_low) / 2,
        "seeds_for_half_width": None, "seeds_for_delta": None, "arm_example_sd": None,
    }
    if half_width is not None:
        out["seeds_for_half_width"] = seeds_for_margin(now.terms, half_width, ci)
    if delta is not None and versus is not None:
        out["arm_example_sd"] = math.sqrt(arm_example_variance(scores, versus))
        pair = cal.compare(scores, versus, design="unpaired", ci=1 - alpha)
        out["seeds_for_delta"] = seeds_for_delta(pair.terms, delta, power, alpha)
    return out
