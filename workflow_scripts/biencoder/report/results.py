"""Report stage: results/RESULTS.md, every number generated from the workflow's outputs
(nothing typed in by hand): the stats tables, the latency summary, canonical ladder and
coherence document, and the per-rule usage table. It reads those artifacts only, never
another stage's code.

CLI: python -m workflow_scripts.biencoder.report.results --stats-dir results/stats
        [--latency-summary results/latency/summary.parquet
         --latency-ladder results/latency/ladder.parquet
         [--latency-coherence results/latency/coherence.json]]
        [--usage results/usage.parquet] [--cards data/.../DATACARD.md ...]
        [--extra results/ladder/summary.md ...] [--claims results/claims.md] [--curves] \
        [--compute] --out results/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from workflow_scripts.biencoder.report.compute_section import compute_section
from workflow_scripts.biencoder.report.markdown import fmt, interval, md_table, p_fmt
from workflow_scripts.core import contracts
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
            f"[{r.mb_ci_low:.4f}, {r.mb_ci_high:.4f}]" for r in seeds.itertuples()]})
        cols.append(f"Multi-Bootstrap ({seeds.benchmark.iloc[0]})")
    wide = wide.merge(seeds[cols], on=["recipe", "strategy", "depth"])
    return (f"## Mean {metric} with {contracts.ci_caption(ci)}\n\n"
            f"Over seeds × queries (queries within each benchmark; `{ALL}` is the "
            "unweighted mean of the benchmarks). `seed_std` is the ddof-1 standard deviation "
            "of the per-seed means. One-seed rows (the untrained base) vary queries only."
            + (" The last column is the Multi-Bootstrap's interval of the first column, for "
               "reference." if reference else "") + f"\n\n{md_table(wide)}\n")


MB_COLUMNS = ["Multi-Bootstrap CI", "p (MB)"]


def _comparison_rows(comp: pd.DataFrame, kind: str, delta: str) -> pd.DataFrame:
    c = comp[comp.kind == kind].copy()
    c[delta] = [interval(r.estimate, r.ci_low, r.ci_high) for r in c.itertuples()]
    c["p"] = [p_fmt(p) for p in c.p_value]
    c[MB_COLUMNS[0]] = [f"[{r.mb_ci_low:.4f}, {r.mb_ci_high:.4f}]" for r in c.itertuples()]
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
        out.append("## Where the uncertainty comes from\n\nShare of the bootstrap variance of "
                   "the mean from seeds vs from queries (`share_interaction` = what neither "
                   "axis alone explains).\n\n" + md_table(
                       v[["recipe", "strategy", "depth", "benchmark", "var_joint",
                          "share_seeds", "share_examples", "share_interaction"]], 3) + "\n")
    if not plan.empty:
        quantiles = ("Student-t quantiles (the calibrated interval's degrees of freedom for "
                     "the half-width, Welch's 2(n − 1) for δ)"
                     if (plan["interval"] == "calibrated").all()
                     else "normal quantiles")
        plan_level = contracts.ci_level(plan) if "ci" in plan else level
        out.append("## Seeds needed\n\nFrom the variance components of each "
                   f"[seeds × queries] matrix, with {quantiles}: seeds for a {plan_level} CI "
                   "half-width of "
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


def _step(x) -> str:
    """A step of the grid; NaN (no onset) and +inf (an interval bound beyond the grid: no
    onset in that share of the samples) read "none"."""
    return "none" if x is None or math.isnan(x) or math.isinf(x) else f"{x:g}"


def curves_section(cur: pd.DataFrame, change: pd.DataFrame, onset: pd.DataFrame) -> str:
    """The learning curves (results/stats/curves*.parquet): per recipe the mean across
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
           "(the same draws at every step, so each seed's steps stay paired); `none` as a bound "
           "means no onset in that share of the samples, and P(onset) is the share of "
           "samples with one. The change from the best step to the last is paired by seed; "
           "since the best step is picked on the same data, it leans negative.\n"]
    for recipe in cur.recipe.unique():
        c = cur[(cur.recipe == recipe) & (cur.benchmark == bench)]
        c = c.assign(cell=[interval(r.estimate, r.ci_low, r.ci_high) for r in c.itertuples()])
        wide = c.pivot_table(index=["strategy", "depth"], columns="step", values="cell",
                             aggfunc="first")
        wide.columns = [f"step {_step(x)}" + (" (base)" if x == 0 else "")
                        for x in wide.columns]
        out.append(f"### {recipe}\n\n{md_table(wide.reset_index())}\n")
    keys = ["recipe", "strategy", "depth", "benchmark"]
    t = onset[[*keys, "best_step", "onset_step", "onset_ci_low", "onset_ci_high",
               "p_onset"]].merge(change[[*keys, "step_a", "step_b", "estimate", "ci_low",
                                         "ci_high", "p_value"]], on=keys)
    rows = pd.DataFrame({
        **{k: t[k] for k in keys},
        "best step": [_step(x) for x in t.best_step],
        "onset (decline after)": [_step(x) for x in t.onset_step],
        f"onset {contracts.ci_level(onset)} interval": [
            f"[{_step(lo)}, {_step(hi)}]" for lo, hi in zip(t.onset_ci_low, t.onset_ci_high,
                                                           strict=True)],
        "P(onset)": t.p_onset,
        "best → last step": [f"{int(a)} → {int(b)}" for a, b in zip(t.step_a, t.step_b,
                                                                    strict=True)],
        f"change [{contracts.ci_caption(change)}]": [
            interval(r.estimate, r.ci_low, r.ci_high) for r in t.itertuples()],
        "p": [p_fmt(p) for p in t.p_value],
    })
    out.append("### Onset of the decline and best → last\n\n" + md_table(rows, 3) + "\n")
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


def latency_section(summary: pd.DataFrame, ladder: pd.DataFrame, fit: dict | None = None) -> str:
    """The canonical latency ladder (results/latency/ladder.parquet: per depth the median
    over the coherent runs of their relative ladder Q, times the reference depth's p50),
    whether its milliseconds are verified, its line fit (`fit`: coherence.json's
    canonical_ladder.fit; None: fitted here), every run's coherence verdict and the
    incoherent runs with their failed checks (results/latency/summary.parquet)."""
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
        table[f"Q (× L{ref})"] = [fmt(x, 3) for x in ladder["q"].astype(float)]
    table["p50_ms"] = ladder["p50_ms"]
    table["runs used"] = ladder["runs_used"].astype(int)
    for col, name in (("encode_p50_ms", "encode() p50_ms"),
                      ("tokenize_p50_ms", "tokenization p50_ms")):
        if col in ladder:
            table[name] = ladder[col].astype(float)
    out = [head + " Each run's relative ladder Q = t_depth / t_ref (reference: depth "
           f"{ref}) comes from a robust two-way fit of log time over rounds × depths, which "
           "takes out drift that slows every call alike; its CIs resample whole rounds. "
           "Every run is checked for physical coherence on Q (monotone, linear, constant "
           "per-layer slope, leave-one-out prediction), for timers that agree and for a "
           "stable relative ladder (small residuals, narrow CIs, both halves of the run "
           "agreeing, runs agreeing); `absolute_stable` (steady machine speed, tight calls, "
           "runs agreeing in milliseconds) is reported without gating "
           "(`results/latency/coherence.json` holds each check's value). The canonical "
           "ladder is, per depth, the median over the coherent runs only of their Q, times "
           "the median over them of the reference depth's p50 (ms per batch of model "
           "calls; `encode()` adds tokenization).\n"]
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
    for col, name in (("resid_iqr", "fit residual IQR"), ("drift_range", "drift range")):
        if col in per_run:
            verdicts[name] = per_run.loc[wide.index, col].astype(float).to_numpy()
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
        out.append("Every run passed every gate.\n")
    return "\n".join(out)


def usage_section(usage: pd.DataFrame) -> str:
    """results/usage.parquet: Snakemake's benchmark of every job, summed per rule."""
    return ("## Measured time and memory per rule\n\nFrom Snakemake's per-job benchmark files "
            "(`benchmark:`), per rule: totals over its jobs, and its largest job's wall time "
            "(`seconds_max`) and peak memory (`max_rss_mb`); to size a cluster profile, give "
            "each rule's jobs a `mem_mb` above its `max_rss_mb` and a `runtime` (minutes) "
            "above its `seconds_max` / 60, with headroom (e.g. 1.5×) for larger inputs and "
            "slower nodes.\n\n" + md_table(usage[list(contracts.USAGE_COLUMNS)], 1) + "\n")


def read_fit(coherence_json) -> dict | None:
    """coherence.json's canonical_ladder.fit (None when it has none: no coherent run)."""
    doc = json.loads(Path(coherence_json).read_text(encoding="utf-8"))
    return doc.get("canonical_ladder", {}).get("fit")


def build(stats_dir, latency_summary=None, latency_ladder=None, latency_coherence=None,
          usage=None, cards=(), extras=(), title="depthlab results", claims=None,
          curves=False, compute=False) -> str:
    """RESULTS.md from the artifacts' paths; the latency section needs the summary and the
    ladder (the coherence document is optional: without it the fit is computed here). The
    claims section (results/claims.md), when given, comes first; `curves`: the learning
    curves' tables are in stats_dir too; `compute`: so is the training compute table
    (report_compute.py: train once vs per depth)."""
    if (latency_summary is None) != (latency_ladder is None):
        raise ValueError("the latency section needs both the latency summary and the ladder")
    if latency_coherence and latency_summary is None:
        raise ValueError("the latency coherence document needs the latency summary and ladder")
    tables = {n: contracts.read_stats(stats_dir, n) for n in
              ("ci", "comparisons", "variance", "seeds_needed", "agreement")}
    level = contracts.ci_level(tables["ci"])
    parts = [f"# {title}\n",
             "Generated by the workflow (`snakemake results/RESULTS.md`); do not edit.\n",
             *([Path(claims).read_text(encoding="utf-8")] if claims else []),
             ci_section(tables["ci"]), comparison_section(tables["comparisons"]),
             variance_section(tables["variance"], tables["seeds_needed"], tables["agreement"],
                              level)]
    if compute:
        parts.append(compute_section(tables["ci"], tables["comparisons"],
                                     contracts.read_stats(stats_dir, "compute")))
    if curves:
        parts.append(curves_section(*(contracts.read_stats(stats_dir, n) for n in
                                      ("curves", "curves_change", "curves_onset"))))
    if latency_summary:
        fit = read_fit(latency_coherence) if latency_coherence else None
        parts.append(latency_section(pd.read_parquet(latency_summary),
                                     pd.read_parquet(latency_ladder), fit))
    for extra in extras:
        parts.append(Path(extra).read_text(encoding="utf-8"))
    if usage:
        use = contracts.read_usage(usage)
        if len(use):
            parts.append(usage_section(use))
    if cards:
        parts.append("## Data\n")
        for card in cards:
            text = Path(card).read_text(encoding="utf-8")
            parts.append(f"### {card}\n\n" + text.split("\n", 1)[1].lstrip())
    return "\n".join(parts)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Write results/RESULTS.md.")
    ap.add_argument("--stats-dir", required=True)
    ap.add_argument("--latency-summary", help="results/latency/summary.parquet")
    ap.add_argument("--latency-ladder", help="results/latency/ladder.parquet")
    ap.add_argument("--latency-coherence", help="results/latency/coherence.json (the fit)")
    ap.add_argument("--usage", help="results/usage.parquet (time and memory per rule)")
    ap.add_argument("--cards", nargs="*", default=[])
    ap.add_argument("--extra", nargs="*", default=[], help="markdown fragments to append")
    ap.add_argument("--claims", help="results/claims.md: the claims section, first")
    ap.add_argument("--curves", action="store_true",
                    help="add the learning curves (curves*.parquet in the stats folder)")
    ap.add_argument("--compute", action="store_true",
                    help="add the training compute and train once vs per depth "
                         "(compute.parquet in the stats folder)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        text = build(a.stats_dir, a.latency_summary, a.latency_ladder, a.latency_coherence,
                     a.usage, a.cards, a.extra, claims=a.claims, curves=a.curves,
                     compute=a.compute)
    except ValueError as e:  # an inconsistent set of inputs
        ap.error(str(e))
    contracts.write_text(a.out, text)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
