"""The model and statistic of bench/sequential.py (seeds on demand, simulated end to end).

Per cell, studies of a paired difference are drawn with a known truth: per seed s and example
q, d[s, q] = delta + example[q] + seed[s] + noise[s, q] (each component the difference of two
arms' independent draws, as bench/coverage.py's paired cell: interaction sd, seed sd and noise
sd per arm, times sqrt(2)), 300 examples. The claim is "b - a > 0" (threshold 0). Every study
holds max_seeds seeds; look k sees its first n_k (seeds added, nothing redrawn). At every look
the calibrated one-sided p-values (stats/calibrated.py's paired compare, vectorised here over
studies and checked against calibrated.compare itself on the first studies of every cell to
1e-9) give the path; `unreachable` is seed_planning.seeds_for_margin's "no seed count settles
it" (the examples limit it), vectorised and checked against seed_planning the same way.

Regimes: seeds dominate (seed sd 0.02, interaction 0.02, noise 0.05), balanced (seed sd
0.005), examples dominate (seed sd 0.002, interaction 0.05, noise 0.02: information grows
barely with seeds). Truths: the hardest null (delta = threshold), and delta = 2.5 and 4 true
standard deviations of the estimate at max_seeds (or at `scale` seeds: a plan whose maximum
is beyond a fixed design's, at that design's effect). Each cell has its own generator, seeded
from its name.
"""

from __future__ import annotations

import hashlib
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workflow_scripts.stats import calibrated as cal  # noqa: E402
from workflow_scripts.stats import seed_planning  # noqa: E402

ALPHA, CI = 0.025, 0.95  # the claims' one-sided level at ci 0.95
QUERIES, START, MAXIMA = 300, 3, (4, 6, 10)
REGIMES = {  # per arm: (seed sd, example x arm interaction sd, noise sd)
    "seeds dominate": (0.02, 0.02, 0.05),
    "balanced": (0.005, 0.02, 0.05),
    "examples dominate": (0.002, 0.05, 0.02),
}
EFFECTS = (0.0, 2.5, 4.0)  # delta in true sds of the estimate at max_seeds; 0: hardest null
CHECKED = 20  # studies per cell checked against calibrated.compare and seed_planning


@dataclass(frozen=True)
class Cell:
    regime: str
    max_seeds: int
    effect: float
    scale: int = 0  # > 0: the effect in true sds at this many seeds, not at max_seeds

    def rng(self) -> np.random.Generator:
        name = (self.regime, self.max_seeds, self.effect) + ((self.scale,) if self.scale else ())
        digest = hashlib.sha256(repr(name).encode())
        return np.random.default_rng(int.from_bytes(digest.digest()[:8], "little"))

    def sd_at(self, n: int) -> float:
        """The estimate's true sd with n seeds."""
        seed, inter, noise = REGIMES[self.regime]
        return math.sqrt(2 * (seed**2 / n + inter**2 / QUERIES + noise**2 / (n * QUERIES)))

    def delta(self) -> float:
        return self.effect * self.sd_at(self.scale or self.max_seeds)


def draw(cell: Cell, rng, n: int) -> np.ndarray:
    """n studies' differences [n, max_seeds, QUERIES]."""
    seed, inter, noise = (math.sqrt(2) * x for x in REGIMES[cell.regime])
    s, q = cell.max_seeds, QUERIES
    return (cell.delta() + rng.normal(0, inter, (n, 1, q)) + rng.normal(0, seed, (n, s, 1))
            + rng.normal(0, noise, (n, s, q)))


# ---------------------------------------------------------------------------------------
# The calibrated paired statistic, vectorised over studies (calibrated.py, one [S, Q] array)
# ---------------------------------------------------------------------------------------
def paired_stats(d: np.ndarray) -> dict[str, np.ndarray]:
    """Per study of d [studies, S, Q] (S >= 3): estimate, V_hat and df as
    calibrated.compare(zeros, d, design="paired") computes them, and the residual and
    example terms the planner needs."""
    n, q = d.shape[1], d.shape[2]
    if n < 3:
        raise ValueError("the vectorised statistic covers >= 3 seeds (no 2-seed ramp)")
    rows, cols = d.mean(axis=2), d.mean(axis=1)
    grand = rows.mean(axis=1)
    m = rows.var(axis=1, ddof=1) / n  # seed term
    x = cols.var(axis=1, ddof=1) / q  # example term
    resid = d - rows[:, :, None] - cols[:, None, :] + grand[:, None, None]
    r = np.einsum("ijk,ijk->i", resid, resid) / ((n - 1) * (q - 1)) / (q * n)
    c, kappa = cal.SEED_FLOOR, cal.RESIDUAL_MARGIN
    v = np.maximum.reduce([x + np.maximum(m, c * r) - r, m, c * x, np.zeros_like(m)])
    charge = np.maximum(m - kappa * r, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(charge > 0, np.minimum(np.maximum((n - 1) * v / charge, n - 1), q - 1),
                      q - 1.0)
    return {"estimate": grand, "v": v, "df": df, "m": m, "x": x, "r": r, "seeds": n}


def p_support(s: dict) -> np.ndarray:
    """One-sided p of H0: delta <= 0 (calibrated.py's _p_value, "greater"); p_refute = 1 - it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tx = s["estimate"] / np.sqrt(s["v"])
    return np.where(s["v"] > 0, special.stdtr(s["df"], -tx), (s["estimate"] <= 0) * 1.0)


def p_seed_df(s: dict) -> np.ndarray:
    """p_support with the calibrated estimate and variance but the seed df (n - 1): the
    one-sample t test of the seeds where seeds carry the variance, conservative elsewhere."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tx = s["estimate"] / np.sqrt(s["v"])
    return np.where(s["v"] > 0, special.stdtr(s["seeds"] - 1, -tx),
                    (s["estimate"] <= 0) * 1.0)


def unreachable(s: dict) -> np.ndarray:
    """seed_planning.seeds_for_margin(terms, |estimate|) is None: even at its largest seed
    count the calibrated half-width exceeds the margin (the examples limit it). At n seeds
    (terms_at) the seed term is M S / n, the residual r S / n, the example term X - r (1 - S / n),
    the df Q - 1 (capped by the examples)."""
    n_max, seeds, q = seed_planning.MAX_SEEDS, s["seeds"], QUERIES
    m, r = s["m"] * seeds / n_max, s["r"] * seeds / n_max
    x = np.maximum(s["x"] - s["r"] * (1 - seeds / n_max), 0.0)
    c = cal.SEED_FLOOR
    v = np.maximum.reduce([x + np.maximum(m, c * r) - r, m, c * x, np.zeros_like(m)])
    half = float(special.stdtrit(q - 1, (1 + CI) / 2)) * np.sqrt(v)
    return half > np.abs(s["estimate"])


def check_against_core(d: np.ndarray, looks: list[int]) -> None:
    """The vectorised statistic is calibrated.compare's and the planner's, study by study."""
    for n in looks:
        s = paired_stats(d[:, :n])
        p, far = p_support(s), unreachable(s)
        for i in range(len(d)):
            res = cal.compare(np.zeros((n, QUERIES)), d[i, :n], design="paired")
            assert math.isclose(res.p_value, p[i], rel_tol=1e-9, abs_tol=1e-12), (n, i)
            assert math.isclose(res.df, s["df"][i], rel_tol=1e-9), (n, i)
            plan = seed_planning.seeds_for_margin(res.terms, abs(res.estimate), CI)
            assert (plan is None) == bool(far[i]), (n, i, plan)
