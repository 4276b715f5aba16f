"""Holm refutation of a claim's family at its level: P(family refuted) / alpha when every
member sits at its threshold (the null's boundary), for families of 4 and 12 members, at
3, 4 and 5 seeds, in the regimes of validation/tail_levels.py (its draw and vectorised statistic).

A family is refuted when Holm's first step rejects: the smallest member p at most alpha / m
(decide.holm: the step-down adjusted p is m * min p there). Members are independent studies
of paired differences, the case where Holm's union bound is tightest; shared arms
(adjacent depths) only make members dependent, which Holm allows. Each member's p is the
reported one (calibrated.compare's, tail calibrated: stats/tail_calibration.py), one side
("greater"; the statistic is symmetric). The ratio prints with its Monte Carlo standard
error; above 1.1 beyond it is an excess.

    .venv/bin/python -m validation.holm_families [--families 20000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from validation.tail_levels import ALPHA, CHUNK, RULES, draw, statistic
from workflow_scripts.claims.decide import holm
from workflow_scripts.stats import tail_calibration as tc

REGIMES = ("gaussian, seeds dominate", "gaussian, balanced", "heavy-tailed",
           "binary, seeds dominate")


def reported(p, x, r, seeds: int, q: int, below: float) -> np.ndarray:
    """The reported p where it can matter (plug-in p under `below`; max(p, G(p)) >= p)."""
    out = np.array(p, dtype=float)
    for i in np.flatnonzero(p < below):
        red = tc.Reduced(seeds - 1, q - 1, q - 1, (x[i] - r[i]) / r[i], RULES)
        out[i] = tc.calibrated_p(float(p[i]), red)
    return out


def refuted_rate(rng, regime: str, seeds: int, q: int, members: int, families: int) -> float:
    """Share of families Holm refutes at ALPHA, every member at its threshold."""
    hits, done = 0, 0
    per_chunk = max(1, CHUNK // members)
    while done < families:
        n = min(per_chunk, families - done)
        p, _, x, r = statistic(draw(rng, regime, n * members, seeds, q))
        p = reported(p, x, r, seeds, q, ALPHA / members).reshape(n, members)
        adjusted = np.array([holm(row).min() for row in p[p.min(axis=1) <= ALPHA / members]])
        hits += int(np.sum(adjusted <= ALPHA))
        done += n
    return hits / families


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", type=int, default=20_000)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(20261207)
    print(f"Holm refutation, every member at its threshold, alpha {ALPHA}, "
          f"{args.families} families a cell, 200 examples: rate / alpha (MC se)")
    print(f"{'regime':<26} {'seeds':>5} {'m = 4':>14} {'m = 12':>14}")
    for regime in REGIMES:
        for seeds in (3, 4, 5):
            t0, cells = time.perf_counter(), []
            for m in (4, 12):
                rate = refuted_rate(rng, regime, seeds, 200, m, args.families)
                se = math.sqrt(max(rate, ALPHA) * (1 - ALPHA) / args.families) / ALPHA
                cells.append(f"{rate / ALPHA:5.2f} ({se:4.2f})")
            print(f"{regime:<26} {seeds:>5} " + " ".join(f"{c:>14}" for c in cells)
                  + f"  {time.perf_counter() - t0:5.1f}s", flush=True)


if __name__ == "__main__":
    main()
