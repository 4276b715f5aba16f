"""The layer x dimension table (biencoder/dims_stats.py) on synthetic per-query files at two
embedding dimensions, and the figure and report section drawn from it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.biencoder import dims_stats
from workflow_scripts.biencoder.arm_intervals import ci_table
from workflow_scripts.biencoder.report import figures
from workflow_scripts.biencoder.report.dims_section import dims_section
from workflow_scripts.core import contracts
from workflow_scripts.core.arms import build_arms
from workflow_scripts.core.settings import DimsStats

SETTINGS = DimsStats.from_json('{"nboot": 100, "seed": 0}')
N_Q = 40


def _long_table(dims=(8, 16)) -> pd.DataFrame:
    """Per-query rows of a base and a trained arm (2 seeds), depths 1-2, benchmarks b1, b2, at
    each dimension (the full dimension: dim 0), a smaller dimension scoring lower."""
    rng = np.random.default_rng(0)
    rows = []
    for dim in (0, *dims):
        for recipe, seeds in (("base", [-1]), ("r", [1, 2])):
            for depth in (1, 2):
                for seed in seeds:
                    for bench in ("b1", "b2"):
                        score = np.clip(0.3 + 0.1 * depth - (0.1 if dim == 8 else 0)
                                        + rng.normal(0, 0.1, N_Q), 0, 1)
                        rows.append(pd.DataFrame({
                            "query_id": [f"q{i}" for i in range(N_Q)], "ndcg@10": score,
                            "recall@100": score, "map@100": score, "mrr@10": score,
                            "recipe": recipe, "strategy": "top", "depth": depth, "seed": seed,
                            "benchmark": bench, "dim": dim}))
    return pd.concat(rows, ignore_index=True)


EXPECTED = {"benchmarks": ["b1", "b2"], "dims": [8, 16],
            "arms": [[r, "top", d, s] for r, s in (("base", [-1]), ("r", [1, 2]))
                     for d in (1, 2)]}


@pytest.fixture(scope="module")
def tables():
    df = _long_table()
    full = ci_table(build_arms(df[df["dim"] == 0], "ndcg@10"), SETTINGS).assign(
        metric="ndcg@10")
    dims = dims_stats.dims_table(df[df["dim"] > 0], SETTINGS, expected=EXPECTED)
    return df, full, dims


def test_each_dimension_has_the_ci_rows_of_its_own_files(tables):
    df, _, dims = tables
    assert sorted(dims["dim"].unique()) == [8, 16]
    contracts.check_columns(dims, contracts.DIMS_TABLES["dims"], "dims")
    for dim in (8, 16):
        ref = ci_table(build_arms(df[df["dim"] == dim], "ndcg@10"), SETTINGS)
        got = dims[dims["dim"] == dim].drop(columns=["dim", "metric"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(got, ref)
    trained = dims[dims.recipe == "r"]
    assert (trained["resample"] == "seeds,examples").all()  # seeds resampled where there are


def test_a_dimension_lacking_an_arm_or_a_configured_dimension_stops_the_table(tables):
    df, _, _ = tables
    part = df[(df["dim"] > 0) & ~((df["dim"] == 16) & (df.depth == 2) & (df.recipe == "r"))]
    with pytest.raises(contracts.DataError, match="dimension 16"):
        dims_stats.dims_table(part, SETTINGS, expected=EXPECTED)
    with pytest.raises(contracts.DataError, match="configured"):
        dims_stats.dims_table(df[df["dim"] == 8], SETTINGS, expected=EXPECTED)


def test_the_figure_and_the_report_show_every_arm_at_every_dimension(tables):
    _, full, dims = tables
    fig = figures.depth_by_dim({"ci": full, "dims": dims})
    assert [ax.get_title() for ax in fig.axes if ax.axison] == ["r/top", "untrained base"]
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels == ["full dimension", "8 dimensions", "16 dimensions"]
    text = dims_section(full, dims)
    assert "| 8 dims | 16 dims | full dimension |" in text
    assert text.count("\n| r ") == 2 and text.count("\n| base ") == 2  # a row per depth
