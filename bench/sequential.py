"""Seeds on demand, end to end: the false-decision rate and power of deciding a claim at
several looks as seeds are added (core/sequential.py), against a fixed design and the naive
procedure that decides every look at level alpha.

Per cell, studies of a paired difference are drawn with a known truth: per seed s and example
q, d[s, q] = delta + example[q] + seed[s] + noise[s, q] (each component the difference of two
arms' independent draws, as bench/coverage.py's paired cell: interaction sd, seed sd and noise
sd per arm, times sqrt(2)), 300 examples. The claim is "b - a > 0" (threshold 0). Every study
holds max_seeds seeds; look k sees its first n_k (seeds added, nothing redrawn). At every look
the calibrated one-sided p-values (core/calibrated.py's paired compare, vectorised here over
studies and checked against calibrated.compare itself on the first studies of every cell to
1e-9) give the path; each rule then walks the path: at look k the claim is supported when
p_support <= its level, refuted when p_refute <= its level, else it gets more seeds until the
last look (inconclusive). "+ planner" also stops a claim early, inconclusive, when
seed_planning.seeds_for_margin says no seed count settles it (the examples limit it; the same
check, vectorised, verified against seed_planning on the first studies).

Regimes: seeds dominate (seed sd 0.02, interaction 0.02, noise 0.05), balanced (seed sd
0.005), examples dominate (seed sd 0.002, interaction 0.05, noise 0.02: information grows
barely with seeds). Truths: the hardest null (delta = threshold), and delta = 2.5 and 4 true
standard deviations of the estimate at max_seeds. Each cell has its own generator, seeded from
its name.

    nice -n 10 .venv/bin/python bench/sequential.py [--quick] [--studies 10000]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workflow_scripts.core import calibrated as cal  # noqa: E402
from workflow_scripts.core import seed_planning  # noqa: E402
from workflow_scripts.core import sequential as sq  # noqa: E402

ALPHA, CI = 0.025, 0.95  # the claims' one-sided level at ci 0.95
QUERIES, START, MAXIMA = 300, 3, (4, 6, 10)
REGIMES = {  # per arm: (seed sd, example x arm interaction sd, noise sd)
    "seeds dominate": (0.02, 0.02, 0.05),
    "balanced": (0.005, 0.02, 0.05),
    "examples dominate": (0.002, 0.05, 0.02),
}
EFFECTS = (0.0, 2.5, 4.0)  # delta in true sds of the estimate at max_seeds; 0: hardest null
RULES = ("fixed", "naive", "obrien-fleming union", "obrien-fleming union + planner",
         "obrien-fleming normal", "obrien-fleming t", "pocock union", "pocock normal",
         "pocock t", "bonferroni")
TAIL = (0.001, 0.005, 0.01, 0.025)  # nominal levels whose real rate the tail table shows
CHECKED = 20  # studies per cell checked against calibrated.compare and seed_planning


@dataclass(frozen=True)
class Cell:
    regime: str
    max_seeds: int
    effect: float

    def rng(self) -> np.random.Generator:
        digest = hashlib.sha256(repr((self.regime, self.max_seeds, self.effect)).encode())
        return np.random.default_rng(int.from_bytes(digest.digest()[:8], "little"))

    def sd_at(self, n: int) -> float:
        """The estimate's true sd with n seeds."""
        seed, inter, noise = REGIMES[self.regime]
        return math.sqrt(2 * (seed**2 / n + inter**2 / QUERIES + noise**2 / (n * QUERIES)))

    def delta(self) -> float:
        return self.effect * self.sd_at(self.max_seeds)


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
    """One-sided p of H0: delta <= 0 (calibrated._p_value, "greater"); p_refute = 1 - it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tx = s["estimate"] / np.sqrt(s["v"])
    return np.where(s["v"] > 0, special.stdtr(s["df"], -tx), (s["estimate"] <= 0) * 1.0)


def unreachable(s: dict) -> np.ndarray:
    """seed_planning.seeds_for_margin(terms, |estimate|) is None: even at its largest seed
    count the calibrated half-width exceeds the margin (the examples limit it). At n seeds
    (terms_at) the seed term is M S / n, the residual r S / n, the example term X - r (1 - S / n),
    the df Q - 1 (capped by the examples)."""
    n_max, seeds, q = seed_planning._MAX_SEEDS, s["seeds"], QUERIES
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


# ---------------------------------------------------------------------------------------
# Rules on the paths
# ---------------------------------------------------------------------------------------
def levels(rule: str, looks: list[int]) -> list[float]:
    if rule == "fixed":
        return [0.0] * (len(looks) - 1) + [ALPHA]
    if rule == "naive":
        return [ALPHA] * len(looks)
    spending, _, boundary = rule.partition(" ")
    return sq.look_alphas(looks, ALPHA, spending, boundary=boundary or "union")


def walk(p: np.ndarray, far: np.ndarray, lv: list[float], looks: list[int], planner: bool):
    """Verdicts (1 supported, -1 refuted, 0 inconclusive) and seeds used, per study, of a rule
    with levels lv on the p_support paths p [studies, looks]."""
    n = p.shape[0]
    verdict, used = np.zeros(n, int), np.full(n, looks[-1])
    open_ = np.ones(n, bool)
    for k, (a, seeds) in enumerate(zip(lv, looks, strict=True)):
        sup = open_ & (p[:, k] <= a)
        ref = open_ & ~sup & (1 - p[:, k] <= a)
        verdict[sup], verdict[ref] = 1, -1
        stop = sup | ref
        if planner and k < len(looks) - 1:
            stop |= open_ & ~stop & far[:, k]
        used[stop] = seeds
        open_ &= ~stop
    return verdict, used


def run_cell(cell: Cell, studies: int, chunk: int = 1000) -> dict:
    rng = cell.rng()
    looks = sq.plan_looks(START, cell.max_seeds)
    paths, fars, t_first_last = [], [], []
    done = 0
    while done < studies:
        d = draw(cell, rng, min(chunk, studies - done))
        if done == 0:
            check_against_core(d[:CHECKED], looks)
        stats_ = [paired_stats(d[:, :n]) for n in looks]
        paths.append(np.stack([p_support(s) for s in stats_], axis=1))
        fars.append(np.stack([unreachable(s) for s in stats_], axis=1))
        t_first_last.append(np.stack([(s["estimate"] - cell.delta()) / cell.sd_at(s["seeds"])
                                      for s in (stats_[0], stats_[-1])], axis=1))
        done += len(d)
    p, far = np.concatenate(paths), np.concatenate(fars)
    z = np.concatenate(t_first_last)
    out = {"looks": looks, "corr": float(np.corrcoef(z.T)[0, 1]),
           "tail": {n: [float(np.mean(p[:, k] <= a)) for a in TAIL]
                    for k, n in enumerate(looks[:2])}}
    for rule in RULES:
        verdict, used = walk(p, far, levels(rule.removesuffix(" + planner"), looks), looks,
                             planner=rule.endswith("+ planner"))
        out[rule] = {"supported": int((verdict == 1).sum()),
                     "refuted": int((verdict == -1).sum()), "n": len(verdict),
                     "seeds": float(used.mean())}
    return out


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson interval of a binomial rate."""
    p = k / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n)


# ---------------------------------------------------------------------------------------
# Tables, main
# ---------------------------------------------------------------------------------------
def null_table(results: dict) -> list[str]:
    lines = ["| regime | looks | rule | false supported % [95% MC interval] | "
             "false refuted % | mean seeds | within alpha |", "|" + "---|" * 7]
    for (regime, top), res in results.items():
        r0 = res[0.0]
        for rule in RULES:
            x = r0[rule]
            lo, hi = wilson(x["supported"], x["n"])
            ok = "yes" if lo <= ALPHA else "**no**"
            lines.append(f"| {regime} | {START}-{top} | {rule} | "
                         f"{100 * x['supported'] / x['n']:.2f} [{100 * lo:.2f}, {100 * hi:.2f}]"
                         f" | {100 * x['refuted'] / x['n']:.2f} | {x['seeds']:.2f} | {ok} |")
    return lines


def power_table(results: dict) -> list[str]:
    head = " | ".join(f"power % / mean seeds, delta = {e:g} sd" for e in EFFECTS if e)
    lines = [f"| regime | looks | rule | {head} |", "|" + "---|" * (3 + len(EFFECTS) - 1)]
    for (regime, top), res in results.items():
        for rule in RULES:
            cells = [f"{100 * res[e][rule]['supported'] / res[e][rule]['n']:.1f} / "
                     f"{res[e][rule]['seeds']:.2f}" for e in EFFECTS if e]
            lines.append(f"| {regime} | {START}-{top} | {rule} | " + " | ".join(cells) + " |")
    return lines


def tail_table(results: dict) -> list[str]:
    """The calibrated p-value's real rate at small nominal levels, under the hardest null,
    at the first two looks (the statistic each look's test rests on)."""
    lines = ["| regime | seeds | " + " | ".join(f"P(p <= {100 * a:g}%) %" for a in TAIL)
             + " |", "|" + "---|" * (2 + len(TAIL))]
    for (regime, top), res in results.items():
        if top != max(MAXIMA):
            continue
        for n, rates in res[0.0]["tail"].items():
            lines.append(f"| {regime} | {n} | " + " | ".join(f"{100 * r:.2f}" for r in rates)
                         + " |")
    return lines


def level_table() -> list[str]:
    lines = ["| looks | rule | nominal one-sided level per look (%) |", "|---|---|---|"]
    for top in MAXIMA:
        looks = sq.plan_looks(START, top)
        for rule in RULES[2:]:
            if rule.endswith("+ planner"):
                continue
            lv = levels(rule, looks)
            lines.append(f"| {START}-{top} | {rule} | "
                         + ", ".join(f"{100 * a:.3f}" for a in lv) + " |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=10_000, help="studies per null cell")
    ap.add_argument("--power-studies", type=int, default=4_000,
                    help="studies per cell with an effect")
    ap.add_argument("--quick", action="store_true", help="2,000 and 1,000 studies")
    args = ap.parse_args()
    if args.quick:
        args.studies, args.power_studies = 2_000, 1_000
    t0 = time.perf_counter()
    results: dict = {}
    for regime in REGIMES:
        for top in MAXIMA:
            res = {}
            for e in EFFECTS:
                res[e] = run_cell(Cell(regime, top, e), args.studies if e == 0 else
                                  args.power_studies)
            results[(regime, top)] = res
            info = Cell(regime, top, 0).sd_at(top) ** 2 / Cell(regime, top, 0).sd_at(START) ** 2
            print(f"{regime}, {START}-{top} seeds: information fraction at {START} seeds "
                  f"{info:.2f} (seed count {START / top:.2f}); corr of the first and last "
                  f"look's estimate {res[0.0]['corr']:.3f} (true {math.sqrt(info):.3f}, seed "
                  f"count {math.sqrt(START / top):.3f})", file=sys.stderr)
    wall = time.perf_counter() - t0
    print("\n".join(["Levels:", ""] + level_table() + ["", f"Hardest null ({args.studies} "
                     "studies per cell):", ""] + null_table(results)
                    + ["", f"Effects ({args.power_studies} studies per cell):", ""]
                    + power_table(results) + ["", "Tail of the calibrated p-value (hardest "
                                              "null):", ""] + tail_table(results)
                    + ["", f"wall time {wall:.0f} s"]))


if __name__ == "__main__":
    main()
