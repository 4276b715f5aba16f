"""One-sided error of the claims' test with two seed terms, at the levels the claims spend:
unpaired arms (3v3, 4v4, 5v5, 10v10, 3v10, 3v20 seeds; 2v2 and 2v5, the 2-seed ramp, last)
and a one-seed arm whose seed variance is borrowed from the study's other multi-seed arms
(borrowed_seeds.py), against an arm of 3 or 5 seeds. P(p <= a) / a at a = alpha, alpha / 4,
alpha / 12 and look 1 of the 3/6/10 plan, for the plug-in p (calibrated.py's t before its
tail calibration) and the reported one (calibrated.reduced: the tail calibration with the
smallest seed df).

  exact      the Gaussian model by quadrature (tail_calibration.exact_rates_arms: r known,
             rho plugged in from the example term), equal residual variance in every arm;
             "equal": the worst over the seed nuisance with equal seed variances (the
             borrowed arm at the assumed sd, its seed sd the pool's), E[M]/r in 1..1e5;
             "any": the worst over both arms' seed variances apart (a 9 x 9 grid), the
             supremum the calibration must hold; and the two-sided 95% coverage over the
             equal-variance nuisance (1 - 2 P(p <= 2.5%): the statistic is symmetric),
             for a borrowed term also with the one-seed arm's seed sd twice the pool's
  simulated  whole studies, Gaussian (seeds dominate, balanced, examples dominate) and
             binary outcomes (seeds dominate), 200 examples, the worse one-sided test; the
             first CHECKED studies of every cell against calibrated.compare itself; the
             reported ratio with its Monte Carlo standard error; and the 95% interval's
             coverage and median width before (the merge and plain t of the commit before)
             and after

    .venv/bin/python -m validation.tail_levels_arms [--studies 100000] [--exact-only]
        [--simulated-only] [--regime 'binary, seeds dominate' ...] [--cells 2v2 2v5]
        [--supremum-2d]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import special

from validation import model
from validation import statistic as vectorised
from validation.tail_levels import ALPHA, CHECKED, CHUNK, LEVEL_NAMES, LEVELS, RULES, SHARES
from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import tail_calibration as tc
from workflow_scripts.stats.borrowed_seeds import borrowed_terms

# (label, seeds of the two seed terms, how many pool arms of how many seeds for a borrowed
# term; None: unpaired). A borrowed term is a one-seed arm (S = 1) with the pool's df.
CELLS = [("unpaired 3v3", (3, 3), None), ("unpaired 4v4", (4, 4), None),
         ("unpaired 5v5", (5, 5), None), ("unpaired 10v10", (10, 10), None),
         ("unpaired 3v10", (3, 10), None), ("unpaired 3v20", (3, 20), None),
         ("borrowed 1v3, pool 1x3", (1, 3), (1, 3)), ("borrowed 1v3, pool 3x3", (1, 3), (3, 3)),
         ("borrowed 1v5, pool 2x5", (1, 5), (2, 5)),
         # an arm of 2 seeds: the 2-seed ramp's table (last, so the cells above keep their draws)
         ("unpaired 2v2", (2, 2), None), ("unpaired 2v5", (2, 5), None)]
NUISANCE = np.logspace(0, 5, 11)
GRID = np.logspace(0, 5, 9)
NODES = (32, 8)


def cell_terms(seeds, pool):
    """(ks, rs) of the two seed terms in the model: df and the residual noise each holds,
    r_j proportional to 1 / S_j (equal residual variance), summing to 1."""
    ks = tuple(pool[0] * (pool[1] - 1) if s == 1 else s - 1 for s in seeds)
    inv = [1.0 / s for s in seeds]
    return ks, tuple(v / sum(inv) for v in inv)


def exact_cell(seeds, pool, q: int, rho: float, grid: bool) -> dict:
    ks, rs = cell_terms(seeds, pool)
    red = tc.Reduced(min(ks), q - 1, q - 1, rho, RULES)  # calibrated.reduced's
    before, plug, rep = (np.zeros(len(LEVELS)) for _ in range(3))
    cover = []
    for s in NUISANCE:  # E[M_j] / r_j alike: equal seed variances
        p0, _ = tc.exact_rates_arms(LEVELS, (s, s), rs, ks, red, NODES, welch_merge)
        p, r = tc.exact_rates_arms(LEVELS, (s, s), rs, ks, red, NODES)
        before = np.maximum(before, p0 / LEVELS)
        plug, rep = np.maximum(plug, p / LEVELS), np.maximum(rep, r / LEVELS)
        cover.append(100 * (1 - 2 * r[0]))
    out = {"before": before, "plug": plug, "rep": rep, "cover": (min(cover), max(cover))}
    if pool is not None:  # the one-seed arm's seed sd twice the pool's: 3 sigma2_seed more
        doubled = [tc.exact_rates_arms(ALPHA, (s, s), rs, ks, red, NODES,
                                       extra=3 * (s - 1) * rs[0])[1][0] for s in NUISANCE]
        out["doubled"] = (100 * (1 - 2 * max(doubled)), 100 * (1 - 2 * min(doubled)))
    if grid:  # the supremum over both seed variances, this rule and Welch's merge under it
        out["any"], out["welch"] = np.zeros(len(LEVELS)), np.zeros(len(LEVELS))
        same = ks[0] == ks[1] and rs[0] == rs[1]  # symmetric: half the grid
        for i, s1 in enumerate(GRID):
            for s2 in GRID[: i + 1] if same else GRID:
                for key, stat in (("any", None), ("welch", welch_merge)):
                    _, r = tc.exact_rates_arms(LEVELS, (s1, s2), rs, ks, red, NODES, stat)
                    out[key] = np.maximum(out[key], r / LEVELS)
    return out


def exact_table(only=()) -> None:
    print("exact (Gaussian): P(p <= a) / a, the worst over equal seed variances: before "
          "(the commit before: Welch's merge at equal seed counts, no tail calibration) / "
          "plug-in (the share merge) -> reported; 95% coverage range over equal seed "
          "variances; [any]: the reported worst over both seed variances apart, and "
          "[welch]: the same with Welch's merge under the tail calibration (200 examples, "
          "rho 1); [2x sd]: a borrowed arm's coverage with its seed sd twice the pool's")
    print(f"{'cell':<24} {'ex.':>4} {'rho':>5}  " + "  ".join(f"{n:>22}" for n in LEVEL_NAMES)
          + "  coverage %")
    for label, seeds, pool in CELLS:
        if only and not any(c in label for c in only):
            continue
        for q in (30, 200):
            for rho in (0.1, 1.0, 10.0):
                t0 = time.perf_counter()
                grid = q == 200 and rho == 1.0
                res = exact_cell(seeds, pool, q, rho, grid)
                cells = [f"{b:6.2f} /{p:6.2f} -> {r:5.2f}"
                         for b, p, r in zip(res["before"], res["plug"], res["rep"], strict=True)]
                extra = ("  [any: " + " ".join(f"{v:.2f}" for v in res["any"]) + "; welch: "
                         + " ".join(f"{v:.2f}" for v in res["welch"]) + "]" if grid else "")
                if "doubled" in res:
                    extra += " [2x sd: {:.1f}-{:.1f}]".format(*res["doubled"])
                print(f"{label:<24} {q:>4} {rho:>5}  " + "  ".join(f"{c:>22}" for c in cells)
                      + f"  {res['cover'][0]:.1f}-{res['cover'][1]:.1f}{extra}"
                      + f"  {time.perf_counter() - t0:4.1f}s", flush=True)


def supremum_2d() -> None:
    """Would a supremum over both seed variances (a 2-D table per pair of df, rho and split
    of r) narrow the 95% interval where the terms' seed variances are equal? The plug-in
    level whose worst rejection rate over both variances (a 12 x 12 grid, E[M_j]/r_j in
    0.5..1e5) is 2.5%, for this merge and Welch's, and the coverage at equal seed variances
    with the interval taken there (200 examples, rho 1, r and rho known)."""
    print("2-D supremum (200 examples, rho 1): the plug-in level a* whose worst P(p <= a*) "
          "over both seed variances is 2.5%, and the 95% coverage at equal seed variances "
          "with it; beside it the one-term calibration's (calibrated.reduced)")
    grid, levels = np.logspace(-0.3, 5, 12), np.logspace(-3, math.log10(0.05), 40)
    for label, seeds, pool in CELLS[:9]:
        if label in ("unpaired 4v4", "unpaired 5v5", "unpaired 10v10"):
            continue
        ks, rs = cell_terms(seeds, pool)
        red = tc.Reduced(min(ks), 199, 199, 1.0, RULES)
        now = [100 * (1 - 2 * tc.exact_rates_arms(ALPHA, (s, s), rs, ks, red, NODES)[1][0])
               for s in NUISANCE]
        row = [f"{label:<24} one-term table {min(now):.1f}-{max(now):.1f}%"]
        for name, stat in (("share merge", None), ("Welch", welch_merge)):
            sup = np.zeros(len(levels))
            for s1 in grid:
                for s2 in grid:
                    sup = np.maximum(sup, tc.exact_rates_arms(levels, (s1, s2), rs, ks, red,
                                                              (24, 8), stat)[0])
            at = float(np.interp(ALPHA, sup, levels))
            cover = [100 * (1 - 2 * tc.exact_rates_arms(at, (s, s), rs, ks, red, NODES,
                                                        stat)[0][0]) for s in NUISANCE]
            row.append(f"{name}: a* {at:.4f}, {min(cover):.1f}-{max(cover):.1f}%")
        print("  ".join(row), flush=True)


# ---------------------------------------------------------------------------------------
# Whole studies
# ---------------------------------------------------------------------------------------
def arm_scores(rng, regime: str, n: int, s: int, q: int, sd, theta=None) -> np.ndarray:
    """n studies' scores of one arm [n, s, q] under the null; sd = (seed, example,
    residual) sds of the Gaussian regimes; binary: theta the examples' shared logits."""
    if regime.startswith("binary"):
        return model.binary_scores(rng, theta, model.seed_effects(rng, n, s, 0.3))
    return model.scores(rng, model.seed_effects(rng, n, s, sd[0]),
                        model.example_effects(rng, n, q, sd[1]), noise_sd=sd[2])


def draw_study(rng, regime: str, n: int, seeds, pool, q: int):
    """(a, b, pool arms): a has seeds[0] seeds (1: the one-seed arm), b seeds[1]; the
    Gaussian sds make the regime's shares of V (seed, example, residual)."""
    inv = sum(1.0 / s for s in seeds)
    sd = None
    if not regime.startswith("binary"):
        share_s, share_e, share_r = SHARES[regime.split(", ")[1]]
        # each arm's example effect independent, the difference's variance share_e q
        sd = (math.sqrt(share_s / inv), math.sqrt(share_e * q / 2), math.sqrt(share_r * q / inv))
    theta = model.example_effects(rng, n, q, 1.5) if sd is None else None
    a, b = (arm_scores(rng, regime, n, s, q, sd, theta) for s in seeds)
    arms = [] if pool is None else [arm_scores(rng, regime, n, pool[1], q, sd, theta)
                                    for _ in range(pool[0])]
    return a, b, arms


def _seed_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per study: the variance over seeds of the seed's metric and the residual mean square."""
    _, s, q = x.shape
    m, _, r = vectorised.mean_squares(x)
    return m * s, r * q * s


def statistic(a, b, arms, merge=tc.plug_in_arms):
    """Vectorised calibrated.compare(a, b) (unpaired; with pool arms single-baseline, a
    fixed, its seed terms borrowed): (estimate, V_hat, df, ks, X, r)."""
    n, _, q = b.shape
    ms, rs, ks = [], [], []
    if arms:  # borrowed_seeds.borrowed_terms: pooled over the arms, weighted by S_j - 1
        stats_ = [_seed_stats(x) for x in arms]
        dfs = [x.shape[1] - 1 for x in arms]
        ms.append(sum(d * v for d, (v, _) in zip(dfs, stats_, strict=True)) / sum(dfs))
        rs.append(sum(d * w for d, (_, w) in zip(dfs, stats_, strict=True)) / sum(dfs) / q)
        ks.append(sum(dfs))
    else:
        v, w = _seed_stats(a)
        ms.append(v / a.shape[1])
        rs.append(w / (q * a.shape[1]))
        ks.append(a.shape[1] - 1)
    v, w = _seed_stats(b)
    ms.append(v / b.shape[1])
    rs.append(w / (q * b.shape[1]))
    ks.append(b.shape[1] - 1)
    x = (b.mean(axis=1) - a.mean(axis=1)).var(axis=1, ddof=1) / q
    var, df = merge(ms, rs, ks, x, tc.Reduced(0, q - 1, q - 1, 0.0, RULES))
    return b.mean(axis=(1, 2)) - a.mean(axis=(1, 2)), var, df, ks, x, sum(rs)


def welch_merge(ms, rs, ks, x, red):
    """The rule before the tail calibration: Welch (1947) on the charges at equal seed df
    (calibrated._welch_df), else the share rule, also beside an arm of 2 seeds (whose 1 df
    calibrated_df now keeps); for the 'before' columns."""
    var, _ = tc.plug_in_arms(ms, rs, ks, x, red)
    kappa, two_kappa, w0, w1 = RULES.kappa, RULES.two_kappa, RULES.w0, RULES.w1
    two = min(ks) < 2
    charges = [np.maximum(m - (two_kappa if two else kappa) * r, 0.0) for m, r in zip(ms, rs,
                                                                                   strict=True)]
    total = sum(charges)
    with np.errstate(divide="ignore", invalid="ignore"):
        if len(set(ks)) == 1:
            denom = sum(c**2 / (k + 2) for c, k in zip(charges, ks, strict=True))
            seed_df = np.maximum(total**2 / denom - 2, min(ks))
        else:
            seed_df = np.maximum(np.min([np.where(c > 0, k * total / c, np.inf)
                                         for c, k in zip(charges, ks, strict=True)], axis=0),
                                 min(ks))
        df = (np.where(total / var - w0 > 0, seed_df * (w1 - w0) / (total / var - w0), np.inf)
              if two else seed_df * var / total)
    return var, np.where(total > 0, np.minimum(np.maximum(df, seed_df), red.cap), red.f)


def reported_p(p, x, r, k: float, q: int, below: float) -> np.ndarray:
    out = np.array(p, dtype=float)
    for i in np.flatnonzero(p < below):  # max(p, G(p)) >= p: the rest cannot count
        out[i] = tc.calibrated_p(float(p[i]), tc.Reduced(k, q - 1, q - 1,
                                                         (x[i] - r[i]) / r[i], RULES))
    return out


def check(a, b, arms, est, var, df, x, r, k, q) -> None:
    """The vectorised statistic is calibrated.compare's, reported p and interval."""
    for i in range(CHECKED):
        if arms:
            ref = cal.compare(a[i], b[i], design="single-baseline",
                              borrowed=borrowed_terms([arm[i] for arm in arms]))
        else:
            ref = cal.compare(a[i], b[i], design="unpaired")
        p = float(special.stdtr(df[i], -est[i] / math.sqrt(var[i])))
        mine = tc.calibrated_p(p, tc.Reduced(k, q - 1, q - 1, (x[i] - r[i]) / r[i], RULES))
        assert math.isclose(ref.se**2, var[i], rel_tol=1e-9), (ref.se**2, var[i])
        assert math.isclose(ref.df, df[i], rel_tol=1e-9), (ref.df, df[i])
        assert math.isclose(ref.p_value, mine, rel_tol=1e-9, abs_tol=1e-15), (ref.p_value, mine)


def simulate_cell(rng, regime: str, seeds, pool, q: int, studies: int) -> dict:
    hits = {side: [np.zeros(len(LEVELS)), np.zeros(len(LEVELS))] for side in ("gt", "lt")}
    cover, width = np.zeros(2), []
    done = 0
    while done < studies:
        n = min(CHUNK, studies - done)
        a, b, arms = draw_study(rng, regime, n, seeds, pool, q)
        est, var, df, ks, x, r = statistic(a, b, arms)
        k = min(ks)
        if done == 0:
            check(a, b, arms, est, var, df, x, r, k, q)
        p = special.stdtr(df, -est / np.sqrt(var))
        for side, ps in (("gt", p), ("lt", 1.0 - p)):
            rep = reported_p(ps, x, r, k, q, max(LEVELS))
            hits[side][0] += [np.sum(ps <= lv) for lv in LEVELS]
            hits[side][1] += [np.sum(rep <= lv) for lv in LEVELS]
        if done == 0:  # the 95% interval before and after, on the first chunk
            _, v0, df0, *_ = statistic(a, b, arms, welch_merge)
            before = special.stdtrit(df0, 1 - ALPHA) * np.sqrt(v0)
            level = np.array([tc.calibrated_level(ALPHA, tc.Reduced(
                k, q - 1, q - 1, (x[i] - r[i]) / r[i], RULES)) for i in range(n)])
            after = special.stdtrit(df, 1 - level) * np.sqrt(var)
            cover = np.array([100 * np.mean(np.abs(est) <= h) for h in (before, after)])
            width = [float(np.median(after / before)), n]
        done += n
    worse = max(hits, key=lambda side: float(np.max(hits[side][1] / np.array(LEVELS))))
    return {"plug": hits[worse][0] / studies, "rep": hits[worse][1] / studies, "side": worse,
            "cover": cover, "width": width}


REGIMES = [f"gaussian, {k}" for k in SHARES] + ["binary, seeds dominate"]


def simulated_table(studies: int, regimes) -> None:
    q = 200
    print(f"\nsimulated ({studies} studies per cell, {q} examples): P(p <= a) / a, plug-in -> "
          "reported (its Monte Carlo standard error), the worse side; 95% coverage before "
          "-> after and median width after / before (first 10,000 studies)")
    print(f"{'regime':<24} {'cell':<24} {'side':>3}  " + "  ".join(f"{n:>24}"
                                                                  for n in LEVEL_NAMES))
    rng = np.random.default_rng(20261207)
    for regime in regimes:
        for label, seeds, pool in CELLS:
            t0 = time.perf_counter()
            res = simulate_cell(rng, regime, seeds, pool, q, studies)
            cells = []
            for j, level in enumerate(LEVELS):
                se = math.sqrt(max(res["rep"][j], level) / studies) / level
                cells.append(f"{res['plug'][j] / level:6.2f} -> {res['rep'][j] / level:5.2f} "
                             f"({se:5.2f})")
            print(f"{regime:<24} {label:<24} {res['side']:>3}  "
                  + "  ".join(f"{c:>24}" for c in cells)
                  + f"  {res['cover'][0]:.1f} -> {res['cover'][1]:.1f}% "
                  f"x{res['width'][0]:.3f}  {time.perf_counter() - t0:4.1f}s", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=100_000)
    ap.add_argument("--exact-only", action="store_true")
    ap.add_argument("--simulated-only", action="store_true")
    ap.add_argument("--regime", action="append", choices=REGIMES,
                    help="simulate only these (repeatable; default all)")
    ap.add_argument("--supremum-2d", action="store_true",
                    help="only the 2-D supremum's coverage at equal seed variances")
    ap.add_argument("--cells", nargs="*", default=[],
                    help="exact part: only the cells whose label holds one of these")
    args = ap.parse_args(argv)
    print("levels: " + ", ".join(f"{n} {v:.3g}" for n, v in zip(LEVEL_NAMES, LEVELS,
                                                                 strict=True)))
    if args.supremum_2d:
        return supremum_2d()
    if not args.simulated_only:
        exact_table(args.cells)
    if not args.exact_only:
        simulated_table(args.studies, args.regime or REGIMES)


if __name__ == "__main__":
    main()
