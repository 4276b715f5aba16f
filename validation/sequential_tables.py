"""The tables validation/sequential.py prints (markdown): per-look levels, false "supported" with
Monte Carlo intervals, power and seeds per rule and cell, the comparison with the fixed design
of equal power, the looks' correlation and the calibrated p's tail."""

from __future__ import annotations

import math

from validation.montecarlo import wilson
from validation.sequential_sim import ALPHA, EFFECTS, MAXIMA, START, Cell

TAIL = (0.001, 0.005, 0.01, 0.025)  # nominal levels whose real rate the tail table shows
SHORT = {"seeds dominate": "S", "balanced": "B", "examples dominate": "E"}


def _rate(x: dict, key: str = "supported") -> float:
    return 100 * x[key] / x["n"]


def _header(results: dict, extra: str = "") -> list[str]:
    cells = [f"{SHORT[regime]} {START}-{top}" for regime, top in results]
    return ["| rule | " + " | ".join(cells) + f" |{extra}",
            "|" + "---|" * (1 + len(cells) + (1 if extra else 0))]


def equal_power(res: dict, power: float) -> int | None:
    """The smallest fixed seed count whose power (the same studies) is at least `power`;
    None when even the maximum has less."""
    return next((n for n, q in res["fixed_at"].items() if q >= power), None)


def null_table(results: dict, rules) -> list[str]:
    """False "supported" % [95% Wilson interval] per rule and cell; bold where the whole
    interval lies above alpha; the last column the highest upper bound over the cells."""
    lines = _header(results, " highest upper bound |")
    for rule in rules:
        cells, top = [], 0.0
        for res in results.values():
            x = res[0.0][rule.label]
            lo, hi = wilson(x["supported"], x["n"])
            top = max(top, hi)
            cell = f"{_rate(x):.2f} [{100 * lo:.2f}, {100 * hi:.2f}]"
            cells.append(f"**{cell}**" if lo > ALPHA else cell)
        lines.append(f"| {rule.label} | " + " | ".join(cells) + f" | {100 * top:.2f} |")
    return lines


def power_table(results: dict, rules, effect: float) -> list[str]:
    """Power % / mean seeds per rule and cell at one effect."""
    lines = _header(results)
    for rule in rules:
        cells = [f"{_rate(res[effect][rule.label]):.1f} / {res[effect][rule.label]['seeds']:.2f}"
                 for res in results.values()]
        lines.append(f"| {rule.label} | " + " | ".join(cells) + " |")
    return lines


def compare_table(results: dict, label: str) -> list[str]:
    """The issue's comparison for one rule, per cell and effect: the fixed design at the
    maximum (power, seeds), the rule (power, mean and 90th percentile seeds), and the smallest
    fixed design with at least the rule's power (its seeds, power, and the mean seeds the rule
    saves against it)."""
    lines = ["| regime | looks | delta (sd) | fixed at max: power % | rule: power % | mean seeds"
             " | 90th pct seeds | equal-power fixed: seeds | its power % | seeds saved |",
             "|" + "---|" * 10]
    for (regime, top), res in results.items():
        for e in EFFECTS[1:]:
            x = res[e][label]
            power = x["supported"] / x["n"]
            n = equal_power(res[e], power)
            eq = (f"{n} | {100 * res[e]['fixed_at'][n]:.1f} | {n - x['seeds']:+.2f}"
                  if n is not None else f"> {top} | - | -")
            lines.append(f"| {regime} | {START}-{top} | {e:g} | {100 * res[e]['fixed_at'][top]:.1f}"
                         f" | {_rate(x):.1f} | {x['seeds']:.2f} | {x['p90']:.0f} | {eq} |")
    return lines


def beyond_table(beyond: dict, rules, fixed: int) -> list[str]:
    """Plans whose last look is beyond a fixed design's seeds, per regime: false "supported"
    % [95% Wilson] and, per effect (in sd at `fixed` seeds), power % / mean seeds against the
    fixed design at `fixed` (the same studies)."""
    lines = ["| regime | rule | false supported % | " + " | ".join(
        f"{e:g} sd: rule | fixed at {fixed}" for e in EFFECTS[1:]) + " |",
        "|" + "---|" * (3 + 2 * len(EFFECTS[1:]))]
    for regime, res in beyond.items():
        for rule in rules:
            x = res[0.0][rule.label]
            lo, hi = wilson(x["supported"], x["n"])
            cells = [f"{_rate(res[e][rule.label]):.1f} / {res[e][rule.label]['seeds']:.2f} | "
                     f"{100 * res[e]['fixed_at'][fixed]:.1f} / {fixed}" for e in EFFECTS[1:]]
            lines.append(f"| {regime} | {rule.label} | {_rate(x):.2f} [{100 * lo:.2f}, "
                         f"{100 * hi:.2f}] | " + " | ".join(cells) + " |")
    return lines


def budget_table(other: dict, rules) -> list[str]:
    """Per regime, budget and rule: its looks, false "supported" % [95% Wilson] and power % /
    mean seeds at each effect."""
    lines = ["| regime | rule | looks | false supported % | " + " | ".join(
        f"{e:g} sd" for e in EFFECTS[1:]) + " |", "|" + "---|" * (4 + len(EFFECTS[1:]))]
    for (regime, top), res in other.items():
        for rule in rules:
            x = res[0.0][rule.label]
            lo, hi = wilson(x["supported"], x["n"])
            looks = "/".join(map(str, rule.looks(list(range(START, top + 1)))))
            if rule.spending == "fixed":
                looks = str(top)
            cells = [f"{_rate(res[e][rule.label]):.1f} / {res[e][rule.label]['seeds']:.2f}"
                     for e in EFFECTS[1:]]
            lines.append(f"| {regime} | {rule.label} | {looks} | {_rate(x):.2f} "
                         f"[{100 * lo:.2f}, {100 * hi:.2f}] | " + " | ".join(cells) + " |")
    return lines


def long_table(results: dict, rules) -> list[str]:
    """One row per regime, plan, truth and rule: supported, refuted, seeds."""
    lines = ["| regime | looks | delta (sd) | rule | supported % | refuted % | mean seeds |",
             "|" + "---|" * 7]
    for (regime, top), res in results.items():
        for e in EFFECTS:
            for rule in rules:
                x = res[e][rule.label]
                lines.append(f"| {regime} | {START}-{top} | {e:g} | {rule.label} | "
                             f"{_rate(x):.2f} | {_rate(x, 'refuted'):.2f} | {x['seeds']:.2f} |")
    return lines


def corr_table(results: dict) -> list[str]:
    """Information at the first look over the last's, and the correlation of the first and
    last look's estimates: simulated, true, and what seed counts assume."""
    lines = ["| regime | looks | information fraction at 3 seeds (seed count) | corr first-last:"
             " simulated | true | seed count |", "|" + "---|" * 6]
    for (regime, top), res in results.items():
        cell = Cell(regime, top, 0.0)
        info = cell.sd_at(top) ** 2 / cell.sd_at(START) ** 2
        lines.append(f"| {regime} | {START}-{top} | {info:.2f} ({START / top:.2f}) | "
                     f"{res[0.0]['corr']:.3f} | {math.sqrt(info):.3f} | "
                     f"{math.sqrt(START / top):.3f} |")
    return lines


def tail_table(results: dict) -> list[str]:
    """The calibrated p-value's real rate at small nominal levels, under the hardest null,
    at the first looks of the longest plan (the statistic each look's test rests on)."""
    lines = ["| regime | seeds | " + " | ".join(f"P(p <= {100 * a:g}%) %" for a in TAIL)
             + " |", "|" + "---|" * (2 + len(TAIL))]
    for (regime, top), res in results.items():
        if top != max(MAXIMA):
            continue
        for n, rates in res[0.0]["tail"].items():
            lines.append(f"| {regime} | {n} | " + " | ".join(f"{100 * r:.2f}" for r in rates)
                         + " |")
    return lines


def level_table(rules) -> list[str]:
    lines = ["| plan | rule | seeds: nominal one-sided level per look (%) |", "|---|---|---|"]
    for top in MAXIMA:
        for rule in rules:
            if rule.spending in ("fixed", "naive") or rule.planner:
                continue
            looks = rule.looks(list(range(START, top + 1)))
            lines.append(f"| {START}-{top} | {rule.label} | "
                         + ", ".join(f"{n}: {100 * a:.3f}" for n, a in
                                     zip(looks, rule.levels(looks), strict=True)) + " |")
    return lines


def report(results: dict, rules, compared, args) -> list[str]:
    legend = ("cells: S seeds dominate, B balanced, E examples dominate; looks from "
              f"{START} seeds to the maximum, one per seed, except the rules with 3 looks "
              "(start, (start + max) // 2, max) or 2 looks (start, max)")
    out = ["Nominal one-sided level per look (%), alpha = 2.5%:", ""] + level_table(rules)
    out += ["", f"False supported % [95% Monte Carlo interval], hardest null, {args.studies} "
            f"studies per cell (bold: the whole interval above alpha); {legend}:", ""]
    out += null_table(results, rules)
    for e in EFFECTS[1:]:
        out += ["", f"Power % / mean seeds per claim, delta = {e:g} sd of the estimate at the "
                f"maximum seeds, {args.power_studies} studies per cell:", ""]
        out += power_table(results, rules, e)
    for label in compared:
        out += ["", f"{label} against the fixed designs (the smallest fixed seed count with at "
                "least its power, from the same studies):", ""] + compare_table(results, label)
    out += ["", "Correlation of the looks:", ""] + corr_table(results)
    out += ["", "Real rate of the calibrated p at small nominal levels (hardest null):", ""]
    out += tail_table(results)
    if args.full:
        out += ["", "Every cell:", ""] + long_table(results, rules)
    return out
