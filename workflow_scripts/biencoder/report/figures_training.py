"""Figures over training: learning_curves (the metric over training steps, with the onset
of the decline) and quality_vs_compute (the metric against the training compute behind each
arm), from results/<study>/stats/curves*.parquet and compute.parquet. The CLI is figures.py."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: jobs run without a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import ticker, transforms  # noqa: E402

from workflow_scripts.biencoder.report.figures_depth import arm_marker  # noqa: E402
from workflow_scripts.core import contracts  # noqa: E402
from workflow_scripts.core.contracts import ALL, BASE  # noqa: E402


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
            onsets = []
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
                # The legend names the arm only: its onset differs by panel, so each panel's
                # title says its own (one legend per row cannot).
                label = f"L{depth}" + (f" ({strategy})" if len(strategies) > 1 else "")
                if o is not None and np.isfinite(o.onset_step):
                    onsets.append(f"{label} at {_step_label(o.onset_step).splitlines()[0]}")
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
            ax.set_title(f"{recipe}: " + ("all benchmarks (mean)" if bench == ALL else bench)
                         + "\nonset: " + (", ".join(onsets) or "none"), fontsize=9)
            ax.set_xlabel("training step")
            ax.set_ylabel(metric)
            ax.grid(alpha=0.3)
        row[0].legend(fontsize=7, loc="lower right", framealpha=0.85)  # the arms' colours
    eps = onset["epsilon"].iloc[0] if len(onset) else float("nan")
    level = contracts.ci_level(onset) if len(onset) else ""
    fig.text(0.5, 0.01, f"bands: {contracts.ci_caption(cur)}; ▼ onset: the last step before "
             f"the mean falls more than ε = {eps:g} below its running best; bars at the top: "
             f"its {level} Multi-Bootstrap interval (arrow: no onset in part of the samples)",
             ha="center", va="bottom", fontsize=7, wrap=True)
    fig.suptitle(f"Learning curves of {metric} (step 0: the untrained base)", fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


DODGE = 1.06  # a train-once depth's x step on the log axis, a factor


def dodge_factors(n: int, step: float = DODGE) -> np.ndarray:
    """x factors of n points that share an x: step, step², ... (all right of the x)."""
    return step ** np.arange(1, n + 1)


def spread(ys, gap: float) -> np.ndarray:
    """Label heights near `ys` at least `gap` apart, in the order of ys (a pure 1-D
    de-overlap: sorted, pushed up where too close, then re-centred on the points)."""
    ys = np.asarray(ys, dtype=float)
    order = np.argsort(ys, kind="stable")
    out = ys[order].copy()
    for k in range(1, len(out)):
        out[k] = max(out[k], out[k - 1] + gap)
    out -= (out - ys[order]).mean()  # centred: the labels stay beside their points
    res = np.empty_like(out)
    res[order] = out
    return res


def _depth_labels(ax, labels) -> None:
    """'L<depth>' beside each point: per-depth arms left of theirs, train-once arms right;
    the labels of one column (a train-once arm's) kept apart vertically."""
    y0, y1 = ax.get_ylim()
    for i, once, xs, p in labels:
        ys = spread(p.estimate.to_numpy(), 0.05 * (y1 - y0)) if once else p.estimate
        beside = transforms.offset_copy(ax.transData, fig=ax.figure, x=6 if once else -6,
                                        units="points")
        for xv, yv, depth in zip(xs, ys, p.depth, strict=True):
            ax.text(xv, yv, f"L{depth}", transform=beside, ha="left" if once else "right",
                    va="center", fontsize=7, color=f"C{i}")


def _once_note(strategy: str, once: bool) -> str:
    """What serves an arm's depths from one training, for its legend entry."""
    if contracts.truncated_cut(strategy):
        return (f" (fine-tuned {contracts.truncated_cut(strategy)} at the deepest depth, "
                "then truncated)")
    return " (train once)" if once else ""


def quality_vs_compute(stats: dict, order=()) -> plt.Figure:
    """Mean metric with its CI against the training compute behind each trained arm's
    depth (results/<study>/stats/compute.parquet): left, optimizer steps x layers trained of one
    training; right, its measured seconds (mean over seeds). A per-depth arm's depths lie
    on a line (one training each); a train-once arm's depths, and a fine-tuned-then-truncated
    arm's (the deepest per-depth training they cut, counted for it in full), cost one x (one
    training serves them all) and stand a step apart right of it, their labels spread. The
    legend gives each arm's total over its depths and seeds."""
    ci, comp = stats["ci"], stats["compute"]
    bench = ALL if ALL in set(ci.benchmark) else ci.benchmark.iloc[0]
    pts = ci[(ci.benchmark == bench) & (ci.recipe != BASE)].merge(
        comp, on=["recipe", "strategy", "depth"], validate="one_to_one")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    arms = [(r, s) for r in contracts.order_recipes(pts.recipe, order)
            for s in sorted(pts[pts.recipe == r].strategy.unique(),
                            key=lambda x: (contracts.arm_rank(x), x))]
    for ax, x, xlabel in ((axes[0], "layer_steps", "training compute: optimizer steps × "
                           "layers trained (layer-steps), one training"),
                          (axes[1], "train_seconds_mean", "measured training seconds, one "
                           "training (mean over seeds)")):
        labels = []
        for i, (recipe, strategy) in enumerate(arms):
            p = pts[(pts.recipe == recipe) & (pts.strategy == strategy)].sort_values("depth")
            once = bool(p.train_once.iloc[0])
            total = p.iloc[0]
            label = (f"{recipe}/{strategy}" + _once_note(strategy, once)
                     + f": {int(total.arm_trainings)} trainings, "
                     f"{int(total.arm_layer_steps):,} layer-steps in all")
            # A train-once arm's depths share one x: each stands a step further right (off
            # the per-depth point of the same cost and off each other), labelled on its right.
            xs = p[x].to_numpy() * (dodge_factors(len(p)) if once else 1.0)
            ax.errorbar(xs, p.estimate, yerr=[p.estimate - p.ci_low, p.ci_high - p.estimate],
                        fmt=arm_marker(strategy), ls="none" if once else "-", color=f"C{i}",
                        capsize=3, ms=5, label=label)
            labels.append((i, once, xs, p))
        _depth_labels(ax, labels)
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
    fig.suptitle(f"Quality vs training compute ({contracts.ci_caption(ci)}; ◆ train once, "
                 "▼ fine-tuned then truncated: one training per seed serves every depth)",
                 fontsize=10)
    fig.tight_layout()
    return fig


