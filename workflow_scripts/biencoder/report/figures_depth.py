"""Figures of the metric by depth: depth_vs_budget (every arm's mean with its band),
per_benchmark_change (the budget effect per benchmark) and seed_variance (each seed's
mean beside the interval), from results/<study>/stats/{ci,seeds,comparisons}.parquet; plus the arm
helpers the other figure modules share. The CLI is figures.py."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: jobs run without a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from workflow_scripts.core import contracts, notation  # noqa: E402
from workflow_scripts.core.contracts import ALL, BASE  # noqa: E402

SIGMA_DODGE = 0.04  # depth units between the arms' ±2σ ticks at one depth
LEGEND_IN = 0.6  # inches below the panels for a figure legend (keeps it off the bands)


def _joint(df: pd.DataFrame) -> pd.DataFrame:
    """Rows resampled the widest way available for each comparison (joint where possible)."""
    key = ["kind", "a", "b", "benchmark"]
    df = df.assign(_n=df["resample"].str.count(",")).sort_values("_n", ascending=False)
    return df.drop_duplicates(key).drop(columns="_n")


def trained_arms(ci: pd.DataFrame, order=()) -> list[tuple[str, str]]:
    """(recipe, strategy) of every trained arm, recipes in budget order, per-depth strategies
    before a recipe's fine-tuned-then-truncated and train-once arms (contracts.arm_rank)."""
    return [(r, s) for r in contracts.order_recipes(ci.recipe, order)
            for s in sorted(ci[ci.recipe == r].strategy.unique(),
                            key=lambda x: (contracts.arm_rank(x), x))]


def arm_marker(strategy: str) -> str:
    """A mean's marker by what the arm is: ◆ train once, ▼ fine-tuned then truncated (no
    point at the deepest depth: there it is the per-depth model), ● per depth."""
    return "D" if strategy in contracts.TRAIN_ONCE else (
        "v" if contracts.truncated_cut(strategy) else "o")


def _base_rows(ci: pd.DataFrame, bench: str) -> pd.DataFrame:
    """The untrained base's rows to draw for reference: strategy top's when there."""
    base = ci[(ci.recipe == BASE) & (ci.benchmark == bench)]
    strategies = sorted(base.strategy.unique())
    pick = (contracts.PER_DEPTH_REFERENCE if contracts.PER_DEPTH_REFERENCE in strategies
            else (strategies or [None])[0])
    return base[base.strategy == pick].sort_values("depth")


def _arm_label(recipe: str, strategy: str, arms) -> str:
    """The recipe alone where it is the only strategy of the figure, else recipe/strategy."""
    return recipe if len({s for _, s in arms}) == 1 else f"{recipe}/{strategy}"


def wrap_parts(parts, width: int) -> str:
    """The parts joined by "; ", a new line wherever the next would pass `width` characters
    (a part is never split: a reader or a test finds each whole)."""
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + 2 + len(part) > width:
            lines[-1] += ";"
            lines.append(part)
        else:
            lines[-1] += "; " + part
    return "\n".join(lines)


def legend_below(fig: plt.Figure, ax, height_in: float, below_in: float = LEGEND_IN,
                 **kw) -> None:
    """One legend for the figure, below its panels, so that it covers no band or bar;
    `ax` holds the labelled artists, `height_in` is the figure's height, `below_in` the
    inches kept for the legend."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8,
               frameon=False, **kw)
    fig.tight_layout(rect=(0, below_in / height_in, 1, 1))


def depth_vs_budget(stats: dict, ax_title: str = "", order=()) -> plt.Figure:
    ci, seeds = stats["ci"], stats["seeds"]
    metric = ci["metric"].iloc[0]
    benches = [b for b in ci["benchmark"].unique() if b != ALL]
    panels = [ALL] + benches if ALL in set(ci["benchmark"]) else benches
    # The caption on lines that fit the figure's width (one panel: three lines)
    caption = wrap_parts([f"band: {contracts.ci_caption(ci)}",
                          "ticks ‒: ±2σ of the seeds' means (beside each depth)",
                          "dashed: the untrained base",
                          "▼: fine-tuned at the deepest depth, then truncated"],
                         int(4.2 * len(panels) * 14))
    below = LEGEND_IN + 0.15 * caption.count("\n")
    height = 3.8 + below
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), height), squeeze=False,
                             sharey=False)
    lines = trained_arms(ci, order)
    for ax, bench in zip(axes[0], panels, strict=True):
        for i, (recipe, strategy) in enumerate(lines):
            color = f"C{i}"
            label = _arm_label(recipe, strategy, lines)
            sel = (ci.recipe == recipe) & (ci.strategy == strategy) & (ci.benchmark == bench)
            c = ci[sel].sort_values("depth")
            # One line style per meaning: every mean solid (arm_marker: what the arm is),
            # the seeds' ±2σ short ticks beside it (no line: six dotted lines read as means).
            ax.plot(c.depth, c.estimate, arm_marker(strategy) + "-", color=color, label=label)
            ax.fill_between(c.depth, c.ci_low, c.ci_high, color=color, alpha=0.15, lw=0)
            s = (seeds[(seeds.recipe == recipe) & (seeds.strategy == strategy)
                       & (seeds.benchmark == bench)]
                 .groupby("depth")["mean"].agg(["mean", "std"]).reset_index())
            if s["std"].notna().any():
                x = s.depth + (i - (len(lines) - 1) / 2) * SIGMA_DODGE
                for sign in (1, -1):
                    ax.plot(x, s["mean"] + sign * 2 * s["std"], ls="none", marker="_", ms=9,
                            mew=1.5, color=color)
        b = _base_rows(ci, bench)
        if len(b):
            ax.errorbar(b.depth, b.estimate, yerr=[b.estimate - b.ci_low, b.ci_high - b.estimate],
                        fmt="s--", color="gray", capsize=3, label="untrained base")
        ax.set_title("all benchmarks (mean)" if bench == ALL else bench)
        ax.set_xlabel("layers kept")
        ax.set_xticks(sorted(ci.depth.unique()))
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    fig.suptitle(ax_title or f"{metric} by depth and training budget")
    legend_below(fig, axes[0][0], height, below, title_fontsize=7, title=caption)
    return fig


def per_benchmark_change(stats: dict, pair=None, order=()) -> plt.Figure:
    """Change from the short to the long budget per benchmark and depth, with its CI."""
    comp = _joint(stats["comparisons"])
    comp = comp[comp.kind == "recipe"]
    recipes = contracts.order_recipes(stats["ci"].recipe, order)
    a, b = pair if pair else (recipes[0], recipes[-1])
    comp = comp[(comp.recipe_a == a) & (comp.recipe_b == b)]
    # One depth strategy per figure: top where it is there, else the first per-depth one.
    comp = comp[comp.strategy == min(comp.strategy, key=lambda x: (
        x != contracts.PER_DEPTH_REFERENCE, contracts.arm_rank(x), x))]
    if comp.empty:
        raise contracts.DataError(f"no comparison between recipes {a!r} and {b!r} in the stats")
    benches = list(comp.benchmark.unique())
    depths = sorted(comp.depth_a.unique())
    width = 0.8 / len(benches)
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(depths) * len(benches) ** 0.5, 3.8))
    for j, bench in enumerate(benches):
        c = comp[comp.benchmark == bench].set_index("depth_a").loc[depths]
        x = np.arange(len(depths)) + (j - (len(benches) - 1) / 2) * width
        ax.bar(x, c.estimate, width, label=bench, color="k" if bench == ALL else f"C{j}",
               alpha=0.8, yerr=[c.estimate - c.ci_low, c.ci_high - c.estimate], capsize=3)
    ax.axhline(0, color="gray", lw=0.8)
    ax.set_xticks(range(len(depths)), [str(d) for d in depths])
    ax.set_xlabel("layers kept")
    ax.set_ylabel(f"Δ {comp.metric.iloc[0]} ({b} − {a})")
    ax.set_title(f"Budget effect per benchmark: {a} → {b} ({contracts.ci_caption(comp)})")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def seed_variance(stats: dict, order=()) -> plt.Figure:
    seeds, ci = stats["seeds"], stats["ci"]
    seeds = seeds[(seeds.recipe != BASE) & (seeds.benchmark == ALL)] if ALL in set(
        seeds.benchmark) else seeds[seeds.recipe != BASE]
    arms = trained_arms(ci, order)
    height = 3.6 + LEGEND_IN
    fig, axes = plt.subplots(1, len(arms), figsize=(4 * len(arms), height), squeeze=False,
                             sharey=True)
    for ax, (recipe, strategy) in zip(axes[0], arms, strict=True):
        s = seeds[(seeds.recipe == recipe) & (seeds.strategy == strategy)]
        for k, (seed, g) in enumerate(s.groupby("seed")):
            ax.scatter(g.depth + (k - 1) * 0.06, g["mean"], s=22, label=f"seed {seed}")
        c = ci[(ci.recipe == recipe) & (ci.strategy == strategy)
               & (ci.benchmark == s.benchmark.iloc[0])].sort_values("depth")
        ax.errorbar(c.depth + 0.2, c.estimate, yerr=[c.estimate - c.ci_low, c.ci_high - c.estimate],
                    fmt="_", color="k", capsize=3, label=f"mean, {contracts.ci_caption(ci)}")
        # σ under each depth's tick: text inside the axes would cover points or the axis.
        ax.set_xticks(c.depth.tolist(), [f"{int(r.depth)}\nσ = {notation.num(r.seed_std)}"
                                         for r in c.itertuples()], fontsize=8)
        ax.set_title(_arm_label(recipe, strategy, arms))
        ax.set_xlabel("layers kept (σ: standard deviation of the seeds' means)", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{ci.metric.iloc[0]} per seed")
    fig.suptitle("Seed-to-seed variation")
    legend_below(fig, axes[0][0], height)
    return fig


