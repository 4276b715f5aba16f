"""Measured cost per rule: every job's record (wall seconds, CPU seconds, peak resident
memory of the job's process, and its outputs; written by core/launch.py beside the job's log
name under results/<study>/benchmarks/) summed per rule into results/<study>/usage.parquet,
for the report's table and for sizing a cluster's `mem_mb` / `runtime`.

A job's log is logs/<study>/<rule>.log or logs/<study>/<rule>/... (tests/unit/core/test_usage.py
checks every rule),
so a record's first name is its rule: no list of rules or benchmark files is kept anywhere.
Records of jobs the current plan no longer has (an edited config) are left out: only jobs
with an output given as --planned count (and the looks, which the looks plan at run time).

CLI: python -m workflow_scripts.core.usage --records results/STUDY/benchmarks \
        --planned OUT1 OUT2 ... --out results/STUDY/usage.parquet
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from workflow_scripts.core import contracts, paths


def read_records(records_dir, planned) -> list[dict]:
    """One dict per job record under records_dir (a study's) with a planned output (or one of
    the study's looks')."""
    records_dir, planned, rows = Path(records_dir), set(map(str, planned)), []
    look = str(records_dir.parent / paths.LOOK)
    look = re.compile(re.escape(look).replace(r"\{k\}", "[0-9]+"))
    for f in sorted(records_dir.rglob("*.json")):
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
            outputs = list(rec["outputs"])
            row = {"rule": paths.rule_of(f.relative_to(records_dir)), "s": float(rec["wall_s"]),
                   "cpu_s": float(rec["cpu_s"]), "max_rss_mb": float(rec["max_rss_mb"])}
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{f}: not a job record ({e}): delete it and rerun") from None
        if any(o in planned or look.fullmatch(o) for o in outputs):
            rows.append(row)
    return rows


def usage_table(rows: list[dict]):
    """One row per rule, in name order: jobs, total and largest wall seconds, largest
    peak RSS (MB, the job's own process), total CPU seconds."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=["rule", "s", "cpu_s", "max_rss_mb"])
    g = df.groupby("rule", sort=True)
    out = pd.DataFrame({
        "rule": list(g.groups),
        "jobs": g.size().to_numpy(),
        "seconds_total": g["s"].sum().to_numpy(),
        "seconds_max": g["s"].max().to_numpy(),
        "max_rss_mb": g["max_rss_mb"].max().to_numpy(),
        "cpu_seconds": g["cpu_s"].sum().to_numpy(),
    })
    return out[list(contracts.USAGE_COLUMNS)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Sum the jobs' measured cost per rule.")
    ap.add_argument("--records", required=True, help="the study's records folder")
    ap.add_argument("--planned", nargs="*", default=[], help="the plan's job outputs")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    table = usage_table(read_records(a.records, a.planned))
    contracts.write_parquet(a.out, table)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
