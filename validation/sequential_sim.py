"""The model and statistic of validation/sequential.py (seeds on demand, simulated end to end).

Per cell, studies of a paired difference are drawn with a known truth: per seed s and example
q, d[s, q] = delta + example[q] + seed[s] + noise[s, q] (each component the difference of two
arms' independent draws, as validation/coverage.py's paired cell: interaction sd, seed sd and noise
sd per arm, times sqrt(2)), 300 examples. The claim is "b - a > 0" (threshold 0). Every study
holds max_seeds seeds; look k sees its first n_k (seeds added, nothing redrawn). At every look
the calibrated one-sided p-values, tail calibrated as the claims' are (the library's
vectorised rule over studies, validation/statistic.py, then tail_calibration.calibrated_p
where it can decide; both sides checked against calibrated.compare itself on the first
studies of every cell to 1e-9) give the path; `unreachable` is
seed_planning.seeds_for_margin's "no seed count settles it" (the examples limit it),
vectorised and checked against seed_planning the same way.

Regimes: seeds dominate (seed sd 0.02, interaction 0.02, noise 0.05), balanced (seed sd
0.005), examples dominate (seed sd 0.002, interaction 0.05, noise 0.02: information grows
barely with seeds); binary outcomes, seeds dominate (each arm's per-example outcome
Bernoulli(expit(theta_q + u_s)), theta_q ~ N(0, 1.5) shared by the arms, u_s ~ N(0, 0.3) per
arm and seed, as validation/tail_levels.py's; an effect adds delta to the difference, which moves
the mean and leaves every variance term as it is). Truths: the hardest null (delta =
threshold), and delta = 2.5 and 4 true standard deviations of the estimate at max_seeds (or
at `scale` seeds: a plan whose maximum is beyond a fixed design's, at that design's effect).
Each cell has its own generator, seeded from its name.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from validation import model, statistic
from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import seed_planning
from workflow_scripts.stats import tail_calibration as tc

ALPHA, CI = 0.025, 0.95  # the claims' one-sided level at ci 0.95
QUERIES, START, MAXIMA = 300, 3, (4, 6, 10)
REGIMES = {  # per arm: (seed sd, example x arm interaction sd, noise sd)
    "seeds dominate": (0.02, 0.02, 0.05),
    "balanced": (0.005, 0.02, 0.05),
    "examples dominate": (0.002, 0.05, 0.02),
}
BINARY = "binary, seeds dominate"  # not in REGIMES: sequential.py --focus runs it
BINARY_TAU, BINARY_THETA = 0.3, 1.5  # logit sds of the seed effect and the examples
EFFECTS = (0.0, 2.5, 4.0)  # delta in true sds of the estimate at max_seeds; 0: hardest null
CHECKED = 20  # studies per cell checked against calibrated.compare and seed_planning


@dataclass(frozen=True)
class Cell:
    regime: str
    max_seeds: int
    effect: float
    scale: int = 0  # > 0: the effect in true sds at this many seeds, not at max_seeds

    def rng(self) -> np.random.Generator:
        return model.rng_for(self.regime, self.max_seeds, self.effect,
                             *((self.scale,) if self.scale else ()))

    def sd_at(self, n: int) -> float:
        """The estimate's true sd with n seeds."""
        if self.regime == BINARY:
            return _binary_sd(n)
        seed, inter, noise = REGIMES[self.regime]
        return math.sqrt(2 * (seed**2 / n + inter**2 / QUERIES + noise**2 / (n * QUERIES)))

    def delta(self) -> float:
        return self.effect * self.sd_at(self.scale or self.max_seeds)


def _binary_arms(rng, n: int, s: int) -> np.ndarray:
    """n studies' paired differences of two arms' binary outcomes [n, s, QUERIES], null."""
    theta = model.example_effects(rng, n, QUERIES, BINARY_THETA)
    a, b = (model.binary_scores(rng, theta, model.seed_effects(rng, n, s, BINARY_TAU))
            for _ in range(2))
    return b - a


@functools.lru_cache(maxsize=64)
def _binary_sd(n: int) -> float:
    """The binary estimate's true sd at n seeds: given theta the arms are alike, so Var =
    2 E_theta[Var_u(mean_q p) / n + mean_q E_u[p (1 - p)] / (n Q)], p = expit(theta + u),
    by Monte Carlo with a fixed generator (500 draws of theta x 64 of u: ~0.5% of the sd)."""
    rng = np.random.default_rng(7)
    p = special.expit(rng.normal(0, BINARY_THETA, (500, 1, QUERIES))
                      + rng.normal(0, BINARY_TAU, (500, 64, 1)))
    seed_var = float(np.mean(p.mean(axis=2).var(axis=1, ddof=1)))
    noise = float(np.mean(p * (1 - p)))
    return math.sqrt(2 * (seed_var / n + noise / (n * QUERIES)))


def draw(cell: Cell, rng, n: int) -> np.ndarray:
    """n studies' differences [n, max_seeds, QUERIES]."""
    if cell.regime == BINARY:
        return cell.delta() + _binary_arms(rng, n, cell.max_seeds)
    seed, inter, noise = (math.sqrt(2) * x for x in REGIMES[cell.regime])
    return model.difference(rng, n, cell.max_seeds, QUERIES, seed_sd=seed, interaction_sd=inter,
                            noise_sd=noise, delta=cell.delta())


def paired_stats(d: np.ndarray) -> dict[str, np.ndarray]:
    """Per study of d [studies, S, Q] (S >= 3): the statistic of calibrated.compare(zeros, d,
    design="paired"), by the library's vectorised rule (validation/statistic.py)."""
    return statistic.paired(d)


def p_sides(s: dict, below: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """(p_support, p_refute): the one-sided p of H0 delta <= 0 and of delta >= 0, as
    calibrated.compare reports them ("greater", "less"), tail calibrated where the t tail is
    below `below` (the largest level a rule decides at); above it the t tail stays."""
    sup, ref = statistic.t_sides(s)
    return statistic.reported(sup, s, below), statistic.reported(ref, s, below)


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
    v, _ = tc.plug_in(m, x, r, tc.Reduced(seeds - 1, q - 1, q - 1, 1.0, statistic.RULES))
    half = float(special.stdtrit(q - 1, (1 + CI) / 2)) * np.sqrt(v)
    return half > np.abs(s["estimate"])


def check_against_core(d: np.ndarray, looks: list[int]) -> None:
    """The vectorised statistic is calibrated.compare's and the planner's, study by study."""
    for n in looks:
        s = paired_stats(d[:, :n])
        statistic.check(d[:, :n], s, len(d))
        far = unreachable(s)
        for i in range(len(d)):
            res = cal.compare(np.zeros((n, QUERIES)), d[i, :n], design="paired")
            plan = seed_planning.seeds_for_margin(res.terms, abs(res.estimate), CI)
            assert (plan is None) == bool(far[i]), (n, i, plan)
