"""Seeds on demand: group-sequential levels that hold a claim's error rate across looks.

A user who adds seeds after looking at the claims, and looks again, tests the same claim
several times: deciding each look at level alpha inflates the false-decision rate (optional
stopping; `python -m validation.sequential` measures it). Here the looks are planned (look_plan.py's
`plan_looks`: the seed counts at which the claims are decided) and each look k gets a nominal
one-sided level `look_alphas(...)[k]`: a member is "supported" at look k when its calibrated
one-sided p_support <= that level, "refuted" when p_refute <= the same level, else the claim
may get more seeds. The overall one-sided error of each side stays <= alpha across all the
looks:

  spending       alpha*(t), the error spent by information fraction t = n_k / n_max (seed
                 counts), Lan & DeMets (1983): "obrien-fleming" 2 - 2 Phi(z_{1-alpha/2} /
                 sqrt(t)) (O'Brien & Fleming 1979: almost nothing early, nearly alpha at the
                 end), "pocock" alpha ln(1 + (e - 1) t) (Pocock 1977: about even), or
                 "bonferroni" alpha / K at each of the K looks
  boundary       how look k's level follows from the spending:
    "union"      (the default) its increment alpha*(t_k) - alpha*(t_{k-1}): by the union
                 bound the chance of any false decision is <= their sum, alpha, whatever
                 the correlation between looks
    "normal"     the group-sequential boundary (Jennison & Turnbull 2000, ch. 7 and 19):
                 c_k with P(Z_1 < c_1, ..., Z_{k-1} < c_{k-1}, Z_k >= c_k) = the increment,
                 Z_k the cumulative statistics with corr(Z_j, Z_k) = sqrt(n_j / n_k)
                 (recursive numerical integration), as the nominal level 1 - Phi(c_k) that
                 each look's t test (its own df) uses (J&T 2000, 3.8)
    "t"          the levels at which the sequential one-sample t test of the seeds (df
                 n_k - 1) spends exactly the increments (Jennison & Turnbull 1991), from
                 T_PATHS simulated paths with a fixed generator
  min_decide     looks with fewer seeds only add seeds: level 0, nothing spent; the first
                 deciding look spends alpha*(t) of its fraction (default 2: every look
                 decides; the last look always decides)

Why "union": the two exact boundaries test later looks at up to 2.7 times the increment
(3 -> 10 seeds, O'Brien-Fleming: 1.66-1.87% at the last look against 0.69%), which needs
p-values right far in the tail at the early looks. The calibrated t at 3-4 seeds is not:
where seeds carry most of the variance, P(p <= 0.1%) is 0.2-0.6% (its df grow when the seed
means happen to agree). Simulated end to end (validation/sequential.py, docs/methods.md), with
O'Brien-Fleming spending and alpha = 2.5%, the false "supported" rate where seeds matter
reached 2.6-3.4% with the normal boundary and 2.4-3.1% with the t one; the union bound's
slack absorbs the early looks' excess (1.4-2.7%, the top at 3 -> 4 seeds where the fixed
design at 4 seeds itself has 2.8%). With one look per seed the price is power: at 3 -> 10
seeds, 41-51% where the fixed design at 10 seeds has 60-70% (an effect of 2.5 of its standard
errors), with 8-9 seeds on average, since the last look keeps only alpha - alpha*(9/10) =
0.69%.

Few looks: the union levels are the increments, so a plan with few looks keeps most of alpha
for its last one: `plan_looks(3, 10, looks=[3, 6, 10])` (look_plan.py) tests at 0.004%, 0.38%
and 2.12%, nearly the fixed test at the maximum. Simulated at 3 -> 10 (docs/methods.md), its
false "supported" rate is 1.9-2.5% (the fixed design at 10: 2.2-2.5%), its power 57-67% where
the fixed design's is 60-70% (2.5 sd) and 94-98% against 95-98% (4 sd), with 8.4-9.6 and
6.0-8.8 seeds on average instead of 10. Not where the first look is half the budget: at 3 -> 6
its 0.15% meets the calibrated p's heavy tail at 3 seeds and few looks reach 2.7-2.9% where
seeds dominate (3/5/8 and 3/6/9 hold it: 2.3-2.6%). So one look per seed stays the default
(valid with a margin everywhere) and three looks, the first at most about 3/8 of the budget,
the recommendation.

The other rules: validation/sequential.py also simulates deciding only from 4 or 5 seeds
(min_decide), the exact boundaries from there, the t boundary on p-values with the seed df, and
Pocock, each with one look per seed. The best of them, the t boundary from 4 seeds, gets 54%
where the default gets 41% (seeds dominate, 3 -> 10, 2.5 sd), but its false "supported" rate
where seeds dominate is 2.58-2.69% (20,000 studies per cell; the fixed design's own
2.52-2.59%): at the edge of alpha, not clearly below it. No rule that spends alpha exactly can
sit clearly below it there, since the calibrated test itself runs at about alpha; the union
bound's slack is the margin. The seed-df p holds alpha but loses most power where the examples
dominate. The default's cost against the fixed design of equal power (the smallest fixed seed
count with at least its power): at 2.5 sd it uses more seeds on average (3 -> 10, seeds
dominate: 9.1 against a fixed 7), at 4 sd about as many (7.9 against 8); the t boundary from 4
uses fewer (9.0 and 7.6 against 10). boundary="t", min_decide=4 is there for a user who accepts
alpha's edge for the seeds; at 3 -> 10 the union bound with few looks has more power (57%)
at a lower rate (2.50%).

Why seed counts as information: the estimate's variance at n seeds is v_seed / n + v_ex, and
the looks share their examples and their first seeds, so corr(Z_j, Z_k) = sqrt(Var_k / Var_j)
>= sqrt(n_j / n_k), equal only when the examples add nothing. Where the examples dominate,
information barely grows with seeds and the looks are more correlated than assumed; by
Slepian's inequality more correlation lowers the chance of crossing any of fixed boundaries,
so seed-count boundaries are conservative there (the union bound ignores correlation anyway).
validation/sequential.py measures the correlation of the first and last look: 0.94 where the
examples dominate, against sqrt(3 / 10) = 0.55 from seed counts.

The refute side is the mirror test (p_refute = 1 - p_support for the t), so it is controlled at
alpha by the same levels under delta >= threshold; stopping a claim at one side only removes
paths from the other. A family (intersection-union) may bank its members' supports across looks:
a false "supported" claim needs its false member to cross at some look (<= alpha). Holm on the
refute side keeps its error with the union-bound levels (each look's Holm at its increment).

Imports numpy and scipy only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

# The looks' plan is look_plan.py's (pure Python: the config check runs it when the
# Snakefile is parsed, without numpy and scipy).
from workflow_scripts.stats.look_plan import MIN_SEEDS, check_int, check_looks

SPENDINGS = ("obrien-fleming", "pocock", "bonferroni")
_GRID = 401  # points of the integration grid per look (Simpson; odd)
_SPAN = 8.0  # the grid reaches this many standard deviations below the boundary


@dataclass(frozen=True)
class Look:
    """One planned look: its seed count, information fraction n / n_max, the error spent up
    to it (cumulative) and at it (increment), its nominal one-sided level and z boundary."""

    look: int  # 0-based
    seeds: int
    fraction: float
    spent: float
    increment: float
    level: float
    z: float


def _check_alpha(alpha) -> float:
    a = float(alpha)
    if not 0 < a < 0.5:
        raise ValueError(f"alpha (one-sided) must lie in (0, 0.5); got {alpha!r}")
    return a


def _check_spending(spending: str) -> str:
    if spending not in SPENDINGS:
        raise ValueError(f"unknown spending {spending!r}; expected one of {SPENDINGS}")
    return spending


def spent(fraction: float, alpha: float, spending: str = "obrien-fleming") -> float:
    """alpha*(t): the one-sided error spent up to information fraction t in [0, 1]
    (module docstring); 0 at t = 0, alpha at t = 1, increasing. "bonferroni" has no
    function of t (it splits by looks): use look_alphas."""
    alpha, spending = _check_alpha(alpha), _check_spending(spending)
    t = float(fraction)
    if not 0 <= t <= 1:
        raise ValueError(f"information fraction must lie in [0, 1]; got {fraction!r}")
    if spending == "bonferroni":
        raise ValueError("bonferroni splits alpha by looks, not by information: use look_alphas")
    if t == 0:
        return 0.0
    if spending == "pocock":
        return alpha * math.log1p((math.e - 1) * t)
    z = special.ndtri(1 - alpha / 2)
    return float(min(alpha, 2 * special.ndtr(-z / math.sqrt(t))))


def _simpson(n: int) -> np.ndarray:
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w / 3


def _exact_z(fractions: Sequence[float], increments: Sequence[float]) -> list[float]:
    """z boundaries c_k of the one-sided group-sequential test (upper boundary only, no
    futility stop): P(no crossing before k, Z_k >= c_k) = increments[k] under the null, for
    the canonical joint distribution (independent increments of S_k = Z_k sqrt(t_k)).
    Recursive numerical integration of the continuation sub-density (Jennison & Turnbull
    2000, ch. 19), Simpson's rule on _GRID points from _SPAN sd below the boundary."""
    zs: list[float] = []
    grid = mass = np.zeros(0)  # S_{k-1}'s grid below its boundary, sub-density x weights
    for k, (t, inc) in enumerate(zip(fractions, increments, strict=True)):
        sd = math.sqrt(t - fractions[k - 1]) if k else math.sqrt(t)
        if inc <= 0:
            c = math.inf
        elif k == 0:
            c = float(-special.ndtri(inc))
        else:
            def excess(b, g=grid, m=mass, sd=sd, inc=inc):  # P(no earlier crossing, S_k >= b)
                return float(np.sum(m * special.ndtr((g - b) / sd))) - inc

            hi = 40.0 * math.sqrt(t)
            c = optimize.brentq(excess, -hi, hi, xtol=1e-12) / math.sqrt(t)
        zs.append(c)
        if k == len(fractions) - 1:
            break
        # The sub-density of S_k below its boundary, on a fresh grid.
        top = c * math.sqrt(t) if math.isfinite(c) else _SPAN * math.sqrt(t)
        new = np.linspace(min(top, 0.0) - _SPAN * math.sqrt(t), top, _GRID)
        if k == 0:
            dens = np.exp(-new**2 / (2 * t)) / math.sqrt(2 * math.pi * t)
        else:
            kernel = np.exp(-((new[:, None] - grid[None, :]) / sd) ** 2 / 2) / (
                math.sqrt(2 * math.pi) * sd)
            dens = kernel @ mass
        grid, mass = new, dens * _simpson(_GRID) * (new[1] - new[0])
    return zs


def t_levels(looks: Sequence[int], increments: Sequence[float], paths: int,
              seed: int) -> list[float]:
    """Nominal levels a_k at which the sequential one-sample t test of n_k normal seed values
    (df n_k - 1: the calibrated statistic where seeds carry all the variance) spends exactly
    the increments: P(p_j > a_j for j < k, p_k <= a_k) = increments[k] under the null
    (Jennison & Turnbull 1991 compute these by integration; here `paths` simulated paths of
    the sufficient statistics, a fixed generator). Never below the increment: the union
    bound's level is always valid."""
    rng = np.random.default_rng(seed)
    total = np.zeros(paths)  # sum of the seed values so far
    ss = np.zeros(paths)  # their sum of squares about their mean
    alive = np.ones(paths, bool)
    levels, before = [], 0
    for n, inc in zip(looks, increments, strict=True):
        new = n - before
        block = rng.standard_normal(paths) * math.sqrt(new)  # the new seeds' sum
        inner = rng.chisquare(new - 1, paths) if new > 1 else 0.0  # their own SS
        if before:  # merge two groups' sums of squares (their means differ)
            ss += inner + before * new / n * (total / before - block / new) ** 2
        else:
            ss = inner
        total += block
        t = (total / n) / np.sqrt(ss / ((n - 1) * n))
        p = special.stdtr(n - 1, -t)
        if not levels:
            level = inc  # the first look's t is exact at its increment
        else:
            count = int(round(inc * paths))
            candidates = p[alive]
            level = (float(np.partition(candidates, count - 1)[count - 1])
                     if 0 < count <= len(candidates) else inc)  # the count-th smallest
        level = max(level, inc)
        levels.append(level)
        alive &= p > level
        before = n
    return levels


BOUNDARIES = ("union", "normal", "t")
T_PATHS, T_SEED = 1_000_000, 20260  # the simulated paths of the "t" boundary
MIN_DECIDE = MIN_SEEDS  # looks with fewer seeds only add seeds (level 0)


@functools.lru_cache(maxsize=64)
def _levels(looks: tuple[int, ...], alpha: float, spending: str, boundary: str,
            t_paths: int, min_decide: int
            ) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """(cumulative, increments, levels), cached: the claims stage asks once per look. Looks
    before min_decide seeds spend nothing (level 0); the last look always decides."""
    skip = min(sum(n < min_decide for n in looks), len(looks) - 1)
    decide = looks[skip:]
    fractions = [n / looks[-1] for n in decide]
    if spending == "bonferroni":
        cumulative = [alpha * (k + 1) / len(decide) for k in range(len(decide))]
    else:
        cumulative = [spent(t, alpha, spending) for t in fractions]
        cumulative[-1] = alpha  # exactly, whatever the rounding
    increments = [c - p for c, p in zip(cumulative, [0.0, *cumulative[:-1]], strict=True)]
    if spending == "bonferroni" or len(decide) == 1:  # the plain split: never refined
        levels = list(increments)
    elif boundary == "normal":
        levels = [float(special.ndtr(-z)) for z in _exact_z(fractions, increments)]
    elif boundary == "t":
        levels = t_levels(decide, increments, t_paths, T_SEED)
    else:
        levels = list(increments)
    zero = (0.0,) * skip
    return zero + tuple(cumulative), zero + tuple(increments), zero + tuple(levels)


def boundaries(seeds_per_look: Sequence[int], alpha: float,
               spending: str = "obrien-fleming", *, boundary: str = "union",
               min_decide: int = MIN_DECIDE, t_paths: int = T_PATHS) -> list[Look]:
    """Every look of the plan with its spent error, nominal level and z boundary (the module
    docstring; `look_alphas` returns the levels alone)."""
    looks, alpha = check_looks(seeds_per_look), _check_alpha(alpha)
    spending = _check_spending(spending)
    if boundary not in BOUNDARIES:
        raise ValueError(f"unknown boundary {boundary!r}; expected one of {BOUNDARIES}")
    if check_int("t_paths", t_paths) < 10_000:
        raise ValueError(f"t_paths must be at least 10000 simulated paths; got {t_paths}")
    if check_int("min_decide", min_decide) < MIN_SEEDS:
        raise ValueError(f"min_decide must be at least {MIN_SEEDS} seeds; got {min_decide}")
    cumulative, increments, levels = _levels(tuple(looks), alpha, spending, boundary,
                                             int(t_paths), int(min_decide))
    fractions = [n / looks[-1] for n in looks]
    zs = [float(-special.ndtri(a)) if a > 0 else math.inf for a in levels]
    return [Look(k, n, t, s, i, a, z) for k, (n, t, s, i, a, z) in enumerate(
        zip(looks, fractions, cumulative, increments, levels, zs, strict=True))]


def look_alphas(seeds_per_look: Sequence[int], alpha: float,
                spending: str = "obrien-fleming", *, boundary: str = "union",
                min_decide: int = MIN_DECIDE, t_paths: int = T_PATHS) -> list[float]:
    """The nominal one-sided level of each look: at look k a member is supported when its
    p_support <= look_alphas[k], refuted when its p_refute <= the same level; each side's
    overall error across the looks stays <= alpha (module docstring). A level of 0 (a look
    before min_decide) decides nothing, not even a p of exactly 0."""
    return [b.level for b in boundaries(seeds_per_look, alpha, spending, boundary=boundary,
                                        min_decide=min_decide, t_paths=t_paths)]


def t_critical(level: float, df: float) -> float:
    """The calibrated t statistic (estimate - threshold) / se a look must reach at its
    nominal one-sided level with its own df: p_support <= level exactly when t >= this."""
    if not 0 <= float(level) < 1:
        raise ValueError(f"level must lie in [0, 1); got {level!r}")
    if not float(df) > 0:
        raise ValueError(f"df must be positive; got {df!r}")
    return math.inf if level == 0 else float(special.stdtrit(float(df), 1 - float(level)))
