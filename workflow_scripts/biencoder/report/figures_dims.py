"""The layer x dimension figure (depth_by_dim): each arm's metric over the layers kept, one
line per embedding dimension (eval.dims, the stats table dims.parquet) and its full
dimension (ci.parquet) for reference, with the intervals the tables hold, and for a
train-once or truncated arm its recipe's per-depth training at the full dimension; on the
mean over benchmarks where there are several, else the one benchmark."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workflow_scripts.biencoder.report.figures_depth import trained_arms, wrap_parts
from workflow_scripts.core import contracts
from workflow_scripts.core.contracts import ALL, BASE, PER_DEPTH_REFERENCE

COLUMNS = 4  # panels per row


def _panel_rows(table: pd.DataFrame, recipe: str, strategy: str, bench: str) -> pd.DataFrame:
    sel = ((table.recipe == recipe) & (table.strategy == strategy)
           & (table.benchmark == bench))
    return table[sel].sort_values("depth")


def _line(ax, rows: pd.DataFrame, fmt: str, color, label: str) -> None:
    """Means with their interval: a band between depths, a bar at each (an arm of one depth,
    the truncated one of a two-depth grid, has no band)."""
    ax.errorbar(rows.depth, rows.estimate, yerr=[rows.estimate - rows.ci_low,
                                                 rows.ci_high - rows.estimate],
                fmt=fmt, color=color, capsize=2, elinewidth=0.8, label=label)
    ax.fill_between(rows.depth, rows.ci_low, rows.ci_high, color=color, alpha=0.12, lw=0)


def depth_by_dim(stats: dict, order=()) -> plt.Figure:
    ci, dims = stats["ci"], stats[contracts.DIMS_TABLE]
    if dims.empty:
        raise contracts.DataError("the dimension table is empty (no eval.dims evaluations)")
    metric = dims["metric"].iloc[0]
    bench = ALL if ALL in set(dims.benchmark) else dims.benchmark.iloc[0]
    arms = [*trained_arms(dims[dims.recipe != BASE], order),
            *((BASE, s) for s in sorted(dims[dims.recipe == BASE].strategy.unique()))]
    sizes = sorted(int(m) for m in dims["dim"].unique())
    colors = plt.get_cmap("viridis")(np.linspace(0.15, 0.85, len(sizes)))
    ncols = min(COLUMNS, len(arms))
    nrows = -(-len(arms) // ncols)
    caption = wrap_parts([f"band and bars: {contracts.ci_caption(dims)}",
                          "black: the arm at its full dimension",
                          "dotted: its recipe's per-depth training at the full dimension",
                          f"{'the mean over benchmarks' if bench == ALL else bench}"],
                         int(3.4 * ncols * 14))
    below = 0.6 + 0.15 * caption.count("\n")
    height = 3.0 * nrows + below
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, height), squeeze=False,
                             sharey=True)
    for ax, (recipe, strategy) in zip(axes.flat, arms, strict=False):
        if recipe != BASE and strategy != PER_DEPTH_REFERENCE:
            # The reference a train-once or truncated arm is read against: per-depth training.
            ref = _panel_rows(ci, recipe, PER_DEPTH_REFERENCE, bench)
            ax.plot(ref.depth, ref.estimate, ":", color="gray", marker="o", mfc="none",
                    label="per-depth training, full dimension")
        _line(ax, _panel_rows(ci, recipe, strategy, bench), "o-", "black", "full dimension")
        for m, color in zip(sizes, colors, strict=True):
            _line(ax, _panel_rows(dims[dims["dim"] == m], recipe, strategy, bench), "s--",
                  color, f"{m} dimensions")
        ax.set_title("untrained base" if recipe == BASE else f"{recipe}/{strategy}",
                     fontsize=9)
        ax.set_xticks(sorted(dims.depth.unique()))
        ax.set_xlabel("layers kept")
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel(metric)
    for ax in list(axes.flat)[len(arms):]:
        ax.axis("off")
    fig.suptitle(f"{metric} by layers kept and embedding dimension")
    # One legend below the panels, of every panel's lines (the reference is not in all).
    labelled = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            labelled.setdefault(label, handle)
    fig.legend(list(labelled.values()), list(labelled), loc="lower center",
               ncol=len(labelled), fontsize=8, frameon=False, title_fontsize=7, title=caption)
    fig.tight_layout(rect=(0, below / height, 1, 1))
    return fig
