"""How two arms are compared: the design their seeds allow, which side is fixed, the axes
resampled and whether a one-seed side borrows its seed noise (`choose`); and that borrowed
noise, pooled over the study's other arms (`borrowed_pool`). The stats stage and the claims
both call these, so a comparison has one interval wherever it is shown.

  paired           both arms have the same seeds: one array of differences
  single-baseline  a side has one seed: that side is fixed (`swap`: it is b, so the test is
                   (-b) - (-a) = b - a with -b fixed); a trained one-seed side beside an arm
                   of >= 2 seeds borrows its seed noise (borrowed_seeds.py), the untrained
                   base (one deterministic model) has none
  unpaired         else: one seed term per arm
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from workflow_scripts.stats import borrowed_seeds, intervals
from workflow_scripts.stats.variance_terms import Term

PAIRED, UNPAIRED, SINGLE_BASELINE = "paired", "unpaired", "single-baseline"


def _axes(*n_resampled_seeds: int) -> tuple[tuple[str, ...], ...]:
    return tuple(intervals.axes_for(*n_resampled_seeds))


@dataclass(frozen=True)
class Design:
    """A comparison's design (module docstring). axes: the resampling schemes its seeds
    allow, the joint one (the reported interval) first; borrow: a trained one-seed side's
    seed noise is borrowed (where the scheme resamples seeds)."""

    name: str
    swap: bool
    axes: tuple[tuple[str, ...], ...]  # intervals.axes_for of its random-seed sides
    borrow: bool

    def sides(self, a, b) -> tuple:
        """(a, b) as compare takes them: (-b, -a) where b is the fixed side (arrays, or
        mappings benchmark -> array)."""
        return (_negate(b), _negate(a)) if self.swap else (a, b)

    def seeds_kw(self, seeds_a: Sequence, seeds_b: Sequence) -> dict:
        """The seed ids compare takes: none where one side is fixed."""
        if self.name == SINGLE_BASELINE:
            return {}
        return {"seeds_a": tuple(seeds_a), "seeds_b": tuple(seeds_b)}


def _negate(scores):
    if isinstance(scores, Mapping):
        return {k: np.negative(v) for k, v in scores.items()}
    return np.negative(scores)


def choose(seeds_a: Sequence, seeds_b: Sequence, trained: tuple[bool, bool] = (True, True)
           ) -> Design:
    """The design of b - a from the arms' seed ids; trained[i]: side i is a trained model
    (a one-seed side that is not, the untrained base, carries no seed noise)."""
    if set(seeds_a) == set(seeds_b):
        return Design(PAIRED, False, _axes(len(seeds_a)), False)
    one = [len(s) == 1 and t for s, t in zip((seeds_a, seeds_b), trained, strict=True)]
    if len(seeds_a) == 1:  # a fixed
        return Design(SINGLE_BASELINE, False, _axes(len(seeds_b)),
                      one[0] and len(seeds_b) >= 2)
    if len(seeds_b) == 1:  # b fixed: compared as (-b) - (-a)
        return Design(SINGLE_BASELINE, True, _axes(len(seeds_a)), one[1])
    return Design(UNPAIRED, False, _axes(len(seeds_a), len(seeds_b)), False)


def borrowed_pool(seed_counts: Mapping[Hashable, int], compared: Collection[Hashable],
                  layout: Callable[[Hashable], object]) -> list[Term]:
    """A one-seed arm's borrowed seed terms (borrowed_seeds.borrowed_terms) for a comparison
    of the `compared` arms: pooled over the study's arms of >= 2 seeds (seed_counts: arm ->
    its seed count) other than those, each arm's scores in the comparison's layout
    (`layout(arm)`). The compared arms stay out: the other arm's seed mean square is already
    a term of the test, and pooling it again would count its df twice (df too high, p too
    small). [] when no other arm has 2 seeds."""
    return borrowed_seeds.borrowed_terms(layout(k) for k, n in seed_counts.items()
                                         if n >= 2 and k not in compared)
