"""Latency coherence: is a per-depth p50 ladder physically plausible? (numpy + scipy only)

A stack of identical encoder layers costs a fixed overhead plus the same time per layer,
so a profiling run's per-depth medians must lie on a rising line, p50 = a + b * n. In the
paper this workflow reproduces, 3 of 5 runs on one machine under-reported the shallow
models' p50 by 2-5x; R^2 alone does not catch that (a ladder whose shallowest point reads
3x low can still give R^2 ~ 0.96), so every run is checked against several physical
constraints, each reported with its value:

  monotone        p50 rises with depth, and neighbouring depths' bootstrap CIs (of the
                  median, resampling whole rounds) do not overlap
  linear          least squares p50 = a + b*n: b > 0, a >= -5% of the shallowest p50,
                  every residual within 15% of its own p50
  constant_slope  the per-layer increments between neighbouring depths,
                  (p50[i+1] - p50[i]) / (n[i+1] - n[i]), all positive, max/min <= 1.5
  leave_one_out   a line fitted on the other depths predicts each depth within 20% of
                  its measured p50
  timers_agree    wall >= the reference timer (CUDA events; on CPU the process CPU time
                  per thread), and wall/reference varies by at most 1.5x across depths
  stable          IQR/median < 0.1 at every depth, and every depth's p50 within 10% of
                  the reference ladder of the runs (see `verdicts`)

Few depths: a check that needs more points than the ladder has is "not applicable"
(pass = None) and does not fail the run. monotone needs 2 depths, linear 2 (with 2 the
fit is exact: only b > 0 and the intercept floor bite), constant_slope and leave_one_out
3. With exactly 3 depths leave-one-out predicts the end points by extrapolating the line
through the other two, which bounds the difference of the two increments relative to the
shallow p50: the strictest check for a ladder with a small intercept (the CPU default).

The canonical ladder is, per depth, the median over the coherent runs of their p50.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

CHECKS = ("monotone", "linear", "constant_slope", "leave_one_out", "timers_agree", "stable")


@dataclasses.dataclass(frozen=True)
class Thresholds:
    intercept_floor: float = 0.05  # a >= -intercept_floor * shallowest p50
    max_residual: float = 0.15  # |residual| / p50, every depth
    max_slope_ratio: float = 1.5  # largest / smallest per-layer increment
    max_loo_error: float = 0.20  # |prediction - p50| / p50, every depth
    timer_slack: float = 0.02  # wall >= (1 - slack) * reference timer
    max_timer_ratio_spread: float = 1.5  # max / min over depths of wall / reference
    max_iqr_ratio: float = 0.10  # IQR / median, every depth (strictly below)
    max_run_deviation: float = 0.10  # |p50 / reference p50 - 1|, every depth


# ---------------------------------------------------------------------------------------
# Statistics of one (run, depth)
# ---------------------------------------------------------------------------------------
def bootstrap_median_ci(values, rounds, *, nboot: int = 2000, level: float = 0.95,
                        seed: int = 0) -> tuple[float, float]:
    """Percentile CI of the median of `values`, resampling whole rounds with replacement
    (calls within a round share the machine's state, so they are not independent)."""
    values = np.asarray(values, dtype=float)
    rounds = np.asarray(rounds)
    if values.size == 0:
        return float("nan"), float("nan")
    labels, inverse = np.unique(rounds, return_inverse=True)
    groups = [values[inverse == i] for i in range(len(labels))]
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(groups), size=(nboot, len(groups)))
    sizes = {len(g) for g in groups}
    if len(sizes) == 1:  # equal rounds: one vectorized gather
        mat = np.stack(groups)  # [rounds, calls]
        meds = np.median(mat[draws].reshape(nboot, -1), axis=1)
    else:
        meds = np.array([np.median(np.concatenate([groups[j] for j in row])) for row in draws])
    alpha = (1 - level) / 2
    lo, hi = np.quantile(meds, [alpha, 1 - alpha])
    return float(lo), float(hi)


# ---------------------------------------------------------------------------------------
# Line fits
# ---------------------------------------------------------------------------------------
def linear_fit(depths, p50) -> tuple[float, float, float]:
    """Least squares p50 = a + b * n: (a, b, R^2)."""
    n = np.asarray(depths, dtype=float)
    y = np.asarray(p50, dtype=float)
    b, a = np.polyfit(n, y, 1)
    ss_res = float(np.sum((y - (a + b * n)) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    return float(a), float(b), r2


def _result(ok, why="", **values) -> dict:
    ok = None if ok is None else bool(ok)
    return {"pass": ok, "why": why if ok is False else "",
            "value": {k: plain(v) for k, v in values.items()}}


def plain(v):
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, list | tuple):
        return [plain(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        return None if not np.isfinite(v) else round(v, 6)
    return v


def _na(why: str) -> dict:
    return {"pass": None, "why": "", "value": {"not_applicable": why}}


# ---------------------------------------------------------------------------------------
# The checks of one run's ladder
# ---------------------------------------------------------------------------------------
def check_monotone(depths, p50, ci_low=None, ci_high=None, th: Thresholds = Thresholds()):
    n, y = np.asarray(depths, float), np.asarray(p50, float)
    if len(n) < 2:
        return _na("needs 2 depths")
    steps = np.diff(y)
    rising = bool(np.all(steps > 0))
    if ci_low is None or ci_high is None:
        gaps = np.full(len(steps), np.nan)
        separated = True
    else:
        gaps = np.asarray(ci_low, float)[1:] - np.asarray(ci_high, float)[:-1]
        separated = bool(np.all(gaps > 0))
    why = []
    if not rising:
        i = int(np.argmin(steps))
        why.append(f"p50 does not rise from depth {n[i]:g} to {n[i + 1]:g} "
                   f"({y[i]:.3g} -> {y[i + 1]:.3g} ms)")
    if not separated:
        i = int(np.nanargmin(gaps))
        why.append(f"the CIs of depths {n[i]:g} and {n[i + 1]:g} overlap by {-gaps[i]:.3g} ms")
    return _result(rising and separated, "; ".join(why), p50_steps_ms=steps,
                   ci_gaps_ms=gaps)


def check_linear(depths, p50, th: Thresholds = Thresholds()):
    n, y = np.asarray(depths, float), np.asarray(p50, float)
    if len(n) < 2:
        return _na("needs 2 depths")
    a, b, r2 = linear_fit(n, y)
    resid = (y - (a + b * n)) / y
    floor = -th.intercept_floor * y[np.argmin(n)]
    why = []
    if not b > 0:
        why.append(f"slope b = {b:.3g} ms/layer is not positive")
    if a < floor:
        why.append(f"intercept a = {a:.3g} ms is below {floor:.3g} ms "
                   f"(-{th.intercept_floor:.0%} of the shallowest p50)")
    worst = int(np.argmax(np.abs(resid)))
    if abs(resid[worst]) > th.max_residual:
        why.append(f"the residual at depth {n[worst]:g} is {resid[worst]:+.0%} of its p50 "
                   f"(limit {th.max_residual:.0%})")
    return _result(not why, "; ".join(why), a_ms=a, b_ms_per_layer=b, r2=r2,
                   max_abs_rel_residual=float(np.max(np.abs(resid))), rel_residuals=resid)


def check_constant_slope(depths, p50, th: Thresholds = Thresholds()):
    n, y = np.asarray(depths, float), np.asarray(p50, float)
    if len(n) < 3:
        return _na("needs 3 depths")
    inc = np.diff(y) / np.diff(n)
    if np.any(inc <= 0):
        i = int(np.argmin(inc))
        return _result(False, f"the per-layer increment from depth {n[i]:g} to {n[i + 1]:g} "
                       f"is {inc[i]:.3g} ms (not positive)", increments_ms=inc, ratio=None)
    ratio = float(inc.max() / inc.min())
    ok = ratio <= th.max_slope_ratio
    return _result(ok, f"per-layer increments differ {ratio:.2f}x "
                   f"(limit {th.max_slope_ratio}x): {np.round(inc, 3).tolist()} ms",
                   increments_ms=inc, ratio=ratio)


def check_leave_one_out(depths, p50, th: Thresholds = Thresholds()):
    n, y = np.asarray(depths, float), np.asarray(p50, float)
    if len(n) < 3:
        return _na("needs 3 depths")
    err = np.empty(len(n))
    for i in range(len(n)):
        keep = np.arange(len(n)) != i
        b, a = np.polyfit(n[keep], y[keep], 1)
        err[i] = (a + b * n[i] - y[i]) / y[i]
    worst = int(np.argmax(np.abs(err)))
    ok = abs(err[worst]) <= th.max_loo_error
    return _result(ok, f"a line through the other depths predicts depth {n[worst]:g} "
                   f"{err[worst]:+.0%} off its p50 (limit {th.max_loo_error:.0%})",
                   rel_errors=err, max_abs_rel_error=float(np.max(np.abs(err))))


def check_timers(depths, wall, reference, kind: str | None, th: Thresholds = Thresholds()):
    """`wall` and `reference`: per-depth medians of the two timers (same unit)."""
    if kind is None or reference is None:
        return _na("no second timer")
    w, r = np.asarray(wall, float), np.asarray(reference, float)
    if not np.all(np.isfinite(r)) or not np.all(r > 0):
        return _na(f"{kind} timer missing")
    n = np.asarray(depths, float)
    ratio = w / r
    why = []
    low = ratio < 1 - th.timer_slack
    if np.any(low):
        i = int(np.argmin(ratio))
        why.append(f"wall is below the {kind} time at depth {n[i]:g} "
                   f"(wall/{kind} = {ratio[i]:.3f})")
    spread = float(ratio.max() / ratio.min())
    if spread > th.max_timer_ratio_spread:
        why.append(f"wall/{kind} varies {spread:.2f}x across depths "
                   f"(limit {th.max_timer_ratio_spread}x)")
    return _result(not why, "; ".join(why), timer=kind, wall_over_reference=ratio,
                   spread=spread)


def check_stable(depths, p50, iqr, reference=None, th: Thresholds = Thresholds()):
    """IQR/median at every depth; with `reference` (per-depth p50 of the runs' reference
    ladder, None with a single run) also each depth's deviation from it."""
    n, y = np.asarray(depths, float), np.asarray(p50, float)
    spread = np.asarray(iqr, float) / y
    why = []
    i = int(np.argmax(spread))
    if not spread[i] < th.max_iqr_ratio:
        why.append(f"IQR/median is {spread[i]:.3f} at depth {n[i]:g} "
                   f"(limit {th.max_iqr_ratio})")
    dev = None
    if reference is not None:
        dev = y / np.asarray(reference, float) - 1
        j = int(np.argmax(np.abs(dev)))
        if abs(dev[j]) > th.max_run_deviation:
            why.append(f"p50 at depth {n[j]:g} is {dev[j]:+.0%} off the runs' reference "
                       f"ladder (limit {th.max_run_deviation:.0%})")
    return _result(not why, "; ".join(why), iqr_over_median=spread,
                   max_iqr_over_median=float(spread.max()),
                   deviation_from_runs=dev,
                   max_abs_deviation_from_runs=None if dev is None
                   else float(np.max(np.abs(dev))))


def check_run(run: dict, th: Thresholds = Thresholds(), reference=None) -> dict:
    """Every check of one run. `run`: depths, p50 and optionally ci_low, ci_high, iqr,
    timer_wall, timer_reference, timer_kind (per-depth arrays sorted by depth, one unit)."""
    order = np.argsort(run["depths"])

    def col(key):
        v = run.get(key)
        return None if v is None else np.asarray(v, float)[order]

    depths, p50 = col("depths"), col("p50")
    iqr = col("iqr")
    return {
        "monotone": check_monotone(depths, p50, col("ci_low"), col("ci_high"), th),
        "linear": check_linear(depths, p50, th),
        "constant_slope": check_constant_slope(depths, p50, th),
        "leave_one_out": check_leave_one_out(depths, p50, th),
        "timers_agree": check_timers(depths, col("timer_wall"), col("timer_reference"),
                                     run.get("timer_kind"), th),
        "stable": (check_stable(depths, p50, iqr, reference, th) if iqr is not None
                   else _na("no IQR")),
    }


def failed(checks: dict) -> list[str]:
    return [name for name in CHECKS if checks[name]["pass"] is False]


def verdicts(runs: Sequence[dict], th: Thresholds = Thresholds()) -> list[dict]:
    """Verdicts of several runs of one profiling.

    Two stages: first each run on its own (every check, with `stable` on IQR only); the
    runs' reference ladder is then the per-depth median over the runs that passed that
    stage (over all runs when none did), and `stable` also requires every depth within
    `max_run_deviation` of it. A robust reference matters: when most runs are anomalous,
    as 3 of 5 were in the paper, a plain median over all runs would be anomalous itself.
    With a single run the cross-run part is not applicable.
    """
    first = [check_run(r, th) for r in runs]
    depths = [np.sort(np.asarray(r["depths"], float)) for r in runs]
    p50 = [np.asarray(r["p50"], float)[np.argsort(r["depths"])] for r in runs]
    same_depths = all(np.array_equal(d, depths[0]) for d in depths)
    out = []
    ok_first = [i for i, c in enumerate(first) if not failed(c)]
    basis = ok_first or list(range(len(runs)))
    reference = np.median(np.stack([p50[i] for i in basis]), axis=0) if same_depths else None
    for i, run in enumerate(runs):
        checks = (check_run(run, th, reference) if len(runs) > 1 and reference is not None
                  else first[i])
        bad = failed(checks)
        out.append({"run": run.get("run", i), "coherent": not bad, "failed": bad,
                    "why": {name: checks[name]["why"] for name in bad}, "checks": checks})
    return out


def canonical_ladder(depths, p50_by_run, coherent) -> tuple[np.ndarray, np.ndarray]:
    """Per depth, the median over the coherent runs of their p50 (NaN where none is).

    depths: [D]; p50_by_run: [runs, D]; coherent: [runs] booleans.
    Returns (p50 [D], number of runs used [D])."""
    p = np.asarray(p50_by_run, float).reshape(-1, len(depths))
    keep = np.asarray(coherent, bool)
    if not keep.any():
        return np.full(len(depths), np.nan), np.zeros(len(depths), int)
    return np.median(p[keep], axis=0), np.full(len(depths), int(keep.sum()))
