"""The accuracy-latency figure (pareto): every arm's mean with its interval against the
canonical latency ladder (results/<study>/latency/ladder.parquet), and the Pareto front. The CLI is
figures.py."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: jobs run without a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from workflow_scripts.biencoder.report import latency_section  # noqa: E402
from workflow_scripts.biencoder.report.figures_depth import (  # noqa: E402
    _arm_label,
    _base_rows,
    arm_marker,
    trained_arms,
    wrap_parts,
)
from workflow_scripts.core import contracts  # noqa: E402
from workflow_scripts.core.contracts import ALL, BASE  # noqa: E402


def pareto_front(points: pd.DataFrame) -> pd.DataFrame:
    """Points not dominated by a faster-and-better one (lower latency, higher metric)."""
    pts = points.sort_values(["p50_ms", "estimate"], ascending=[True, False])
    best, keep = -np.inf, []
    for i, r in pts.iterrows():
        if r.estimate > best:
            keep.append(i)
            best = r.estimate
    return pts.loc[keep]


DODGE = 0.015  # the arms' sideways step at a depth, a share of the latency range


def dodge_offsets(n: int, step: float) -> np.ndarray:
    """x offsets of n arms drawn at one x: step apart, centred on it."""
    return (np.arange(n) - (n - 1) / 2) * step


def busy_runs(summary: pd.DataFrame) -> list[int]:
    """The profiling runs during which the machine was busy (latency/summary.py busy_note,
    the summary's `notes`): the figure says so, as RESULTS.md does."""
    if "notes" not in summary:
        return []
    notes = summary.groupby("run")["notes"].first()
    return [int(r) for r, n in notes.items()
            if isinstance(n, str) and n.startswith(latency_section.BUSY)]


def pareto(stats: dict, latency: pd.DataFrame, order=(), busy=()) -> plt.Figure:
    """Accuracy vs the canonical latency ladder: `latency` is
    results/<study>/latency/ladder.parquet,
    one row per depth whose p50_ms is the median over the coherent profiling runs only of
    their relative ladder Q, times the reference depth's p50 (x error bars: the runs' range
    of Q, in those milliseconds). The x label says whether the milliseconds are verified
    (`absolute_verified`). Where no run was coherent (p50_ms NaN) the figure falls back to
    the median of all runs and says so in red: those latencies failed the coherence check.
    `busy`: the profiling runs the machine was busy during (busy_runs), said in the x label."""
    if latency["depth"].duplicated().any():
        raise ValueError("pareto needs the canonical latency ladder (one row per depth: "
                         "results/<study>/latency/ladder.parquet), not per-run rows")
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
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    arms = trained_arms(ci, order)
    drawn = [*arms, (BASE, None)]
    # Every arm has its depth's latency: each is drawn a little to the side of it (the top
    # axis marks the true latency), so that their error bars do not cover each other.
    offsets = dodge_offsets(len(drawn), DODGE * float(np.ptp(p50.dropna()) or 1.0))
    for i, (recipe, strategy) in enumerate(drawn):
        p = (_base_rows(pts, bench) if recipe == BASE
             else pts[(pts.recipe == recipe) & (pts.strategy == strategy)].sort_values("depth"))
        if p.empty:
            continue
        color = "gray" if recipe == BASE else f"C{i}"
        xe = None
        if xerr and p.x_lo.notna().all():
            xe = [(p.p50_ms - p.x_lo).clip(lower=0), (p.x_hi - p.p50_ms).clip(lower=0)]
        ax.errorbar(p.p50_ms + offsets[i], p.estimate,
                    yerr=[p.estimate - p.ci_low, p.ci_high - p.estimate],
                    xerr=xe, fmt=arm_marker(strategy) if strategy else "o", color=color,
                    capsize=3, label="untrained base" if recipe == BASE
                    else _arm_label(recipe, strategy, arms))
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
    if busy:
        source += f"; MACHINE BUSY during profiling run(s) {', '.join(map(str, busy))}"
    # The provenance on lines of its own, wrapped: one line of it can be wider than the
    # figure (a busy machine's note was cut off at the left edge)
    ax.set_xlabel(f"encode latency p50 (ms per batch{shape}; arms dodged sideways around "
                  f"their depth's L tick)\n{wrap_parts(source.split('; '), 95)}", fontsize=8)
    ax.set_ylabel(f"{ci.metric.iloc[0]} ({'mean of benchmarks' if bench == ALL else bench})")
    title = f"Accuracy–latency trade-off ({contracts.ci_caption(ci)})"
    ax.set_title(title, pad=16)  # room for the depths' top axis
    if unverified.any():
        ax.set_title(title + "\nLATENCY UNVERIFIED: no profiling run passed the coherence "
                     "check", color="red", fontsize=9, pad=16)
    ax.grid(alpha=0.3)
    # Every arm has the same latency at a depth: name the depths once, on a top axis, rather
    # than a label per point (those overlap where arms score alike).
    depths = sorted(pts.depth.unique())
    top = ax.secondary_xaxis("top")
    top.set_xticks([p50[d] for d in depths], [f"L{d}" for d in depths], fontsize=8)
    top.tick_params(length=3, pad=1)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.tight_layout()
    return fig


