"""Figures a reader does not trip on (issue #39): a train-once arm's depths and labels apart
in quality_vs_compute, one line style per meaning in depth_vs_budget, the arms' error bars
apart in pareto. Synthetic stats with a per-depth and a train-once arm that score alike."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_report_figures import _interval

from workflow_scripts.biencoder.report import figures
from workflow_scripts.biencoder.report.figures_training import spread
from workflow_scripts.core import contracts

ARMS = [("r1", "top"), ("r4", "top"), ("r4", "adaptive")]
DEPTHS = (1, 2)


def _stats() -> dict[str, pd.DataFrame]:
    keys = {"metric": "ndcg@10", "benchmark": contracts.ALL}
    ci, seeds, comp = [], [], []
    for recipe, strategy in ARMS:
        for d in DEPTHS:
            est = 0.45 + 0.001 * d  # the depths score alike: their labels would meet
            ci.append({**keys, "recipe": recipe, "strategy": strategy, "depth": d,
                       "n_seeds": 2, "seed_std": 0.01, **_interval(est, 0.95)})
            seeds += [{**keys, "recipe": recipe, "strategy": strategy, "depth": d, "seed": s,
                       "mean": est + 0.01 * s} for s in (1, 2)]
            once = strategy == "adaptive"
            comp.append({"recipe": recipe, "strategy": strategy, "depth": d,
                         "train_once": once, "trained_depth": 2 if once else d, "seeds": 2,
                         "steps": 8, "layers_trained": 2 if once else d,
                         "layer_steps": 16 if once else 8 * d, "train_seconds_mean": 0.7,
                         "train_seconds_sum": 1.4, "depths_served": 2 if once else 1,
                         "arm_trainings": 2 if once else 4,
                         "arm_layer_steps": 32 if once else 48, "arm_train_seconds": 1.4})
    return {"ci": pd.DataFrame(ci), "seeds": pd.DataFrame(seeds),
            "compute": pd.DataFrame(comp), "comparisons": pd.DataFrame()}


def test_spread_keeps_labels_apart_and_beside_their_points():
    ys = np.array([0.451, 0.452, 0.30])
    out = spread(ys, 0.02)
    assert np.all(np.diff(np.sort(out)) >= 0.02 - 1e-12)
    assert np.argsort(out).tolist() == np.argsort(ys).tolist()  # order kept
    assert (out - ys).mean() == pytest.approx(0.0)  # centred on the points
    assert spread([0.1, 0.5], 0.02).tolist() == pytest.approx([0.1, 0.5])  # already apart


def _labels_of_colour(ax, colour) -> list:
    return [t for t in ax.texts if t.get_text().startswith("L") and t.get_color() == colour]


def test_quality_vs_compute_sets_a_train_once_arms_depths_apart():
    fig = figures.quality_vs_compute(_stats(), order=["r1", "r4"])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        once = [c for c in ax.containers if c.get_label().startswith("r4/adaptive")][0]
        xs = once.lines[0].get_xdata()
        assert len(set(np.round(xs, 9))) == len(DEPTHS)  # not on one vertical line
        texts = _labels_of_colour(ax, "C2")
        assert sorted(t.get_text() for t in texts) == ["L1", "L2"]
        boxes = [t.get_window_extent(renderer) for t in texts]
        assert not boxes[0].overlaps(boxes[1]), "the train-once arm's L1 and L2 collide"


def test_depth_vs_budget_draws_every_mean_solid_and_no_dotted_line():
    fig = figures.depth_vs_budget(_stats(), order=["r1", "r4"])
    ax = fig.axes[0]
    arm_labels = {"r1/top", "r4/top", "r4/adaptive"}
    means = [ln for ln in ax.get_lines() if ln.get_label() in arm_labels]
    assert {ln.get_label() for ln in means} == arm_labels
    assert {ln.get_linestyle() for ln in means} == {"-"}  # a mean reads as a mean
    sigma = [ln for ln in ax.get_lines() if ln.get_marker() == "_"]
    assert len(sigma) == 2 * len(ARMS)  # ±2σ of each arm: ticks, not lines
    assert {ln.get_linestyle() for ln in sigma} == {"None"}
    assert not [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    title = fig.legends[0].get_title().get_text()
    assert "dotted" not in title and "±2σ" in title
    # One panel (as the laptop study's): the caption wraps inside the figure, not past it
    fig.canvas.draw()
    box = fig.legends[0].get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y0 >= 0, (box, fig.bbox)


def test_pareto_sets_the_arms_error_bars_apart_at_a_depth():
    ladder = pd.DataFrame({"depth": list(DEPTHS), "p50_ms": [10.0, 20.0], "runs_used": 2})
    fig = figures.pareto(_stats(), ladder, ["r1", "r4"])
    xs = [c.lines[0].get_xdata() for c in fig.axes[0].containers]
    assert len(xs) == len(ARMS)
    for k in range(len(DEPTHS)):
        at_depth = [float(x[k]) for x in xs]
        assert len(set(at_depth)) == len(ARMS)  # no two arms' bars on one x
        assert max(at_depth) - min(at_depth) < 0.1 * 10.0  # still at their depth


def test_pareto_says_the_machine_was_busy():
    """The HTML report shows the figure: it says what RESULTS.md says about the machine."""
    summary = pd.DataFrame({"run": [0, 0, 1, 1], "depth": [1, 2, 1, 2],
                            "notes": ["the machine was busy: other processes kept 1.20 cores "
                                      "busy"] * 2 + ["nothing else ran"] * 2})
    assert figures.busy_runs(summary) == [0]
    assert figures.busy_runs(summary.drop(columns="notes")) == []
    ladder = pd.DataFrame({"depth": list(DEPTHS), "p50_ms": [10.0, 20.0], "runs_used": 2})
    fig = figures.pareto(_stats(), ladder, ["r1", "r4"], figures.busy_runs(summary))
    assert "MACHINE BUSY during profiling run(s) 0" in fig.axes[0].get_xlabel()
    # The longest provenance (busy, ms not verified) stays inside the figure: it was cut off
    fig = figures.pareto(_stats(), ladder.assign(absolute_verified=False), ["r1", "r4"],
                         [0, 1])
    fig.canvas.draw()
    box = fig.axes[0].xaxis.label.get_window_extent()
    assert "NOT verified" in fig.axes[0].get_xlabel()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1, (box, fig.bbox)
    quiet = figures.pareto(_stats(), ladder, ["r1", "r4"])
    assert "BUSY" not in quiet.axes[0].get_xlabel()
