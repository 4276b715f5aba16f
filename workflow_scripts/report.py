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


def latency_section(summary: pd.DataFrame) -> str:
    ladder = summary.groupby("depth").agg(p50_ms=("p50_ms", "median"),
                                          iqr_ms=("iqr_ms", "median"),
                                          p90_ms=("p90_ms", "median"),
                                          runs=("run", "nunique")).reset_index()
    return ("## Latency ladder\n\nEncode latency of one fixed pre-tokenized batch, all depths "
            "in one process, median over runs of each run's p50.\n\n" + md_table(ladder, 2)
            + "\n")


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
