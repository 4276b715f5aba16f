"""The seed noise of a one-seed arm, borrowed from the study's multi-seed arms.

One seed cannot estimate its own seed variance, so a comparison with a one-seed arm (the
single-baseline design, that arm fixed) leaves its seed's luck out of the interval: simulated
at 3 seeds vs 1 with a seed sd of 0.01, the 95% interval covered 44-82%. Under the stated
assumption that every arm of the study has the same seed variance (which cannot be checked
for the one-seed arm itself: claims/decide.py also decides with it doubled), that arm's seed
deviation has the variance the multi-seed arms show. The
terms returned here add it to calibrated.compare's variance (`borrowed=`):

  seed term      pooled over the arms with >= 2 seeds: the variance over seeds of the seed's
                 metric (mean over examples, averaged over benchmarks), weighted by its df
                 S_j - 1; coef 1 (one seed), df the sum of S_j - 1
  residual term  the pooled seed x example noise one seed's metric holds, sum over benchmarks
                 of MS_residual / (K^2 Q): the one seed's example scores already carry it into
                 the example term, so it is subtracted once (as for any seed term)

Without any arm of 2 seeds there is nothing to borrow: `borrowed_terms` returns [] and the
caller must say that the seed noise is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from workflow_scripts.stats.bootstrap_inputs import arm_blocks
from workflow_scripts.stats.variance_terms import Term, residual_ms

ARM = "one-seed arm (borrowed)"


def borrowed_terms(multi_seed_arms: Iterable) -> list[Term]:
    """The borrowed seed and residual terms (module docstring) from the scores of the study's
    arms, each an array [seeds, examples] (or [seeds, runs, examples]) or a mapping benchmark
    -> such arrays in the comparison's layout; arms with fewer than 2 seeds are skipped.
    [] when none has 2 seeds."""
    ms_sum = r_sum = df = 0.0
    n_arms = 0
    for scores in multi_seed_arms:
        _, blocks = arm_blocks(scores, "arm")
        seeds = blocks[0].shape[0]
        if seeds < 2:
            continue
        k = len(blocks)
        metric = np.mean([blk.mean(axis=1) for blk in blocks], axis=0)
        resid = sum(residual_ms(blk) / (k**2 * blk.shape[1]) for blk in blocks)
        ms_sum += (seeds - 1) * float(np.var(metric, ddof=1))
        r_sum += (seeds - 1) * resid
        df += seeds - 1
        n_arms += 1
    if not n_arms:
        return []
    name = f"seeds of the one-seed arm, borrowed from {n_arms} multi-seed arm(s)"
    return [Term(name, "seeds", 1.0, ms_sum / df, df, 1, ARM),
            Term("residual of the one-seed arm (borrowed)", "examples", -1.0, r_sum / df,
                 df, 1, ARM)]


def caveat(label: str, terms: list[Term], included: bool = True) -> str:
    """The assumption a row with a one-seed arm rests on: its seed noise borrowed (`terms`,
    included in the row's interval), unknown (no arm to borrow from), or left out
    (`included` False: a row that resamples no seeds, or a design that cannot add it)."""
    if terms and not included:
        return f"conditional on the one seed of {label}: its seed noise is not included"
    if not terms:
        return (f"seed noise of {label} unknown: one seed and no arm with 2 seeds; the interval "
                "is conditional on that one seed")
    return (f"seed noise of {label} borrowed: the pooled seed variance of the study's "
            f"multi-seed arms ({terms[0].df:g} df), assuming equal seed variances (not "
            "checkable for a one-seed arm)")
