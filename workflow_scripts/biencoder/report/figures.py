"""Figures stage: one function per figure, each drawing its intervals from results/stats
(labelled with the CI level the tables record) and, for pareto, the canonical latency ladder;
quality_vs_compute reads the training compute (compute.parquet) beside the intervals.

CLI: python -m workflow_scripts.biencoder.report.figures NAME --stats-dir results/stats
        [--latency results/latency/ladder.parquet] [--budget-order R1 R2 ...] [--pair A B]
        (learning_curves reads the curves tables of the same folder)
        --out results/figures/NAME.png [...pdf]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: jobs run without a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import ticker, transforms  # noqa: E402

from workflow_scripts.core import contracts  # noqa: E402
from workflow_scripts.core.contracts import ALL, BASE  # noqa: E402


def _joint(df: pd.DataFrame) -> pd.DataFrame:
    """Rows resampled the widest way available for each comparison (joint where possible)."""
    key = ["kind", "a", "b", "benchmark"]
    df = df.assign(_n=df["resample"].str.count(",")).sort_values("_n", ascending=False)
    return df.drop_duplicates(key).drop(columns="_n")


def trained_arms(ci: pd.DataFrame, order=()) -> list[tuple[str, str]]:
    """(recipe, strategy) of every trained arm, recipes in budget order, per-depth strategies
    before a recipe's train-once arms."""
    return [(r, s) for r in contracts.order_recipes(ci.recipe, order)
            for s in sorted(ci[ci.recipe == r].strategy.unique(),
                            key=lambda x: (x in contracts.TRAIN_ONCE, x))]


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


def depth_vs_budget(stats: dict, ax_title: str = "", order=()) -> plt.Figure:
    ci, seeds = stats["ci"], stats["seeds"]
    metric = ci["metric"].iloc[0]
    benches = [b for b in ci["benchmark"].unique() if b != ALL]
    panels = [ALL] + benches if ALL in set(ci["benchmark"]) else benches
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False,
                             sharey=False)
    lines = trained_arms(ci, order)
    for ax, bench in zip(axes[0], panels, strict=True):
        for i, (recipe, strategy) in enumerate(lines):
            color = f"C{i}"
            label = _arm_label(recipe, strategy, lines)
            sel = (ci.recipe == recipe) & (ci.strategy == strategy) & (ci.benchmark == bench)
            c = ci[sel].sort_values("depth")
            ax.plot(c.depth, c.estimate, "D:" if strategy in contracts.TRAIN_ONCE else "o-",
                    color=color, label=label)
            ax.fill_between(c.depth, c.ci_low, c.ci_high, color=color, alpha=0.25, lw=0)
            s = (seeds[(seeds.recipe == recipe) & (seeds.strategy == strategy)
                       & (seeds.benchmark == bench)]
                 .groupby("depth")["mean"].agg(["mean", "std"]).reset_index())
            if s["std"].notna().any():
                ax.plot(s.depth, s["mean"] + 2 * s["std"], ":", color=color, lw=1)
                ax.plot(s.depth, s["mean"] - 2 * s["std"], ":", color=color, lw=1)
        b = _base_rows(ci, bench)
        if len(b):
            ax.errorbar(b.depth, b.estimate, yerr=[b.estimate - b.ci_low, b.ci_high - b.estimate],
                        fmt="s--", color="gray", capsize=3, label="untrained base")
        ax.set_title("all benchmarks (mean)" if bench == ALL else bench)
        ax.set_xlabel("layers kept")
        ax.set_xticks(sorted(ci.depth.unique()))
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8, title=f"band: {contracts.ci_caption(ci)}; dotted: ±2σ seeds",
                      title_fontsize=7)
    fig.suptitle(ax_title or f"{metric} by depth and training budget")
    fig.tight_layout()
    return fig


def per_benchmark_degradation(stats: dict, pair=None, order=()) -> plt.Figure:
    """Change from the short to the long budget per benchmark and depth, with its CI."""
    comp = _joint(stats["comparisons"])
    comp = comp[comp.kind == "recipe"]
    recipes = contracts.order_recipes(stats["ci"].recipe, order)
    a, b = pair if pair else (recipes[0], recipes[-1])
    comp = comp[(comp.recipe_a == a) & (comp.recipe_b == b)]
    # One depth strategy per figure: top where it is there, else the first per-depth one.
    comp = comp[comp.strategy == min(comp.strategy, key=lambda x: (
        x != contracts.PER_DEPTH_REFERENCE, x in contracts.TRAIN_ONCE, x))]
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
    fig, axes = plt.subplots(1, len(arms), figsize=(4 * len(arms), 3.6), squeeze=False,
                             sharey=True)
    for ax, (recipe, strategy) in zip(axes[0], arms, strict=True):
        s = seeds[(seeds.recipe == recipe) & (seeds.strategy == strategy)]
        for k, (seed, g) in enumerate(s.groupby("seed")):
            ax.scatter(g.depth + (k - 1) * 0.06, g["mean"], s=22, label=f"seed {seed}")
        c = ci[(ci.recipe == recipe) & (ci.strategy == strategy)
               & (ci.benchmark == s.benchmark.iloc[0])].sort_values("depth")
        ax.errorbar(c.depth + 0.2, c.estimate, yerr=[c.estimate - c.ci_low, c.ci_high - c.estimate],
                    fmt="_", color="k", capsize=3, label=f"mean, {contracts.ci_caption(ci)}")
        for _, r in c.iterrows():
            ax.annotate(f"σ={r.seed_std:.3f}", (r.depth, r.ci_low), textcoords="offset points",
                        xytext=(0, -12), ha="center", fontsize=7)
        ax.set_title(_arm_label(recipe, strategy, arms))
        ax.set_xlabel("layers kept")
        ax.set_xticks(sorted(c.depth.unique()))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{ci.metric.iloc[0]} per seed")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Seed-to-seed variation")
    fig.tight_layout()
    return fig


def pareto_front(points: pd.DataFrame) -> pd.DataFrame:
    """Points not dominated by a faster-and-better one (lower latency, higher metric)."""
    pts = points.sort_values(["p50_ms", "estimate"], ascending=[True, False])
    best, keep = -np.inf, []
    for i, r in pts.iterrows():
        if r.estimate > best:
            keep.append(i)
            best = r.estimate
    return pts.loc[keep]


def pareto(stats: dict, latency: pd.DataFrame, order=()) -> plt.Figure:
    """Accuracy vs the canonical latency ladder: `latency` is results/latency/ladder.parquet,
    one row per depth whose p50_ms is the median over the coherent profiling runs only of
    their relative ladder Q, times the reference depth's p50 (x error bars: the runs' range
    of Q, in those milliseconds). The x label says whether the milliseconds are verified
    (`absolute_verified`). Where no run was coherent (p50_ms NaN) the figure falls back to
    the median of all runs and says so in red: those latencies failed the coherence check."""
    if latency["depth"].duplicated().any():
        raise ValueError("pareto needs the canonical latency ladder (one row per depth: "
                         "results/latency/ladder.parquet), not per-run rows")
    lad = latency.set_index("depth")
    p50 = lad["p50_ms"].astype(float)
    unverified = p50.isna()
    if unverified.any() and "p50_all_runs_ms" in lad:
        p50 = p50.fillna(lad["p50_all_runs_ms"].astype(float))
    ci = stats["ci"]
    bench = ALL if ALL in set(ci.benchmark) else ci.benchmark.iloc[0]
    pts = ci[ci.benchmark == bench].copy()
    pts = pts[pts.depth.isin(p50.dropna().index)]
    pts["p50_ms"] = pts.depth.map(p50)
    xerr = None
    if {"min_run_p50_ms", "max_run_p50_ms"} <= set(lad):
        pts["x_lo"] = pts.depth.map(lad["min_run_p50_ms"].astype(float))
        pts["x_hi"] = pts.depth.map(lad["max_run_p50_ms"].astype(float))
        xerr = True
    fig, ax = plt.subplots(figsize=(5.5, 4))
    arms = trained_arms(ci, order)
    for i, (recipe, strategy) in enumerate([*arms, (BASE, None)]):
        p = (_base_rows(pts, bench) if recipe == BASE
             else pts[(pts.recipe == recipe) & (pts.strategy == strategy)].sort_values("depth"))
        if p.empty:
            continue
        color = "gray" if recipe == BASE else f"C{i}"
        xe = None
        if xerr and p.x_lo.notna().all():
            xe = [(p.p50_ms - p.x_lo).clip(lower=0), (p.x_hi - p.p50_ms).clip(lower=0)]
        ax.errorbar(p.p50_ms, p.estimate, yerr=[p.estimate - p.ci_low, p.ci_high - p.estimate],
                    xerr=xe, fmt="D" if strategy in contracts.TRAIN_ONCE else "o", color=color,
                    capsize=3, label="untrained base" if recipe == BASE
                    else _arm_label(recipe, strategy, arms))
        for _, r in p.iterrows():
            ax.annotate(f"L{r.depth}", (r.p50_ms, r.estimate), textcoords="offset points",
                        xytext=(5, 3), fontsize=7, color=color)
    front = pareto_front(pts[pts.recipe != BASE])
    ax.plot(front.p50_ms, front.estimate, "-", color="k", lw=1, alpha=0.6, label="Pareto front")
    runs = int(lad["runs_used"].max()) if "runs_used" in lad else None
    shape = (f", batch {int(lad['batch_size'].iloc[0])} x {int(lad['seq_len'].iloc[0])} tokens"
             if {"batch_size", "seq_len"} <= set(lad) else "")
    source = ("canonical ladder" if runs is None
              else f"median of {runs} coherent run{'s' * (runs != 1)}")
    if "absolute_verified" in lad and not unverified.any():
        source += ("; ms verified" if bool(lad["absolute_verified"].iloc[0])
                   else "; relative ladder verified, ms NOT verified (machine drift)")
    if unverified.any():
        source = "median of all runs, none coherent"
    # two lines: the provenance alone is about as wide as the axes
    ax.set_xlabel(f"encode latency p50 (ms per batch{shape})\n{source}", fontsize=8)
    ax.set_ylabel(f"{ci.metric.iloc[0]} ({'mean of benchmarks' if bench == ALL else bench})")
    title = f"Accuracy–latency trade-off ({contracts.ci_caption(ci)})"
    ax.set_title(title)
    if unverified.any():
        ax.set_title(title + "\nLATENCY UNVERIFIED: no profiling run passed the coherence "
                     "check", color="red", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _step_label(step: float) -> str:
    if step == 0:
        return "0\nbase"
    return f"{step / 1000:g}K" if step >= 1000 and step % 100 == 0 else f"{step:g}"


def learning_curves(stats: dict, order=()) -> plt.Figure:
    """The metric over training steps, one row of panels per recipe with a curve, one panel
    per benchmark plus their mean, one line per depth with its CI band; step 0 is the
    untrained base, the last step the final model. The onset (the last step before the
    decline, curves_onset) is marked with a triangle above its point, and its bootstrap
    interval drawn as a bar at the top of the panel (an arrow: no onset in part of the
    samples)."""
    cur, onset = stats["curves"], stats["curves_onset"]
    metric = cur["metric"].iloc[0]
    recipes = contracts.order_recipes(cur.recipe, order)
    benches = [b for b in cur["benchmark"].unique() if b != ALL]
    panels = [ALL] + benches if ALL in set(cur["benchmark"]) else benches
    fig, axes = plt.subplots(len(recipes), len(panels), squeeze=False,
                             figsize=(max(6.5, 4.2 * len(panels)), 0.5 + 3.6 * len(recipes)))
    strategies = sorted(cur.strategy.unique())
    arms = sorted({(s, int(d)) for s, d in zip(cur.strategy, cur.depth, strict=True)})
    for row, recipe in zip(axes, recipes, strict=True):
        for ax, bench in zip(row, panels, strict=True):
            steps = sorted(cur[cur.recipe == recipe].step.unique())
            for k, (strategy, depth) in enumerate(arms):
                color = f"C{k}"
                sel = ((cur.recipe == recipe) & (cur.strategy == strategy)
                       & (cur.depth == depth) & (cur.benchmark == bench))
                c = cur[sel].sort_values("step")
                if c.empty:
                    continue
                o = onset[(onset.recipe == recipe) & (onset.strategy == strategy)
                          & (onset.depth == depth) & (onset.benchmark == bench)]
                o = o.iloc[0] if len(o) else None
                label = f"L{depth}" + (f" ({strategy})" if len(strategies) > 1 else "")
                if o is not None:
                    label += (f", onset {_step_label(o.onset_step)}"
                              if np.isfinite(o.onset_step) else ", no onset")
                ax.plot(c.step, c.estimate, "o-", color=color, ms=3.5, label=label)
                ax.fill_between(c.step, c.ci_low, c.ci_high, color=color, alpha=0.2, lw=0)
                if o is None:
                    continue
                if np.isfinite(o.onset_step):
                    y = c.set_index("step").loc[o.onset_step, "estimate"]
                    above = transforms.offset_copy(ax.transData, fig=fig, y=9, units="points")
                    ax.plot([o.onset_step], [y], "v", color=color, ms=9, transform=above)
                lo, hi = o.onset_ci_low, o.onset_ci_high
                y_bar = 0.96 - 0.05 * k
                trans = ax.get_xaxis_transform()
                if np.isfinite(lo):  # the interval over the grid; an arrow: "none" beyond
                    end = hi if np.isfinite(hi) else steps[-1]
                    ax.plot([lo, end], [y_bar, y_bar], "|-", color=color, lw=2, ms=8,
                            transform=trans)
                    if not np.isfinite(hi):
                        ax.plot([end], [y_bar], ">", color=color, ms=6, transform=trans)
            y0, y1 = ax.get_ylim()  # headroom for the onset bars at the top
            ax.set_ylim(y0, y1 + 0.06 * (len(arms) + 1) * (y1 - y0))
            ax.set_xticks(steps, [_step_label(x) for x in steps], fontsize=7)
            ax.set_title(f"{recipe}: " + ("all benchmarks (mean)" if bench == ALL else bench),
                         fontsize=10)
            ax.set_xlabel("training step")
            ax.set_ylabel(metric)
            ax.grid(alpha=0.3)
        row[0].legend(fontsize=7, loc="lower right", framealpha=0.85)  # this row's onsets
    eps = onset["epsilon"].iloc[0] if len(onset) else float("nan")
    level = contracts.ci_level(onset) if len(onset) else ""
    fig.text(0.5, 0.01, f"bands: {contracts.ci_caption(cur)}; ▼ onset: the last step before "
             f"the mean falls more than ε = {eps:g} below its running best; bars at the top: "
             f"its {level} Multi-Bootstrap interval (arrow: no onset in part of the samples)",
             ha="center", va="bottom", fontsize=7, wrap=True)
    fig.suptitle(f"Learning curves of {metric} (step 0: the untrained base)", fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def quality_vs_compute(stats: dict, order=()) -> plt.Figure:
    """Mean metric with its CI against the training compute behind each trained arm's
    depth (results/stats/compute.parquet): left, optimizer steps x layers trained of one
    training; right, its measured seconds (mean over seeds). A per-depth arm's depths lie
    on a line (one training each); a train-once arm's depths stand at one x: one training
    serves them all. The legend gives each arm's total over its depths and seeds."""
    ci, comp = stats["ci"], stats["compute"]
    bench = ALL if ALL in set(ci.benchmark) else ci.benchmark.iloc[0]
    pts = ci[(ci.benchmark == bench) & (ci.recipe != BASE)].merge(
        comp, on=["recipe", "strategy", "depth"], validate="one_to_one")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    arms = [(r, s) for r in contracts.order_recipes(pts.recipe, order)
            for s in sorted(pts[pts.recipe == r].strategy.unique(),
                            key=lambda x: (x in contracts.TRAIN_ONCE, x))]
    for ax, x, xlabel in ((axes[0], "layer_steps", "training compute: optimizer steps × "
                           "layers trained (layer-steps), one training"),
                          (axes[1], "train_seconds_mean", "measured training seconds, one "
                           "training (mean over seeds)")):
        for i, (recipe, strategy) in enumerate(arms):
            p = pts[(pts.recipe == recipe) & (pts.strategy == strategy)].sort_values("depth")
            once = bool(p.train_once.iloc[0])
            total = p.iloc[0]
            label = (f"{recipe}/{strategy}" + (" (train once)" if once else "")
                     + f": {int(total.arm_trainings)} trainings, "
                     f"{int(total.arm_layer_steps):,} layer-steps in all")
            # A train-once arm stands a little to the right, off the per-depth point that
            # costs the same (its deepest depth).
            xs = p[x] * (1.04 if once else 1.0)
            ax.errorbar(xs, p.estimate, yerr=[p.estimate - p.ci_low, p.ci_high - p.estimate],
                        fmt="D" if once else "o", ls=":" if once else "-", color=f"C{i}",
                        capsize=3, ms=5, label=label)
            for xv, (_, r) in zip(xs, p.iterrows(), strict=True):
                ax.annotate(f"L{r.depth}", (xv, r.estimate), textcoords="offset points",
                            xytext=(6, -3), fontsize=7, color=f"C{i}")
        ax.set_xscale("log")
        plain = ticker.FuncFormatter(lambda v, _: f"{v:,.4g}")
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(plain)
        ax.tick_params(axis="x", which="both", labelsize=7)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel(f"{ci.metric.iloc[0]} "
                       f"({'mean of benchmarks' if bench == ALL else bench})")
    axes[0].legend(fontsize=7, loc="best")
    fig.suptitle(f"Quality vs training compute ({contracts.ci_caption(ci)}; ◆ train once: "
                 "one training per seed serves every depth)", fontsize=10)
    fig.tight_layout()
    return fig


def load_stats(stats_dir, names=("ci", "seeds", "comparisons")) -> dict[str, pd.DataFrame]:
    return {n: contracts.read_stats(stats_dir, n) for n in names}


def save(fig: plt.Figure, outs) -> None:
    for out in outs:
        with contracts.atomic_path(out) as tmp:
            fig.savefig(tmp, dpi=150, format=Path(out).suffix.lstrip("."),
                        metadata={"CreationDate": None} if str(out).endswith(".pdf") else None)
    plt.close(fig)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Draw one figure of the study.")
    ap.add_argument("name", choices=["depth_vs_budget", "per_benchmark_degradation",
                                     "seed_variance", "pareto", "learning_curves",
                                     "quality_vs_compute"])
    ap.add_argument("--stats-dir", required=True)
    ap.add_argument("--latency", help="canonical latency ladder parquet (pareto)")
    ap.add_argument("--budget-order", nargs="*", default=[], help="recipes, smallest budget first")
    ap.add_argument("--pair", nargs=2, help="recipes A B of per_benchmark_degradation (B - A)")
    ap.add_argument("--out", nargs="+", required=True)
    a = ap.parse_args(argv)
    stats = load_stats(a.stats_dir, {"learning_curves": ("curves", "curves_onset"),
                                     "quality_vs_compute": ("ci", "compute")}.get(
        a.name, ("ci", "seeds", "comparisons")))
    order = list(a.budget_order)
    if a.name == "pareto":
        if not a.latency:
            ap.error("pareto needs --latency")
        fig = pareto(stats, pd.read_parquet(a.latency), order)
    elif a.name == "per_benchmark_degradation":
        fig = per_benchmark_degradation(stats, a.pair, order)
    else:
        fig = globals()[a.name](stats, order=order)
    save(fig, a.out)
    print(f"wrote {', '.join(a.out)}")


if __name__ == "__main__":
    main()
