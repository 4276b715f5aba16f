"""RESULTS.md's section on training compute and, where the config has train-once arms, on
train once vs per depth: at each depth the train-once arm against per-depth training of
strategy top (comparisons of kind "train_once", delta = train-once - per-depth, paired by
seed) with both intervals, and what each arm's training cost
(results/<study>/stats/compute.parquet).
"""

from __future__ import annotations

import pandas as pd

from workflow_scripts.biencoder.report.markdown import ci_cell, interval, md_table, p_fmt
from workflow_scripts.core import contracts
from workflow_scripts.core.contracts import ALL

_CI = ["estimate", "ci_low", "ci_high"]


def _cost(row) -> str:
    """'6 steps × 3 layers = 18 layer-steps, 21.4 s' of one training."""
    layers = int(row.layers_trained)
    return (f"{int(row.steps):,} steps × {layers} layer{'s' * (layers != 1)} = "
            f"{int(row.layer_steps):,} layer-steps, {row.train_seconds_mean:.1f} s")


def _kind(strategy: str, once: bool) -> str:
    if contracts.truncated_cut(strategy):
        return f"fine-tuned {contracts.truncated_cut(strategy)}, truncated"
    return "train once" if once else "per depth"


def arm_totals(compute: pd.DataFrame) -> pd.DataFrame:
    """One row per trained arm: its trainings, the depths one training serves, and the
    arm's total layer-steps and measured seconds over every depth and seed. A
    fine-tuned-then-truncated arm's trainings are the deepest per-depth ones it cuts, the
    same the per-depth arm counts: no training of its own."""
    rows = []
    for (recipe, strategy), g in compute.groupby(["recipe", "strategy"], sort=False):
        first = g.iloc[0]
        per = (f"one training of {int(first.layer_steps):,} layer-steps (L"
               f"{int(first.trained_depth)}) cut to L{g.depth.min()}–L{g.depth.max()}"
               if contracts.truncated_cut(strategy) else
               f"one training of {int(first.layer_steps):,} layer-steps serves "
               f"L{g.depth.min()}–L{g.depth.max()}" if first.train_once else
               ", ".join(f"L{r.depth}: {int(r.layer_steps):,}" for r in g.itertuples()))
        rows.append({"recipe": recipe, "strategy": strategy,
                     "kind": _kind(strategy, first.train_once),
                     "seeds": int(first.seeds), "trainings": int(first.arm_trainings),
                     "layer-steps per training": per,
                     "layer-steps in all": f"{int(first.arm_layer_steps):,}",
                     "train seconds in all": round(float(first.arm_train_seconds), 1)})
    return pd.DataFrame(rows)


def _savings(compute: pd.DataFrame) -> list[str]:
    """Per recipe with a train-once arm: its total against per-depth training's."""
    lines = []
    per_arm = compute.drop_duplicates(["recipe", "strategy"])
    for recipe, g in per_arm.groupby("recipe", sort=False):
        ref = g[g.strategy == contracts.PER_DEPTH_REFERENCE]
        for r in g[g.strategy.isin(contracts.TRAIN_ONCE)].itertuples():
            if ref.empty:
                continue
            base = ref.iloc[0]
            lines.append(
                f"- {recipe}: {r.strategy} trains {int(r.arm_trainings)} models "
                f"({int(r.arm_layer_steps):,} layer-steps, {r.arm_train_seconds:.0f} s) where "
                f"per-depth training ({contracts.PER_DEPTH_REFERENCE}) trains "
                f"{int(base.arm_trainings)} ({int(base.arm_layer_steps):,} layer-steps, "
                f"{base.arm_train_seconds:.0f} s): "
                f"{r.arm_layer_steps / base.arm_layer_steps:.2f}× the layer-steps, "
                f"{r.arm_train_seconds / base.arm_train_seconds:.2f}× the seconds.")
    return lines


def comparison_rows(ci: pd.DataFrame, comp: pd.DataFrame, compute: pd.DataFrame
                    ) -> pd.DataFrame:
    """At each depth: per-depth and train-once means, the paired delta with both
    intervals, and each side's cost of one training."""
    rows = comp[comp.kind == "train_once"]
    bench = ALL if ALL in set(rows.benchmark) else rows.benchmark.iloc[0]
    rows = rows[(rows.benchmark == bench) & rows.epsilon.notna()]  # the joint resampling
    means = ci[ci.benchmark == bench].set_index(["recipe", "strategy", "depth"])
    cost = compute.set_index(["recipe", "strategy", "depth"])
    delta = f"δ [{contracts.ci_caption(rows)}]"
    out = []
    for r in rows.sort_values(["recipe_a", "strategy_b", "depth_a"]).itertuples():
        a, b = (r.recipe_a, r.strategy, r.depth_a), (r.recipe_b, r.strategy_b, r.depth_b)
        out.append({
            "recipe": r.recipe_a, "arm": r.strategy_b, "depth": int(r.depth_a),
            f"per depth ({contracts.PER_DEPTH_REFERENCE})": interval(*means.loc[a, _CI]),
            "train once": interval(*means.loc[b, _CI]),
            delta: interval(r.estimate, r.ci_low, r.ci_high), "p": p_fmt(r.p_value),
            "Multi-Bootstrap CI": ci_cell(r.mb_ci_low, r.mb_ci_high),
            "p (MB)": p_fmt(r.mb_p_value),
            "cost per depth": _cost(cost.loc[a]) if a in cost.index else "–",
            "cost train once": _cost(cost.loc[b]) if b in cost.index else "–",
        })
    return pd.DataFrame(out)


def compute_section(ci: pd.DataFrame, comp: pd.DataFrame, compute: pd.DataFrame) -> str:
    """The markdown section: train once vs per depth (when the comparisons have such rows)
    and every arm's training compute."""
    totals = ("Every trained arm's cost: optimizer steps × layers trained (layer-steps) and "
              "the measured training seconds (the trainer's run, without imports and model "
              "loading), summed over its depths and seeds.\n\n"
              + md_table(arm_totals(compute), digits=1) + "\n")
    if not (comp.kind == "train_once").any():
        return "## Training compute\n\n" + totals
    metric = comp["metric"].iloc[0]
    bench = ALL if ALL in set(comp.benchmark) else comp.benchmark.iloc[0]
    where = "the mean of benchmarks" if bench == ALL else bench
    return "\n".join([
        "## Train once vs per depth\n",
        f"A train-once arm trains one model per seed at the deepest depth and evaluates every "
        f"depth by truncating it; per-depth training (strategy {contracts.PER_DEPTH_REFERENCE}"
        f", the same bottom layers) trains one model per depth and seed. At each depth, "
        f"{metric} on {where}: δ = train-once − per-depth, paired by seed, p two-sided, "
        f"{contracts.interval_name(comp)} interval with the Multi-Bootstrap's beside it. "
        "The cost columns are one training's (mean seconds over seeds).\n",
        md_table(comparison_rows(ci, comp, compute)) + "\n",
        "### Training compute\n", totals, *(_savings(compute) or []),
    ]) + "\n"
