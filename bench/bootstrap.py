"""Benchmark of the Multi-Bootstrap engine (workflow_scripts/stats/bootstrap_engine.py).

Prints, in one run: the engine's time at 25 seeds x 5,000 examples x nboot 2,000 (on the
default threads and on one); a plain loop's time (run on fewer samples, extrapolated
linearly); the floor, i.e. the engine's numpy draw calls alone (Generator.integers, the same
generators, rows and calls, one thread); the ratios side by side; and the peak memory at
25 seeds x 50,000 examples x nboot 10,000.

    .venv/bin/python bench/bootstrap.py [--repeats 5] [--loop-samples 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workflow_scripts.stats import bootstrap_engine as engine  # noqa: E402
from workflow_scripts.stats import multibootstrap as mb  # noqa: E402

SEEDS, EXAMPLES, NBOOT = 25, 5_000, 2_000
MEM_EXAMPLES, MEM_NBOOT = 50_000, 10_000


def best_of(fns: dict, repeats: int) -> dict[str, tuple[float, float]]:
    """Best wall and best CPU time (all threads) of each function, runs interleaved so that a
    change in the machine's load hits all of them alike."""
    wall = {name: [] for name in fns}
    cpu = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
    return {name: (min(wall[name]), min(cpu[name])) for name in fns}


def floor(n_seeds: int, n_ex: int, nboot: int, seed: int) -> None:
    """The engine's numpy draw calls alone, on one thread, for bootstrap_mean of one
    [seeds, examples] array: the same generators (one per group of samples, spawned the same
    way), a group's seeds in one call, then its examples block by block."""
    children = np.random.default_rng(seed).spawn(3)
    plan = engine.plan(nboot, engine.block_rows(max(n_ex, n_seeds)))
    for s_gen, e_gen, blocks in zip(children[0].spawn(len(plan)),
                                    children[2].spawn(len(plan)), plan, strict=True):
        s_gen.integers(0, n_seeds, size=(blocks[-1][1] - blocks[0][0], n_seeds))
        for r0, r1 in blocks:
            e_gen.integers(0, n_ex, size=(r1 - r0, n_ex))


def loop(x: np.ndarray, nboot: int, seed: int) -> np.ndarray:
    """Plain loop over bootstrap samples on the engine's draws (the tests' reference); nboot
    at most one group, whose generators it draws from."""
    assert nboot <= engine.GROUP
    children = np.random.default_rng(seed).spawn(3)
    seeds = children[0].spawn(1)[0].integers(0, x.shape[0], size=(nboot, x.shape[0]))
    examples = children[2].spawn(1)[0].integers(0, x.shape[1], size=(nboot, x.shape[1]))
    return np.array([
        sum(float(np.mean(x[s, examples[i]])) for s in seeds[i]) / len(seeds[i])
        for i in range(nboot)
    ])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5,
                    help="best of N for engine, floor and loop, interleaved")
    ap.add_argument("--loop-samples", type=int, default=200, help="samples the loop runs")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.random((SEEDS, EXAMPLES)) + rng.normal(0, 0.05, (SEEDS, 1))
    threads = engine.usable_cpus()
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"Multi-Bootstrap benchmark: numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"engine threads {threads}, load average {os.getloadavg()[0]:.2f}, "
          f"OPENBLAS_NUM_THREADS={blas}")
    print(f"shape: {SEEDS} seeds x {EXAMPLES} examples, nboot {NBOOT}, best of {args.repeats}")

    n_loop = args.loop_samples
    times = best_of({
        "engine": lambda: mb.bootstrap_mean(x, nboot=NBOOT, seed=1),
        "engine 1 thread": lambda: mb.bootstrap_mean(x, nboot=NBOOT, seed=1, threads=1),
        "floor": lambda: floor(SEEDS, EXAMPLES, NBOOT, seed=1),
        "loop": lambda: loop(x, n_loop, seed=1),
    }, args.repeats)
    (t_engine, c_engine), (t_floor, c_floor) = times["engine"], times["floor"]
    t_one = times["engine 1 thread"][0]
    t_loop_part = times["loop"][0]
    t_loop = t_loop_part * NBOOT / n_loop
    ref = loop(x, n_loop, seed=1)
    engine_samples = mb.bootstrap_mean(x, nboot=NBOOT, seed=1).samples
    diff = float(np.max(np.abs(engine_samples[:n_loop] - ref)))

    print(f"engine:                  {t_engine:8.3f} s  (CPU {c_engine:.3f} s, {threads} threads)")
    print(f"engine, one thread:      {t_one:8.3f} s")
    print(f"floor (draws only):      {t_floor:8.3f} s  (CPU {c_floor:.3f} s; the engine's "
          "Generator.integers calls, one thread)")
    print(f"loop:                    {t_loop:8.3f} s  (best {t_loop_part:.3f} s on "
          f"{n_loop} samples, extrapolated linearly x{NBOOT / n_loop:g})")
    print(f"speedup vs loop: {t_loop / t_engine:6.1f}x (goal >= 15x)   |   engine / floor: "
          f"{t_engine / t_floor:5.2f}x (goal <= 2x; CPU {c_engine / c_floor:.2f}x, "
          f"one thread {t_one / t_floor:.2f}x)")
    print(f"engine == loop on the first {n_loop} samples: max abs diff {diff:.1e} "
          f"({'ok' if diff <= 1e-12 else 'FAIL'}, tolerance 1e-12)")

    big = rng.random((SEEDS, MEM_EXAMPLES))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    mb.bootstrap_mean(big, nboot=MEM_NBOOT, seed=1)
    t_big = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    print(f"peak memory at {SEEDS} seeds x {MEM_EXAMPLES} examples x nboot {MEM_NBOOT}: "
          f"{peak / 2**20:.1f} MiB above the input (tracemalloc; {threads} threads, "
          f"blocks of {engine.BLOCK_BYTES / 2**20:.2f} MiB; data {big.nbytes / 2**20:.1f} MiB), "
          f"took {t_big:.2f} s")


if __name__ == "__main__":
    main()
