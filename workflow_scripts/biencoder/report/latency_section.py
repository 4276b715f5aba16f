"""RESULTS.md's "Latency ladder": the canonical ladder (results/<study>/latency/ladder.parquet),
whether its milliseconds are verified, its line fit (coherence.json's canonical_ladder.fit)
and every profiling run's coherence verdict (results/<study>/latency/summary.parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from workflow_scripts.biencoder.report.markdown import fmt, interval, md_table


def _latency_setup(summary: pd.DataFrame) -> str:
    """'batch 8 x 32 tokens, cpu (AMD EPYC), 1 thread, float32' from the summary's columns."""
    first = summary.iloc[0]
    parts = []
    if {"batch_size", "seq_len"} <= set(summary):
        parts.append(f"batch {int(first['batch_size'])} × {int(first['seq_len'])} tokens")
    if "device" in summary:
        name = f" ({first['device_name']})" if "device_name" in summary else ""
        parts.append(f"{first['device']}{name}")
    if "threads" in summary:
        parts.append(f"{int(first['threads'])} thread{'s' * (int(first['threads']) != 1)}")
    if "dtype" in summary:
        parts.append(str(first["dtype"]))
    return ", ".join(parts)


def ladder_fit(ladder: pd.DataFrame) -> dict:
    """Least squares p50 = a + b * n over the canonical ladder, as the latency summary
    writes it to coherence.json's canonical_ladder.fit (for a report without that file)."""
    n, y = ladder["depth"].to_numpy(float), ladder["p50_ms"].to_numpy(float)
    b, a = np.polyfit(n, y, 1)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum((y - (a + b * n)) ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    return {"a_ms": float(a), "b_ms_per_layer": float(b), "r2": r2}


def absolute_note(ladder: pd.DataFrame) -> str:
    """Whether the canonical ladder's milliseconds are verified (`absolute_verified`)."""
    if not ladder["coherent"].any():
        return ""
    if "absolute_verified" in ladder and bool(ladder["absolute_verified"].iloc[0]):
        return ("**Absolute milliseconds: verified** (every coherent run also passed "
                "`absolute_stable`: the machine's speed held, the calls were tight and the "
                "runs agree in milliseconds).")
    return ("**Absolute milliseconds: not verified** (a coherent run failed "
            "`absolute_stable`: the machine's speed drifted or the runs disagree in "
            "milliseconds). The relative ladder Q is verified; the milliseconds are Q times "
            "this machine's reference p50 during profiling: compare depths by Q, and time "
            "on a quiet or dedicated machine for milliseconds to publish.")


BUSY = "the machine was busy"  # how latency/summary.py `busy_note` starts a busy run's note


def machine_note(per_run: pd.DataFrame) -> str:
    """Whether other work shared the machine during the profiling runs, from each run's
    note (latency/summary.py `busy_note`, also in coherence.json): busy runs named in bold
    first, since their milliseconds and possibly their Q are slowed unevenly; "" where no
    run has a note (a GPU run, or no load recorded)."""
    if "notes" not in per_run:
        return ""
    notes = {int(r): str(n) for r, n in per_run["notes"].items() if isinstance(n, str) and n}
    if not notes:
        return ""
    busy = [r for r, n in notes.items() if n.startswith(BUSY)]
    lines = [f"- run {r}: {n}" for r, n in sorted(notes.items())]
    head = (f"**The machine was busy during profiling run(s) {', '.join(map(str, busy))}**: "
            "its latencies are less trustworthy than a quiet machine's."
            if busy else "The machine was quiet during every profiling run.")
    return ("Machine load during profiling (also in `latency/coherence.json` of this folder): "
            + head + "\n\n" + "\n".join(lines))


def latency_section(summary: pd.DataFrame, ladder: pd.DataFrame, fit: dict | None = None) -> str:
    """The canonical latency ladder (results/<study>/latency/ladder.parquet: per depth the median
    over the coherent runs of their relative ladder Q, times the reference depth's p50),
    whether its milliseconds are verified, its line fit (`fit`: coherence.json's
    canonical_ladder.fit; None: fitted here), every run's coherence verdict and the
    incoherent runs with their failed checks (results/<study>/latency/summary.parquet)."""
    head = ("## Latency ladder\n\nEncode latency of one fixed pre-tokenized batch"
            + (f" ({_latency_setup(summary)})" if len(summary) else "")
            + ", all depths in one process per run, in rounds of one visit per depth in "
            "balanced random orders (each depth equally often in each position); the calls "
            "right after switching to a depth are measured and left out.")
    value = "q" if "q" in summary else "p50_ms"
    wide = summary.pivot(index="run", columns="depth", values=value).sort_index()
    depths = wide.columns.to_numpy()
    per_run = summary.groupby("run").first()
    coherent = per_run.loc[wide.index, "coherent"].astype(bool).to_numpy()
    ladder = ladder.sort_values("depth").reset_index(drop=True)
    ref = int(ladder["ref_depth"].iloc[0]) if "ref_depth" in ladder else int(depths.min())
    table = pd.DataFrame({"depth": ladder["depth"].astype(int)})
    if "q" in ladder:
        table[f"Q (× L{ref})"] = (  # with the canonical Q's CI (runs and rounds resampled)
            [interval(*x, digits=3) for x in ladder[["q", "q_ci_low", "q_ci_high"]].to_numpy()]
            if "q_ci_low" in ladder else [fmt(x, 3) for x in ladder["q"].astype(float)])
    table["p50_ms"] = ladder["p50_ms"]
    table["runs used"] = ladder["runs_used"].astype(int)
    for col, name in (("encode_p50_ms", "encode() p50_ms"),
                      ("tokenize_p50_ms", "tokenization p50_ms")):
        if col in ladder:
            table[name] = ladder[col].astype(float)
    out = [head + " Each run's relative ladder Q = t_depth / t_ref (reference: depth "
           f"{ref}) comes from a robust two-way fit of log time over rounds × depths, which "
           "takes out drift that slows every call alike; its CIs resample whole rounds. "
           "A run adds rounds until every Q's CI reaches the target half-width or a cap "
           "stops it. Every run is checked for physical coherence on Q (monotone, linear, "
           "constant per-layer slope, leave-one-out prediction), for timers that agree and "
           "for a consistent relative ladder (both halves of the run agreeing, runs "
           "agreeing); precision (`precise`: every Q's CI within the target) and "
           "`absolute_stable` (steady machine speed, tight calls, runs agreeing in "
           "milliseconds) are reported without gating: a run that stopped at a cap is used "
           "with its wider CI, which the latency claims read "
           "(`latency/coherence.json` of this folder holds each check's value). The canonical "
           "ladder is, per depth, the median over the coherent runs only of their Q, times "
           "the median over them of the reference depth's p50 (ms per batch of model "
           "calls; `encode()` adds tokenization).\n"]
    if load := machine_note(summary.groupby("run").first()):
        out.append(load + "\n")
    if ladder["coherent"].any():
        out.append(absolute_note(ladder) + "\n")
        out.append(md_table(table, 2) + "\n")
        if len(ladder) >= 2:
            f = fit or ladder_fit(ladder)
            line = (f"Fit: p50 ≈ {f['a_ms']:.2f} + {f['b_ms_per_layer']:.2f} × n_layers ms "
                    f"(R² {f['r2']:.4f})")
            if "q" in ladder:
                b, a = np.polyfit(ladder["depth"].to_numpy(float),
                                  ladder["q"].to_numpy(float), 1)
                line += f"; in units of depth {ref}: Q ≈ {a:.3f} + {b:.3f} × n_layers"
            out.append(line + ".\n")
    else:
        out.append("**No profiling run passed the coherence check: there is no canonical "
                   "latency ladder.** The Pareto figure shows the median of all runs, "
                   "marked unverified.\n")
    verdicts = pd.DataFrame({
        "run": wide.index.astype(int),
        "verdict": ["coherent" if c else "INCOHERENT" for c in coherent],
        "failed checks": [per_run.loc[r, "failed_checks"] or "–" for r in wide.index],
        **{(f"Q L{int(d)}" if value == "q" else f"p50 L{int(d)} (ms)"): wide[d].to_numpy()
           for d in depths},
    })
    if "absolute_stable" in per_run:
        verdicts["absolute stable"] = ["yes" if per_run.loc[r, "absolute_stable"] else "no"
                                       for r in wide.index]
    for col, name in (("rounds_fit", "rounds"), ("stop_reason", "stopped at")):
        if col in per_run:
            verdicts[name] = per_run.loc[wide.index, col].to_numpy()
    if "q_half_width" in summary:  # the precision each run reached (not a gate)
        half = summary.groupby("run")["q_half_width"].max()
        verdicts["CI of Q ±"] = [f"{half[r]:.1%}" for r in wide.index]
    for col, name in (("resid_iqr", "fit residual IQR"), ("drift_range", "drift range")):
        if col in per_run:
            verdicts[name] = per_run.loc[wide.index, col].astype(float).to_numpy()
    if "iqr_ms" in summary:
        ratio = (summary.iqr_ms / summary.p50_ms).groupby(summary.run).max()
        verdicts["max IQR/median"] = verdicts.run.map(ratio).astype(float)
    out.append("### Per-run verdicts\n\n" + md_table(verdicts, 3) + "\n")
    capped = [str(r) for r in wide.index if per_run.get("stop_reason", {}).get(r, "target")
              != "target"]
    if capped:
        out.append(f"Run(s) {', '.join(capped)} stopped at a cap before every Q's CI reached "
                   "the target: used where coherent, with the wider CI shown above, which "
                   "the latency claims read.\n")
    bad = [r for r, c in zip(wide.index, coherent, strict=True) if not c]
    if bad:
        lines = ["### Incoherent runs (left out of the canonical ladder)\n"]
        for r in bad:
            why = per_run.loc[r, "why"] if "why" in per_run else ""
            note = per_run.loc[r, "notes"] if "notes" in per_run else ""
            lines.append(f"- run {int(r)}: {per_run.loc[r, 'failed_checks']}"
                         + (f" — {why}" if why else "") + (f" (note: {note})" if note else ""))
        out.append("\n".join(lines) + "\n")
    else:
        out.append("Every run passed every gate.\n")
    return "\n".join(out)


def read_fit(coherence_json) -> dict | None:
    """coherence.json's canonical_ladder.fit (None when it has none: no coherent run)."""
    doc = json.loads(Path(coherence_json).read_text(encoding="utf-8"))
    return doc.get("canonical_ladder", {}).get("fit")

