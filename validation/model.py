"""The generative model every validation study draws from: scores of studies x seeds x examples.

One arm's score of seed s on example q, in study i:

    score[i, s, q] = level + example[i, q] + interaction[i, q] + seed[i, s] + noise[i, s, q]

`example` is shared by the arms of a study (it cancels in a paired difference), `interaction`
is the arm's own example effect (arm x example), `seed` the seed effect (normal, or one of the
non-normal shapes of SEED_SHAPES, each scaled to the given sd) and `noise` the seed x example
noise. Binary outcomes put the same structure on the logit scale: an example's logit shared
by the arms, a seed effect per arm and seed, a 0/1 outcome per seed and example. A study
draws its designs from these: paired (two arms, seed s of each matched), unpaired (the same
arms, analysed as independent seeds), single-baseline (arm a one seed), stratified (several
benchmarks, the seed effects shared by them), or a paired difference drawn directly (each
component the difference of two arms' draws).

Arrays are [studies, seeds, examples]; a single study is studies = 1. Each cell of a study has
its own generator, seeded from its name (rng_for), so its numbers do not depend on which other
cells run.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
from scipy import special

# Non-normal seed effects, mean 0 and variance 1 before scaling to the sd.
SEED_SHAPES = ("normal", "t3", "gamma difference", "gamma", "chi2")


def rng_for(*name) -> np.random.Generator:
    """A cell's own generator, from its name only (not from its place in a run)."""
    digest = hashlib.sha256(repr(name).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def seed_effects(rng, studies: int, seeds: int, sd: float, shape: str = "normal") -> np.ndarray:
    """[studies, seeds, 1] seed effects of sd `sd`: normal; t3 (heavy tails); the difference
    of two gamma(4) (symmetric, heavier tails: a paired design's seed effects when both arms'
    are skewed); gamma(4) (skewness 1) or chi2_1 (skewness 2.8), one skewed arm's."""
    size = (studies, seeds, 1)
    if shape == "normal":
        unit = rng.normal(0.0, 1.0, size)
    elif shape == "t3":
        unit = rng.standard_t(3, size) / math.sqrt(3.0)
    elif shape == "gamma difference":
        g = rng.gamma(4.0, 1.0, (2, *size))
        unit = (g[0] - g[1]) / math.sqrt(8.0)
    elif shape == "gamma":
        unit = (rng.gamma(4.0, 1.0, size) - 4.0) / 2.0
    elif shape == "chi2":
        unit = (rng.chisquare(1, size) - 1.0) / math.sqrt(2.0)
    else:
        raise ValueError(f"seed shape {shape!r}: one of {SEED_SHAPES}")
    return sd * unit


def example_effects(rng, studies: int, examples: int, sd: float) -> np.ndarray:
    """[studies, 1, examples] example effects (shared by arms, or an arm's interaction)."""
    return rng.normal(0.0, sd, (studies, 1, examples))


def scores(rng, seed: np.ndarray, example: np.ndarray, *, level: float = 0.0,
           interaction_sd: float = 0.0, noise_sd: float = 0.0) -> np.ndarray:
    """One arm's scores [studies, seeds, examples]: level + example (shared, [studies, 1, Q])
    + the arm's own interaction + seed ([studies, S, 1]) + noise."""
    studies, seeds, examples = seed.shape[0], seed.shape[1], example.shape[2]
    own = example_effects(rng, studies, examples, interaction_sd) if interaction_sd else 0.0
    noise = rng.normal(0.0, noise_sd, (studies, seeds, examples)) if noise_sd else 0.0
    return level + example + own + seed + noise


def binary_scores(rng, logit: np.ndarray, seed: np.ndarray, shift: float = 0.0) -> np.ndarray:
    """0/1 outcomes [studies, seeds, examples]: Bernoulli(expit(logit + shift + seed)), logit
    [studies, 1, Q] the examples' (shared by the arms), seed [studies, S, 1] on the logit
    scale."""
    p = special.expit(logit + shift + seed)
    return (rng.random(p.shape) < p).astype(float)


def difference(rng, studies: int, seeds: int, examples: int, *, seed_sd: float,
               interaction_sd: float, noise_sd: float, delta: float = 0.0,
               seed_shape: str = "normal") -> np.ndarray:
    """A paired difference drawn directly [studies, seeds, examples]: delta + example +
    seed + noise, the sds the difference's (for per-arm sds, times sqrt 2)."""
    return scores(rng, seed_effects(rng, studies, seeds, seed_sd, seed_shape),
                  example_effects(rng, studies, examples, interaction_sd), level=delta,
                  noise_sd=noise_sd)


def share_sds(shares: tuple[float, float, float], seeds: int, examples: int
              ) -> tuple[float, float, float]:
    """(seed, example, noise) sds of a paired difference whose estimate's variance
    V = seed^2 / S + example^2 / Q + noise^2 / (S Q) is 1, split in these shares."""
    seed, example, noise = shares
    return (math.sqrt(seed * seeds), math.sqrt(example * examples),
            math.sqrt(noise * seeds * examples))
