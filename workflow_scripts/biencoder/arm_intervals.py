"""Each arm's mean metric with its interval, per benchmark and across benchmarks: the ci
table's rows, shared by the statistics stage (biencoder/stats.py, the full dimension) and the
layer x dimension table (biencoder/dims_stats.py), one implementation for both."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_scripts.core.contracts import ALL
from workflow_scripts.core.settings import Settings
from workflow_scripts.stats import intervals


def groups(arm_scores: dict) -> list[tuple[str, object]]:
    """(benchmark, scores) of each benchmark, and (ALL, every benchmark's) where several."""
    out = [(b, s) for b, s in arm_scores.items()]
    if len(arm_scores) > 1:
        out.append((ALL, arm_scores))
    return out


def ci_table(arms: dict, s: Settings, threads: int | None = None) -> pd.DataFrame:
    """One row per arm and benchmark group: its mean with the interval of the settings `s`
    (their interval, ci, nboot and seed: core/settings.py Stats or DimsStats), resampling
    seeds and queries where the arm has seeds to resample, its queries otherwise."""
    rows = []
    for arm in arms.values():
        resample = intervals.axes_for(len(arm.seeds))[0]
        for bench, scores in groups(arm.scores):
            r = intervals.mean(scores, method=s.interval, ci=s.ci, resample=resample,
                               nboot=s.nboot, seed=s.seed, threads=threads)
            per_seed = seed_means(scores)
            rows.append({
                "recipe": arm.recipe, "strategy": arm.strategy, "depth": arm.depth,
                "benchmark": bench, "n_seeds": len(arm.seeds),
                "n_queries": n_queries(scores),
                "seed_std": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else np.nan,
                **r,
            })
    return pd.DataFrame(rows)


def seed_means(scores) -> np.ndarray:
    if isinstance(scores, dict):
        return np.mean([v.mean(axis=1) for v in scores.values()], axis=0)
    return scores.mean(axis=1)


def n_queries(scores) -> int:
    if isinstance(scores, dict):
        return int(sum(v.shape[1] for v in scores.values()))
    return int(scores.shape[1])
