"""Learning curves: the onset of a decline and its bootstrap distribution, on per-step
scores of known shape."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.biencoder import curves
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import Curves
from workflow_scripts.stats import multibootstrap as mb

SEEDS = (42, 43, 44)
STEPS = (0, 10, 20, 30, 40, 60, 80)  # 0: the untrained base, 80: the final model
RISE_PLATEAU_DECLINE = (0.20, 0.35, 0.40, 0.40, 0.40, 0.33, 0.30)  # falls after step 40
MONOTONE = (0.20, 0.30, 0.35, 0.38, 0.40, 0.41, 0.42)
S = Curves.from_json(json.dumps({"nboot": 400, "onset_epsilon": 0.01}))


def test_onset_index_is_the_last_step_before_the_first_fall_beyond_epsilon():
    x = np.array([[0.1, 0.3, 0.3, 0.295, 0.25],   # within epsilon at 3, beyond at 4
                  [0.1, 0.2, 0.3, 0.4, 0.5],      # monotone
                  [0.3, 0.1, 0.4, 0.0, 0.0],      # falls right after step 0
                  [0.1, 0.3, 0.25, 0.5, 0.1]])    # a dip, then a new best, then a fall
    assert curves.onset_index(x, 0.01).tolist() == [3, -1, 0, 1]
    assert curves.onset_index(x, 0.06).tolist() == [-1, -1, 0, 3]  # 0.3 -> 0.25: within


def _write(tmp_path, shape, seed=0) -> list:
    """Per-query evaluation files of one curve (recipe r, top2) on two benchmarks: query
    difficulty shared by every step, a seed effect, a little per-model noise."""
    rng = np.random.default_rng(seed)
    paths = []
    for bench, n_q in (("b1", 300), ("b2", 200)):
        query = rng.normal(0, 0.15, n_q)
        for step, level in zip(STEPS, shape, strict=True):
            seeds = (-1,) if step == 0 else SEEDS
            frames = []
            for sd in seeds:
                score = level + query + rng.normal(0, 0.003) + rng.normal(0, 0.02, n_q)
                frames.append(pd.DataFrame({
                    "query_id": [f"q{i}" for i in range(n_q)],
                    **{m: score for m in contracts.METRICS},
                    "recipe": "base" if step == 0 else "r", "strategy": "top", "depth": 2,
                    "seed": sd, "benchmark": bench}))
            df = pd.concat(frames)
            if step == 0:
                path = tmp_path / f"base-{bench}.parquet"
            elif step == STEPS[-1]:
                path = tmp_path / f"final-{bench}.parquet"
            else:
                path = tmp_path / f"steps-{step}-{bench}.parquet"
                df["step"] = step
            contracts.write_parquet(path, df)
            paths.append(path)
    return paths


def _grid():
    return {"benchmarks": ["b1", "b2"],
            "curves": [["r", "top", 2, list(SEEDS), list(STEPS[1:-1]), STEPS[-1]]]}


def _run(tmp_path, shape):
    return curves.run(_write(tmp_path, shape), tmp_path / "stats", S, _grid(), threads=1)


def test_rise_plateau_decline_recovers_the_onset(tmp_path):
    t = _run(tmp_path, RISE_PLATEAU_DECLINE)
    onset = t["curves_onset"].set_index("benchmark")
    for bench in ("b1", "b2", "all"):
        o = onset.loc[bench]
        assert (o.onset_step, o.detected_step) == (40, 60)
        assert o.best_step in (20, 30, 40)  # the plateau
        assert o.onset_ci_low <= 40 <= o.onset_ci_high < 60
        assert o.p_onset > 0.95
    dist = t["curves_onset_dist"]
    shares = dist[dist.benchmark == "all"].set_index("onset_step")["share"]
    assert shares.sum() == pytest.approx(1.0)
    assert shares.loc[40] > 0.9
    change = t["curves_change"].set_index("benchmark").loc["all"]
    assert change.step_b == 80 and change.design == "paired"
    assert change.estimate == pytest.approx(-0.10, abs=0.01) and change.ci_high < 0
    per_step = t["curves"][t["curves"].benchmark == "all"].set_index("step")
    assert list(per_step.index) == list(STEPS)
    assert list(per_step.point) == ["base", *["snapshot"] * 5, "final"]
    assert per_step.loc[0, "n_seeds"] == 1 and per_step.loc[80, "n_seeds"] == 3
    assert per_step.estimate.to_numpy() == pytest.approx(RISE_PLATEAU_DECLINE, abs=0.01)
    assert (per_step.ci_low < per_step.estimate).all()
    assert (per_step.interval == "calibrated").all() and per_step.mb_ci_low.notna().all()
    for name, table in t.items():  # the contract's columns
        contracts.check_columns(table, contracts.CURVE_TABLES[name], name)
        assert len(contracts.read_stats(tmp_path / "stats", name)) == len(table)


def test_monotone_curve_has_no_onset(tmp_path):
    t = _run(tmp_path, MONOTONE)
    for _, o in t["curves_onset"].iterrows():
        assert np.isnan(o.onset_step) and np.isnan(o.detected_step)
        assert o.onset_ci_high == np.inf and o.p_onset < 0.05
        assert o.best_step == 80
    dist = t["curves_onset_dist"]
    assert dist[dist.onset_step.isna()].share.min() > 0.95
    change = t["curves_change"]
    assert (change.estimate == 0).all() and (change.design == "none").all()


def test_bootstrap_curves_are_paired_across_steps():
    """Per-step bootstraps with one RNG seed draw the same seeds and queries at every step:
    their difference is the paired Multi-Bootstrap comparison's distribution."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.3, 0.1, (3, 150)), rng.normal(0.35, 0.1, (3, 150))
    kw = dict(nboot=300, seed=7, resample=("seeds", "examples"))
    diff = mb.bootstrap_mean(b, **kw).samples - mb.bootstrap_mean(a, **kw).samples
    paired = mb.compare(a, b, design="paired", **kw).samples
    assert diff == pytest.approx(paired, abs=1e-12)


def test_a_missing_step_is_named(tmp_path):
    paths = [p for p in _write(tmp_path, MONOTONE) if "steps-30-b2" not in p.name]
    with pytest.raises(contracts.DataError, match=r"r/top2 step 30 \(snapshot\): seeds"):
        curves.run(paths, tmp_path / "stats", S, _grid(), threads=1)
    grid = _grid()
    grid["curves"][0][4] = [10, 20, 25, 30, 40, 60]
    with pytest.raises(contracts.DataError, match=r"step 25 \(snapshot\): no evaluations"):
        curves.run(_write(tmp_path, MONOTONE), tmp_path / "stats", S, grid, threads=1)


def test_figure_and_report_section_read_the_curve_tables(tmp_path):
    from workflow_scripts.biencoder.report import figures
    from workflow_scripts.biencoder.report import results as report

    _run(tmp_path, RISE_PLATEAU_DECLINE)
    stats = figures.load_stats(tmp_path / "stats", ("curves", "curves_onset"))
    fig = figures.learning_curves(stats, order=["r"])
    assert len(fig.axes) == 3  # the mean of benchmarks, b1, b2
    # The panel's title says its own onset; the row's one legend names the arm only (an
    # onset there contradicted the other panels').
    assert fig.axes[0].get_title() == "r: all benchmarks (mean)\nonset: L2 at 40"
    assert "95% calibrated CI" in fig.texts[0].get_text()
    lines = fig.axes[0].get_lines()
    assert list(lines[0].get_xdata()) == list(STEPS)
    assert [(list(m.get_xdata()), m.get_marker()) for m in lines[1:2]] == [([40.0], "v")]
    assert lines[0].get_label() == "L2"
    figures.save(fig, [tmp_path / "lc.png"])
    assert (tmp_path / "lc.png").stat().st_size > 10_000
    text = report.curves_section(*(contracts.read_stats(tmp_path / "stats", n) for n in
                                   ("curves", "curves_change", "curves_onset")))
    assert "## Learning curves of ndcg@10" in text and "step 0 (base)" in text
    row = next(line for line in text.splitlines() if line.startswith("| r | top | 2 | all"))
    assert "| 30 | 40 [40, 40] | 1.000 |" in row
    mono = tmp_path / "mono"
    _run(mono, MONOTONE)
    text = report.curves_section(*(contracts.read_stats(mono / "stats", n) for n in
                                   ("curves", "curves_change", "curves_onset")))
    row = next(line for line in text.splitlines() if line.startswith("| r | top | 2 | all"))
    assert ("| 80 | no onset [no onset, no onset] | 0.000 | 80 → 80 | 0.0000 [0.0000, 0.0000] "
            "| – |") in row


# ---------------------------------------------------------------------------------------
# The onset as a claim (claims/onset.py): decided on the tables the curves stage writes
# ---------------------------------------------------------------------------------------
def _claims_grid():
    from workflow_scripts.claims import spec

    conf = {"recipes": {"r": {"seeds": list(SEEDS), "eval_steps": list(STEPS[1:])},
                        "q": {"seeds": list(SEEDS)}},
            "depths": [2], "strategies": ["top"], "benchmarks": ["b1", "b2"],
            "stats": {"metric": "ndcg@10"}}
    return spec.grid_from_config(conf)


def _decide_onset(tmp_path, claim):
    from workflow_scripts.claims import data, decide, spec
    from workflow_scripts.core.settings import Claims

    g = _claims_grid()
    claims = spec.parse([{"id": "x", "statement": "s", "estimate": "onset",
                          "arm": {"recipe": "r"}, **claim}], g)
    options = decide.Options(Claims.from_config({}))
    table = decide.decide(claims, data.load(tmp_path, g, claims), options)
    return table.iloc[0]


@pytest.mark.parametrize(("claim", "expected"), [
    ({"test": "after", "step": 40}, "supported"),   # the decline begins after step 40
    ({"test": "after", "step": 30}, "supported"),
    ({"test": "after", "step": 60}, "refuted"),     # it began before 60
    ({"test": "before", "step": 60}, "supported"),
    ({"test": "before", "step": 40}, "refuted"),
    ({"test": "no_decline"}, "refuted"),
])
def test_onset_claims_on_a_curve_that_declines_after_step_40(tmp_path, claim, expected):
    _run(tmp_path, RISE_PLATEAU_DECLINE)
    row = _decide_onset(tmp_path, claim)
    assert row["verdict"] == expected
    assert row["estimate"] == 40 and row["member"] == "onset of r/top2 [all]"


@pytest.mark.parametrize(("claim", "expected"), [
    ({"test": "no_decline"}, "supported"),
    ({"test": "after", "step": 10}, "refuted"),   # no decline is not a decline after 10
    ({"test": "before", "step": 80}, "refuted"),
])
def test_onset_claims_on_a_monotone_curve(tmp_path, claim, expected):
    _run(tmp_path, MONOTONE)
    row = _decide_onset(tmp_path, claim)
    assert row["verdict"] == expected and np.isnan(row["estimate"])


def test_onset_claim_markdown_states_steps_and_no_onset(tmp_path):
    from workflow_scripts.claims import render

    _run(tmp_path, MONOTONE)
    row = _decide_onset(tmp_path, {"test": "no_decline"})
    assert render.estimate_text(row.to_dict()) == "no onset [no onset, no onset]"
    assert render.threshold_text("after", 40.0, None) == "onset ≥ step 40"


@pytest.mark.parametrize(("claim", "message"), [
    ({"test": "after"}, "step: missing; an onset after test needs the step"),
    ({"test": "greater"}, "test: missing or unknown for an onset ('greater')"),
    ({"test": "no_decline", "step": 3}, "step: an onset no_decline test does not take it"),
    ({"test": "after", "step": 3, "arm": {"recipe": "q"}}, "arm.recipe: 'q' is not in"),
    ({"test": "after", "step": 3, "metric": "mrr@10"}, "computed for ndcg@10"),
])
def test_bad_onset_claims_name_the_key(claim, message):
    from workflow_scripts.claims import spec

    with pytest.raises(spec.ClaimError, match="claims\\[0\\]") as e:
        spec.parse([{"id": "x", "statement": "s", "estimate": "onset",
                     "arm": {"recipe": "r"}, **claim}], _claims_grid())
    assert message in str(e.value)


def test_onset_test_on_a_contrast_is_an_error():
    from workflow_scripts.claims import spec

    with pytest.raises(spec.ClaimError, match="after is a test of a learning curve's onset"):
        spec.parse([{"id": "x", "statement": "s", "a": {"recipe": "q"}, "b": {"recipe": "r"},
                     "test": "after", "step": 3}], _claims_grid())
