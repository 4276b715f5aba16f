"""Small p-values that hold at few seeds: the calibrated test's p, calibrated over the seed
variance that 3 to 5 seeds cannot pin down.

Why: calibrated.py's t with calibrated degrees of freedom keeps a two-sided 95% interval
within 93-97%, but the claims compare p with much smaller levels (a one-sided 2.5%, Holm's
alpha / m, an early look's 0.004%). When the seed means of a 3-seed study happen to agree,
the seed mean square M is small, the df jump towards the example df and the statistic is
read as if seeds did not matter, exactly where 2 df cannot tell: at 3 seeds P(p <= 4.27e-5)
is 47-77x the level and P(p <= alpha / 12) 3.3-4.1x (exact integration below).

The method, a plug-in p calibrated over its nuisance (a parametric-bootstrap calibration done
by quadrature, Berger and Boos 1994 without the confidence restriction): in the Gaussian model
with one seed term (paired arms, single-baseline, a mean), the calibrated statistic is a
function of

  Z      the estimate's error, N(0, V), V = E[M] + E[X] - r
  M      the seed term, E[M] chi2_k / k, k = S - 1: the unknown E[M] >= r is the nuisance
  X      the example terms, E[X] chi2_f / f (f their Satterthwaite df: Q - 1 for one
         benchmark), E[X] = example variance + r
  r      the seed x example noise, known well ((S - 1)(Q - 1) df): taken as known

so, in units of r, its law depends on k, f, the fewest example df (the df's cap) and the ratio
rho = (E[X] - r) / r, all known well, and on E[M] alone otherwise. The calibrated p of an
observed plug-in p is G(p) = sup over E[M] >= r of P(plug-in p <= p): valid by construction
(P(G(p) <= a) <= a for every E[M] and every a, down to the smallest level a plan spends), and
close to p where the plug-in is nearly right. Reported p = max(p, G(p)), so the calibration
never makes a result look stronger than the t it starts from. The interval at level ci is the
calibrated test inverted, estimate +- t_df(1 - G^-1((1 - ci) / 2)) se, so interval and p agree.
G is tabulated once per (k, f, cap, rho bucket) over levels 1e-12..0.5 and cached; between
rho buckets the larger G is used (G varies slowly in rho: 47-77x over rho = 0.1..10 at
4.27e-5). With one seed df (an arm of 2 seeds), calibrated.py's two-seed rule is calibrated
the same way.

Several seed terms (unpaired arms, a borrowed seed term beside the random arm's) are
calibrated with the one-term table of their smallest df, r their residual noise summed
(calibrated.reduced): the worst split of the seed variance is that term carrying it, where the
statistic is the one-term one; exact_rates_arms checks it over both terms' seed variances
(`python -m validation.tail_levels_arms`). From 20 seeds in every term the plug-in already
holds at every level (calibrated.PLAIN_FROM_SEED_DF). Not calibrated here (p and interval as
calibrated.py gives them): a statistic with one axis resampled (then it is exactly Student's t,
or the example part alone, which has tens to hundreds of df).

Imports numpy, scipy and the standard library only. The plug-in is df_rule.variance_and_df, the
rule calibrated.py applies, with the rule a `Reduced` carries
(tests/unit/stats/test_tail_calibration.py checks the plug-in against calibrated.total_variance
and calibrated_df).
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special, stats

from workflow_scripts.stats import df_rule
from workflow_scripts.stats.df_rule import DEFAULT_RULE, DfRule, variance_and_df

__all__ = ["Reduced", "calibrated_level", "calibrated_p", "exact_rates", "exact_rates_arms",
           "plug_in", "plug_in_arms", "reject_rate"]

LOG10_LEVELS = np.linspace(-12.0, math.log10(0.5), 34)  # the tabulated levels, 3 per decade
SEED_NUISANCE = np.logspace(-0.3, 6.0, 20)  # E[M] / r: from half of r (r is estimated) up
RHO_STEP = 0.25  # rho buckets, in log10
RHO_RANGE = (-3.0, 4.0)  # log10 rho is clipped to this range before bucketing
# G within 2% of 72, 20 nodes, 43 nuisance points and 8 levels per decade, 0.07 s a table
SEED_NODES, EXAMPLE_NODES = 40, 8


@dataclass(frozen=True)
class Reduced:
    """What the statistic's law depends on (module docstring), from a result's terms."""

    k: float  # seed df
    f: float  # the example terms' Satterthwaite df
    cap: float  # the smallest example term's df
    rho: float  # (X - r) / r, the example variance in units of the seed x example noise
    rule: DfRule = DEFAULT_RULE  # the df rule whose plug-in p is calibrated


def plug_in(M, X, r, red: Reduced):
    """calibrated.total_variance and calibrated_df for one seed term M (holding r) and the
    example part X, vectorised over arrays (red: k, f, cap and the rule): the one-term case
    of plug_in_arms."""
    return plug_in_arms([M], [r], [red.k], X, red)


@functools.lru_cache(maxsize=512)
def _nodes(df: float, n: int, dense_low: bool) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature nodes of chi2_df / df (Gauss-Legendre on its probability scale; u = v^3
    puts nodes down to ~1e-11 where small seed terms make the rejections). Cached: a table
    asks for the same nodes at each of its seed nuisance points; read-only arrays, so the
    cache cannot be changed through them."""
    v, w = np.polynomial.legendre.leggauss(n)
    v, w = (v + 1) / 2, w / 2
    if dense_low:
        v, w = v**3, w * 3 * v**2
    nodes = stats.chi2.ppf(v, df) / df
    nodes.flags.writeable = w.flags.writeable = False
    return nodes, w


def reject_rate(levels, seed_ratio: float, red: Reduced,
                nodes: tuple[int, int] = (SEED_NODES, EXAMPLE_NODES)) -> np.ndarray:
    """P(one-sided plug-in p <= level) for each level when E[M] = seed_ratio r (r = 1):
    E over M and X of Phi(-t_df^-1(1 - level) sqrt(V_hat / V))."""
    levels = np.atleast_1d(np.asarray(levels, dtype=float))
    wm, pm = _nodes(red.k, nodes[0], True)
    wx, px = _nodes(red.f, nodes[1], False)
    ex = red.rho + 1.0
    m = seed_ratio * wm[:, None]
    x = ex * wx[None, :]
    var, df = plug_in(m, x, 1.0, red)
    scale = np.sqrt(var / (seed_ratio + ex - 1.0))
    # stdtrit is most of a table's time; a quarter of the nodes share a df (the df rule's cap
    # and floor), so each distinct df is inverted once
    distinct, where = np.unique(df, return_inverse=True)
    q = special.stdtrit(distinct[:, None], 1.0 - levels)[where.reshape(df.shape)]
    rate = special.ndtr(-q * scale[..., None])
    return np.einsum("i,j,ijl->l", pm, px, rate)


# A folder where processes share their tables (the test suite sets it for its workers and
# the workflows they start: each process would otherwise tabulate the same G again, 0.07 s
# a table). A table is a pure function of its arguments and of this code, so the file name
# is a hash of both: tables from other code are never read.
TABLE_FOLDER_ENV = "DEPTHLAB_TAIL_TABLES"
_CODE = hashlib.sha256(b"".join(
    Path(m.__file__).read_bytes() for m in (sys.modules[__name__], df_rule))).hexdigest()


@functools.lru_cache(maxsize=4096)  # 34 floats a table
def _table(k: float, f: float, cap: float, log10_rho: float, rule: DfRule) -> np.ndarray:
    """log10 G at LOG10_LEVELS (_tabulate), read from TABLE_FOLDER_ENV's folder where an
    earlier process left it."""
    folder = os.environ.get(TABLE_FOLDER_ENV)
    if not folder:
        return _tabulate(k, f, cap, log10_rho, rule)
    key = repr((k, f, cap, log10_rho, rule, _CODE)).encode()
    path = Path(folder) / f"{hashlib.sha256(key).hexdigest()[:40]}.npy"
    try:
        table = np.load(path)
        if table.shape == LOG10_LEVELS.shape:
            return table
    except (OSError, ValueError):  # not there yet, or unreadable: tabulate it again
        pass
    table = _tabulate(k, f, cap, log10_rho, rule)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, table)
    os.replace(tmp, path)  # whole or absent: another process may be reading
    return table


def _tabulate(k: float, f: float, cap: float, log10_rho: float, rule: DfRule) -> np.ndarray:
    """log10 G at LOG10_LEVELS: the largest rejection rate over the seed nuisance."""
    red = Reduced(k, f, cap, 10.0**log10_rho, rule)
    levels = 10.0**LOG10_LEVELS
    worst = levels.copy()  # E[M] -> infinity: the plug-in is Student's t_k, exact
    for ratio in SEED_NUISANCE:
        worst = np.maximum(worst, reject_rate(levels, ratio, red))
    worst = np.maximum.accumulate(np.minimum(worst, 1.0))  # G is a distribution function
    return np.log10(worst)


def _key(red: Reduced) -> tuple[float, float, float, list[float]]:
    """The table's arguments: f floored to a coarse grid, rho's two bucket edges."""
    f = float(min(red.f, 1e4))
    f = f if f <= 30 else float(30 * 2 ** math.floor(math.log2(f / 30)))  # floor: heavier
    lo, hi = RHO_RANGE
    x = min(max(math.log10(max(red.rho, 10.0**lo)), lo), hi)
    below = math.floor(x / RHO_STEP) * RHO_STEP
    return float(red.k), f, float(min(red.cap, 1e4)), sorted({below, below + RHO_STEP})


def _worst_table(red: Reduced) -> np.ndarray:
    k, f, cap, rhos = _key(red)
    return np.max([_table(k, f, cap, round(x, 6), red.rule) for x in rhos], axis=0)


def calibrated_p(p: float, red: Reduced | None) -> float:
    """max(p, G(p)): the one-sided plug-in p calibrated over the seed nuisance."""
    if red is None or not 0.0 <= p < 0.5:  # a t tail that underflows to 0 is calibrated too
        return float(p)
    table = _worst_table(red)
    x = math.log10(max(p, 10.0 ** LOG10_LEVELS[0]))
    return float(min(max(p, 10.0 ** np.interp(x, LOG10_LEVELS, table)), 1.0))


def calibrated_level(level: float, red: Reduced | None) -> float:
    """G^-1(level), at most level: the plug-in level whose calibrated p is `level` (the
    interval's t quantile is taken there); 0 where even the smallest p the seeds can show
    is calibrated above `level` (3 seeds at a look's 0.004%: the interval is unbounded)."""
    if red is None or not 0.0 < level < 0.5:
        return float(level)
    table = np.maximum(_worst_table(red), LOG10_LEVELS)
    x = math.log10(level)
    if x < table[0]:  # no plug-in level reaches it: the data cannot support this level
        return 0.0
    # table is nondecreasing; the smallest tabulated level whose G reaches `level`, linearly
    return float(min(level, 10.0 ** np.interp(x, table, LOG10_LEVELS)))


def exact_rates(level: float, seed_ratio: float, red: Reduced) -> tuple[float, float]:
    """(plug-in, reported) P(one-sided p <= level) in the Gaussian model when E[M] =
    seed_ratio r (r = 1, E[X] = rho + 1), by quadrature, with rho plugged in from X as the
    reported p does: what `python -m validation.tail_levels` and the tests check validity
    with. Finer nodes than the tables', so it also checks their grid."""
    n_seed, n_example = 64, 24
    plug = float(reject_rate(level, seed_ratio, red, (n_seed, n_example))[0])
    wm, pm = _nodes(red.k, n_seed, True)
    wx, px = _nodes(red.f, n_example, False)
    ex = red.rho + 1.0
    reported = 0.0
    for xj, pj in zip(wx, px, strict=True):  # the reported p's level depends on X seen
        x = ex * xj
        seen = Reduced(red.k, red.f, red.cap, x - 1.0, red.rule)
        var, df = plug_in(seed_ratio * wm, x, 1.0, seen)
        q = special.stdtrit(df, 1 - calibrated_level(level, seen))
        reported += pj * float(np.sum(pm * special.ndtr(-q * np.sqrt(var / (seed_ratio + ex
                                                                              - 1.0)))))
    return plug, reported


def plug_in_arms(ms, rs, ks, X, red: Reduced):
    """calibrated.total_variance and calibrated_df for several seed terms (unpaired arms, or
    a borrowed seed term beside the random arm's: ms, rs, ks per term, broadcastable arrays)
    and the example part X, vectorised; red gives f, cap and the rule."""
    return variance_and_df(ms, rs, ks, X, red.f, red.cap, red.rule)


def exact_rates_arms(levels, seed_ratios, rs, ks, red: Reduced,
                     nodes: tuple[int, int] = (48, 16), statistic=None, extra: float = 0.0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(plug-in, reported) P(one-sided p <= level) for each level, two seed terms, in the
    Gaussian model by quadrature: E[M_j] = seed_ratios[j] rs[j], sum(rs) = 1 (r = 1), E[X] =
    rho + 1; red.k is the seed df the reported p is calibrated with (calibrated.reduced)
    and rho is plugged in from X, as the reported p does. statistic: the plug-in's (var, df)
    function, plug_in_arms unless a bench compares another merge. extra: variance of the
    estimate no term estimates (a one-seed arm whose seed sd exceeds the pool's)."""
    statistic = statistic or plug_in_arms
    levels = np.atleast_1d(np.asarray(levels, dtype=float))
    (w1, p1), (w2, p2) = (_nodes(k, nodes[0], True) for k in ks)
    wx, px = _nodes(red.f, nodes[1], False)
    ms = [seed_ratios[0] * rs[0] * w1[:, None], seed_ratios[1] * rs[1] * w2[None, :]]
    weight = p1[:, None] * p2[None, :]
    v_true = seed_ratios[0] * rs[0] + seed_ratios[1] * rs[1] + red.rho + extra
    plug = np.zeros(len(levels))
    reported = np.zeros(len(levels))
    for xj, pj in zip(wx, px, strict=True):
        x = (red.rho + 1.0) * xj
        seen = Reduced(red.k, red.f, red.cap, x - 1.0, red.rule)
        var, df = statistic(ms, list(rs), list(ks), x, seen)
        scale = np.sqrt(var / v_true)[..., None]
        cal_levels = np.array([calibrated_level(a, seen) for a in levels])
        for out, at in ((plug, levels), (reported, cal_levels)):
            q = special.stdtrit(df[..., None], 1.0 - at)
            out += pj * np.einsum("ij,ijl->l", weight, special.ndtr(-q * scale))
    return plug, reported
