"""The numbers docs/ladder.md and docs/statistics.md quote from the default study, made from a
finished run's results folder (`make study`), and checked against the docs.

    .venv/bin/python bench/doc_numbers.py [--results results]          # print them
    .venv/bin/python bench/doc_numbers.py [--results results] --check  # exit 1 if a doc differs

Not a test: it needs the default study's results (about 5 minutes of a quiet 2-core machine),
which the test suite does not run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def signed(x: float) -> str:
    return f"{'+' if x >= 0 else '−'}{abs(x):.3f}"


def ladder_rows(results: Path) -> list[str]:
    """docs/ladder.md's table rows: mean test accuracy at each k and Δ(k=L − k=0) with its CI."""
    table = pd.read_parquet(results / "ladder/table.parquet")
    comp = pd.read_parquet(results / "ladder/comparisons.parquet")
    width = int(table["k"].max()) + 1
    rows = []
    for (config, method), g in table.groupby(["config", "method"], sort=False):
        means = [f"{g.loc[g['k'] == k, 'mean'].iloc[0]:.3f}" if k in set(g["k"]) else ""
                 for k in range(width)]
        full = comp[(comp["config"] == config) & (comp["method"] == method) & comp["full"]]
        d = full.iloc[0]
        rows.append(f"| {config} | {method.upper()} | {' | '.join(means)} | "
                    f"{signed(d['estimate'])} [{signed(d['ci_low'])}, {signed(d['ci_high'])}] |")
    return rows


def seeds_sentence(results: Path) -> str:
    """docs/statistics.md's range of seeds per arm to detect detect_delta."""
    s = pd.read_parquet(results / "stats/seeds_needed.parquet")["seeds_for_delta"].dropna()
    return (f"takes {int(s.min())} to {int(s.max())} seeds\nper arm (median "
            f"{int(s.median())})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, default=ROOT / "results")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    want = {"docs/ladder.md": ladder_rows(a.results),
            "docs/statistics.md": [seeds_sentence(a.results)]}
    bad = 0
    for doc, pieces in want.items():
        text = (ROOT / doc).read_text(encoding="utf-8")
        for piece in pieces:
            ok = piece in text
            bad += not ok
            if not a.check or not ok:
                print(f"{doc}: {'ok' if ok else 'MISSING'}: {piece}")
    if a.check:
        print(f"{sum(map(len, want.values())) - bad} of {sum(map(len, want.values()))} "
              "quoted numbers match the run")
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
