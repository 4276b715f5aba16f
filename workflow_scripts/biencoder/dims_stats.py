"""The layer x dimension table: every arm's mean metric at each configured embedding
dimension (eval.dims), with its interval, as the statistics stage's ci table gives it at the
full dimension (biencoder/arm_intervals.py ci_table: the configured stats.interval, over
seeds x queries where an arm has seeds to resample, its test queries alone otherwise).

Reads the dimension files (results/<study>/eval/.../dim<N>/<benchmark>.parquet, each with a
`dim` column) and writes results/<study>/stats/dims.parquet: the ci table's columns and
`dim`. The full dimension's rows are ci.parquet's; the figure draws both.

CLI: python -m workflow_scripts.biencoder.dims_stats --evals FILE... \
        --out results/<study>/stats/dims.parquet --settings-json '{..}' \
        --expect-json '{"benchmarks": [..], "arms": [..], "dims": [64, 128]}'
"""

from __future__ import annotations

import argparse
import json

import pandas as pd

from workflow_scripts.biencoder.arm_intervals import ci_table
from workflow_scripts.core import contracts
from workflow_scripts.core.arms import build_arms, grid_gaps, load_evals
from workflow_scripts.core.settings import DimsStats


def dims_table(df: pd.DataFrame, s: DimsStats, *, expected: dict | None = None,
               threads: int | None = None) -> pd.DataFrame:
    """ci_table's rows at each dimension of the long table `df` (a `dim` column); with
    `expected`, a dimension lacking any configured arm, seed or benchmark is an error."""
    if "dim" not in df:
        raise contracts.DataError("the dimension evaluations have no 'dim' column")
    dims = sorted(int(m) for m in df["dim"].unique())
    if expected and dims != sorted(expected["dims"]):
        raise contracts.DataError(f"dimensions {dims}, configured {sorted(expected['dims'])}")
    frames = []
    for dim in dims:
        arms = build_arms(df[df["dim"] == dim], s.metric)
        gaps = grid_gaps(arms, expected) if expected else []
        if gaps:
            raise contracts.DataError(f"dimension {dim}: the evaluations lack part of the "
                                      "configured grid:\n  " + "\n  ".join(gaps))
        frames.append(ci_table(arms, s, threads).assign(dim=dim))
    table = pd.concat(frames, ignore_index=True)
    table.insert(0, "metric", s.metric)
    return table


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Mean metric per arm x depth x dimension.")
    ap.add_argument("--evals", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--settings-json", default="{}",
                    help="core/settings.py DimsStats as JSON (the metric, the interval, its "
                         "level, nboot, seed)")
    ap.add_argument("--threads", type=int, help="bootstrap threads (default: usable CPUs)")
    ap.add_argument("--expect-json", help="the configured grid and dimensions, checked")
    a = ap.parse_args(argv)
    table = dims_table(load_evals(a.evals), DimsStats.from_json(a.settings_json),
                       expected=json.loads(a.expect_json) if a.expect_json else None,
                       threads=a.threads)
    contracts.write_parquet(a.out, table)
    print(f"{a.out}: {len(table)} rows")


if __name__ == "__main__":
    main()
