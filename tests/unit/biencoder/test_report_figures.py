"""The report and the figures read artifacts only: the stats tables' CI level, the latency
summary, ladder and coherence document, and the per-rule usage table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.biencoder.latency import coherence
from workflow_scripts.biencoder.report import figures, latency_section
from workflow_scripts.biencoder.report import results as report
from workflow_scripts.core import contracts

RECIPES = ("short", "long")


def _interval(est: float, level: float, method: str = "calibrated") -> dict:
    """Main interval +- 0.02; the Multi-Bootstrap's beside it +- 0.01 (the same when the
    method is the Multi-Bootstrap)."""
    mb = 0.02 if method == "multibootstrap" else 0.01
    return {"estimate": est, "ci_low": est - 0.02, "ci_high": est + 0.02, "p_value": 0.01,
            "interval": method, "mb_ci_low": est - mb, "mb_ci_high": est + mb,
            "mb_p_value": 0.001, "nboot": 200, "design": "paired",
            "resample": "seeds,examples", "ci": level}


def write_tables(stats_dir, level: float, method: str = "calibrated") -> None:
    """Small stats tables with every declared column, at CI level `level`."""
    arms = [("base", -1, 0.1), ("short", 1, 0.2), ("long", 1, 0.25)]
    ci, seeds, comp = [], [], []
    for recipe, seed0, base in arms:
        for depth in (1, 2, 3):
            est = base + 0.05 * depth
            ci.append({"metric": "ndcg@10", "recipe": recipe, "strategy": "top", "depth": depth,
                       "benchmark": contracts.ALL, "n_seeds": 1 if seed0 < 0 else 2,
                       "n_queries": 50, "seed_std": np.nan if seed0 < 0 else 0.01,
                       **_interval(est, level, method)})
            for s in ([seed0] if seed0 < 0 else [1, 2]):
                seeds.append({"metric": "ndcg@10", "recipe": recipe, "strategy": "top",
                              "depth": depth, "benchmark": contracts.ALL, "seed": s,
                              "mean": est + 0.005 * s})
    for depth in (1, 2, 3):
        comp.append({"metric": "ndcg@10", "kind": "recipe", "a": f"short L{depth}",
                     "b": f"long L{depth}", "recipe_a": "short", "recipe_b": "long",
                     "strategy": "top", "strategy_b": "top", "depth_a": depth,
                     "depth_b": depth, "benchmark": contracts.ALL,
                     **_interval(0.05, level, method),
                     "alternative": "two-sided", "threshold": 0.0, "epsilon": 0.01,
                     "equivalence_p": 0.5, "equivalent": False})
    for name, rows in (("ci", ci), ("seeds", seeds), ("comparisons", comp)):
        contracts.write_parquet(stats_dir / f"{name}.parquet", pd.DataFrame(rows))
    for name in ("variance", "seeds_needed", "agreement"):
        contracts.write_parquet(stats_dir / f"{name}.parquet", pd.DataFrame())


def write_latency(folder, coherent=(True, True, False), verified=True) -> dict:
    """summary.parquet, ladder.parquet and coherence.json as the latency summary writes them."""
    depths = np.array([1, 2, 3])
    p50 = {r: 2.0 + 10.0 * depths * (1 + 0.01 * r) for r in range(len(coherent))}
    summary = pd.DataFrame([
        {"run": r, "depth": d, "p50_ms": p, "q": p / p50[r][0], "iqr_ms": 0.1, "coherent": ok,
         "absolute_stable": verified, "failed_checks": "" if ok else "linear",
         "why": "" if ok else "linear: bent", "notes": "", "device": "cpu", "threads": 1,
         "batch_size": 8, "seq_len": 32, "ref_depth": 1, "resid_iqr": 0.02,
         "drift_range": 0.03}
        for r, ok in enumerate(coherent) for d, p in zip(depths, p50[r], strict=True)])
    good = [r for r, ok in enumerate(coherent) if ok]
    q_runs = np.stack([p / p[0] for p in p50.values()])
    ref_p50 = float(np.median([p50[r][0] for r in good])) if good else float("nan")
    q, lad, used = coherence.canonical_ladder(depths, q_runs, coherent, ref_p50)
    ladder = pd.DataFrame({"depth": depths, "q": q, "p50_ms": lad, "ref_depth": 1,
                           "ref_p50_ms": ref_p50, "runs_used": used,
                           "runs": ",".join(map(str, good)), "coherent": used > 0,
                           "absolute_verified": bool(good) and verified,
                           "encode_p50_ms": lad + 3.0, "tokenize_p50_ms": 2.0})
    doc = {"canonical_ladder": {"depth": depths.tolist(), "runs_used": good}}
    if good:
        a, b, r2 = coherence.linear_fit(depths, lad)
        doc["canonical_ladder"]["fit"] = {"a_ms": a, "b_ms_per_layer": b, "r2": r2}
    paths = {"latency_summary": folder / "summary.parquet",
             "latency_ladder": folder / "ladder.parquet",
             "latency_coherence": folder / "coherence.json"}
    contracts.write_parquet(paths["latency_summary"], summary)
    contracts.write_parquet(paths["latency_ladder"], ladder)
    contracts.write_json(paths["latency_coherence"], doc)
    return paths


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_report_says_the_tables_ci_level(tmp_path, level):
    write_tables(tmp_path, level)
    md = report.build(tmp_path)
    label = contracts.ci_label(level)
    assert f"with {label} calibrated CI" in md and f"delta [{label} calibrated CI]" in md
    assert ("95%" in md) == (level == 0.95)
    assert "## Latency ladder" not in md and "Measured time and memory" not in md


def test_report_shows_the_multibootstrap_beside_the_calibrated_interval(tmp_path):
    write_tables(tmp_path, 0.95)
    md = report.build(tmp_path)
    comparisons = md.split("## Comparisons", 1)[1]
    # Both intervals of one comparison on one row, the sentence on why they differ, and the
    # measured width ratio (0.04 wide vs 0.02 wide).
    assert "| 0.0500 [0.0300, 0.0700] | 0.0100 | [0.0400, 0.0600] | 0.0010 |" in comparisons
    assert "median 2.00× as wide as the Multi-Bootstrap's" in comparisons
    assert contracts.WHY_THEY_DIFFER in comparisons
    assert "Multi-Bootstrap (all)" in md.split("## Comparisons", 1)[0]
    # With the Multi-Bootstrap as the method there is nothing to put beside it.
    write_tables(tmp_path, 0.95, method="multibootstrap")
    md = report.build(tmp_path)
    assert "with 95% Multi-Bootstrap CI" in md and "p (MB)" not in md
    assert contracts.WHY_THEY_DIFFER not in md


def test_latency_section_reads_the_ladder_and_the_fit(tmp_path):
    write_tables(tmp_path, 0.95)
    paths = write_latency(tmp_path)
    md = report.build(tmp_path, **paths)
    assert "| 1 | 1.000 | 12.05 | 2 | 15.05 | 2.00 |" in md  # the ladder's row, runs 0 and 1
    assert "**Absolute milliseconds: verified**" in md
    assert "| 2 | INCOHERENT | linear |" in md and "- run 2: linear — linear: bent" in md
    fit = json.loads(paths["latency_coherence"].read_text())["canonical_ladder"]["fit"]
    line = (f"Fit: p50 ≈ {fit['a_ms']:.2f} + {fit['b_ms_per_layer']:.2f} × n_layers ms "
            f"(R² {fit['r2']:.4f}); in units of depth 1: Q ≈ 0.166 + 0.834 × n_layers.")
    assert line in md
    # Without coherence.json the report fits the ladder itself, to the same bits.
    ladder = pd.read_parquet(paths["latency_ladder"])
    assert latency_section.ladder_fit(ladder) == fit
    no_json = {k: v for k, v in paths.items() if k != "latency_coherence"}
    assert report.build(tmp_path, **no_json) == md
    with pytest.raises(ValueError, match="both"):
        report.build(tmp_path, latency_summary=paths["latency_summary"])


def test_latency_section_flags_unverified_milliseconds(tmp_path):
    write_tables(tmp_path, 0.95)
    md = report.build(tmp_path, **write_latency(tmp_path, verified=False))
    assert "**Absolute milliseconds: not verified**" in md and "compare depths by Q" in md
    assert "| 0 | coherent | – | 1.000 | 1.833 | 2.667 | no |" in md


def test_results_say_the_machine_was_busy_not_only_coherence_json(tmp_path):
    """A busy run's note (latency/summary.py busy_note) reaches RESULTS.md, busy runs named in
    bold, coherent ones too (the incoherent-runs list alone would hide them)."""
    write_tables(tmp_path, 0.95)
    paths = write_latency(tmp_path)
    summary = pd.read_parquet(paths["latency_summary"])
    busy = ("the machine was busy: other processes kept 1.20 cores busy and the hypervisor "
            "took 0% of the CPU time during the timed rounds")
    summary["notes"] = summary["run"].map({0: busy, 1: "nothing else ran: other processes "
                                           "0.02 cores, steal 0%", 2: ""})
    contracts.write_parquet(paths["latency_summary"], summary)
    md = report.build(tmp_path, **paths)
    assert "**The machine was busy during profiling run(s) 0**" in md
    assert f"- run 0: {busy}" in md and "- run 1: nothing else ran" in md
    summary["notes"] = ""
    contracts.write_parquet(paths["latency_summary"], summary)
    assert "Machine load" not in report.build(tmp_path, **paths)


def test_no_coherent_run_has_no_ladder_and_no_fit(tmp_path):
    write_tables(tmp_path, 0.95)
    md = report.build(tmp_path, **write_latency(tmp_path, coherent=(False, False)))
    assert "No profiling run passed the coherence check" in md and "Fit:" not in md


def test_usage_section_from_the_usage_table(tmp_path):
    write_tables(tmp_path, 0.95)
    usage = pd.DataFrame({"rule": ["train", "evaluate"], "jobs": [6, 18],
                          "seconds_total": [1200.5, 300.0], "seconds_max": [250.0, 20.0],
                          "max_rss_mb": [3100.0, 900.0], "cpu_seconds": [2300.0, 280.0]})
    contracts.write_parquet(tmp_path / "usage.parquet", usage)
    card = tmp_path / "CARD.md"
    card.write_text("# card\n\nrows\n", encoding="utf-8")
    out = tmp_path / "RESULTS.md"
    report.main(["--stats-dir", str(tmp_path), "--usage", str(tmp_path / "usage.parquet"),
                 "--cards", str(card), "--out", str(out)])
    md = out.read_text(encoding="utf-8")
    section = md.split("## Measured time and memory per rule", 1)[1].split("## Data", 1)[0]
    assert "core/launch.py" in section and "`mem_mb`" in section and "`runtime`" in section
    assert "| train | 6 | 1200.5 | 250.0 | 3100.0 | 2300.0 |" in section
    contracts.write_parquet(tmp_path / "bad.parquet", usage.drop(columns="max_rss_mb"))
    with pytest.raises(contracts.DataError, match="max_rss_mb"):
        report.build(tmp_path, usage=tmp_path / "bad.parquet")


def test_figures_say_the_tables_ci_level(tmp_path):
    write_tables(tmp_path, 0.9)
    st = figures.load_stats(tmp_path)
    fig = figures.depth_vs_budget(st, order=list(RECIPES))
    title = fig.legends[0].get_title().get_text()  # one legend, below the panels
    assert title.startswith("band: 90% calibrated CI")
    change = figures.per_benchmark_change(st, None, RECIPES)
    assert "(90% calibrated CI)" in change.axes[0].get_title()
    labels = figures.seed_variance(st, order=RECIPES).axes[0].get_legend_handles_labels()[1]
    assert "mean, 90% calibrated CI" in labels
    ladder = pd.DataFrame({"depth": [1, 2, 3], "p50_ms": [12.0, 22.0, 32.0], "runs_used": 2})
    fig = figures.pareto(st, ladder, RECIPES)
    assert fig.axes[0].get_title().endswith("(90% calibrated CI)")
    figures.save(fig, [tmp_path / "pareto.png"])
    assert (tmp_path / "pareto.png").stat().st_size > 1000
