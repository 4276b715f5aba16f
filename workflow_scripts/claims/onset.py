"""Onset claims: where a learning curve's decline begins, read from the curves stage's tables
(results/<study>/stats/curves_onset.parquet and curves_onset_dist.parquet, biencoder/curves.py).

The onset is the last step before the metric first falls more than stats.onset_epsilon below
its running best; its bootstrap distribution over the step grid (the onset recomputed in
every Multi-Bootstrap sample of seeds x queries, "none" where a sample never declines) is
what a test reads. Each test names a region of the grid ∪ {none}:

  after X      a decline that begins at or after step X: onset >= X
  before X     a decline that begins before step X: onset < X
  no_decline   no onset: the curve stays within epsilon of its running best

p_support is the bootstrap share outside the region and p_refute the share inside it (each
+1 over nboot + 1, so neither is 0), as the latency ratio's bootstrap p-values
(claims/latency.py).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from workflow_scripts.claims.data import Data, MissingInput
from workflow_scripts.claims.spec import Member
from workflow_scripts.core import notation


def _one(table: pd.DataFrame, m: Member, what: str) -> pd.DataFrame:
    recipe, strategy, depth = m.b
    rows = table[(table["metric"] == m.metric) & (table["recipe"] == recipe)
                 & (table["strategy"] == strategy) & (table["depth"] == depth)
                 & (table["benchmark"] == m.benchmark)]
    if rows.empty:
        raise MissingInput(f"{what} has no row for {m.label} ({m.metric})")
    return rows


def in_region(test: str, step: float, onset: np.ndarray) -> np.ndarray:
    """Whether each onset step (NaN: no onset) lies in the test's region."""
    onset = np.asarray(onset, dtype=np.float64)
    found = np.isfinite(onset)
    if test == "no_decline":
        return ~found
    with np.errstate(invalid="ignore"):
        return found & (onset >= step if test == "after" else onset < step)


def decide_onset(m: Member, data: Data) -> dict:
    """An onset member's estimate (the onset step; NaN: none), interval and p-values."""
    onset = _one(data.onsets, m, "curves_onset.parquet").iloc[0]
    dist = _one(data.onset_dist, m, "curves_onset_dist.parquet")
    nboot = int(onset["nboot"])
    inside = float(dist.loc[in_region(m.test, m.threshold or 0.0,
                                      dist["onset_step"].to_numpy()), "share"].sum())
    count = round(inside * nboot)
    p_support = (nboot - count + 1) / (nboot + 1)
    p_refute = (count + 1) / (nboot + 1)
    best = float(onset["best_step"])
    # The distribution lists every step of the grid (share 0 included): its last step is
    # where the forest plot's onset axis ends.
    grid = dist["onset_step"].to_numpy(dtype=float)
    last = float(np.nanmax(grid)) if np.isfinite(grid).any() else math.nan
    return {"interval": str(onset["interval"]), "design": "steps paired by seed",
            "resample": str(onset["resample"]), "ci": float(onset["ci"]),
            "estimate": float(onset["onset_step"]), "ci_low": float(onset["onset_ci_low"]),
            "ci_high": float(onset["onset_ci_high"]), "mb_ci_low": math.nan,
            "mb_ci_high": math.nan, "p_support": p_support, "p_refute": p_refute,
            "last_step": last,
            "caveats": f"ε {float(onset['epsilon']):g}; best step {best:g}; decline in "
                       f"{round(float(onset['p_onset']) * nboot)} of {nboot} samples "
                       f"({notation.percent(float(onset['p_onset']))})"}
