"""Re-score a study's run files with ir_measures and count the queries whose values equal
their per-query file's, per benchmark and metric (docs/evaluation.md, "Run files").

Each run (results/<study>/eval/**/<benchmark>.run.gz) is read as the tools read it, scored
against its benchmark's trec_eval qrels (data/beir/<benchmark>/qrels/test.trec) with
ir_measures' nDCG@10, R@100, AP@100 and RR@10, and compared, query by query and exactly,
with the per-query file its sidecar names. `mrr@10 (RR cut at 10)` is trec_eval's
recip_rank (ir_measures' `RR`, via pytrec_eval) with values below 1/10 read as 0: RR@10 is MS
MARCO's implementation, which orders tied scores by docno ascending where trec_eval (and
depthlab) order them descending. Run from the working folder of the study:

    .venv/bin/python bench/rescore_runs.py results/default [--out agreement.csv]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from workflow_scripts.biencoder.trec_run import IR_MEASURES  # noqa: E402
from workflow_scripts.core import contracts, paths  # noqa: E402

TREC_RR = "mrr@10 (RR cut at 10)"


def rescore(qrels_path, run_path) -> pd.DataFrame:
    """ir_measures' per-query values of a run, indexed by query id, one column per depthlab
    metric (IR_MEASURES), and TREC_RR."""
    import ir_measures

    measures = [ir_measures.parse_measure(m) for m in [*IR_MEASURES.values(), "RR"]]
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    rows: dict[str, dict] = {}
    for m in ir_measures.iter_calc(measures, qrels, ir_measures.read_trec_run(str(run_path))):
        rows.setdefault(m.query_id, {})[str(m.measure)] = m.value
    df = pd.DataFrame.from_dict(rows, orient="index")
    df[TREC_RR] = df["RR"].where(df["RR"] >= 0.1, 0.0)
    return df.rename(columns={v: k for k, v in IR_MEASURES.items()}).drop(columns="RR")


def agreement(run_path) -> pd.DataFrame:
    """One row per metric of one run: queries, queries equal to the per-query file."""
    stem = str(run_path).removesuffix(paths.RUN_SUFFIXES[0])
    sidecar = json.loads(Path(paths.run_files(stem + ".parquet")[1]).read_text(encoding="utf-8"))
    per_query = contracts.read_eval(Path(run_path).parent / sidecar["per_query_file"])
    benchmark = per_query["benchmark"].iloc[0]
    again = rescore(paths.TREC_QRELS.format(benchmark=benchmark), run_path)
    ours = per_query.set_index("query_id")
    again = again.reindex(ours.index).fillna(0.0)  # a query the run lacks scores 0
    rows = [(metric, (again[metric] == ours[metric]).sum()) for metric in IR_MEASURES]
    rows.append((TREC_RR, (again[TREC_RR] == ours["mrr@10"]).sum()))
    return pd.DataFrame([{"benchmark": benchmark, "run": str(run_path), "metric": m,
                          "queries": len(ours), "equal": int(n)} for m, n in rows])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a study's results folder")
    ap.add_argument("--out", type=Path, help="also write the per-run rows as CSV")
    a = ap.parse_args(argv)
    runs = sorted((a.results / "eval").rglob(f"*{paths.RUN_SUFFIXES[0]}"))
    if not runs:
        sys.exit(f"no run files under {a.results / 'eval'}")
    t0 = time.perf_counter()
    table = pd.concat([agreement(r) for r in runs], ignore_index=True)
    seconds = time.perf_counter() - t0
    if a.out:
        table.to_csv(a.out, index=False)
    summary = table.groupby(["benchmark", "metric"], sort=False).agg(
        runs=("run", "size"), queries=("queries", "sum"), equal=("equal", "sum"))
    print(f"{len(runs)} run files re-scored with ir_measures in {seconds:.1f} s; "
          "per-query rows equal to the per-query files:")
    print(summary.to_string())


if __name__ == "__main__":
    main()
