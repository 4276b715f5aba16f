"""RESULTS.md's "Learning curves": per recipe the metric at every evaluated step with its
interval, then the onset of the decline with its bootstrap interval and the change from the
best step to the last (results/<study>/stats/curves*.parquet)."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.biencoder.report.markdown import interval, md_table, p_fmt
from workflow_scripts.core import contracts, notation
from workflow_scripts.core.contracts import ALL


def curves_section(cur: pd.DataFrame, change: pd.DataFrame, onset: pd.DataFrame) -> str:
    """The learning curves (results/<study>/stats/curves*.parquet): per recipe the mean across
    benchmarks at every step with its interval, then per curve and benchmark the onset of
    the decline with its bootstrap interval and the change from the best step to the last."""
    metric = cur["metric"].iloc[0]
    bench = ALL if ALL in set(cur.benchmark) else cur.benchmark.iloc[0]
    where = "the mean of benchmarks" if bench == ALL else bench
    out = [f"## Learning curves of {metric}\n\n"
           f"Each recipe with `eval_steps`: {where} at every evaluated step with its "
           f"{contracts.ci_caption(cur)} (step 0 is the untrained base, the last step the "
           "final model). The **onset** is the last step before the mean first falls more "
           f"than ε = {onset.epsilon.iloc[0]:g} (stats.onset_epsilon) below its running best: "
           "the decline begins after it. Its interval comes from recomputing the onset in "
           f"each of {int(onset.nboot.iloc[0])} Multi-Bootstrap samples of seeds × queries "
           "(the same draws at every step, so each seed's steps stay paired); "
           f"`{notation.NO_ONSET}` as the onset means the mean never falls that far, as a "
           "bound that part of the samples has no onset, and P(onset) is the share of "
           "samples with one. The change from the best step to the last is paired by seed; "
           "since the best step is picked on the same data, it leans negative.\n"]
    for recipe in cur.recipe.unique():
        c = cur[(cur.recipe == recipe) & (cur.benchmark == bench)]
        c = c.assign(cell=[interval(r.estimate, r.ci_low, r.ci_high) for r in c.itertuples()])
        wide = c.pivot_table(index=["strategy", "depth"], columns="step", values="cell",
                             aggfunc="first")
        wide.columns = [f"step {notation.step(x)}" + (" (base)" if x == 0 else "")
                        for x in wide.columns]
        out.append(f"### {recipe}\n\n{md_table(wide.reset_index())}\n")
    keys = ["recipe", "strategy", "depth", "benchmark"]
    t = onset[[*keys, "best_step", "onset_step", "onset_ci_low", "onset_ci_high",
               "p_onset"]].merge(change[[*keys, "step_a", "step_b", "estimate", "ci_low",
                                         "ci_high", "p_value"]], on=keys)
    rows = pd.DataFrame({
        **{k: t[k] for k in keys},
        "best step": [notation.step(x) for x in t.best_step],
        f"onset (decline after) [{contracts.ci_level(onset)} interval]": [
            notation.onset_interval(*x) for x in zip(t.onset_step, t.onset_ci_low,
                                                     t.onset_ci_high, strict=True)],
        "P(onset)": t.p_onset,
        "best → last step": [f"{int(a)} → {int(b)}" for a, b in zip(t.step_a, t.step_b,
                                                                    strict=True)],
        f"change [{contracts.ci_caption(change)}]": [
            interval(r.estimate, r.ci_low, r.ci_high) for r in t.itertuples()],
        "p": [p_fmt(p) for p in t.p_value],
    })
    out.append("### Onset of the decline and best → last\n\n" + md_table(rows, 3) + "\n")
    return "\n".join(out)

