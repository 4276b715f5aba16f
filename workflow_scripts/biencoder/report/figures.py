"""Figures stage: one function per figure, each drawing its intervals from the study's
statistics tables (labelled with the CI level and method the tables record) and, for pareto,
the canonical latency ladder; quality_vs_compute reads the training compute (compute.parquet)
beside the intervals. Which tables each figure reads is the study plan's registry
(study_plan.BIENCODER_FIGURES), passed as --stats. The figures live by concern:
figures_depth.py (depth_vs_budget, per_benchmark_change, seed_variance), figures_latency.py
(pareto), figures_training.py (learning_curves, quality_vs_compute), figures_dims.py
(depth_by_dim); this module is their CLI.

CLI: python -m workflow_scripts.biencoder.report.figures NAME
        --stats results/STUDY/stats/ci.parquet ... (each table the figure reads)
        [--latency results/STUDY/latency/ladder.parquet
         [--latency-summary results/STUDY/latency/summary.parquet]]
        [--budget-order R1 R2 ...] [--pair A B]
        --out results/STUDY/figures/NAME.png [...pdf]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from workflow_scripts.biencoder.report.figures_depth import (
    depth_vs_budget,
    per_benchmark_change,
    seed_variance,
    trained_arms,
)
from workflow_scripts.biencoder.report.figures_dims import depth_by_dim
from workflow_scripts.biencoder.report.figures_latency import busy_runs, pareto, pareto_front
from workflow_scripts.biencoder.report.figures_training import learning_curves, quality_vs_compute
from workflow_scripts.core import contracts

__all__ = ["busy_runs", "depth_by_dim", "depth_vs_budget", "learning_curves", "load_stats",
           "pareto", "pareto_front", "per_benchmark_change", "quality_vs_compute", "save",
           "seed_variance", "trained_arms"]
FIGURES = {f.__name__: f for f in (depth_vs_budget, per_benchmark_change, seed_variance,
                                   pareto, learning_curves, quality_vs_compute,
                                   depth_by_dim)}


def load_stats(stats_dir, names=("ci", "seeds", "comparisons")) -> dict[str, pd.DataFrame]:
    return {n: contracts.read_stats(stats_dir, n) for n in names}


def load_tables(files) -> dict[str, pd.DataFrame]:
    """Statistics tables by name (their files' stems)."""
    return {Path(f).stem: contracts.read_stats(Path(f).parent, Path(f).stem) for f in files}


def save(fig: plt.Figure, outs) -> None:
    contracts.write_figure(fig, outs)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Draw one figure of the study.")
    ap.add_argument("name", choices=list(FIGURES))
    ap.add_argument("--stats", nargs="+", required=True,
                    help="the statistics tables the figure reads")
    ap.add_argument("--latency", help="canonical latency ladder parquet (pareto)")
    ap.add_argument("--latency-summary", help="per-run latency summary parquet (pareto: "
                    "whether the machine was busy)")
    ap.add_argument("--budget-order", nargs="*", default=[], help="recipes, smallest budget first")
    ap.add_argument("--pair", nargs=2, help="recipes A B of per_benchmark_change (B - A)")
    ap.add_argument("--out", nargs="+", required=True)
    a = ap.parse_args(argv)
    stats = load_tables(a.stats)
    order = list(a.budget_order)
    if a.name == "pareto":
        if not a.latency:
            ap.error("pareto needs --latency")
        busy = (busy_runs(contracts.read_parquet(a.latency_summary)) if a.latency_summary
                else [])
        fig = pareto(stats, contracts.read_parquet(a.latency), order, busy)
    elif a.name == "per_benchmark_change":
        fig = per_benchmark_change(stats, a.pair, order)
    else:
        fig = FIGURES[a.name](stats, order=order)
    save(fig, a.out)
    print(f"wrote {', '.join(a.out)}")


if __name__ == "__main__":
    main()
