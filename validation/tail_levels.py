"""One-sided error of the claims' test at the levels the claims spend: P(p <= a) / a at
a = alpha, alpha / 4, alpha / 12 and look 1 of the 3/6/10 plan (sequential.look_alphas),
for the plug-in p (calibrated.py's t, before its tail calibration) and the reported p
(tail_calibration.py), side by side.

  exact      the Gaussian model by quadrature: tail_calibration's reduction (r known, rho
             plugged in from the example term), the worst over the seed nuisance E[M] / r in
             1..1e5; no Monte Carlo error, so the smallest level is checked directly
  simulated  whole studies (seeds x examples of paired differences): Gaussian seed effects
             where seeds dominate, balanced and examples dominate; where seeds dominate,
             heavy-tailed (t_3) seed effects, skewed ones (gamma(4), skewness 1) in both
             arms of a paired design (their difference is symmetric), and skewed (gamma(4))
             or very skewed (chi2_1, skewness 2.8) seed effects of the one random arm of a
             single-baseline design; binary outcomes (seeds dominate, balanced); 3, 4, 5,
             10 seeds; 30 and 200 examples; both one-sided tests, the worse shown; the
             ratio with its Monte Carlo standard error. The first CHECKED studies of every
             cell are checked against calibrated.compare. No test on a few seed values can
             hold whatever their distribution (3 seeds cannot reveal a skew); the
             single-baseline rows show what a normal-theory test does beyond its
             assumption.

    .venv/bin/python -m validation.tail_levels [--studies 100000] [--exact-only] [--quick]

A ratio above 1.1 beyond its Monte Carlo error is an excess; single-baseline arms reduce to
the paired statistic of the differences (tests/unit/stats/test_tail_calibration.py); unpaired arms
and borrowed seeds (two seed terms) are measured by validation/tail_levels_arms.py.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import special

from validation import model
from validation import statistic as vectorised
from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import tail_calibration as tc
from workflow_scripts.stats.sequential import look_alphas

ALPHA = 0.025
LEVELS = (ALPHA, ALPHA / 4, ALPHA / 12, look_alphas([3, 6, 10], ALPHA)[0])
LEVEL_NAMES = ("alpha", "alpha/4", "alpha/12", "look 1")
CHECKED = 20
CHUNK = 10_000
RULES = vectorised.RULES

# variance shares of the estimate (seed, example, residual) per Gaussian regime
SHARES = {"seeds dominate": (0.8, 0.15, 0.05), "balanced": (0.4, 0.4, 0.2),
          "examples dominate": (0.02, 0.9, 0.08)}


def exact_table() -> None:
    print("exact (Gaussian, worst over E[M]/r in 1..1e5): P(p <= a) / a, plug-in -> reported")
    print(f"{'seeds':>5} {'examples':>8} {'rho':>5}  " + "  ".join(f"{n:>15}"
                                                           for n in LEVEL_NAMES))
    for seeds in (3, 4, 5, 10):
        for q in (30, 200):
            for rho in (0.1, 1.0, 10.0):
                cells = []
                for level in LEVELS:
                    worst = [0.0, 0.0]
                    for s in np.logspace(0, 5, 16):
                        red = tc.Reduced(seeds - 1, q - 1, q - 1, rho, RULES)
                        plug, rep = tc.exact_rates(level, s, red)
                        worst = [max(worst[0], plug), max(worst[1], rep)]
                    cells.append(f"{worst[0] / level:6.2f} -> {worst[1] / level:5.2f}")
                print(f"{seeds:>5} {q:>8} {rho:>5}  " + "  ".join(f"{c:>15}" for c in cells),
                      flush=True)


SEED_SHAPE = {"heavy-tailed": "t3", "skewed paired": "gamma difference",
              "skewed single-baseline": "gamma", "very skewed single-baseline": "chi2"}


def draw(rng, regime: str, n: int, seeds: int, q: int) -> np.ndarray:
    """n studies' paired differences [n, seeds, q] under the null (mean 0)."""
    if regime.startswith("binary"):
        tau = 0.3 if "seeds" in regime else 0.1
        theta = model.example_effects(rng, n, q, 1.5)
        a, b = (model.binary_scores(rng, theta, model.seed_effects(rng, n, seeds, tau))
                for _ in range(2))
        return b - a
    shape = regime.split(", ")[0]
    shares = SHARES["seeds dominate" if shape != "gaussian" else regime.split(", ")[1]]
    seed_sd, example_sd, noise_sd = model.share_sds(shares, seeds, q)
    return model.difference(rng, n, seeds, q, seed_sd=seed_sd, interaction_sd=example_sd,
                            noise_sd=noise_sd, seed_shape=SEED_SHAPE.get(shape, "normal"))


def statistic(d: np.ndarray) -> tuple[np.ndarray, ...]:
    """Vectorised calibrated.compare(zeros, d) (paired, greater, threshold 0): (plug-in p,
    M, X, r) per study."""
    st = vectorised.paired(d)
    return vectorised.t_sides(st)[0], st["m"], st["x"], st["r"]


def one_side(p, m, x, r, seeds: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Hits of the plug-in and the reported p at each level, for one side's plug-in p."""
    reported = np.array(p, dtype=float)
    for i in np.flatnonzero(p < max(LEVELS)):  # max(p, G(p)) >= p: the rest cannot count
        red = tc.Reduced(seeds - 1, q - 1, q - 1, (x[i] - r[i]) / r[i], RULES)
        reported[i] = tc.calibrated_p(float(p[i]), red)
    return (np.array([np.sum(p <= a) for a in LEVELS]),
            np.array([np.sum(reported <= a) for a in LEVELS]))


def simulate_cell(rng, regime: str, seeds: int, q: int, studies: int) -> dict:
    """Rates of both one-sided tests (greater: p; less: 1 - p of the t, as compare's
    alternative="less"); the worse side is reported."""
    hits = {side: [np.zeros(len(LEVELS)), np.zeros(len(LEVELS))] for side in ("gt", "lt")}
    done = 0
    while done < studies:
        n = min(CHUNK, studies - done)
        d = draw(rng, regime, n, seeds, q)
        p, m, x, r = statistic(d)
        if done == 0:  # the vectorised statistic is calibrated.compare's
            for i in range(CHECKED):
                ref = cal.compare(np.zeros_like(d[i]), d[i]).p_value
                red = tc.Reduced(seeds - 1, q - 1, q - 1, (x[i] - r[i]) / r[i], RULES)
                mine = tc.calibrated_p(float(p[i]), red)
                assert math.isclose(ref, mine, rel_tol=1e-9, abs_tol=1e-15), (ref, mine)
        for side, ps in (("gt", p), ("lt", 1.0 - p)):
            plug, rep = one_side(ps, m, x, r, seeds, q)
            hits[side][0] += plug
            hits[side][1] += rep
        done += n
    worse = max(hits, key=lambda side: float(np.max(hits[side][1] / np.array(LEVELS))))
    return {"plug": hits[worse][0] / studies, "rep": hits[worse][1] / studies,
            "side": worse}


def simulated_table(studies: int, quick: bool) -> None:
    regimes = [f"gaussian, {k}" for k in SHARES] + [
        "heavy-tailed", "skewed paired", "skewed single-baseline",
        "very skewed single-baseline", "binary, seeds dominate", "binary, balanced"]
    seed_counts, examples = ((3, 5), (30,)) if quick else ((3, 4, 5, 10), (30, 200))
    print(f"\nsimulated ({studies} studies per cell): P(p <= a) / a, plug-in -> reported "
          "(Monte Carlo standard error of the reported ratio); the worse side of the "
          "test, gt (greater) or lt (less)")
    print(f"{'regime':<24} {'side':>3} {'seeds':>5} {'ex.':>4}  " + "  ".join(f"{n:>24}"
                                                               for n in LEVEL_NAMES))
    rng = np.random.default_rng(20261204)
    for regime in regimes:
        for seeds in seed_counts:
            for q in examples:
                t0 = time.perf_counter()
                res = simulate_cell(rng, regime, seeds, q, studies)
                cells = []
                for j, level in enumerate(LEVELS):
                    se = math.sqrt(max(res["rep"][j], level) / studies) / level
                    cells.append(f"{res['plug'][j] / level:6.2f} -> "
                                 f"{res['rep'][j] / level:5.2f} ({se:5.2f})")
                print(f"{regime:<24} {res['side']:>3} {seeds:>5} {q:>4}  "
                      + "  ".join(f"{c:>24}" for c in cells)
                      + f"  {time.perf_counter() - t0:4.1f}s", flush=True)


def price_table(studies: int) -> None:
    """The 95% interval before (the calibrated t) and after (the calibrated test inverted):
    coverage and the median width ratio, Gaussian regimes, 200 examples."""
    print(f"\nthe price ({studies} studies per cell): two-sided 95% coverage before -> after, "
          "median width after / before")
    rng = np.random.default_rng(7)
    q = 200
    for regime in SHARES:
        cells = []
        for seeds in (3, 4, 5, 10):
            d = draw(rng, f"gaussian, {regime}", studies, seeds, q)
            n, s, _ = d.shape
            st = vectorised.paired(d)
            grand, var, df, x, r = (st[k] for k in ("estimate", "v", "df", "x", "r"))
            before = special.stdtrit(df, 0.975) * np.sqrt(var)
            level = np.array([tc.calibrated_level(0.025, tc.Reduced(
                s - 1, q - 1, q - 1, (x[i] - r[i]) / r[i], RULES)) for i in range(n)])
            after = special.stdtrit(df, 1 - level) * np.sqrt(var)
            cov = [100 * np.mean(np.abs(grand) <= h) for h in (before, after)]
            cells.append(f"{seeds} seeds {cov[0]:.1f} -> {cov[1]:.1f}% "
                         f"x{np.median(after / before):.3f}")
        print(f"  {regime:<18} " + "; ".join(cells), flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=100_000)
    ap.add_argument("--exact-only", action="store_true")
    ap.add_argument("--quick", action="store_true", help="3 and 5 seeds, 30 examples")
    args = ap.parse_args(argv)
    print("levels: " + ", ".join(f"{n} {v:.3g}" for n, v in zip(LEVEL_NAMES, LEVELS,
                                                                 strict=True)))
    exact_table()
    if not args.exact_only:
        price_table(min(args.studies, 20_000))
        simulated_table(args.studies, args.quick)


if __name__ == "__main__":
    main()
