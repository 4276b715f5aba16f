"""One member's contrast: its two sides as stats/intervals.py takes them, designed by
stats/design.py as the stats stage designs the same comparison (paired on shared seeds;
single-baseline where a side has one seed, that side fixed, a trained one's seed noise
borrowed from the study's other multi-seed arms and named in a caveat; else unpaired), its
tests of b - rho * a, Fieller's interval of a ratio and its seed plan. claims/decide.py turns
these into p-values and verdicts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from workflow_scripts.claims.data import Data
from workflow_scripts.claims.spec import ALL_BENCHMARKS, Member, arm_label
from workflow_scripts.core.arms import check_aligned
from workflow_scripts.core.contracts import BASE
from workflow_scripts.stats import borrowed_seeds, design, intervals


def _map(x, f):
    return {k: f(v) for k, v in x.items()} if isinstance(x, Mapping) else f(x)


def _side(m: Member, data: Data, key) -> tuple[object, tuple]:
    """(scores as the intervals module takes them, seed ids) of one arm of a member."""
    if m.study == "ladder":
        x, seeds = data.ladder[key]
        return x, tuple(seeds)
    arm = data.arms(m)[key]
    if m.versus:  # +2 * benchmark, -2 * versus: their stratified mean is the difference
        x = {m.benchmark: 2 * arm.scores[m.benchmark], m.versus: -2 * arm.scores[m.versus]}
    elif m.benchmark == ALL_BENCHMARKS:
        x = dict(arm.scores)
    else:
        x = arm.scores[m.benchmark]
    return x, arm.seeds


@dataclass
class Contrast:
    """b - rho * a as intervals.compare takes it, with the design the seeds allow."""

    a: object
    b: object
    design: str
    kwargs: dict
    resample: tuple
    caveats: list
    swap: bool = False  # b has one seed: -b is the fixed baseline and -rho * a the arm

    def sides(self, rho: float = 1.0) -> tuple:
        a = self.a if rho == 1.0 else _map(self.a, lambda v: v * rho)
        if self.swap:
            return _map(self.b, np.negative), _map(a, np.negative)
        return a, self.b

    def mean_a(self) -> float:
        x = self.a
        return float(np.mean([v.mean() for v in x.values()]) if isinstance(x, Mapping)
                     else x.mean())


def contrast(m: Member, data: Data) -> Contrast:
    if m.study == "biencoder" and m.a is not None:
        arms = data.arms(m)
        check_aligned(arms[m.a], arms[m.b])
    b, seeds_b = _side(m, data, m.b)
    if m.a is None:  # a mean: against a fixed arm of zeros on the same examples
        a, seeds_a = _map(b, lambda v: np.zeros((1, v.shape[-1]))), (None,)
    else:
        a, seeds_a = _side(m, data, m.a)
    # the untrained base (and a mean's zeros) is one deterministic model: no seed noise
    trained = tuple(k is not None and k[0] != BASE for k in (m.a, m.b))
    d = design.choose(seeds_a, seeds_b, trained)
    one_seed = [k for k, seeds, t in zip((m.a, m.b), (seeds_a, seeds_b), trained, strict=True)
                if t and len(seeds) == 1]
    terms = _borrowed(m, data) if one_seed and d.name != design.PAIRED else []
    resample = d.axes[0]
    included = d.borrow and "seeds" in resample
    caveats = [borrowed_seeds.caveat(arm_label(m.study, k), terms, included) for k in one_seed]
    kwargs = {"borrowed": terms} if included and terms else d.seeds_kw(seeds_a, seeds_b)
    return Contrast(a, b, d.name, kwargs, resample, caveats, d.swap)


def _borrowed(m: Member, data: Data) -> list:
    """The one-seed arm's borrowed seed terms in the member's layout
    (design.borrowed_pool: the study's other arms of >= 2 seeds); [] when the study has
    none (bi-encoder only)."""
    if m.study != "biencoder":
        return []
    arms = data.arms(m)
    return design.borrowed_pool({k: len(arm.seeds) for k, arm in arms.items()}, (m.a, m.b),
                                lambda k: _side(m, data, k)[0])


def kwargs_at(c: Contrast, rho: float) -> dict:
    """The contrast's design options for b - rho * a: a one-seed arm's borrowed seed terms
    scaled by rho^2 where the fixed arm is rho * a (the test and its planner alike)."""
    kwargs = dict(c.kwargs)
    if kwargs.get("borrowed") and rho != 1.0 and not c.swap:
        kwargs["borrowed"] = [dataclasses.replace(t, coef=t.coef * rho**2)
                              for t in kwargs["borrowed"]]
    return kwargs


def compare(c: Contrast, opts: dict, alternative: str, threshold: float, threads,
            rho: float = 1.0) -> dict:
    """intervals.compare of b - rho * a against `threshold`."""
    a, b = c.sides(rho)
    return intervals.compare(a, b, design=c.design, alternative=alternative,
                             threshold=threshold, resample=c.resample, threads=threads,
                             **opts, **kwargs_at(c, rho))


def fieller(c: Contrast, opts: dict, estimate: float, threads) -> tuple[float, float]:
    """The rho at which the interval of b - rho * a has 0 at its edge, below and above the
    estimate (for a > 0 both edges fall as rho grows: the lower bound is where ci_low falls
    to 0, the upper where ci_high does); infinite where no rho reaches it (a's mean not
    clearly away from 0)."""

    def edge(rho: float, col: str) -> float:
        return compare(c, opts, "greater", 0.0, threads, rho)[col]

    bounds = []
    for col, step in (("ci_low", -1.0), ("ci_high", 1.0)):
        width, found = max(abs(estimate), 1e-3) * 0.05, None
        for _ in range(30):
            rho = estimate + step * width
            if (edge(rho, col) < 0) == (col == "ci_high"):  # 0 left the interval: past it
                found = rho
                break
            width *= 2
        if found is None:
            bounds.append(step * math.inf)
            continue
        lo, hi = sorted((estimate, found))
        bounds.append(optimize.brentq(lambda r, col=col: edge(r, col), lo, hi,
                                      xtol=1e-7 * max(1.0, abs(estimate))))
    return bounds[0], bounds[1]


def seeds_needed(plan, ci: float) -> dict:
    """The member's seed plan (intervals.seeds_to_settle): seeds_needed, the fewest seeds per
    arm that decide it in at least seed_planning.ASSURANCE of studies like this one;
    seeds_share, the share decided there (or with unlimited seeds where none reaches the
    assurance); seeds_at_margin, where the expected interval just reaches the threshold
    (about a coin flip; NaN: the examples limit it, and seeds on demand stops there). NaN
    where a count is not reached; every count is more seeds than now."""
    c, rho, margin, method = plan
    a, b = c.sides(rho)
    nan = {"seeds_needed": math.nan, "seeds_share": math.nan, "seeds_at_margin": math.nan}
    try:
        plan = intervals.seeds_to_settle(a, b, method=method, margin=margin, ci=ci,
                                         design=c.design, resample=c.resample,
                                         **kwargs_at(c, rho))
    except ValueError:
        return nan

    def count(n):  # undecided now: more than now
        return math.nan if n is None else float(max(n, plan["seeds_now"] + 1))

    return {"seeds_needed": count(plan["seeds"]), "seeds_share": plan["share"],
            "seeds_at_margin": count(plan["at_margin"])}
