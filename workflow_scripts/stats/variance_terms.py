"""The variance of an estimate over seeds x examples as mean squares (`Term`s), and the
variance components of one arm.

The model, per arm and benchmark: score[s, e] = mu + seed[s] + example[e] + residual[s, e]
(two-way crossed random effects; runs of one seed are averaged first). The estimate is the
sum over arms of sign * (unweighted mean over benchmarks of the grand mean); its variance
sigma2_seed / S + sigma2_example / Q + sigma2_residual / (S Q) (one [S, Q] array) is
estimated from three kinds of mean squares:

  seed term     per arm whose seeds are random: var over seeds of the seed's metric / S
                (the seed's metric = its mean over examples, averaged over benchmarks);
                M estimates sigma2_seed / S + r: it holds the seed x example noise r too
  example term  per benchmark: var over examples of the signed sum of the arms' seed-means,
                / (K^2 Q); X estimates sigma2_example / Q + r (always >= 0, Q - 1 df)
  residual term per random-seed arm and benchmark: MS_residual / (K^2 Q S) = r, the seed x
                example noise, with (S - 1)(Q - 1) df: known well (a negative coef)

Paired arms are one array of differences; single-baseline has no seed term for its fixed
model; unpaired arms have one seed term each; a mapping of benchmarks is the stratified mean
with one seed axis shared by all benchmarks. resample=("seeds",) keeps the seed terms only
(examples fixed), ("examples",) the example terms only (seeds fixed). How the terms combine
into the interval: calibrated.py. `satterthwaite` and `welch` are the textbook combinations,
the references the validation studies print beside it.

Imports numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workflow_scripts.stats.bootstrap_engine import Arm
from workflow_scripts.stats.bootstrap_inputs import AXES, as_block

__all__ = ["Term", "arm_example_variance", "residual_ms", "satterthwaite", "sum_terms",
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
    arm: str = ""  # the arm whose seeds a seed or residual term belongs to


def residual_ms(x: np.ndarray) -> float:
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
                              float(np.var(metric, ddof=1)), n - 1, n, arm.name))
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
                                  -1 / (n_bench**2 * q * s), residual_ms(blk),
                                  (s - 1) * (q - 1), s, arm.name))
    return terms


def sum_terms(terms: Sequence[Term]) -> tuple[float, float]:
    """sum(coef * ms) and its Satterthwaite df, sum^2 / sum((coef * ms)^2 / df)."""
    var = sum(t.coef * t.ms for t in terms)
    denom = sum((t.coef * t.ms) ** 2 / t.df for t in terms)
    return var, (var**2 / denom if denom > 0 else math.inf)


def satterthwaite(terms: Sequence[Term]) -> tuple[float, float]:
    """(variance estimate, Satterthwaite df): the textbook plug-in t interval's ingredients
    (seed terms + example part with the residual subtracted, clipped at 0), the reference
    `python -m validation.coverage` prints beside the calibrated one. When the example part
    nearly cancels, the formula's df collapses towards 0 (its terms are large, their net
    tiny); the df is kept at least the seed terms' smallest."""
    seeds = sum(t.coef * t.ms for t in terms if t.part == "seeds")
    examples = sum(t.coef * t.ms for t in terms if t.part == "examples")
    var = float(seeds + max(examples, 0.0))
    _, df = sum_terms([t for t in terms if t.part == "seeds" or examples > 0])
    seed_dfs = [t.df for t in terms if t.part == "seeds"]
    return var, max(df, min(seed_dfs)) if seed_dfs else df


def _welch_df(values: Sequence[float], dfs: Sequence[float]) -> float:
    """Welch's (1947) df of a sum of independent variance estimates: sum^2 / sum(v^2 /
    (df + 2)) - 2, at least the smallest df; all zero: the largest df (any gives 0)."""
    var = sum(values)
    denom = sum(v**2 / (d + 2) for v, d in zip(values, dfs, strict=True))
    return max(var**2 / denom - 2, min(dfs)) if denom > 0 else max(dfs)


def welch(terms: Sequence[Term]) -> list[Term]:
    """The seed terms of several arms (unpaired) merged into one, with the df of Welch (1947):
    sum^2 / sum((coef * ms)^2 / (df + 2)) - 2: the textbook merge, the reference
    `python -m validation.coverage_edges` prints; the calibrated df merge the arms by their
    shares (df_rule.merged_seed_df)."""
    seeds = [t for t in terms if t.part == "seeds"]
    if len(seeds) < 2:
        return list(terms)
    values = [t.coef * t.ms for t in seeds]
    merged = Term("seeds of all arms (Welch)", "seeds", 1.0, sum(values),
                  _welch_df(values, [t.df for t in seeds]))
    return [merged, *(t for t in terms if t.part != "seeds")]


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
    ms_res = residual_ms(x)
    return {
        "sigma2_seed": max(0.0, (ms_seed - ms_res) / n_e),
        "sigma2_example": max(0.0, (ms_ex - ms_res) / n_s),
        "sigma2_residual": ms_res,
    }


def arm_example_variance(a, b) -> float:
    """The arm x example interaction of two arms' [seeds, examples] scores on the same
    examples (runs averaged), per example: the variance over examples of their seed-mean
    difference less the seed x example noise it holds (MS_residual / S per arm), clipped at
    0. Example main effects cancel in the difference; this part does not, and more seeds do
    not shrink it (seed_planning.seeds_for_delta)."""
    x, y = as_block(a, "a"), as_block(b, "b")
    if x.shape[1] != y.shape[1] or min(x.shape[0], y.shape[0]) < 2:
        raise ValueError("the arm x example variance needs two arms of at least 2 seeds on the "
                         f"same examples; got {x.shape} and {y.shape}")
    diff = x.mean(axis=0) - y.mean(axis=0)
    noise = residual_ms(x) / x.shape[0] + residual_ms(y) / y.shape[0]
    return max(float(np.var(diff, ddof=1)) - noise, 0.0)
