"""The seed planner against simulated studies (stats/seed_planning.py): does "n seeds would
settle it" decide the claim at n in the stated share of studies, and does seeds_for_delta
give the power it promises?

Assurance. Each study is a paired difference over 300 examples, per seed s and example q:
d[s, q] = delta + example[q] + seed[s] + noise[s, q], each the difference of two arms' draws
(per arm sds times sqrt 2), in validation/sequential.py's regimes (seeds dominate, balanced,
examples dominate); or two unpaired arms with independent seeds (the two regimes where seeds
matter), each with its own arm x example effect. It starts at 3 seeds; an inconclusive one
plans from its own 3 seeds (the claim's planner, decide.seeds_needed: seeds_for_assurance
and, beside it, the coin-flip count seeds_at_margin), then gets that many seeds, its 3 kept
and the examples the same, and is decided again at alpha = 2.5% one-sided (95% interval). Truths:
  like this one   delta uniform over +-4 sds of the 3-seed estimate (studies like the one
                  planned from: the planner's share is over them)
  fixed           delta = 3 sds of the estimate at 10 seeds
  null            delta = 0: "false supported when followed" is the share of all studies
                  supported at 3 seeds, or at the planned n after an inconclusive 3, for
                  the assured and the coin-flip count (two looks at alpha each: the looks
                  of seeds on demand spend alpha instead)
Printed per regime and truth: the share inconclusive at 3 that the planner calls unreachable
(and, of them, where the examples limit it: seeds_at_margin's none, the looks' stop),
the share of the planned decided at n (with its Monte Carlo sd) for the assured and the
coin-flip count, and the assured count's 10/25/50/75/90% quantiles. Plans beyond 3,000
seeds are not followed (counted).

At a fixed effect (--fixed). The same paired studies at a true effect of 1 or 2 sds of the
3-seed estimate, beside the uniform +-4 the planner averages over: the share decided at the
assured n, overall and by the count planned (4-9, 10-30, above 30), and for a plan at the
estimate's one-sd lower bound (none where that bound is at the threshold or past it).

Power. Two arms with independent seeds on the same examples (each its own arm x example
effect), delta = 0.01, two-sided alpha = 0.05: the seeds per arm seeds_for_delta plans from
the true components, against the formula before (2 v_seed / n, no interaction), each
simulated with calibrated.compare's unpaired test.

    nice -n 10 .venv/bin/python -m validation.seed_assurance [--studies 1000] [--power 2000]
    nice -n 10 .venv/bin/python -m validation.seed_assurance --fixed [--studies 2000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy import stats

from validation import model
from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import seed_planning as sp
from workflow_scripts.stats import variance_terms as vt

Q, START, FOLLOW_MAX = 300, 3, 3000
REGIMES = {  # per arm: (seed sd, arm x example sd, noise sd), as validation/sequential.py's
    "seeds dominate": (0.02, 0.02, 0.05),
    "balanced": (0.005, 0.02, 0.05),
    "examples dominate": (0.002, 0.05, 0.02),
}
POWER_CASES = {  # per arm (seed sd, arm x example sd, noise sd, examples); delta = 0.01
    "issue: seed 0.005, interaction 0.02, 300 ex": (0.005, 0.02, 0.05, 300),
    "seed 0.005, interaction 0.02, 100 ex": (0.005, 0.02, 0.05, 100),
    "seed 0.01, interaction 0.01, 300 ex": (0.01, 0.01, 0.05, 300),
    "seed 0.002, interaction 0.03, 1000 ex": (0.002, 0.03, 0.05, 1000),
}
DELTA = 0.01


def sd_at(sd, n: int) -> float:
    seed, inter, noise = sd
    return math.sqrt(2 * (seed**2 / n + inter**2 / Q + noise**2 / (n * Q)))


def verdict(a: np.ndarray, b: np.ndarray, design: str) -> str:
    r = cal.compare(a, b, design=design)
    return "supported" if r.ci_low > 0 else "refuted" if r.ci_high < 0 else "inconclusive"


def study(rng, sd, delta: float, design: str):
    """rows(k) -> (a, b): k more seeds of the study's two arms on its examples. Paired: a is
    0 and b the difference (per arm sds times sqrt 2); unpaired: two arms with independent
    seeds, each its own arm x example effect, an example main effect (sd 0.1) shared."""
    seed_sd, inter, noise = sd
    if design == "paired":
        seed_sd, inter, noise = (math.sqrt(2) * v for v in sd)
        examples = model.example_effects(rng, 1, Q, inter)

        def rows(k):
            return np.zeros((k, Q)), model.scores(rng, model.seed_effects(rng, 1, k, seed_sd),
                                                  examples, level=delta, noise_sd=noise)[0]
        return rows
    shared = model.example_effects(rng, 1, Q, 0.1)
    own = [shared + model.example_effects(rng, 1, Q, inter) for _ in range(2)]

    def rows(k):
        return tuple(model.scores(rng, model.seed_effects(rng, 1, k, seed_sd), e, level=shift,
                                  noise_sd=noise)[0]
                     for shift, e in zip((0.0, delta), own, strict=True))
    return rows


def follow(regime: str, truth: str, studies: int, design: str = "paired") -> dict:
    sd = REGIMES[regime]
    rng = model.rng_for(regime, truth, *(() if design == "paired" else (design,)))
    out = {"inconclusive": 0, "unreachable": 0, "examples limit": 0, "beyond": 0,
           "assured": [], "coin": [], "n": [], "false": 0, "false coin": 0}
    for _ in range(studies):
        delta = {"like this one": rng.uniform(-4, 4) * sd_at(sd, START),
                 "fixed": 3 * sd_at(sd, 10), "null": 0.0}[truth]
        rows = study(rng, sd, delta, design)
        a, b = rows(START)
        first = verdict(a, b, design)
        if first != "inconclusive":
            out["false"] += first == "supported"
            out["false coin"] += first == "supported"
            continue
        out["inconclusive"] += 1
        r = cal.compare(a, b, design=design)
        plan = sp.seeds_for_assurance(r.terms, abs(r.estimate))
        out["examples limit"] += plan.at_margin is None
        if plan.at_margin is not None and plan.at_margin <= FOLLOW_MAX:
            coin = max(plan.at_margin, START + 1)
            more = rows(coin - START)
            out["false coin"] += verdict(np.vstack([a, more[0]]), np.vstack([b, more[1]]),
                                         design) == "supported"
        if plan.seeds is None:
            out["unreachable"] += 1
            continue
        out["n"].append(plan.seeds)
        coin = max(plan.at_margin, START + 1)
        if max(plan.seeds, coin) > FOLLOW_MAX:
            out["beyond"] += 1
            continue
        more = rows(max(plan.seeds, coin) - START)
        full_a, full_b = np.vstack([a, more[0]]), np.vstack([b, more[1]])
        at_n = verdict(full_a[:plan.seeds], full_b[:plan.seeds], design)
        out["assured"].append(at_n != "inconclusive")
        out["coin"].append(verdict(full_a[:coin], full_b[:coin], design) != "inconclusive")
        out["false"] += at_n == "supported"
    return out


def share(x: list) -> str:
    if not x:
        return "–"
    p = float(np.mean(x))
    return f"{100 * p:.1f} ± {100 * math.sqrt(p * (1 - p) / len(x)):.1f}"


CELLS = [*((regime, truth, "paired") for regime in REGIMES
           for truth in ("like this one", "fixed", "null")),
         *((regime, truth, "unpaired") for regime in ("seeds dominate", "balanced")
           for truth in ("like this one", "null"))]


def assurance_table(studies: int) -> None:
    print(f"## Assurance (target {sp.ASSURANCE:.0%}; {studies} studies per cell)\n")
    print("| design | regime | truth | inconclusive at 3 | unreachable (examples limit) | "
          "followed | decided at assured n % | decided at coin-flip n % | "
          "assured n: 10/25/50/75/90% | false supported % (assured / coin-flip) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for regime, truth, design in CELLS:
        t0 = time.perf_counter()
        o = follow(regime, truth, studies, design)
        q = (np.percentile(o["n"], [10, 25, 50, 75, 90]).round().astype(int)
             if o["n"] else [])
        base = max(o["inconclusive"], 1)
        unreach = (f"{100 * o['unreachable'] / base:.0f}% "
                   f"({100 * o['examples limit'] / base:.0f}%)")
        false = (f"{100 * o['false'] / studies:.2f} / {100 * o['false coin'] / studies:.2f}"
                 if truth == "null" else "–")
        print(f"| {design} | {regime} | {truth} | {o['inconclusive']} | {unreach} | "
              f"{len(o['assured'])} (+{o['beyond']} beyond {FOLLOW_MAX}) | "
              f"{share(o['assured'])} | {share(o['coin'])} | "
              f"{'/'.join(map(str, q))} | {false} |", flush=True)
        print(f"<!-- {time.perf_counter() - t0:.0f} s -->", file=sys.stderr, flush=True)


def pair_terms(seed: float, inter: float, noise: float, q: int, s: int = 3) -> list:
    """The unpaired comparison's terms at their expectations
    (tests/unit/stats/test_seed_planning.py)."""
    ms_seed = seed**2 + noise**2 / q
    return [*(vt.Term(f"seeds of {a}", "seeds", 1 / s, ms_seed, s - 1, s, a) for a in "ab"),
            vt.Term("examples of benchmark 0", "examples", 1 / q,
                     2 * inter**2 + 2 * noise**2 / s, q - 1),
            *(vt.Term(f"residual of {a}, benchmark 0", "examples", -1 / (q * s), noise**2,
                       (s - 1) * (q - 1), s, a) for a in "ab")]


def formula_before(seed: float, noise: float, q: int) -> int:
    """The planner before: (t_0.975 + t_0.8) sqrt(2 v_seed / n) <= delta, df 2 (n - 1)."""
    v_seed = seed**2 + noise**2 / q
    n = 2
    while (stats.t.ppf(0.975, 2 * (n - 1)) + stats.t.ppf(0.8, 2 * (n - 1))) * math.sqrt(
            2 * v_seed / n) > DELTA:
        n += 1
    return n


def simulated_power(case: str, sd, n: int, studies: int) -> str:
    seed, inter, noise, q = sd
    rng = model.rng_for("power", case, n)
    hits = 0
    for _ in range(studies):
        a, b = (model.scores(rng, model.seed_effects(rng, 1, n, seed), model.example_effects(
            rng, 1, q, inter), level=delta, noise_sd=noise)[0] for delta in (0.0, DELTA))
        hits += cal.compare(a, b, design="unpaired", alternative="two-sided").p_value <= 0.05
    return share([1] * hits + [0] * (studies - hits))


def power_table(studies: int) -> None:
    print(f"\n## Power at delta = {DELTA} (target 80%, two-sided alpha 0.05; {studies} "
          "studies per cell)\n")
    print("| case (per arm) | seeds_for_delta n | its power % (planned / simulated) | "
          "before: n | its power % (simulated) |")
    print("|---|---|---|---|---|")
    for case, sd in POWER_CASES.items():
        terms = pair_terms(*sd)
        n = sp.seeds_for_delta(terms, DELTA)
        old = formula_before(sd[0], sd[2], sd[3])
        planned = 100 * sp.power_at(terms, DELTA, n) if n else math.nan
        new = simulated_power(case, sd, n, studies) if n else "–"
        print(f"| {case} | {n} | {planned:.1f} / {new} | {old} | "
              f"{simulated_power(case, sd, old, studies)} |", flush=True)


# ---------------------------------------------------------------------------------------
# At a fixed effect: the promise is an average over effects; what does a plan give at one?
# ---------------------------------------------------------------------------------------
# The true effect in sds of the 3-seed estimate (sd_at(sd, START)); None: uniform over +-4
# of them, the studies like this one the promise is an average over (for comparison)
FIXED_SDS = (None, 1.0, 2.0)
PLAN_BINS = ((4, 9), (10, 30), (31, FOLLOW_MAX))  # the assured counts, grouped
ONE_SD = 0.6827  # a two-sided 68% interval: its half-width is about one sd


def follow_fixed(regime: str, sds: float | None, studies: int) -> dict:
    """Paired studies at a fixed true effect of `sds` sds of the 3-seed estimate (None:
    uniform over +-4 of them, as the planner's "like this one" averages): each
    inconclusive at 3 plans (seeds_for_assurance at its estimate, the claims' plan; and the
    same at the estimate's one-sd lower bound, |estimate| - its 68% half-width, none where
    that is at or below 0), gets the planned seeds and is decided again."""
    sd = REGIMES[regime]
    rng = model.rng_for(regime, "fixed sds", sds)
    out = {"inconclusive": 0, "unreachable": 0, "beyond": 0, "assured": [], "coin": [],
           "bins": {b: [] for b in PLAN_BINS}, "lower": [], "lower none": 0}
    for _ in range(studies):
        k = rng.uniform(-4, 4) if sds is None else sds
        rows = study(rng, sd, k * sd_at(sd, START), "paired")
        a, b = rows(START)
        if verdict(a, b, "paired") != "inconclusive":
            continue
        out["inconclusive"] += 1
        r = cal.compare(a, b, design="paired")
        plan = sp.seeds_for_assurance(r.terms, abs(r.estimate))
        low_margin = abs(r.estimate) - cal.half_width(r.terms, ONE_SD)
        low = (sp.seeds_for_assurance(r.terms, low_margin).seeds if low_margin > 0 else None)
        out["lower none"] += low is None
        if plan.seeds is None:
            out["unreachable"] += 1
            continue
        coin = max(plan.at_margin, START + 1)
        most = max(plan.seeds, coin, low or 0)
        if most > FOLLOW_MAX:
            out["beyond"] += 1
            continue
        more = rows(most - START)
        full_a, full_b = np.vstack([a, more[0]]), np.vstack([b, more[1]])

        def decided(n: int, a=full_a, b=full_b) -> bool:
            return verdict(a[:n], b[:n], "paired") != "inconclusive"

        out["assured"].append(decided(plan.seeds))
        out["coin"].append(decided(coin))
        for lo, hi in PLAN_BINS:
            if lo <= plan.seeds <= hi:
                out["bins"][(lo, hi)].append(out["assured"][-1])
        if low is not None:
            out["lower"].append(decided(low))
    return out


def fixed_table(studies: int) -> None:
    print(f"## At a fixed effect (paired, {Q} examples; {studies} studies per cell)\n")
    bins = " | ".join(f"assured n {lo}–{hi}: decided %" if hi < FOLLOW_MAX
                      else f"assured n > {lo - 1}: decided %" for lo, hi in PLAN_BINS)
    print("| regime | true effect (sds of the 3-seed estimate) | inconclusive at 3 | "
          f"unreachable | decided at assured n % | at coin-flip n % | {bins} | "
          "planned at the 1-sd lower bound: none % / decided % |")
    print("|---|---|---|---|---|---|" + "---|" * len(PLAN_BINS) + "---|")
    for regime in ("seeds dominate", "balanced"):
        for sds in FIXED_SDS:
            t0 = time.perf_counter()
            o = follow_fixed(regime, sds, studies)
            base = max(o["inconclusive"], 1)
            cells = " | ".join(f"{share(o['bins'][b])} ({len(o['bins'][b])})"
                               for b in PLAN_BINS)
            truth = "uniform ±4 (like this one)" if sds is None else f"{sds:g}"
            print(f"| {regime} | {truth} | {o['inconclusive']} | "
                  f"{100 * o['unreachable'] / base:.0f}% | {share(o['assured'])} | "
                  f"{share(o['coin'])} | {cells} | {100 * o['lower none'] / base:.0f}% / "
                  f"{share(o['lower'])} |", flush=True)
            print(f"<!-- {time.perf_counter() - t0:.0f} s -->", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=1000, help="studies per assurance cell")
    ap.add_argument("--power", type=int, default=2000, help="studies per power cell")
    ap.add_argument("--fixed", action="store_true",
                    help="only the table at fixed effects (--studies per cell)")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.fixed:
        fixed_table(a.studies)
    else:
        power_table(a.power)
        print()
        assurance_table(a.studies)
    print(f"\n{time.perf_counter() - t0:.0f} s wall")


if __name__ == "__main__":
    main()
