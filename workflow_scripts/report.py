"""Report stage: results/RESULTS.md, every number generated from the stats and latency
outputs (nothing typed in by hand).

CLI: python -m workflow_scripts.report --stats-dir results/stats --latency FILE \
        --cards data/.../DATACARD.md ... [--extra results/ladder/summary.md] --out FILE
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from workflow_scripts import contracts

BASE, ALL = "base", "all"


def fmt(x, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def md_table(df: pd.DataFrame, digits: int = 4) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v, digits) for v in row) + " |")
    return "\n".join(lines)


def interval(est, lo, hi, digits: int = 4) -> str:
    return f"{est:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def p_fmt(p) -> str:
    return "–" if p is None or (isinstance(p, float) and math.isnan(p)) else f"{p:.4f}"


def ci_section(ci: pd.DataFrame) -> str:
    metric = ci["metric"].iloc[0]
    ci = ci.assign(cell=[interval(r.estimate, r.ci_low, r.ci_high) for r in ci.itertuples()])
    wide = ci.pivot_table(index=["recipe", "strategy", "depth"], columns="benchmark",
                          values="cell", aggfunc="first")
    cols = ([ALL] if ALL in wide.columns else []) + [c for c in wide.columns if c != ALL]
    wide = wide[cols].reset_index()
    seeds = ci[ci.benchmark == (ALL if ALL in set(ci.benchmark) else ci.benchmark.iloc[0])]
    wide = wide.merge(seeds[["recipe", "strategy", "depth", "n_seeds", "seed_std", "resample"]],
                      on=["recipe", "strategy", "depth"])
    return (f"## Mean {metric} with 95% Multi-Bootstrap CI\n\n"
            f"Resampled over seeds × queries (queries within each benchmark; `{ALL}` is the "
            "unweighted mean of the benchmarks). `seed_std` is the ddof-1 standard deviation "
            "of the per-seed means. One-seed rows (the untrained base) resample queries only."
            f"\n\n{md_table(wide)}\n")


def _comparison_rows(comp: pd.DataFrame, kind: str) -> pd.DataFrame:
    c = comp[comp.kind == kind].copy()
    c["delta [95% CI]"] = [interval(r.estimate, r.ci_low, r.ci_high) for r in c.itertuples()]
    c["p"] = [p_fmt(p) for p in c.p_value]
    return c


def comparison_section(comp: pd.DataFrame) -> str:
    metric = comp["metric"].iloc[0]
    out = [f"## Comparisons of {metric} (δ = b − a)\n"]
    titles = {
        "trained_vs_base": ("Training vs the untrained truncated base",
                            "single-baseline design (the base is one deterministic model); "
                            "p = P(δ ≤ 0), one-sided."),
        "depth": ("Depth vs depth within a recipe",
                  "paired by seed; p two-sided; `equivalent` = TOST |δ| < ε at the CI level."),
        "strategy": ("Depth strategy vs depth strategy",
                     "same recipe and depth, paired by seed; p two-sided."),
        "recipe": ("Budget vs budget at each depth",
                   "paired where the recipes share seeds, single-baseline where one has one "
                   "seed, else unpaired; p two-sided."),
    }
    for kind, (title, note) in titles.items():
        c = _comparison_rows(comp, kind)
        if c.empty:
            continue
        joint = c[c.epsilon.notna()] if "epsilon" in c else c
        cols = ["a", "b", "benchmark", "design", "resample", "delta [95% CI]", "p"]
        if kind != "trained_vs_base":
            joint = joint.assign(**{"equivalent (ε)": [
                f"{fmt(bool(e))} ({eps:g}, p={p_fmt(p)})" for e, eps, p in
                zip(joint.equivalent, joint.epsilon, joint.equivalence_p, strict=True)]})
            cols.append("equivalent (ε)")
        out.append(f"### {title}\n\n{note}\n\n{md_table(joint[cols])}\n")
    # The paper's ablation: how wide the intervals are when only one axis is resampled.
    ab = comp.assign(width=comp.ci_high - comp.ci_low)
    ab = ab.pivot_table(index=["kind", "a", "b", "benchmark"], columns="resample",
                        values="width", aggfunc="first")
    if {"examples", "seeds", "seeds,examples"} <= set(ab.columns):
        ab = ab.dropna(subset=["seeds,examples"]).reset_index()
        ab = ab[ab.benchmark == ALL] if ALL in set(ab.benchmark) else ab
        ab = ab.rename(columns={"seeds,examples": "joint CI width", "seeds": "seeds only",
                                "examples": "examples only"})
        out.append("### Resampling ablation (CI widths)\n\nJoint resampling vs seed-only and "
                   "example-only (Sellam et al. 2022, §4.2): one-axis intervals ignore the "
                   f"other source of variance.\n\n{md_table(ab, 4)}\n")
    return "\n".join(out)


def variance_section(var: pd.DataFrame, plan: pd.DataFrame, agree: pd.DataFrame) -> str:
    out = []
    if not var.empty:
        v = var[var.benchmark == ALL] if ALL in set(var.benchmark) else var
        out.append("## Where the uncertainty comes from\n\nShare of the bootstrap variance of "
                   "the mean from seeds vs from queries (`share_interaction` = what neither "
                   "axis alone explains).\n\n" + md_table(
                       v[["recipe", "strategy", "depth", "benchmark", "var_joint",
                          "share_seeds", "share_examples", "share_interaction"]], 3) + "\n")
    if not plan.empty:
        out.append("## Seeds needed\n\nFrom the variance components of each [seeds × queries] "
                   "matrix: seeds for a 95% CI half-width of "
                   f"{plan.target_half_width.iloc[0]:g}, and per arm to detect "
                   f"δ = {plan.target_delta.iloc[0]:g} with 80% power (α = 0.05).\n\n" + md_table(
                       plan[["recipe", "strategy", "depth", "benchmark", "n_seeds",
                             "half_width_now", "seeds_for_half_width", "seeds_for_delta"]], 4)
                   + "\n")
    if not agree.empty:
        a = (agree.groupby(["recipe", "strategy", "depth", "benchmark"])
             [["top1_agreement", "spearman"]].mean().reset_index())
        out.append("## Instance-level agreement between seeds\n\nMean over seed pairs: share "
                   "of queries where two seeds agree on a top-1 hit, and Spearman correlation "
                   "of per-query scores (MultiBERTs, appendix C).\n\n" + md_table(a, 3) + "\n")
    return "\n".join(out)


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


def latency_section(summary: pd.DataFrame) -> str:
    """The canonical latency ladder (median over the coherent runs of each run's p50), every
    run's coherence verdict and the incoherent runs with their failed checks."""
    from workflow_scripts.coherence import canonical_ladder, linear_fit

    head = ("## Latency ladder\n\nEncode latency of one fixed pre-tokenized batch"
            + (f" ({_latency_setup(summary)})" if len(summary) else "")
            + ", all depths in one process per run, depths visited in a fresh random order "
            "every round.")
    wide = summary.pivot(index="run", columns="depth", values="p50_ms").sort_index()
    depths = wide.columns.to_numpy()
    if "coherent" not in summary:  # a summary from before the coherence check
        ladder = pd.DataFrame({"depth": depths, "p50_ms": wide.median().to_numpy(),
                               "runs": len(wide)})
        return (head + " Coherence not checked: median over all runs of each run's p50."
                "\n\n" + md_table(ladder, 2) + "\n")
    per_run = summary.groupby("run").first()
    coherent = per_run.loc[wide.index, "coherent"].astype(bool).to_numpy()
    p50, used = canonical_ladder(depths, wide.to_numpy(), coherent)
    ladder = pd.DataFrame({"depth": depths.astype(int), "p50_ms": p50,
                           "runs used": used.astype(int)})
    for col, name in (("encode_p50_ms", "encode() p50_ms"),
                      ("tokenize_p50_ms", "tokenization p50_ms")):
        if col in summary:
            sub = summary[summary.run.isin(wide.index[coherent])].groupby("depth")[col]
            ladder[name] = ladder.depth.map(sub.median()).astype(float)
    out = [head + " Every run's ladder is checked for physical coherence (monotone, linear, "
           "constant per-layer slope, leave-one-out prediction, timers agree, stable; "
           "`results/latency/coherence.json` holds each check's value). The canonical "
           "ladder is, per depth, the median over the coherent runs only of each run's p50 "
           "(ms per batch of model calls; `encode()` adds tokenization).\n"]
    if coherent.any():
        out.append(md_table(ladder, 2) + "\n")
        if len(depths) >= 2:
            a, b, r2 = linear_fit(depths, p50)
            out.append(f"Fit: p50 ≈ {a:.2f} + {b:.2f} × n_layers ms (R² {r2:.4f}).\n")
    else:
        out.append("**No profiling run passed the coherence check: there is no canonical "
                   "latency ladder.** The Pareto figure shows the median of all runs, "
                   "marked unverified.\n")
    verdicts = pd.DataFrame({
        "run": wide.index.astype(int),
        "verdict": ["coherent" if c else "INCOHERENT" for c in coherent],
        "failed checks": [per_run.loc[r, "failed_checks"] or "–" for r in wide.index],
        **{f"p50 L{int(d)} (ms)": wide[d].to_numpy() for d in depths},
    })
    if "iqr_ms" in summary:
        ratio = (summary.iqr_ms / summary.p50_ms).groupby(summary.run).max()
        verdicts["max IQR/median"] = verdicts.run.map(ratio).astype(float)
    out.append("### Per-run verdicts\n\n" + md_table(verdicts, 3) + "\n")
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
        out.append("Every run passed every check.\n")
    return "\n".join(out)


def build(stats_dir, latency=None, cards=(), extras=(), title="depthlab results") -> str:
    d = Path(stats_dir)
    tables = {n: pd.read_parquet(d / f"{n}.parquet") for n in
              ("ci", "comparisons", "variance", "seeds_needed", "agreement")}
    parts = [f"# {title}\n",
             "Generated by the workflow (`snakemake results/RESULTS.md`); do not edit.\n",
             ci_section(tables["ci"]), comparison_section(tables["comparisons"]),
             variance_section(tables["variance"], tables["seeds_needed"], tables["agreement"])]
    if latency:
        parts.append(latency_section(pd.read_parquet(latency)))
    for extra in extras:
        parts.append(Path(extra).read_text(encoding="utf-8"))
    if cards:
        parts.append("## Data\n")
        for card in cards:
            text = Path(card).read_text(encoding="utf-8")
            parts.append(f"### {card}\n\n" + text.split("\n", 1)[1].lstrip())
    return "\n".join(parts)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Write results/RESULTS.md.")
    ap.add_argument("--stats-dir", required=True)
    ap.add_argument("--latency")
    ap.add_argument("--cards", nargs="*", default=[])
    ap.add_argument("--extra", nargs="*", default=[], help="markdown fragments to append")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    contracts.write_text(a.out, build(a.stats_dir, a.latency, a.cards, a.extra))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
