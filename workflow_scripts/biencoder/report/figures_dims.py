"""The layer x dimension figure (depth_by_dim): each arm's metric over the layers kept, one
line per embedding dimension (eval.dims, the stats table dims.parquet) and its full
dimension (ci.parquet) for reference, with the intervals the tables hold; on the mean over
benchmarks where there are several, else the one benchmark."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from workflow_scripts.biencoder.report.figures_depth import legend_below, trained_arms, wrap_parts
from workflow_scripts.core import contracts
from workflow_scripts.core.contracts import ALL, BASE

COLUMNS = 4  # panels per row


def _panel_rows(table: pd.DataFrame, recipe: str, strategy: str, bench: str) -> pd.DataFrame:
    sel = ((table.recipe == recipe) & (table.strategy == strategy)
           & (table.benchmark == bench))
    return table[sel].sort_values("depth")


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
    caption = wrap_parts([f"band: {contracts.ci_caption(dims)}",
                          "black: the arm at its full dimension",
                          f"{'the mean over benchmarks' if bench == ALL else bench}"],
                         int(3.4 * ncols * 14))
    below = 0.6 + 0.15 * caption.count("\n")
    height = 3.0 * nrows + below
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, height), squeeze=False,
                             sharey=True)
    for ax, (recipe, strategy) in zip(axes.flat, arms, strict=False):
        full = _panel_rows(ci, recipe, strategy, bench)
        ax.plot(full.depth, full.estimate, "o-", color="black", label="full dimension")
        ax.fill_between(full.depth, full.ci_low, full.ci_high, color="black", alpha=0.1, lw=0)
        for m, color in zip(sizes, colors, strict=True):
            c = _panel_rows(dims[dims["dim"] == m], recipe, strategy, bench)
            ax.plot(c.depth, c.estimate, "s--", color=color, label=f"{m} dimensions")
            ax.fill_between(c.depth, c.ci_low, c.ci_high, color=color, alpha=0.15, lw=0)
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
    legend_below(fig, axes[0][0], height, below, title_fontsize=7, title=caption)
    return fig
