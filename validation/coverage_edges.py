"""Coverage and width of the calibrated interval at the edges (validation/coverage.py: the main
grid).

Regimes the main grid lacks: binary per-example outcomes (a 0/1 score per example, example
difficulty p ~ Beta(0.6, 1.4), arm b shifted by +0.15 on the logit scale, seed effects on the
logit scale of sd 0 / 0.1 / 0.3), heavy-tailed seed effects (Student t3 scaled to the given
sd), unpaired arms whose seed sds differ 10x, stratified benchmarks of very different sizes
(30, 300 and 3,000 queries), and 2 seeds. Continuous cells draw as validation/coverage.py does:
score = 0.5 + query (sd 0.2) + arm x query (sd 0.02) + seed + noise (sd 0.05), true delta 0.01.

Per cell and df rule: coverage of the nominal 95% interval, median width, 99.9th percentile
width, the largest width over the median, the smallest df, and the median width over the
known-variance interval's (the same estimate +- 1.96 x the estimate's true standard deviation,
here its sd over the cell's trials). `reported (tail calibrated)`: the interval compare
reports (the df rule's t, tail calibrated below 20 seeds: stats/tail_calibration.py). The df
rules (`RULES`), each as a plain t: `calibrated` (stats/calibrated.py's variance and df),
`kappa=.. floor=..` (the same rule with other constants, `CANDIDATES`; 2 seeds keep the ramp),
`previous` (at 2 seeds the 3-seed rule the 2-seed df ramp replaced), `before` (the rule these
replaced: V = M + X - r with the example part clipped at 0, df = df_seed V / M).
Each cell has its own generator seeded from its name.

    nice -n 19 .venv/bin/python -m validation.coverage_edges [--trials 2000] [--cells binary]
    .venv/bin/python -m validation.coverage_edges --theory    # the frontiers, exact integration
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import special, stats

from validation import model
from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import variance_terms as vt
from workflow_scripts.stats.df_rule import DEFAULT_RULE, DfRule

Z = float(special.ndtri(0.975))
LOGIT_SHIFT, BETA = 0.15, (0.6, 1.4)


# ---------------------------------------------------------------------------------------
# Cells: name -> (trial(rng) -> (a, b, design), truth)
# ---------------------------------------------------------------------------------------
def _binary_truth(seed_sd: float, n: int = 2_000_000) -> float:
    """E[expit(l + shift + u) - expit(l + v)], l = logit p, u, v ~ N(0, seed_sd): Monte
    Carlo with a fixed generator (its error ~1e-4, a 200th of the estimate's sd)."""
    rng = np.random.default_rng(0)
    lg = special.logit(rng.beta(*BETA, n))
    u, v = rng.normal(0, seed_sd, (2, n))
    return float(np.mean(special.expit(lg + LOGIT_SHIFT + u) - special.expit(lg + v)))


def binary(seeds: int, seed_sd: float, design: str = "paired", queries: int = 300):
    def trial(rng):
        p = np.clip(rng.beta(*BETA, (1, 1, queries)), 1e-12, 1 - 1e-12)
        logit = special.logit(p)
        a, b = (model.binary_scores(rng, logit, model.seed_effects(rng, 1, seeds, seed_sd),
                                    shift)[0] for shift in (0.0, LOGIT_SHIFT))
        return a, b, design
    return trial, _binary_truth(seed_sd)


def continuous(seeds: int, seed_sd: float, design: str = "paired", queries=300,
               heavy: bool = False, seed_sd_b: float | None = None):
    """queries: an int, or a tuple of per-benchmark sizes (stratified)."""
    sd_b = seed_sd if seed_sd_b is None else seed_sd_b
    shape = "t3" if heavy else "normal"

    def trial(rng):
        sa, sb = (model.seed_effects(rng, 1, seeds, sd, shape) for sd in (seed_sd, sd_b))
        sizes = queries if isinstance(queries, tuple) else (queries,)
        a, b = {}, {}
        for k, q in enumerate(sizes):
            query = model.example_effects(rng, 1, q, 0.2)
            a[k], b[k] = (model.scores(rng, seed, query, level=level, interaction_sd=0.02,
                                       noise_sd=0.05)[0]
                          for level, seed in ((0.5, sa), (0.51, sb)))
        if len(sizes) == 1:
            a, b = a[0], b[0]
        return a, b, design
    return trial, 0.01


def cells() -> dict[str, tuple]:
    out = {}
    for s in (2, 3, 5):
        for sd, label in ((0.0, "none"), (0.1, "small"), (0.3, "large")):
            out[f"binary paired, {s} seeds, logit seed sd {sd:g} ({label})"] = binary(s, sd)
    out["binary unpaired, 3 seeds, logit seed sd 0"] = binary(3, 0.0, "unpaired")
    for s in (2, 3):
        for sd in (0.0, 0.005, 0.01, 0.02):
            out[f"continuous paired, {s} seeds, seed sd {sd:g}"] = continuous(s, sd)
    for sd in (0.005, 0.02):
        out[f"heavy-tailed (t3) seeds, paired, 3 seeds, sd {sd:g}"] = continuous(
            3, sd, heavy=True)
    for s in (3, 5):
        out[f"unpaired, {s} seeds, seed sd 0.003 vs 0.03"] = continuous(
            s, 0.003, "unpaired", seed_sd_b=0.03)
    for sd in (0.0, 0.01):
        out[f"stratified 30/300/3000 queries, 3 seeds, seed sd {sd:g}"] = continuous(
            3, sd, queries=(30, 300, 3000))
    return out


# ---------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------
def _before(terms) -> tuple[float, float]:
    """The rule before this one: V = seed terms + max(example - residual terms, 0),
    df = df_seed (Welch 1947 over arms) * V / seed part, capped by the example df; no seed
    part: Satterthwaite over the example and residual terms (which could collapse)."""
    merged = vt.welch(terms)
    seed = sum(t.coef * t.ms for t in merged if t.part == "seeds")
    ex = [t for t in merged if t.part == "examples"]
    var = seed + max(sum(t.coef * t.ms for t in ex), 0.0)
    if not seed > 0:
        return var, vt.sum_terms(ex)[1]
    df_seed = next(t.df for t in merged if t.part == "seeds")
    return var, min([df_seed * var / seed, *(t.df for t in ex)])


def _with(kappa: float, floor: float, two: tuple | None = None):
    """The calibrated rule with other constants (a DfRule passed to calibrated.py); two:
    (kappa, floor, w0, w1) at 2 seeds (default: the default rule's)."""
    d = DEFAULT_RULE
    rule = DfRule(kappa, floor, *(two or (d.two_kappa, d.two_floor, d.w0, d.w1)))
    return lambda terms: (cal.total_variance(terms, rule=rule),
                          cal.calibrated_df(terms, rule=rule))


# (kappa, floor): the calibrated rule's neighbours on the coverage-width frontier
CANDIDATES = [(0.0, 1.0), (0.25, 0.75), (0.15, 0.5), (1.0, 0.0)]
RULES = {"calibrated": lambda t: (cal.total_variance(t), cal.calibrated_df(t)),
         **{f"kappa={k:g} floor={c:g}": _with(k, c) for k, c in CANDIDATES},
         "previous (2 seeds: kappa=0.1 df_seed / share)": _with(0.1, 0.5, (0.1, 0.5, 0.0, 1.0)),
         "before": _before}


REPORTED = "reported (tail calibrated)"


def run(name: str, trial, truth: float, trials: int) -> list[dict]:
    rng = model.rng_for(name)
    names = [REPORTED, *RULES]
    est, half, dfs = np.empty(trials), {r: np.empty(trials) for r in names}, {
        r: np.empty(trials) for r in names}
    for i in range(trials):
        a, b, design = trial(rng)
        res = cal.compare(a, b, design=design, alternative="two-sided")
        est[i] = res.estimate
        half[REPORTED][i], dfs[REPORTED][i] = (res.ci_high - res.ci_low) / 2, res.df
        for r, rule in RULES.items():
            var, df = rule(res.terms)
            dfs[r][i] = df
            half[r][i] = cal.t_half_width(var, df, 0.95)
    known = 2 * Z * float(np.std(est))
    rows = []
    for r in names:
        w = 2 * half[r]
        med = float(np.median(w))
        rows.append({"cell": name, "rule": r, "trials": trials,
                     "coverage": 100 * float(np.mean(np.abs(est - truth) <= half[r])),
                     "median": med, "p999": float(np.quantile(w, 0.999)),
                     "max_over_median": float(w.max() / med) if med > 0 else math.inf,
                     "min_df": float(dfs[r].min()), "vs_known": med / known})
    return rows


# ---------------------------------------------------------------------------------------
# Theory: one [S, Q] array, Q large: M = (a + r) chi2_{S-1}/(S-1), X = e + r known
# ---------------------------------------------------------------------------------------
def theory_cell(seeds: int, a: float, r: float, rule, n: int = 4000):
    """(coverage %, median width / known) for variance shares a (seed), r (residual),
    e = 1 - a - r (example) of the true V = 1; rule (kappa, floor[, w0, w1]): df = (S - 1)
    (w1 - w0) / (share - w0), share = (M - kappa r) / V (w0, w1 = 0, 1: (S - 1) / share), at
    least S - 1; or None: the rule before (V = M + e, df = (S - 1) V / M)."""
    e = 1 - a - r
    m = (a + r) * stats.chi2.ppf((np.arange(n) + 0.5) / n, seeds - 1) / (seeds - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if rule is None:
            v = m + e
            df = (seeds - 1) * v / m
        else:
            kappa, floor, w0, w1 = (*rule, 0.0, 1.0)[:4]
            v = e + np.maximum(m, floor * r)
            excess = np.maximum(m - kappa * r, 0) / v - w0
            df = np.where(excess > 0, (seeds - 1) * (w1 - w0) / excess, np.inf)
            df = np.maximum(df, seeds - 1)
    q = special.stdtrit(np.minimum(df, 299), 0.975)
    h = q * np.sqrt(v)
    return 100 * float(np.mean(2 * special.ndtr(h) - 1)), float(np.median(h)) / Z


def calibrated_rule(seeds: int) -> tuple:
    """The default rule's (kappa, floor[, w0, w1]) at this many seeds."""
    d = DEFAULT_RULE
    return (d.two_kappa, d.two_floor, d.w0, d.w1) if seeds == 2 else (d.kappa, d.floor)


# (kappa, floor, w0, w1) at 2 seeds: the 2-seed frontier (w1 = w0: always t_1)
TWO_SEED_CANDIDATES = [(0.1, 0.5), (0.0, 0.5, 0.1, 0.3), (0.0, 0.0, 0.1, 0.3),
                       (0.0, 0.1, 0.1, 0.4), (0.0, 0.1, 0.08, 0.3), (0.0, 0.1, 0.0, 0.0)]


def theory() -> list[str]:
    grid = [(a, r) for a in np.linspace(0, 1, 21) for r in np.linspace(0, 1 - a, 21)
            if a + r > 0]
    lines = ["| seeds | rule | coverage min (seed, residual share) | max | "
             "width / known, no seed effect, residual share 0.5 | 0.87 |", "|" + "---|" * 6]
    for s in (2, 3, 5, 10):
        others = TWO_SEED_CANDIDATES if s == 2 else CANDIDATES
        for rule in (None, calibrated_rule(s), *others):
            cov = [(theory_cell(s, a, r, rule)[0], a, r) for a, r in grid]
            lo, hi = min(cov), max(cov)
            name = "before" if rule is None else "kappa={:g} floor={:g}".format(*rule)
            if rule is not None and len(rule) > 2:
                name += " shares {:g}-{:g}".format(*rule[2:])
            if rule == calibrated_rule(s):
                name = f"calibrated: {name}"
            lines.append(f"| {s} | {name} | {lo[0]:.1f} ({lo[1]:.2f}, {lo[2]:.2f}) | "
                         f"{hi[0]:.1f} ({hi[1]:.2f}, {hi[2]:.2f}) | "
                         f"{theory_cell(s, 0, 0.5, rule)[1]:.2f} | "
                         f"{theory_cell(s, 0, 0.87, rule)[1]:.2f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--cells", nargs="*", default=[], help="run the cells whose name holds "
                    "any of these words (default: all)")
    ap.add_argument("--theory", action="store_true")
    args = ap.parse_args(argv)
    if args.theory:
        print("\n".join(theory()))
        return
    print("| cell | rule | trials | coverage % | median width | p99.9 width | p99.9 / median "
          "| max / median | min df | median / known |\n|" + "---|" * 10)
    for name, (trial, truth) in cells().items():
        if args.cells and not any(w in name for w in args.cells):
            continue
        for row in run(name, trial, truth, args.trials):
            flag = "" if 93 <= row["coverage"] <= 97 else " **"
            print(f"| {row['cell']} | {row['rule']} | {row['trials']} | {row['coverage']:.1f}"
                  f"{flag} | {row['median']:.4f} | {row['p999']:.4f} | "
                  f"{row['p999'] / row['median']:.2f} | {row['max_over_median']:.3g} | "
                  f"{row['min_df']:.2f} | "
                  f"{row['vs_known']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
