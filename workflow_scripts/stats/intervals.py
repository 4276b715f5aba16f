"""One front for the two interval methods the stats stages use.

- "calibrated" (stats/calibrated.py, the default): keeps its nominal coverage with 3 seeds.
- "multibootstrap" (stats/multibootstrap.py): the MultiBERTs paper's method, the reference.

Each function returns a flat row: the configured method's estimate, interval and p-value
(`interval` names the method),
plus the Multi-Bootstrap's interval and p-value as `mb_*` columns, so that every table can
show both side by side (they coincide when the method is "multibootstrap"). The Multi-Bootstrap
is always percentile, with the given nboot, seed and threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import multibootstrap as mb
from workflow_scripts.stats import seed_planning

INTERVALS = ("calibrated", "multibootstrap")
JOINT, SEEDS_ONLY, EXAMPLES_ONLY = ("seeds", "examples"), ("seeds",), ("examples",)


def alpha_of(ci: float) -> float:
    """The one-sided level of a two-sided interval at level ci: (1 - ci) / 2. Every test the
    stages and the claims decide at a CI's level takes its alpha from here."""
    return (1 - float(ci)) / 2


def ci_of(alpha: float) -> float:
    """The two-sided interval level whose one-sided level is alpha (alpha_of's inverse)."""
    return 1 - 2 * float(alpha)


def axes_for(*n_resampled_seeds: int) -> list[tuple[str, ...]]:
    """The resampling schemes possible for arms whose random-seed sides have these seed counts:
    joint, then the two one-axis ablations; examples only when a side has one seed."""
    if min(n_resampled_seeds) >= 2:
        return [JOINT, SEEDS_ONLY, EXAMPLES_ONLY]
    return [EXAMPLES_ONLY]


def _check(method: str) -> None:
    if method not in INTERVALS:
        raise ValueError(f"unknown interval method {method!r}; expected one of {INTERVALS}")


def _row(r, ref, nboot: int) -> dict[str, Any]:
    row = {"estimate": r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high,
           "p_value": r.p_value, "interval": r.method if r.method == cal.METHOD else
           "multibootstrap", "design": r.design, "resample": ",".join(r.resample), "ci": r.ci,
           "mb_ci_low": ref.ci_low, "mb_ci_high": ref.ci_high, "mb_p_value": ref.p_value,
           "nboot": nboot}
    if r.alternative is not None:
        row.update(alternative=r.alternative, threshold=r.threshold)
    return row


def mean(scores, *, method: str, ci: float, resample: Sequence[str], nboot: int, seed: int,
         threads: int | None = None) -> dict[str, Any]:
    """Interval of the mean score (inputs as multibootstrap.bootstrap_mean's)."""
    _check(method)
    ref = mb.bootstrap_mean(scores, nboot=nboot, ci=ci, seed=seed, resample=resample,
                            threads=threads)
    r = cal.mean_interval(scores, ci=ci, resample=resample) if method == "calibrated" else ref
    return _row(r, ref, nboot)


def compare(a, b, *, method: str, design: str, alternative: str, ci: float,
            resample: Sequence[str], nboot: int, seed: int, threads: int | None = None,
            borrowed: Sequence = (), **seeds) -> dict[str, Any]:
    """Test of delta = metric(b) - metric(a) (inputs as multibootstrap.compare's). borrowed:
    a one-seed arm's seed terms (stats/borrowed_seeds.py), for the calibrated interval; the
    Multi-Bootstrap beside it stays conditional on that one seed."""
    _check(method)
    ref = mb.compare(a, b, design=design, alternative=alternative, ci=ci, resample=resample,
                     nboot=nboot, seed=seed, threads=threads, **seeds)
    r = (cal.compare(a, b, design=design, alternative=alternative, ci=ci, resample=resample,
                     borrowed=borrowed, **seeds) if method == "calibrated" else ref)
    return _row(r, ref, nboot)


def equivalence(a, b, *, method: str, epsilon: float, design: str, alpha: float,
                resample: Sequence[str], nboot: int, seed: int, threads: int | None = None,
                borrowed: Sequence = (), **seeds) -> dict[str, Any]:
    """TOST |delta| < epsilon with the configured method: epsilon, equivalence_p, equivalent;
    borrowed as compare's (calibrated only)."""
    _check(method)
    if method == "calibrated":
        r = cal.equivalence(a, b, epsilon=epsilon, design=design, alpha=alpha,
                            resample=resample, borrowed=borrowed, **seeds)
    else:
        r = mb.equivalence(a, b, epsilon=epsilon, design=design, alpha=alpha, nboot=nboot,
                           seed=seed, resample=resample, threads=threads, **seeds)
    return {"epsilon": r.epsilon, "equivalence_p": r.p_value, "equivalent": r.equivalent}


def seeds_needed(scores, *, method: str, **targets) -> dict[str, Any]:
    """Seeds for a half-width or a delta (seed_planning.seeds_needed, the calibrated t)
    whatever the interval method, as seeds_to_settle plans the claims: the stats table and
    claims.md plan with one statistic. The Multi-Bootstrap's own planner
    (multibootstrap.seeds_needed, normal quantiles) stays in its library: at 3 seeds its
    normal quantiles promise too few seeds."""
    _check(method)
    return seed_planning.seeds_needed(scores, **targets)


def seeds_to_settle(a, b, *, method: str, margin: float, ci: float, design: str,
                    resample: Sequence[str], borrowed: Sequence = (), **seeds
                    ) -> dict[str, Any]:
    """The seed plan of a test of b - a whose estimate lies `margin` from its threshold
    (seed_planning.seeds_for_assurance at level ci): seeds (None: not reached), share,
    at_margin, and seeds_now (the most seeds a term has now). Both methods plan with the
    calibrated statistic's variance terms: the Multi-Bootstrap has no planner for a test
    (its seeds_needed sizes a half-width or a delta with normal quantiles)."""
    _check(method)
    r = cal.compare(a, b, design=design, ci=ci, resample=resample, borrowed=borrowed,
                    **seeds)
    assured = seed_planning.seeds_for_assurance(r.terms, margin, ci)
    return {"seeds": assured.seeds, "share": assured.share, "at_margin": assured.at_margin,
            "seeds_now": max((t.seeds for t in r.terms), default=0)}
