"""The calibrated interval's variance estimate and degrees of freedom from its mean squares:
the df rule, one implementation, vectorised, with its constants a value (`DfRule`).

calibrated.py applies it to one result's terms, tail_calibration.py and seed_planning.py to
arrays of drawn mean squares, and a validation study that tries another rule passes another
`DfRule` (calibrated.py's module docstring has the reasoning behind the rule and its
constants; docs/methods.md their validation).

Inputs, per seed term j: M_j (coef * ms of the seed term), r_j (the seed x example noise it
holds, a positive variance) and k_j (its df); X the example terms' sum, f their
Satterthwaite df (the df where no seed charge is left) and cap the smallest example term's
df (the df's ceiling):

  V_hat = X + sum_j (max(M_j, c r_j) - r_j), at least sum_j M_j and c X (and 0)
  charge_j = max(M_j - kappa r_j, 0)
  df = df_seed V_hat / sum_j charge_j      df_seed: each term's k_j over its share of the
                                           charge, the smallest, at least min k_j
  with an arm of 2 seeds (some k_j < 2): kappa, c = two_kappa, two_floor, df_seed = 1 and
  df = (w1 - w0) / (share - w0), share = sum_j charge_j / V_hat (infinite at share <= w0)
  df is at least df_seed and at most cap; f where no charge is left.

Imports numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_RULE", "MERGES", "DfRule", "merged_seed_df", "variance_and_df"]


@dataclass(frozen=True)
class DfRule:
    """The df rule's constants (module docstring)."""

    kappa: float  # the share of the residual noise the seed charge leaves out
    floor: float  # c: a seed term counts as at least c times the residual noise it holds
    two_kappa: float  # kappa with an arm of 2 seeds (1 seed df)
    two_floor: float  # c with an arm of 2 seeds
    w0: float  # at 1 seed df: the seed share at and below which df is infinite
    w1: float  # at 1 seed df: the seed share from which df is 1 (t_1)
    # several seed terms' df: "share" (each term's df over its share of the charge, the
    # smallest) or "welch" (Welch 1947 on the charges: the reference, which lets the df grow
    # past an arm's own where that arm carries most of the charge)
    merge: str = "share"

    def __post_init__(self):
        if self.merge not in MERGES:
            raise ValueError(f"unknown merge {self.merge!r}; expected one of {MERGES}")


MERGES = ("share", "welch")
DEFAULT_RULE = DfRule(kappa=0.1, floor=0.5, two_kappa=0.0, two_floor=0.1, w0=0.1, w1=0.3)


def variance_and_df(ms: Sequence, rs: Sequence, ks: Sequence[float], x, f: float, cap: float,
                    rule: DfRule = DEFAULT_RULE) -> tuple[np.ndarray, np.ndarray]:
    """(V_hat, df) of the module docstring; ms, rs per seed term and x broadcastable arrays
    (or floats), ks per seed term numbers. No seed term: V_hat = max(x, 0), df = f."""
    ks = [float(k) for k in ks]
    two = bool(ks) and min(ks) < 2
    c = rule.two_floor if two else rule.floor
    kappa = rule.two_kappa if two else rule.kappa
    var = x + sum(np.maximum(m, c * r) - r for m, r in zip(ms, rs, strict=True))
    var = np.maximum(np.maximum(var, sum(ms)), np.maximum(c * x, 0.0))
    if not ks:
        return var, np.full(np.shape(var), f, dtype=float)
    charges = [np.maximum(m - kappa * r, 0.0) * np.ones_like(var)
               for m, r in zip(ms, rs, strict=True)]
    total = sum(charges)
    with np.errstate(divide="ignore", invalid="ignore"):
        if two:  # the 2-seed arm's 1 df, whatever the other arms'
            df_seed = np.ones_like(var)
            excess = total / var - rule.w0
            df = np.where(excess > 0, df_seed * (rule.w1 - rule.w0) / excess, np.inf)
        else:
            df_seed = merged_seed_df(charges, ks, rule.merge)
            df = df_seed * var / total
    return var, np.where(total > 0, np.minimum(np.maximum(df, df_seed), cap), f)


def merged_seed_df(charges: Sequence, ks: Sequence[float], merge: str = "share"):
    """The seed df of several seed terms' charges (arrays), at least the smallest df.
    "share": the smallest over terms of its df divided by its share of the charge (an arm
    carrying the charge alone keeps its own df; equal charges of 3-seed arms give 4, the
    pooled df); "welch": sum^2 / sum(charge^2 / (df + 2)) - 2 (Welch 1947). Why not Welch:
    its df grow past an arm's own when that arm carries most but not all of the charge (2.8
    for two 3-seed arms at a 10:1 split; the share rule 2.2), so the p calibrated with the
    smallest df is above its level where the arms' seed variances differ (docs/methods.md,
    `python -m validation.tail_levels_arms`); at unequal counts Welch's df grow when a
    3-seed arm happens to look calm (3 vs 20 seeds cover 91.2%)."""
    charges = [np.asarray(ch, dtype=float) for ch in charges]
    total = sum(charges)
    with np.errstate(divide="ignore", invalid="ignore"):
        if merge == "welch":
            denom = sum(np.square(ch) / (k + 2) for ch, k in zip(charges, ks, strict=True))
            return np.maximum(np.square(total) / denom - 2, min(ks))
        return np.maximum(np.min([np.where(ch > 0, k * total / ch, np.inf)
                                  for ch, k in zip(charges, ks, strict=True)], axis=0),
                          min(ks))
