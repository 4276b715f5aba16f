"""The stats stage on synthetic per-query evaluations with a planted effect."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.biencoder import stats
from workflow_scripts.biencoder.report import figures
from workflow_scripts.biencoder.report import results as report
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import Stats


def _write_evals(tmp_path, effect=0.15, seeds=(1, 2, 3), recipes=("short", "long")):
    rng = np.random.default_rng(0)
    paths = []
    n_q = 80
    difficulty = {b: rng.uniform(0, 0.5, n_q) for b in ("b1", "b2")}

    def write(recipe, depth, seed, bench, shift):
        score = np.clip(difficulty[bench] + shift + rng.normal(0, 0.1, n_q), 0, 1)
        df = pd.DataFrame({"query_id": [f"q{i}" for i in range(n_q)], "ndcg@10": score,
                           "recall@100": score, "map@100": score,
                           "mrr@10": (score > 0.6).astype(float)})
        df = df.assign(recipe=recipe, strategy="top", depth=depth, seed=seed, benchmark=bench)
        p = tmp_path / f"{recipe}_{depth}_{seed}_{bench}.parquet"
        df.to_parquet(p)
        paths.append(p)

    for depth in (1, 2, 3):
        for bench in ("b1", "b2"):
            write("base", depth, -1, bench, 0.02 * depth)
            for i, recipe in enumerate(recipes):
                for seed in seeds:
                    write(recipe, depth, seed, bench, 0.02 * depth + effect + 0.03 * i)
    return paths


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("stats")
    paths = _write_evals(d)
    return d, stats.run(paths, d / "out", Stats.from_json('{"nboot": 300, "seed": 0}'),
                        budget_order=["short", "long"])


def test_ci_rows_cover_every_arm_and_benchmark(tables):
    _, t = tables
    ci = t["ci"]
    assert len(ci) == 3 * 3 * 3  # (base, short, long) x depths x (b1, b2, all)
    base = ci[ci.recipe == "base"]
    assert (base["resample"] == "examples").all() and (base.n_seeds == 1).all()
    trained = ci[ci.recipe != "base"]
    assert (trained["resample"] == "seeds,examples").all()


def test_planted_training_effect_is_detected_with_its_interval(tables):
    _, t = tables
    c = t["comparisons"]
    tb = c[(c.kind == "trained_vs_base") & (c.benchmark == "all") & (c["resample"] != "seeds")]
    assert len(tb) == 2 * 3 * 2  # recipes x depths x (joint, examples-only)
    assert (tb.design == "single-baseline").all()
    # at 3 seeds the tail calibration keeps p near 1e-3 or above however large the effect,
    # since 3 seed means agree by chance (stats/tail_calibration.py); examples only: tiny
    assert (tb.ci_low > 0.08).all() and (tb.p_value <= 0.01).all()
    assert (tb[tb["resample"] == "examples"].p_value <= 1e-12).all()
    rec = c[(c.kind == "recipe") & (c.benchmark == "all")]
    assert set(rec.design) == {"paired"} and set(rec["resample"]) == {
        "seeds,examples", "seeds", "examples"}
    joint = rec[rec["resample"] == "seeds,examples"]
    assert joint.estimate.between(0.02, 0.04).all()
    assert joint.equivalent.notna().all()
    base_depth = c[(c.kind == "depth") & (c.recipe_a == "base") & (c.benchmark == "all")]
    assert len(base_depth) == 3 and set(base_depth["resample"]) == {"examples"}
    assert set(base_depth.design) == {"paired"}


def test_designs_follow_the_seeds():
    from workflow_scripts.stats import design

    assert design.choose((1, 2), (2, 1)).name == "paired"
    assert design.choose((1, 2), (3, 4)) == design.Design(
        "unpaired", False, (("seeds", "examples"), ("seeds",), ("examples",)), False)
    assert design.choose((42,), (1, 2)) == design.Design(
        "single-baseline", False, (("seeds", "examples"), ("seeds",), ("examples",)), True)
    # a one-seed b is the fixed side, compared as (-b) - (-a)
    assert design.choose((1, 2, 3), (42,)).swap and design.choose((1, 2, 3), (42,)).borrow
    # the untrained base has no seed noise to borrow; two one-seed sides cannot borrow
    assert not design.choose((-1,), (1, 2), (False, True)).borrow
    assert design.choose((7,), (8,)).axes == (("examples",),)
    assert not design.choose((7,), (8,)).borrow
    assert design.choose((-1,), (-1,)).name == "paired"


def test_missing_seed_query_is_an_error(tmp_path):
    paths = _write_evals(tmp_path)
    df = pd.read_parquet(paths[1]).iloc[:-1]  # drop one query of one seed
    df.to_parquet(paths[1])
    with pytest.raises(contracts.DataError, match="do not share one query set"):
        stats.run(paths, tmp_path / "out", Stats.from_json('{"nboot": 200}'))


def test_figures_and_report_render_from_the_tables(tables, tmp_path):
    d, t = tables
    st = figures.load_stats(d / "out")
    latency = pd.DataFrame({"run": 0, "depth": [1, 2, 3], "p50_ms": [5.0, 9.0, 13.0],
                            "iqr_ms": 0.1, "p90_ms": 6.0, "calls": 10})
    lat_path = tmp_path / "lat.parquet"
    latency.to_parquet(lat_path)
    for name, fig in [("a", figures.depth_vs_budget(st, order=["short", "long"])),
                      ("b", figures.per_benchmark_change(st, ["short", "long"])),
                      ("c", figures.seed_variance(st, order=["short", "long"])),
                      ("d", figures.pareto(st, latency, ["short", "long"]))]:
        figures.save(fig, [tmp_path / f"{name}.png"])
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    summary = latency.assign(coherent=True, failed_checks="", why="", notes="")
    ladder = latency[["depth", "p50_ms"]].assign(runs_used=1, coherent=True)
    sum_path, lad_path = tmp_path / "summary.parquet", tmp_path / "ladder.parquet"
    summary.to_parquet(sum_path)
    ladder.to_parquet(lad_path)
    md = report.build(d / "out", sum_path, lad_path)
    assert "| long | top | 2 |" in md and "Resampling ablation" in md


def test_pareto_front_drops_dominated_points():
    pts = pd.DataFrame({"p50_ms": [1, 2, 3, 4], "estimate": [0.1, 0.3, 0.2, 0.4]})
    assert figures.pareto_front(pts).estimate.tolist() == [0.1, 0.3, 0.4]


def test_calibrated_by_default_with_the_multibootstrap_beside(tables, tmp_path):
    """Every interval is the calibrated one unless stats.interval says otherwise; the
    Multi-Bootstrap's interval of the same comparison is in the mb_* columns."""
    from workflow_scripts.stats import calibrated as cal
    from workflow_scripts.stats import multibootstrap as mb

    d, t = tables
    for name in ("ci", "comparisons"):
        assert (t[name]["interval"] == "calibrated").all(), name
    c = t["comparisons"]
    row = c[(c.kind == "recipe") & (c.benchmark == "b1") & (c.depth_a == 2)
            & (c["resample"] == "seeds,examples")].iloc[0]
    paths = sorted(d.glob("*.parquet"))  # the fixture's evaluation files
    arms = stats.build_arms(stats.load_evals(paths), "ndcg@10")
    a, b = arms[("short", "top", 2)].scores["b1"], arms[("long", "top", 2)].scores["b1"]
    r = cal.compare(a, b, design="paired", alternative="two-sided")
    ref = mb.compare(a, b, design="paired", alternative="two-sided", nboot=300, seed=0)
    assert (row.ci_low, row.ci_high, row.p_value) == pytest.approx((r.ci_low, r.ci_high,
                                                                    r.p_value))
    assert (row.mb_ci_low, row.mb_ci_high, row.mb_p_value) == pytest.approx(
        (ref.ci_low, ref.ci_high, ref.p_value))
    assert set(t["seeds_needed"]["interval"]) == {"calibrated"}
    # stats.interval: multibootstrap makes the reference the main interval.
    mb_tables = stats.run(paths, tmp_path / "out",
                          Stats.from_json('{"nboot": 300, "interval": "multibootstrap"}'),
                          budget_order=["short", "long"])
    m = mb_tables["comparisons"]
    assert (m["interval"] == "multibootstrap").all()
    assert np.allclose(m.ci_low, m.mb_ci_low) and np.allclose(m.ci_high, m.mb_ci_high)



def _eval_file(path, bench, depth=1, rows=3):
    df = pd.DataFrame({"query_id": [f"q{i}" for i in range(rows)], "recipe": "r",
                       "strategy": "top", "depth": depth, "seed": 1, "benchmark": bench,
                       **{m: [0.5] * rows for m in contracts.METRICS}})
    df.to_parquet(path)
    return path


def test_an_empty_evaluation_stops_the_stats_naming_the_file(tmp_path):
    """Issue #17: a 0-row file used to drop its benchmark from "all" silently."""
    files = [_eval_file(tmp_path / "a.parquet", "a"),
             _eval_file(tmp_path / "b.parquet", "b", rows=0)]
    with pytest.raises(contracts.DataError, match=r"b\.parquet: 0 queries"):
        stats.load_evals(files)


def test_a_model_lacking_a_benchmark_stops_the_stats(tmp_path):
    files = [_eval_file(tmp_path / "a1.parquet", "a"), _eval_file(tmp_path / "b1.parquet", "b"),
             _eval_file(tmp_path / "a2.parquet", "a", depth=2)]
    with pytest.raises(contracts.DataError, match=r"r/top2: no evaluation on benchmark\(s\) b"):
        stats.build_arms(stats.load_evals(files), "ndcg@10")


def test_a_grid_lacking_a_configured_seed_or_benchmark_stops_the_stats(tmp_path):
    """Issue #17: the stats stage used to take whatever grid its files made up."""
    paths = _write_evals(tmp_path, seeds=(1, 2))
    arms = [["base", "top", d, [-1]] for d in (1, 2, 3)]
    arms += [[r, "top", d, [1, 2, 3]] for r in ("short", "long") for d in (1, 2, 3)]
    expected = {"benchmarks": ["b1", "b2", "b3"], "arms": arms + [["mid", "top", 1, [1]]]}
    with pytest.raises(contracts.DataError) as err:
        stats.run(paths, tmp_path / "out", Stats.from_json('{"nboot": 100}'), expected=expected)
    said = str(err.value)
    assert "short/top1: no evaluations of seed(s) 3" in said
    assert "base/top2: no evaluations on benchmark(s) b3" in said
    assert "mid/top1: no evaluations" in said
    assert not (tmp_path / "out").exists()
    ok = {"benchmarks": ["b1", "b2"], "arms": [[r, s, d, x if r == "base" else [1, 2]]
                                               for r, s, d, x in arms]}
    assert stats.grid_gaps(stats.build_arms(stats.load_evals(paths), "ndcg@10"), ok) == []


def test_seeds_to_detect_delta_are_planned_against_a_comparison_partner(tables):
    """One arm cannot show the arm x query interaction that two arms' difference keeps: each
    multi-seed arm's delta plan is against the comparison partner that needs the most seeds
    (delta_versus), the most over its partners' own pair plans."""
    from workflow_scripts.core.arms import build_arms, load_evals
    from workflow_scripts.stats import seed_planning

    d, t = tables
    plan = t["seeds_needed"]
    assert set(plan.recipe) == {"short", "long"} and (plan.delta_versus != "").all()
    arms = build_arms(load_evals(sorted(d.glob("*.parquet"))), "ndcg@10")
    by_label = {a.label: a for a in arms.values()}
    partners = {}
    for _, ka, kb in stats.comparison_pairs(arms, ["short", "long"]):
        if min(len(arms[ka].seeds), len(arms[kb].seeds)) >= 2:
            partners.setdefault(arms[ka].label, set()).add(arms[kb].label)
            partners.setdefault(arms[kb].label, set()).add(arms[ka].label)
    row = plan.iloc[0]
    label = next(a.label for a in arms.values()
                 if (a.recipe, a.strategy, a.depth) == (row.recipe, row.strategy, row.depth))
    assert row.delta_versus in partners[label]
    mine = by_label[label].scores[row.benchmark]
    counts = [seed_planning.seeds_needed(mine, delta=row.target_delta,
                                         versus=by_label[o].scores[row.benchmark])
              ["seeds_for_delta"] for o in partners[label]]
    assert row.seeds_for_delta == max(math.inf if n is None else n for n in counts)
    assert row.arm_example_sd >= 0
