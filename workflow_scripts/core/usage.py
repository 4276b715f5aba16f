"""Measured cost per rule: Snakemake's `benchmark:` files (one TSV per job: wall seconds,
peak resident memory, I/O, CPU time) summed per rule into results/usage.parquet, for the
report's table and for sizing a cluster's `mem_mb` / `runtime`.

A benchmark file's path is results/benchmarks/<output of the job>.tsv (rules/common.smk,
`bench`); its rule is named in the `--rules` list given alongside, in the same order.

CLI: python -m workflow_scripts.core.usage --files B1.tsv B2.tsv ... --rules R1 R2 ... \
        --out results/usage.parquet
"""

from __future__ import annotations

import argparse

import pandas as pd

from workflow_scripts.core import contracts

# Columns of Snakemake's benchmark TSV that the table uses.
_NEEDED = ("s", "max_rss", "cpu_time")


def read_benchmark(path) -> pd.DataFrame:
    df = pd.read_csv(path, sep="\t")
    contracts.check_columns(df, _NEEDED, path)
    return df


def usage_table(files, rules) -> pd.DataFrame:
    """One row per rule: jobs, total and largest wall seconds, largest peak RSS (MB; the
    whole job's process tree as Snakemake measures it), total CPU seconds."""
    if len(files) != len(rules):
        raise ValueError(f"{len(files)} benchmark files but {len(rules)} rule names")
    rows = [read_benchmark(f).assign(rule=r) for f, r in zip(files, rules, strict=True)]
    df = pd.concat(rows, ignore_index=True)
    g = df.groupby("rule", sort=False)
    out = pd.DataFrame({
        "rule": list(g.groups),
        "jobs": g.size().to_numpy(),
        "seconds_total": g["s"].sum().to_numpy(),
        "seconds_max": g["s"].max().to_numpy(),
        "max_rss_mb": pd.to_numeric(g["max_rss"].max(), errors="coerce").to_numpy(),
        "cpu_seconds": pd.to_numeric(g["cpu_time"].sum(), errors="coerce").to_numpy(),
    })
    return out[list(contracts.USAGE_COLUMNS)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Sum Snakemake benchmark files per rule.")
    ap.add_argument("--files", nargs="+", required=True)
    ap.add_argument("--rules", nargs="+", required=True, help="the rule of each file")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    table = usage_table(a.files, a.rules)
    contracts.write_parquet(a.out, table)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
