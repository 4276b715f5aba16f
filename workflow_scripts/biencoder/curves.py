"""Learning-curves stage: the metric over training steps, with intervals, and where it starts
to decline.

A curve is one (recipe, strategy, depth) at the steps of its recipe's `eval_steps`: step 0 is
the untrained truncated base (its evaluation files; strategy top's for a train-once arm),
then the training's snapshots, then the final model (its evaluation files) at the recipe's
last step. Per curve and benchmark, and across benchmarks ("all": the stratified,
unweighted mean), it writes results/<study>/stats/:

  curves.parquet             per step: the mean and its interval (stats.interval, the
                             Multi-Bootstrap's beside it), as the stats stage's ci table
  curves_change.parquet      the change from the best step (highest mean) to the last, paired
                             by seed (single-baseline when the best is the base); the best is
                             picked on the same data, so the change leans negative
  curves_onset.parquet       the onset: the last step before the mean first falls more than
                             ε (stats.onset_epsilon) below its running best ("the decline
                             begins after step X"); NaN when it never does. Its interval
                             comes from recomputing the onset in every Multi-Bootstrap sample
                             of seeds × queries (the same draws at every step, so the steps of
                             a seed stay paired); +inf as an upper bound: no onset in that
                             share of the samples
  curves_onset_dist.parquet  the onset's bootstrap distribution over the step grid (NaN: none)

CLI: python -m workflow_scripts.biencoder.curves --evals FILE... --settings-json '{...}' \
        --grid-json '{"benchmarks": [..], "curves": [[recipe, strategy, depth, [seeds],
        [snapshot steps], last step], ..]}' --out-dir results/<study>/stats [--threads 2]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from workflow_scripts.core import contracts
from workflow_scripts.core.arms import Arm, build_arms, check_aligned, load_evals
from workflow_scripts.core.contracts import ALL, BASE, base_strategy
from workflow_scripts.core.settings import Curves
from workflow_scripts.stats import design, intervals
from workflow_scripts.stats import multibootstrap as mb


def onset_index(curves: np.ndarray, epsilon: float) -> np.ndarray:
    """Per curve (last axis: the steps), the index of the onset, the last step before the
    metric first falls more than `epsilon` below its running best; -1 where it never does."""
    curves = np.asarray(curves, dtype=np.float64)
    best = np.maximum.accumulate(curves, axis=-1)
    below = curves < best - epsilon
    return np.where(below.any(axis=-1), below.argmax(axis=-1) - 1, -1)


def onset_summary(estimate: np.ndarray, samples: np.ndarray, steps, epsilon: float,
                  ci: float) -> tuple[dict, dict]:
    """The onset of the estimated curve and its bootstrap distribution: (row, {onset step or
    NaN: share of the samples}). samples: [nboot, steps], each row one bootstrap sample's
    curve. The interval is the percentile interval of the onset's grid index, "no onset"
    ordered after the last step (a bound there is +inf)."""
    steps = np.asarray(steps, dtype=np.float64)
    at = int(onset_index(estimate, epsilon))
    idx = onset_index(samples, epsilon)
    ranked = np.where(idx < 0, len(steps), idx)  # no onset: beyond the grid
    lo, hi = np.quantile(ranked, [(1 - ci) / 2, (1 + ci) / 2], method="inverted_cdf")
    grid = np.append(steps, np.inf)
    row = {"epsilon": float(epsilon), "best_step": float(steps[int(np.argmax(estimate))]),
           "onset_step": float(steps[at]) if at >= 0 else np.nan,
           "detected_step": float(steps[at + 1]) if at >= 0 else np.nan,
           "onset_ci_low": float(grid[int(lo)]), "onset_ci_high": float(grid[int(hi)]),
           "p_onset": float(np.mean(idx >= 0))}
    dist = {float(steps[i]): float(np.mean(idx == i)) for i in range(len(steps))}
    dist[np.nan] = float(np.mean(idx < 0))
    return row, dist


def build_curves(df: pd.DataFrame, metric: str, grid: dict) -> dict[tuple, list]:
    """(recipe, strategy, depth) -> [(step, point, Arm), ...] in step order, from the per-query
    evaluations (a `step` column marks the snapshots' rows). Every configured step, seed and
    benchmark must be there."""
    steps_col = df["step"] if "step" in df else pd.Series(np.nan, index=df.index)
    final = build_arms(df[steps_col.isna()], metric)
    snaps = {int(n): build_arms(g, metric) for n, g in df[steps_col.notna()].groupby("step")}
    curves, gaps = {}, []
    for recipe, strategy, depth, seeds, snap_steps, last in grid["curves"]:
        key = (recipe, strategy, int(depth))
        label = f"{recipe}/{strategy}{depth}"
        points = [(0, "base", final.get((BASE, base_strategy(strategy), int(depth))))]
        points += [(int(n), "snapshot", snaps.get(int(n), {}).get(key)) for n in snap_steps]
        points.append((int(last), "final", final.get(key)))
        for step, point, arm in points:
            want = [-1] if point == "base" else sorted(int(x) for x in seeds)
            if arm is None:
                gaps.append(f"{label} step {step} ({point}): no evaluations")
            elif list(arm.seeds) != want or sorted(arm.scores) != sorted(grid["benchmarks"]):
                gaps.append(f"{label} step {step} ({point}): seeds {list(arm.seeds)} and "
                            f"benchmarks {sorted(arm.scores)}, expected {want} and "
                            f"{sorted(grid['benchmarks'])}")
        curves[key] = points
    if gaps:
        raise contracts.DataError("the evaluations lack part of the learning curves:\n  "
                                  + "\n  ".join(gaps))
    return curves


def _groups(arm: Arm) -> list[tuple[str, object]]:
    groups = list(arm.scores.items())
    return groups + [(ALL, arm.scores)] if len(arm.scores) > 1 else groups


def _seed_means(scores) -> np.ndarray:
    if isinstance(scores, dict):
        return np.mean([v.mean(axis=1) for v in scores.values()], axis=0)
    return scores.mean(axis=1)


def _widen(scores, n_seeds: int):
    """The base's one row repeated for every seed: the same bootstrap draws as the trained
    steps, and a seed draw of identical rows leaves it as it is (a fixed baseline)."""
    if isinstance(scores, dict):
        return {b: _widen(v, n_seeds) for b, v in scores.items()}
    return np.repeat(scores, n_seeds, axis=0)


def curve_tables(key: tuple, points: list, s: Curves, threads: int | None = None
                 ) -> dict[str, list]:
    """The four tables' rows of one curve."""
    recipe, strategy, depth = key
    ident = {"recipe": recipe, "strategy": strategy, "depth": depth}
    steps = [step for step, _, _ in points]
    n_seeds = len(points[-1][2].seeds)
    joint = intervals.axes_for(n_seeds)[0]
    out = {name: [] for name in ("curves", "curves_change", "curves_onset",
                                 "curves_onset_dist")}
    for bench in [b for b, _ in _groups(points[-1][2])]:
        by_step = [dict(_groups(arm))[bench] for _, _, arm in points]
        for (step, point, arm), scores in zip(points, by_step, strict=True):
            per_seed = _seed_means(scores)
            out["curves"].append({
                **ident, "benchmark": bench, "step": step, "point": point,
                "n_seeds": len(arm.seeds),
                "n_queries": int(sum(v.shape[1] for v in arm.scores.values())
                                 if bench == ALL else scores.shape[1]),
                "seed_std": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else np.nan,
                **intervals.mean(scores, method=s.interval, ci=s.ci,
                                 resample=intervals.axes_for(len(arm.seeds))[0], nboot=s.nboot,
                                 seed=s.seed, threads=threads)})
        # One bootstrap per step with the same RNG seed and shapes draws the same seeds and
        # queries at every step (docs/multibootstrap.md, draw order): row b of `samples` is
        # one resampled curve, paired across steps.
        runs = [mb.bootstrap_mean(_widen(x, n_seeds) if point == "base" else x,
                                  nboot=s.nboot, ci=s.ci, seed=s.seed, resample=joint,
                                  threads=threads)
                for (_, point, _), x in zip(points, by_step, strict=True)]
        estimate = np.array([r.estimate for r in runs])
        samples = np.stack([r.samples for r in runs], axis=1)
        row, dist = onset_summary(estimate, samples, steps, s.onset_epsilon, s.ci)
        out["curves_onset"].append({**ident, "benchmark": bench, **row,
                                    "interval": "multibootstrap", "resample": ",".join(joint),
                                    "ci": s.ci, "nboot": s.nboot})
        out["curves_onset_dist"] += [{**ident, "benchmark": bench, "onset_step": step,
                                      "share": share} for step, share in dist.items()]
        out["curves_change"].append({**ident, "benchmark": bench,
                                     **_change(points, by_step, estimate, s, threads)})
    return out


def _change(points, by_step, estimate, s: Curves, threads) -> dict:
    """Best step -> last step: paired by seed (single-baseline from the base), two-sided."""
    best = int(np.argmax(estimate))
    a, b = points[best][2], points[-1][2]
    row = {"step_a": points[best][0], "step_b": points[-1][0]}
    if best == len(points) - 1:  # the last step is the best: no change, by definition
        return {**row, "estimate": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_value": np.nan,
                "interval": s.interval, "design": "none", "resample": "", "ci": s.ci,
                "mb_ci_low": 0.0, "mb_ci_high": 0.0, "mb_p_value": np.nan, "nboot": s.nboot,
                "alternative": "two-sided", "threshold": 0.0}
    check_aligned(a, b)
    d = design.choose(a.seeds, b.seeds)  # steps of one recipe: trained on both sides
    return {**row, **intervals.compare(
        *d.sides(by_step[best], by_step[-1]), method=s.interval, design=d.name,
        alternative="two-sided", ci=s.ci, resample=d.axes[0], nboot=s.nboot, seed=s.seed,
        threads=threads, **d.seeds_kw(a.seeds, b.seeds))}


def run(eval_paths, out_dir, s: Curves, grid: dict, threads: int | None = None
        ) -> dict[str, pd.DataFrame]:
    curves = build_curves(load_evals(eval_paths), s.metric, grid)
    rows = {name: [] for name in contracts.CURVE_TABLES}
    for key, points in curves.items():
        for name, part in curve_tables(key, points, s, threads).items():
            rows[name] += part
    tables = {}
    for name, part in rows.items():
        table = pd.DataFrame(part) if part else pd.DataFrame(
            columns=[c for c in contracts.CURVE_TABLES[name] if c != "metric"])
        table.insert(0, "metric", s.metric)
        contracts.write_parquet(Path(out_dir) / f"{name}.parquet", table)
        tables[name] = table
    return tables


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Learning curves: intervals per step, onset.")
    ap.add_argument("--evals", nargs="+", required=True,
                    help="per-query evaluations: the bases, the final models and the "
                         "snapshots (steps/*.parquet) of every curve")
    ap.add_argument("--settings-json", default="{}",
                    help="core/settings.py Curves as JSON; absent keys take "
                         "config/schema.yaml's defaults")
    ap.add_argument("--grid-json", required=True,
                    help='{"benchmarks": [..], "curves": [[recipe, strategy, depth, [seeds], '
                         '[snapshot steps], last step], ..]}')
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--threads", type=int, help="bootstrap threads (default: usable CPUs)")
    a = ap.parse_args(argv)
    tables = run(a.evals, a.out_dir, Curves.from_json(a.settings_json),
                 json.loads(a.grid_json), a.threads)
    print(", ".join(f"{k}: {len(v)} rows" for k, v in tables.items()))


if __name__ == "__main__":
    main()
