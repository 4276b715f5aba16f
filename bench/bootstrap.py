"""Benchmark of the Multi-Bootstrap engine (workflow_scripts/multibootstrap.py).

Prints, in one run: the engine's time at 25 seeds x 5,000 examples x nboot 2,000; a plain
loop's time (run on fewer samples, extrapolated linearly); the floor, i.e. numpy's default
Generator (integers()) drawing the same random indices in the same blocks on one thread;
the engine's own draws of those indices (the same values, vectorized); and the peak memory
at 25 seeds x 50,000 examples x nboot 10,000. The engine runs two threads (CPU time shown).

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
from workflow_scripts import multibootstrap as mb  # noqa: E402

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


def floor(n_seeds: int, n_ex: int, nboot: int, seed: int, *, numpy: bool = True) -> None:
    """The engine's draws alone, on one thread: same generators (one per group of samples, made
    the same way), same rows in the same calls. numpy=True: numpy's Generator.integers (the
    floor); False: the engine's own vectorized draw of the same indices."""
    def drawer(gen: np.random.Generator, n: int):
        if numpy:
            return lambda rows: gen.integers(0, n, size=(rows, n))
        return mb._Indices(gen, n).draw

    children = np.random.default_rng(seed).spawn(3)
    plan = mb._plan(nboot, mb._block_rows(max(n_ex, n_seeds)))
    for s_gen, e_gen, blocks in zip(children[0].spawn(len(plan)),
                                    children[2].spawn(len(plan)), plan, strict=True):
        drawer(s_gen, n_seeds)(blocks[-1][1] - blocks[0][0])  # a group's seeds in one call
        examples = drawer(e_gen, n_ex)
        for r0, r1 in blocks:
            examples(r1 - r0)


def loop(x: np.ndarray, nboot: int, seed: int) -> np.ndarray:
    """Plain loop over bootstrap samples on the engine's draws (the tests' reference); nboot
    at most one group, whose generators it draws from."""
    assert nboot <= mb.GROUP
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
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"Multi-Bootstrap benchmark: numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}, OPENBLAS_NUM_THREADS={blas}")
    print(f"shape: {SEEDS} seeds x {EXAMPLES} examples, nboot {NBOOT}, best of {args.repeats}")

    n_loop = args.loop_samples
    times = best_of({
        "engine": lambda: mb.bootstrap_mean(x, nboot=NBOOT, seed=1),
        "floor": lambda: floor(SEEDS, EXAMPLES, NBOOT, seed=1),
        "own draws": lambda: floor(SEEDS, EXAMPLES, NBOOT, seed=1, numpy=False),
        "loop": lambda: loop(x, n_loop, seed=1),
    }, args.repeats)
    (t_engine, c_engine), (t_floor, c_floor) = times["engine"], times["floor"]
    t_loop_part = times["loop"][0]
    t_loop = t_loop_part * NBOOT / n_loop
    ref = loop(x, n_loop, seed=1)
    engine = mb.bootstrap_mean(x, nboot=NBOOT, seed=1).samples
    diff = float(np.max(np.abs(engine[:n_loop] - ref)))

    print(f"engine:                  {t_engine:8.3f} s  (CPU {c_engine:.3f} s, all threads)")
    print(f"floor (draws only):      {t_floor:8.3f} s  (CPU {c_floor:.3f} s; numpy's "
          "Generator.integers, same generators and blocks, one thread)")
    t_own = times["own draws"][0]
    print(f"engine's own draws:      {t_own:8.3f} s  (the same indices, vectorized from the raw "
          f"stream: {t_floor / t_own:.2f}x faster than integers)")
    print(f"loop:                    {t_loop:8.3f} s  (best {t_loop_part:.3f} s on "
          f"{n_loop} samples, extrapolated linearly x{NBOOT / n_loop:g})")
    print(f"speedup vs loop: {t_loop / t_engine:6.1f}x (goal >= 20x)")
    print(f"engine / floor:  {t_engine / t_floor:6.2f}x (goal <= 2x); in CPU time "
          f"{c_engine / c_floor:.2f}x")
    print(f"engine == loop on the first {n_loop} samples: max abs diff {diff:.1e}")

    big = rng.random((SEEDS, MEM_EXAMPLES))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    mb.bootstrap_mean(big, nboot=MEM_NBOOT, seed=1)
    t_big = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    print(f"peak memory at {SEEDS} seeds x {MEM_EXAMPLES} examples x nboot {MEM_NBOOT}: "
          f"{peak / 2**20:.1f} MiB above the input (tracemalloc; {mb._THREADS} threads, "
          f"blocks of {mb._BLOCK_BYTES / 2**20:.2f} MiB; data {big.nbytes / 2**20:.1f} MiB), "
          f"took {t_big:.2f} s")


if __name__ == "__main__":
    main()
