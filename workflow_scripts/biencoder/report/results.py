"""Report stage: results/<study>/RESULTS.md, every number generated from the workflow's outputs
(nothing typed in by hand): the stats tables, the latency summary, canonical ladder and
coherence document, and the per-rule usage table. It reads those artifacts only, never
another stage's code.

CLI: python -m workflow_scripts.biencoder.report.results --stats-dir results/<study>/stats
        [--latency-summary results/<study>/latency/summary.parquet
         --latency-ladder results/<study>/latency/ladder.parquet
         [--latency-coherence results/<study>/latency/coherence.json]]
        [--usage results/<study>/usage.parquet] [--cards data/.../DATACARD.md ...]
        [--extra results/<study>/ladder/summary.md ...]
        [--claims results/<study>/claims.md] [--curves] \
        [--compute] [--dims] --out results/<study>/RESULTS.md
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from workflow_scripts.biencoder.report.compute_section import compute_section
from workflow_scripts.biencoder.report.curves_section import curves_section
from workflow_scripts.biencoder.report.dims_section import dims_section
from workflow_scripts.biencoder.report.latency_section import latency_section, read_fit
from workflow_scripts.biencoder.report.markdown import ci_cell, fmt, interval, md_table, p_fmt
from workflow_scripts.core import contracts, notation, paths
from workflow_scripts.core.contracts import ALL


def ci_section(ci: pd.DataFrame) -> str:
    metric = ci["metric"].iloc[0]
    ci = ci.assign(cell=[interval(r.estimate, r.ci_low, r.ci_high) for r in ci.itertuples()])
    wide = ci.pivot_table(index=["recipe", "strategy", "depth"], columns="benchmark",
                          values="cell", aggfunc="first")
    cols = ([ALL] if ALL in wide.columns else []) + [c for c in wide.columns if c != ALL]
    wide = wide[cols].reset_index()
    seeds = ci[ci.benchmark == (ALL if ALL in set(ci.benchmark) else ci.benchmark.iloc[0])]
    cols = ["recipe", "strategy", "depth", "n_seeds", "seed_std", "resample"]
    reference = contracts.shows_reference(ci)
    if reference:
        seeds = seeds.assign(**{f"Multi-Bootstrap ({seeds.benchmark.iloc[0]})": [
            ci_cell(r.mb_ci_low, r.mb_ci_high) for r in seeds.itertuples()]})
        cols.append(f"Multi-Bootstrap ({seeds.benchmark.iloc[0]})")
    wide = wide.merge(seeds[cols], on=["recipe", "strategy", "depth"])
    return (f"## Mean {metric} with {contracts.ci_caption(ci)}\n\n"
            f"Over seeds × queries (queries within each benchmark; `{ALL}` is the "
            "unweighted mean of the benchmarks). `seed_std` is the ddof-1 standard deviation "
            "of the per-seed means. One-seed rows (the untrained base) vary queries only."
            + (" The last column is the Multi-Bootstrap's interval of the first column, for "
               "reference." if reference else "") + f"\n\n{md_table(wide)}\n"
            + few_queries_note(ci))


FEW_QUERIES = 100  # NanoBEIR's subsets have 50; BEIR's smallest test sets about 300


def few_queries_note(ci: pd.DataFrame) -> str:
    """The caveat of benchmarks with few test queries, under the intervals they widen."""
    n = ci[ci.benchmark != ALL].groupby("benchmark")["n_queries"].max()
    few = n[n < FEW_QUERIES]
    if few.empty:
        return ""
    named = ", ".join(f"{b} ({q} queries)" for b, q in few.items())
    return (f"\n**Few test queries**: {named}. The query term of an interval shrinks with "
            "the square root of the queries: at 50 queries an interval is about 2.4 times as "
            "wide as the same benchmark's would be at 300, so differences of a few hundredths "
            "stay undecided; such a benchmark ranks arms that differ a lot, and the full "
            "benchmark (more queries, not more seeds) decides what it leaves open.\n")


MB_COLUMNS = ["Multi-Bootstrap CI", "p (MB)"]


def _comparison_rows(comp: pd.DataFrame, kind: str, delta: str) -> pd.DataFrame:
    c = comp[comp.kind == kind].copy()
    c[delta] = [interval(r.estimate, r.ci_low, r.ci_high) for r in c.itertuples()]
    c["p"] = [p_fmt(p) for p in c.p_value]
    c[MB_COLUMNS[0]] = [ci_cell(r.mb_ci_low, r.mb_ci_high) for r in c.itertuples()]
    c[MB_COLUMNS[1]] = [p_fmt(p) for p in c.mb_p_value]
    return c


def width_ratio(comp: pd.DataFrame) -> float:
    """Median over the joint-resampling rows of (main CI width) / (Multi-Bootstrap width)."""
    joint = comp[comp["resample"] == "seeds,examples"]
    mb_width = joint.mb_ci_high - joint.mb_ci_low
    ratio = (joint.ci_high - joint.ci_low)[mb_width > 0] / mb_width[mb_width > 0]
    return float(ratio.median()) if len(ratio) else math.nan


def comparison_section(comp: pd.DataFrame) -> str:
    metric = comp["metric"].iloc[0]
    delta = f"delta [{contracts.ci_caption(comp)}]"
    reference = contracts.shows_reference(comp)
    out = [f"## Comparisons of {metric} (δ = b − a)\n"]
    if reference:
        ratio = width_ratio(comp)
        out.append(f"Every interval and p-value is {contracts.interval_name(comp)} "
                   "(docs/statistics.md); the Multi-Bootstrap's (MultiBERTs) is beside it."
                   + (f" Over seeds × queries the {contracts.interval_name(comp)} intervals "
                      f"here are a median {ratio:.2f}× as wide as the Multi-Bootstrap's. "
                      if math.isfinite(ratio) else " ") + contracts.WHY_THEY_DIFFER + "\n")
    titles = {
        "trained_vs_base": ("Training vs the untrained truncated base",
                            "single-baseline design (the base is one deterministic model); "
                            "p two-sided, as the CI beside it."),
        "depth": ("Depth vs depth within a recipe",
                  "paired by seed; p two-sided; `equivalent` = TOST |δ| < ε at the CI level."),
        "truncated": ("Per depth vs fine-tuned then truncated",
                      "the deepest per-depth model cut to each shallower depth by its "
                      "strategy's rule (no training of its own) against the model trained at "
                      "that depth: δ = truncated − per-depth, paired by seed; p two-sided."),
        "strategy": ("Depth strategy vs depth strategy",
                     "same recipe and depth, paired by seed; p two-sided."),
        "recipe": ("Budget vs budget at each depth",
                   "paired where the recipes share seeds, single-baseline where one has one "
                   "seed, else unpaired; p two-sided."),
    }
    for kind, (title, note) in titles.items():
        c = _comparison_rows(comp, kind, delta)
        if c.empty:
            continue
        joint = c[c.epsilon.notna()] if "epsilon" in c else c
        cols = ["a", "b", "benchmark", "design", "resample", delta, "p",
                *(MB_COLUMNS if reference else [])]
        if kind != "trained_vs_base":
            joint = joint.assign(**{"equivalent (ε)": [
                f"{fmt(bool(e))} ({eps:g}, p={p_fmt(p)})" for e, eps, p in
                zip(joint.equivalent, joint.epsilon, joint.equivalence_p, strict=True)]})
            cols.append("equivalent (ε)")
        if "seed_noise" in joint and joint.seed_noise.fillna("").astype(bool).any():
            # a one-seed arm: the assumption its seed noise rests on, beside its row
            joint = joint.assign(**{"seed noise": joint.seed_noise.fillna("")})
            cols.append("seed noise")
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


def variance_section(var: pd.DataFrame, plan: pd.DataFrame, agree: pd.DataFrame,
                     level: str) -> str:
    """`level`: the CI level of the seed plan's half-width (the plan's own `ci` column wins)."""
    out = []
    if not var.empty:
        v = var[var.benchmark == ALL] if ALL in set(var.benchmark) else var
        # Variances of a mean of scores in [0, 1] are ~1e-4: five decimals show two digits.
        v = v.assign(var_joint=[notation.num(x, 5) for x in v.var_joint])
        out.append("## Where the uncertainty comes from\n\nShare of the bootstrap variance of "
                   "the mean from seeds vs from queries (`share_interaction` = what neither "
                   "axis alone explains).\n\n" + md_table(
                       v[["recipe", "strategy", "depth", "benchmark", "var_joint",
                          "share_seeds", "share_examples", "share_interaction"]], 3) + "\n")
    if not plan.empty:
        quantiles = ("the calibrated statistic (its t, degrees of freedom and tail "
                     "calibration; for δ its power at n seeds per arm, by simulation)"
                     if (plan["interval"] == "calibrated").all()
                     else "normal quantiles")
        plan_level = contracts.ci_level(plan) if "ci" in plan else level
        counts = {c: [notation.seeds(n) for n in plan[c]]
                  for c in ("seeds_for_half_width", "seeds_for_delta")}
        versus = plan["delta_versus"] if "delta_versus" in plan else [""] * len(plan)
        counts["seeds_for_delta"] = [n if v else "–"
                                     for n, v in zip(counts["seeds_for_delta"], versus,
                                                     strict=True)]
        out.append("## Seeds needed\n\nFrom the variance components of each "
                   f"[seeds × queries] matrix, with {quantiles}: seeds for a {plan_level} CI "
                   "half-width of "
                   f"{plan.target_half_width.iloc[0]:g}, and per arm to detect "
                   f"δ = {plan.target_delta.iloc[0]:g} with 80% power (α = 0.05, two arms with "
                   "independent seeds on the same queries) against the arm it is compared "
                   "with that needs the most (`delta_versus`): the query main effects cancel "
                   "in the difference, the two arms' arm × query interaction does not, and "
                   "seeds do not shrink it (`–`: no comparison partner of 2 or more seeds). "
                   f"`{notation.UNREACHABLE}`: no number of seeds gets there (for the "
                   "half-width: the query part of the variance, which seeds do not shrink, "
                   "alone is wider than the target; for δ: the interaction alone keeps the "
                   "power below 80%; more queries would be needed).\n\n" + md_table(
                       plan[["recipe", "strategy", "depth", "benchmark", "n_seeds",
                             "half_width_now"]].assign(**counts, delta_versus=versus), 4)
                   + "\n")
    if not agree.empty:
        a = (agree.groupby(["recipe", "strategy", "depth", "benchmark"])
             [["top1_agreement", "spearman"]].mean().reset_index())
        out.append("## Instance-level agreement between seeds\n\nMean over seed pairs: share "
                   "of queries where two seeds agree on a top-1 hit, and Spearman correlation "
                   "of per-query scores (MultiBERTs, appendix C).\n\n" + md_table(a, 3) + "\n")
    return "\n".join(out)


def usage_section(usage: pd.DataFrame, records) -> str:
    """The study's usage table: every job's record (core/launch.py, in the folder
    `records`), summed per rule."""
    return ("## Measured time and memory per rule\n\nFrom every job's record (wall time, CPU "
            "time and peak resident memory of the job's process, written by core/launch.py "
            f"as {records}/<its log's name>.json), per rule: totals over its jobs, "
            "and its largest job's wall time (`seconds_max`) and peak memory "
            "(`max_rss_mb`). A job forked from the preload server counts the pages of the "
            "libraries it shares with it, as a fresh process on a node would hold them. To "
            "size a cluster profile, give each rule's jobs a `mem_mb` above its "
            "`max_rss_mb` and a `runtime` (minutes) above its `seconds_max` / 60, with "
            "headroom (e.g. 1.5×) for larger inputs and slower nodes. The `usage` and "
            "`report` rules run after this table; their records are "
            f"{records}/usage.log.json and {records}/report.log.json."
            "\n\n" + md_table(usage[list(contracts.USAGE_COLUMNS)], 1) + "\n")


def build(stats_dir, latency_summary=None, latency_ladder=None, latency_coherence=None,
          usage=None, cards=(), extras=(), title="depthlab results", claims=None,
          curves=False, compute=False, dims=False) -> str:
    """RESULTS.md from the artifacts' paths; the latency section needs the summary and the
    ladder (the coherence document is optional: without it the fit is computed here). The
    claims section (results/<study>/claims.md), when given, comes first; `curves`: the learning
    curves' tables are in stats_dir too; `compute`: so is the training compute table
    (report_compute.py: train once vs per depth); `dims`: so is the layer x dimension table
    (dims.parquet, eval.dims)."""
    if (latency_summary is None) != (latency_ladder is None):
        raise ValueError("the latency section needs both the latency summary and the ladder")
    if latency_coherence and latency_summary is None:
        raise ValueError("the latency coherence document needs the latency summary and ladder")
    tables = {n: contracts.read_stats(stats_dir, n) for n in
              ("ci", "comparisons", "variance", "seeds_needed", "agreement")}
    level = contracts.ci_level(tables["ci"])
    parts = [f"# {title}\n",
             "Generated by the workflow (`snakemake` rebuilds it); do not edit.\n",
             # the claims' intervals: the few-queries caveat under them too
             *([Path(claims).read_text(encoding="utf-8") + few_queries_note(tables["ci"])]
               if claims else []),
             ci_section(tables["ci"]), comparison_section(tables["comparisons"]),
             variance_section(tables["variance"], tables["seeds_needed"], tables["agreement"],
                              level)]
    if compute:
        parts.append(compute_section(tables["ci"], tables["comparisons"],
                                     contracts.read_stats(stats_dir, "compute")))
    if curves:
        parts.append(curves_section(*(contracts.read_stats(stats_dir, n) for n in
                                      ("curves", "curves_change", "curves_onset"))))
    if dims:
        parts.append(dims_section(tables["ci"],
                                  contracts.read_stats(stats_dir, contracts.DIMS_TABLE)))
    if latency_summary:
        fit = read_fit(latency_coherence) if latency_coherence else None
        parts.append(latency_section(contracts.read_parquet(latency_summary),
                                     contracts.read_parquet(latency_ladder), fit))
    for extra in extras:
        parts.append(Path(extra).read_text(encoding="utf-8"))
    if usage:
        use = contracts.read_usage(usage)
        if len(use):
            # the records lie beside the usage table, in the study's results folder
            parts.append(usage_section(use, Path(usage).parent / paths.RECORDS))
    if cards:
        parts.append("## Data\n")
        for card in cards:
            text = Path(card).read_text(encoding="utf-8")
            parts.append(f"### {card}\n\n" + text.split("\n", 1)[1].lstrip())
    return "\n".join(parts)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Write results/<study>/RESULTS.md.")
    ap.add_argument("--stats-dir", required=True)
    ap.add_argument("--latency-summary", help="results/<study>/latency/summary.parquet")
    ap.add_argument("--latency-ladder", help="results/<study>/latency/ladder.parquet")
    ap.add_argument("--latency-coherence", help="results/<study>/latency/coherence.json (the fit)")
    ap.add_argument("--usage", help="results/<study>/usage.parquet (time and memory per rule)")
    ap.add_argument("--cards", nargs="*", default=[])
    ap.add_argument("--extra", nargs="*", default=[], help="markdown fragments to append")
    ap.add_argument("--claims", help="results/<study>/claims.md: the claims section, first")
    ap.add_argument("--curves", action="store_true",
                    help="add the learning curves (curves*.parquet in the stats folder)")
    ap.add_argument("--compute", action="store_true",
                    help="add the training compute and train once vs per depth "
                         "(compute.parquet in the stats folder)")
    ap.add_argument("--dims", action="store_true",
                    help="add the layer x dimension table (dims.parquet in the stats folder)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        text = build(a.stats_dir, a.latency_summary, a.latency_ladder, a.latency_coherence,
                     a.usage, a.cards, a.extra, claims=a.claims, curves=a.curves,
                     compute=a.compute, dims=a.dims)
    except ValueError as e:  # an inconsistent set of inputs
        ap.error(str(e))
    contracts.write_text(a.out, text)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
