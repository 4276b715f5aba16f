"""The shape checks of one latency ladder (numpy only): monotone, linear, constant slope,
leave one out, timers agree; each returns {"pass", "why", "value"}, "pass" None where the
ladder has too few depths for it. Their limits are `Thresholds` (config keys
latency.checks.*). coherence.py says what each check bounds and why, and combines them into
a run's verdict.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

# Every check; a run is coherent when none of GATES fails. `precise` (the run's CIs of Q
# reached latency.target_half_width) and `absolute_stable` are reported, not gated: a run
# that stopped at a cap is used with its wider CI.
CHECKS = ("monotone", "linear", "constant_slope", "leave_one_out", "timers_agree",
          "relative_stable", "precise", "absolute_stable")
GATES = CHECKS[:-2]


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The checks' limits: config keys latency.checks.* (config/README.md says what each
    bounds). `Thresholds.defaults()`: the schema's defaults."""

    intercept_floor: float  # a >= -intercept_floor * shallowest Q
    max_residual: float  # |residual| / Q, every depth
    max_slope_ratio: float  # largest / smallest per-layer increment
    max_loo_error: float  # |prediction - Q| / Q, every depth
    timer_slack: float  # wall >= (1 - slack) * reference timer
    max_timer_ratio_spread: float  # max / min over depths of wall / reference
    target_half_width: float  # precise: CI half-width / Q, every depth (latency.*)
    split_half_tolerance: float  # halves agree within this relative difference of Q
    max_q_run_deviation: float  # |Q / reference Q - 1|, every depth
    max_drift_range: float  # exp(alpha's 95th - 5th percentile) - 1
    max_iqr_ratio: float  # IQR / median of the raw calls, every depth (strictly below)
    max_run_deviation: float  # |raw p50 / reference p50 - 1|, every depth

    @classmethod
    def of(cls, settings) -> Thresholds:
        """From settings that hold every threshold as a field (LatencySummary)."""
        return cls(**{f.name: getattr(settings, f.name) for f in dataclasses.fields(cls)})

    @classmethod
    @functools.cache
    def defaults(cls) -> Thresholds:
        from workflow_scripts.core.settings import LatencySummary

        return cls.of(LatencySummary.from_json("{}"))


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


def check_result(ok, why="", **values) -> dict:
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


def not_applicable(why: str) -> dict:
    return {"pass": None, "why": "", "value": {"not_applicable": why}}


# ---------------------------------------------------------------------------------------
# The checks of one run's ladder (`y`: the relative ladder Q, or any ladder in one unit)
# ---------------------------------------------------------------------------------------
def check_monotone(depths, y, step_low=None, step_high=None, th: Thresholds | None = None):
    """`step_low`/`step_high`: the CI of each increment between neighbouring depths (of log
    Q, from a bootstrap of whole rounds: paired within rounds), None where not measured."""
    n, y = np.asarray(depths, float), np.asarray(y, float)
    if len(n) < 2:
        return not_applicable("needs 2 depths")
    steps = np.diff(y)
    rising = bool(np.all(steps > 0))
    low = (np.full(len(steps), np.nan) if step_low is None
           else np.asarray(step_low, float))
    separated = bool(np.all(low > 0)) if step_low is not None else True
    why = []
    if not rising:
        i = int(np.argmin(steps))
        why.append(f"the ladder does not rise from depth {n[i]:g} to {n[i + 1]:g} "
                   f"({y[i]:.4g} -> {y[i + 1]:.4g})")
    if not separated:
        i = int(np.nanargmin(low))
        why.append(f"the CI of the paired increment from depth {n[i]:g} to {n[i + 1]:g} "
                   f"reaches {np.expm1(low[i]):+.1%} (not above 0)")
    return check_result(rising and separated, "; ".join(why), steps=steps,
                   step_ci_low=None if step_low is None else np.expm1(low),
                   step_ci_high=None if step_high is None else np.expm1(np.asarray(
                       step_high, float)))


def check_linear(depths, y, th: Thresholds | None = None):
    th = th or Thresholds.defaults()
    n, y = np.asarray(depths, float), np.asarray(y, float)
    if len(n) < 2:
        return not_applicable("needs 2 depths")
    a, b, r2 = linear_fit(n, y)
    resid = (y - (a + b * n)) / y
    floor = -th.intercept_floor * y[np.argmin(n)]
    why = []
    if not b > 0:
        why.append(f"slope b = {b:.3g} per layer is not positive")
    if a < floor:
        why.append(f"intercept a = {a:.3g} is below {floor:.3g} "
                   f"(-{th.intercept_floor:.0%} of the shallowest depth's value)")
    worst = int(np.argmax(np.abs(resid)))
    if abs(resid[worst]) > th.max_residual:
        why.append(f"the residual at depth {n[worst]:g} is {resid[worst]:+.0%} of its value "
                   f"(limit {th.max_residual:.0%})")
    return check_result(not why, "; ".join(why), a=a, b_per_layer=b, r2=r2,
                   max_abs_rel_residual=float(np.max(np.abs(resid))), rel_residuals=resid)


def check_constant_slope(depths, y, th: Thresholds | None = None):
    th = th or Thresholds.defaults()
    n, y = np.asarray(depths, float), np.asarray(y, float)
    if len(n) < 3:
        return not_applicable("needs 3 depths")
    inc = np.diff(y) / np.diff(n)
    if np.any(inc <= 0):
        i = int(np.argmin(inc))
        return check_result(False, f"the per-layer increment from depth {n[i]:g} to {n[i + 1]:g} "
                       f"is {inc[i]:.3g} (not positive)", increments=inc, ratio=None)
    ratio = float(inc.max() / inc.min())
    ok = ratio <= th.max_slope_ratio
    return check_result(ok, f"per-layer increments differ {ratio:.2f}x "
                   f"(limit {th.max_slope_ratio}x): {np.round(inc, 4).tolist()}",
                   increments=inc, ratio=ratio)


def check_leave_one_out(depths, y, th: Thresholds | None = None):
    th = th or Thresholds.defaults()
    n, y = np.asarray(depths, float), np.asarray(y, float)
    if len(n) < 3:
        return not_applicable("needs 3 depths")
    err = np.empty(len(n))
    for i in range(len(n)):
        keep = np.arange(len(n)) != i
        b, a = np.polyfit(n[keep], y[keep], 1)
        err[i] = (a + b * n[i] - y[i]) / y[i]
    worst = int(np.argmax(np.abs(err)))
    ok = abs(err[worst]) <= th.max_loo_error
    return check_result(ok, f"a line through the other depths predicts depth {n[worst]:g} "
                   f"{err[worst]:+.0%} off its value (limit {th.max_loo_error:.0%})",
                   rel_errors=err, max_abs_rel_error=float(np.max(np.abs(err))))


def check_timers(depths, wall, reference, kind: str | None, th: Thresholds | None = None):
    """`wall` and `reference`: per-depth medians of the two timers (same unit)."""
    th = th or Thresholds.defaults()
    if kind is None or reference is None:
        return not_applicable("no second timer")
    w, r = np.asarray(wall, float), np.asarray(reference, float)
    if not np.all(np.isfinite(r)) or not np.all(r > 0):
        return not_applicable(f"{kind} timer missing")
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
    return check_result(not why, "; ".join(why), timer=kind, wall_over_reference=ratio,
                   spread=spread)
