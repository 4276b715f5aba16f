"""Seeds on demand, end to end: the false-decision rate, power and seeds used of deciding a
claim at several looks as seeds are added (stats/sequential.py), against the fixed designs and
the naive procedure that decides every look at level alpha.

validation/sequential_sim.py draws the studies and gives each one's path of calibrated p-values
over the looks 3, 4, ..., max_seeds (one look per seed). Each rule then walks the path (all of
it, or its own looks: "3 looks" at the start, (start + max) // 2 and the max, "2 looks" at the
start and the max): at look k the claim is supported when p_support <= its level, refuted when
p_refute <= its level, else it gets more seeds until the last look (inconclusive). Rules
(sequential.look_alphas): the spending ("OF" O'Brien-Fleming, "Pocock", "Bonferroni"), the
boundary (union, normal, t), "from n" (min_decide: the looks before n seeds only add seeds),
"union before 5, t from 5" (the union levels at 3 and 4 seeds, the t boundary of the later
looks as one block spending their increments: valid by the union bound over the two blocks),
"seed df" (the exact t boundary on p-values computed with the seed df n - 1 instead of the
calibrated df: a different statistic, not the claims'), "+ planner" (also stops a claim
early, inconclusive, when seed_planning says no seed count settles it). "fixed at n" decides
once, at n seeds, at alpha: its power curve over n gives, for each rule, the smallest fixed
design with at least the rule's power (the equal-power fixed n), from the same studies. Last,
plans whose last look is beyond the fixed design's 10 seeds (3/6/11, 3/6/12), at the effect
that design sees, against its power; and three looks at budgets of 8 and 9 seeds.

    nice -n 10 .venv/bin/python -m validation.sequential [--quick] [--full] [--focus]
        [--studies N] [--power-studies N]
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from validation import sequential_sim as sim
from validation import sequential_tables as tables
from workflow_scripts.stats import look_plan
from workflow_scripts.stats import sequential as sq

TAIL_SEEDS = (3, 4, 5, 6)  # the seed counts whose tail the tail table shows


@dataclass(frozen=True)
class Rule:
    label: str
    spending: str = "obrien-fleming"  # or "fixed", "naive"
    boundary: str = "union"
    min_decide: int = look_plan.MIN_SEEDS
    seed_df: bool = False  # p on the seed df (n - 1), not the calibrated df
    planner: bool = False
    t_from: int = 0  # > 0: union levels before this many seeds, the t boundary from there
    plan: str | tuple = "each seed"  # "start, middle, max", "start, max" or the seed counts

    def looks(self, every: list[int]) -> list[int]:
        """The rule's looks among every seed count from the start to the maximum."""
        if isinstance(self.plan, tuple):
            return list(self.plan)
        if self.plan == "each seed":
            return list(every)
        middle = [(every[0] + every[-1]) // 2] if self.plan == "start, middle, max" else []
        return sorted({every[0], *middle, every[-1]})

    def levels(self, looks: list[int]) -> list[float]:
        if self.spending == "fixed":
            return [0.0] * (len(looks) - 1) + [sim.ALPHA]
        if self.spending == "naive":
            return [sim.ALPHA] * len(looks)
        lv = sq.look_alphas(looks, sim.ALPHA, self.spending, boundary=self.boundary,
                            min_decide=self.min_decide)
        k = sum(n < self.t_from for n in looks)
        if 0 < k < len(looks):  # the later looks as one block, spending their increments
            lv[k:] = _block_t(tuple(looks[k:]), tuple(lv[k:]))
        return lv


@functools.lru_cache(maxsize=16)
def _block_t(looks: tuple[int, ...], increments: tuple[float, ...]) -> list[float]:
    """The t boundary of a block of looks spending these increments (cached: every cell of a
    plan asks for the same)."""
    return sq.t_levels(looks, increments, sq.T_PATHS, sq.T_SEED)


DEFAULT = Rule("**OF union (default)**")
THREE = Rule("OF union, 3 looks", plan="start, middle, max")
COMPARED = (DEFAULT.label, THREE.label, "OF t from 4")  # the equal-power comparison's rules
RULES = (
    Rule("fixed at max", "fixed"), Rule("naive (alpha each look)", "naive"),
    DEFAULT, Rule("OF union + planner", planner=True), THREE,
    Rule("OF union, 3 looks + planner", plan="start, middle, max", planner=True),
    Rule("OF union, 2 looks", plan="start, max"), Rule("OF union from 4", min_decide=4),
    Rule("OF normal", boundary="normal"), Rule("OF t", boundary="t"),
    Rule("OF normal from 4", boundary="normal", min_decide=4),
    Rule("OF t from 4", boundary="t", min_decide=4),
    Rule("OF t from 5", boundary="t", min_decide=5),
    Rule("OF t, seed df", boundary="t", seed_df=True),
    Rule("OF union before 5, t from 5", t_from=5),
    Rule("Pocock union", "pocock"), Rule("Pocock t", "pocock", "t"),
    Rule("Pocock t from 5", "pocock", "t", min_decide=5), Rule("Bonferroni", "bonferroni"),
)
# A plan whose last look is beyond the fixed design's seeds, at that design's effect: can
# it match the fixed design's power with fewer seeds on average?
BEYOND_FIXED, BEYOND = 10, (Rule("OF union, looks 3/6/11", plan=(3, 6, 11)),
                            Rule("OF union, looks 3/6/12", plan=(3, 6, 12)))
# Three looks at other budgets: where does the first look's share stop being small enough?
OTHER_MAXIMA, OTHER = (8, 9), (RULES[0], DEFAULT, THREE)


def walk(p: np.ndarray, p_ref: np.ndarray, far: np.ndarray, lv: list[float], looks: list[int],
         planner: bool):
    """Verdicts (1 supported, -1 refuted, 0 inconclusive) and seeds used, per study, of a rule
    with levels lv on the p_support and p_refute paths p, p_ref [studies, looks]. A level of 0
    decides nothing."""
    n = p.shape[0]
    verdict, used = np.zeros(n, int), np.full(n, looks[-1])
    open_ = np.ones(n, bool)
    for k, (a, seeds) in enumerate(zip(lv, looks, strict=True)):
        sup = open_ & (p[:, k] <= a) & (a > 0)
        ref = open_ & ~sup & (p_ref[:, k] <= a) & (a > 0)
        verdict[sup], verdict[ref] = 1, -1
        stop = sup | ref
        if planner and k < len(looks) - 1:
            stop |= open_ & ~stop & far[:, k]
        used[stop] = seeds
        open_ &= ~stop
    return verdict, used


def run_cell(cell: sim.Cell, studies: int, rules=None, chunk: int = 1000) -> dict:
    rng = cell.rng()
    looks = look_plan.plan_looks(sim.START, cell.max_seeds, step=1)
    paths, ref_paths, seed_paths, fars, z_first_last = [], [], [], [], []
    done = 0
    while done < studies:
        d = sim.draw(cell, rng, min(chunk, studies - done))
        if done == 0:
            sim.check_against_core(d[:sim.CHECKED], looks)
        stats_ = [sim.paired_stats(d[:, :n]) for n in looks]
        sides = [sim.p_sides(s) for s in stats_]
        paths.append(np.stack([sup for sup, _ in sides], axis=1))
        ref_paths.append(np.stack([ref for _, ref in sides], axis=1))
        seed_paths.append(np.stack([sim.p_seed_df(s) for s in stats_], axis=1))
        fars.append(np.stack([sim.unreachable(s) for s in stats_], axis=1))
        z_first_last.append(np.stack([(s["estimate"] - cell.delta()) / cell.sd_at(s["seeds"])
                                      for s in (stats_[0], stats_[-1])], axis=1))
        done += len(d)
    p, p_ref = np.concatenate(paths), np.concatenate(ref_paths)
    p_seed, far = np.concatenate(seed_paths), np.concatenate(fars)
    z = np.concatenate(z_first_last)
    out = {"looks": looks, "corr": float(np.corrcoef(z.T)[0, 1]),
           "tail": {n: [float(np.mean(p[:, k] <= a)) for a in tables.TAIL]
                    for k, n in enumerate(looks) if n in TAIL_SEEDS},
           "fixed_at": {n: float(np.mean(p[:, k] <= sim.ALPHA)) for k, n in enumerate(looks)}}
    for rule in rules or RULES:
        sub = rule.looks(looks)
        cols = [looks.index(n) for n in sub]
        sup, ref = (p_seed, 1.0 - p_seed) if rule.seed_df else (p, p_ref)
        verdict, used = walk(sup[:, cols], ref[:, cols], far[:, cols], rule.levels(sub), sub,
                             rule.planner)
        out[rule.label] = {"supported": int((verdict == 1).sum()),
                           "refuted": int((verdict == -1).sum()), "n": len(verdict),
                           "seeds": float(used.mean()),
                           "p90": float(np.quantile(used, 0.9, method="inverted_cdf"))}
    return out


FOCUS_REGIMES, FOCUS_MAX = ("seeds dominate", sim.BINARY), 10
FOCUS_RULES = (RULES[0], DEFAULT, THREE)


def focus(studies: int, power_studies: int, regimes=FOCUS_REGIMES) -> list[str]:
    """The default plans on the tail-calibrated p, where seeds dominate (Gaussian and binary
    outcomes), 3 -> 10 seeds: false "supported" and "refuted" at the hardest null with their
    Monte Carlo se, and power / mean seeds at 2.5 and 4 sd of the estimate at 10 seeds."""
    out = [f"Seeds on demand on the tail-calibrated p, 3 -> {FOCUS_MAX} seeds ({studies} null "
           f"studies, {power_studies} per effect); false supported / refuted % (MC se) at "
           "delta = 0; power % / mean seeds at delta = 2.5 and 4 sd at the maximum", ""]
    out += ["| regime | rule | false supported % | false refuted % | power, 2.5 sd | "
            "power, 4 sd |", "|---|---|---|---|---|---|"]
    for regime in regimes:
        res = {e: run_cell(sim.Cell(regime, FOCUS_MAX, e), power_studies if e else studies,
                           FOCUS_RULES) for e in sim.EFFECTS}
        for rule in FOCUS_RULES:
            null = res[0.0][rule.label]
            rates = [100 * null[k] / null["n"] for k in ("supported", "refuted")]
            cells = [f"{r:.2f} ({100 * math.sqrt(r / 100 * (1 - r / 100) / null['n']):.2f})"
                     for r in rates]
            for e in sim.EFFECTS[1:]:
                x = res[e][rule.label]
                cells.append(f"{100 * x['supported'] / x['n']:.1f}% / {x['seeds']:.2f}")
            out.append(f"| {regime} | {rule.label} | " + " | ".join(cells) + " |")
        print(f"{regime}: done", file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=20_000, help="studies per null cell")
    ap.add_argument("--power-studies", type=int, default=4_000,
                    help="studies per cell with an effect")
    ap.add_argument("--quick", action="store_true", help="2,000 and 1,000 studies")
    ap.add_argument("--full", action="store_true", help="also one row per cell and rule")
    ap.add_argument("--focus", action="store_true",
                    help="only the default plans where seeds dominate, Gaussian and binary")
    ap.add_argument("--regime", action="append", choices=FOCUS_REGIMES,
                    help="with --focus: only these (repeatable)")
    args = ap.parse_args(argv)
    if args.quick:
        args.studies, args.power_studies = 2_000, 1_000
    t0 = time.perf_counter()
    if args.focus:
        print("\n".join(focus(args.studies, args.power_studies,
                              args.regime or FOCUS_REGIMES))
              + f"\n\nwall time {time.perf_counter() - t0:.0f} s")
        return
    results: dict = {}
    for regime in sim.REGIMES:
        for top in sim.MAXIMA:
            results[(regime, top)] = {
                e: run_cell(sim.Cell(regime, top, e), args.power_studies if e else args.studies)
                for e in sim.EFFECTS}
            print(f"{regime}, {sim.START}-{top} seeds: done", file=sys.stderr)
    beyond = {}
    for regime in sim.REGIMES:
        top = max(r.plan[-1] for r in BEYOND)
        beyond[regime] = {e: run_cell(sim.Cell(regime, top, e, scale=BEYOND_FIXED),
                                      args.power_studies if e else args.studies, BEYOND)
                          for e in sim.EFFECTS}
        print(f"{regime}, beyond {BEYOND_FIXED} seeds: done", file=sys.stderr)
    other = {}
    for regime in sim.REGIMES:
        for top in OTHER_MAXIMA:
            other[(regime, top)] = {e: run_cell(sim.Cell(regime, top, e), args.power_studies
                                                if e else args.studies, OTHER)
                                    for e in sim.EFFECTS}
        print(f"{regime}, budgets {OTHER_MAXIMA}: done", file=sys.stderr)
    wall = time.perf_counter() - t0
    out = tables.report(results, RULES, COMPARED, args)
    out += ["", f"Looks beyond the fixed design's {BEYOND_FIXED} seeds, at its effect (delta in sd "
            f"of the estimate at {BEYOND_FIXED} seeds):", ""]
    out += tables.beyond_table(beyond, BEYOND, BEYOND_FIXED)
    out += ["", "Three looks at other budgets (false supported %, power % / mean seeds):", ""]
    out += tables.budget_table(other, OTHER)
    out.append(f"\nwall time {wall:.0f} s")
    print("\n".join(out))


if __name__ == "__main__":
    main()
