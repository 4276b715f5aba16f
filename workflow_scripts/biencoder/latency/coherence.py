"""Latency coherence: is a run's depth ladder physically plausible? (numpy only)

A stack of identical encoder layers costs a fixed overhead plus the same time per layer,
so a profiling run's ladder must lie on a rising line, t = a + b * n. In the paper this
workflow reproduces, 3 of 5 runs on one machine under-reported the shallow models' p50 by
2-5x; R^2 alone does not catch that (a ladder whose shallowest point reads 3x low can still
give R^2 ~ 0.96), so every run is checked against several physical constraints, each
reported with its value.

The shape checks are scale-free and run on the run's *relative ladder* Q_d = t_d / t_ref
(relative.py: a two-way fit over rounds x depths, free of drift that scales every
call alike), so a machine that runs slower at times does not fail them:

  monotone        Q rises with depth, and the CI of every paired per-round increment
                  log(Q[i+1] / Q[i]) (whole rounds resampled) lies above 0
  linear          least squares Q = a + b*n: b > 0, a >= -5% of the shallowest Q, every
                  residual within 15% of its own Q
  constant_slope  the per-layer increments between neighbouring depths all positive,
                  max/min <= 1.5
  leave_one_out   a line fitted on the other depths predicts each depth within 20%
  timers_agree    wall >= the reference timer (CUDA events; on CPU the process CPU time
                  per thread), and wall/reference varies by at most 1.5x across depths
  relative_stable the ladder is consistent: the two halves of the run (by time) agree on
                  every Q (their CIs overlap, or they are within 2% of each other), and
                  every Q is within 5% of the runs' reference Q or its CI overlaps the
                  reference's (the median of the runs' CIs; see `verdicts`)

Precision is not a gate: a run adds rounds until its CIs are narrow enough or a cap stops
it (protocol.py), and a run that stopped at the cap is still used, with its wider CI.

  precise         (reported) every Q's CI half-width <= latency.target_half_width of Q;
                  its value holds the half-widths and the fit's residual IQR

and one more check that does not gate, since a shared or virtual machine fails it for reasons
that leave the relative ladder intact:

  absolute_stable the machine's speed (alpha) moved by at most 10% between its 5th and
                  95th percentile rounds, IQR/median of the raw calls < 0.10 at every
                  depth, and every depth's raw p50 within 10% of the runs' reference

Few depths: a check that needs more points than the ladder has is "not applicable"
(pass = None) and does not fail the run. monotone needs 2 depths, linear 2 (with 2 the
fit is exact: only b > 0 and the intercept floor bite), constant_slope and leave_one_out
3. With exactly 3 depths leave-one-out predicts the end points by extrapolating the line
through the other two, which bounds the difference of the two increments relative to the
shallow Q: the strictest check for a ladder with a small intercept (the CPU default).

The thresholds are config keys (latency.checks.*, config/schema.yaml); `Thresholds.defaults()`
holds the schema's defaults.

The canonical ladder is, per depth, the median over the coherent runs of their Q, times
the pooled p50 of the reference depth (summary.py). The shape checks themselves are in
shape.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from workflow_scripts.biencoder.latency.shape import (  # noqa: F401 (linear_fit, plain: API)
    CHECKS,
    GATES,
    Thresholds,
    check_constant_slope,
    check_leave_one_out,
    check_linear,
    check_monotone,
    check_result,
    check_timers,
    linear_fit,
    not_applicable,
    plain,
)


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


def _off_reference(n, y, reference, limit: float, what: str) -> tuple[np.ndarray | None, str]:
    if reference is None:
        return None, ""
    dev = y / np.asarray(reference, float) - 1
    j = int(np.argmax(np.abs(dev)))
    if abs(dev[j]) <= limit:
        return dev, ""
    return dev, (f"{what} at depth {n[j]:g} is {dev[j]:+.1%} off the runs' reference "
                 f"(limit {limit:.0%})")


def check_relative_stable(run: dict, reference=None, th: Thresholds | None = None,
                          reference_ci=None):
    """The relative ladder is consistent: both halves of the run agree and (with
    `reference`, the runs' reference Q, and `reference_ci`, its (low, high)) so does the
    run with the other runs. A difference counts only where the CIs are apart, as for
    the halves, so a wide CI (a noisy run that stopped at its cap) is not read as a
    disagreement."""
    th = th or Thresholds.defaults()
    n, q = np.asarray(run["depths"], float), np.asarray(run["q"], float)
    why = []
    lo1, hi1 = np.asarray(run["q1_ci_low"], float), np.asarray(run["q1_ci_high"], float)
    lo2, hi2 = np.asarray(run["q2_ci_low"], float), np.asarray(run["q2_ci_high"], float)
    gap = np.maximum(lo1, lo2) - np.minimum(hi1, hi2)  # > 0: the CIs do not overlap
    q1, q2 = np.asarray(run["q1"], float), np.asarray(run["q2"], float)
    # Apart only when the CIs do not overlap and Q moved by more than the tolerance: the CI
    # of a half is a bootstrap over few rounds, too narrow to judge a negligible difference.
    moved = np.where(np.abs(q2 / q1 - 1) > th.split_half_tolerance, gap, -np.inf)
    j = int(np.argmax(moved))
    if moved[j] > 0:
        why.append(f"the two halves of the run disagree at depth {n[j]:g}: Q {q1[j]:.4g} "
                   f"then {q2[j]:.4g} ({q2[j] / q1[j] - 1:+.1%}, CIs apart)")
    dev, msg = None, ""
    if reference is not None:
        ref = np.asarray(reference, float)
        lo, hi = (ref, ref) if reference_ci is None else (np.asarray(x, float)
                                                          for x in reference_ci)
        overlap = ((np.asarray(run["q_ci_low"], float) <= hi)
                   & (lo <= np.asarray(run["q_ci_high"], float)))
        # A depth whose CI overlaps the reference's agrees, however far its Q.
        dev, msg = _off_reference(n, q, np.where(overlap, q, ref), th.max_q_run_deviation,
                                  "Q")
        dev = q / ref - 1
    why += [msg] if msg else []
    return check_result(not why, "; ".join(why), halves_q_ratio=q2 / q1, halves_ci_gap=gap,
                        q_deviation_from_runs=dev, max_abs_q_deviation_from_runs=None
                        if dev is None else float(np.max(np.abs(dev))))


def check_precise(run: dict, th: Thresholds | None = None):
    """Reported, not a gate: every Q's CI half-width within the target, with the rounds
    the run used and why it stopped (where recorded)."""
    th = th or Thresholds.defaults()
    n, q = np.asarray(run["depths"], float), np.asarray(run["q"], float)
    half = (np.asarray(run["q_ci_high"], float) - np.asarray(run["q_ci_low"], float)) / 2 / q
    i = int(np.argmax(half))
    ok = half[i] <= th.target_half_width
    stop = run.get("stop_reason")
    why = (f"the CI of Q at depth {n[i]:g} is ±{half[i]:.1%} (target "
           f"±{th.target_half_width:.1%})" + (f"; stopped at {stop} after "
                                              f"{run.get('rounds')} rounds" if stop else ""))
    return check_result(ok, why, q_half_width=half, max_q_half_width=float(half.max()),
                        resid_iqr=run.get("resid_iqr"), rounds=run.get("rounds"),
                        stop_reason=stop)


def check_absolute_stable(run: dict, reference=None, th: Thresholds | None = None):
    """The absolute numbers are trustworthy too (not a gate): the machine's speed held
    (alpha's 5-95% range), the raw calls are tight (IQR/median) and, with `reference` (the
    runs' reference raw p50), the raw p50 agrees with the other runs'."""
    th = th or Thresholds.defaults()
    n, y = np.asarray(run["depths"], float), np.asarray(run["p50"], float)
    why = []
    rng = run.get("drift_range")
    if rng is not None and not rng <= th.max_drift_range:
        why.append(f"the machine's speed moved {rng:.1%} between its 5th and 95th percentile "
                   f"rounds (limit {th.max_drift_range:.0%})")
    spread = np.asarray(run["iqr"], float) / y
    i = int(np.argmax(spread))
    if not spread[i] < th.max_iqr_ratio:
        why.append(f"IQR/median of the calls is {spread[i]:.3f} at depth {n[i]:g} "
                   f"(limit {th.max_iqr_ratio})")
    dev, msg = _off_reference(n, y, reference, th.max_run_deviation, "raw p50")
    why += [msg] if msg else []
    return check_result(not why, "; ".join(why), drift_range=rng, iqr_over_median=spread,
                   max_iqr_over_median=float(spread.max()), deviation_from_runs=dev,
                   max_abs_deviation_from_runs=None if dev is None
                   else float(np.max(np.abs(dev))))


def check_run(run: dict, th: Thresholds | None = None, reference: dict | None = None) -> dict:
    """Every check of one run. `run`: depths and q (the relative ladder), and where
    measured step_ci_low/high, p50, iqr, the relative-stability fields (resid_iqr, q_ci_*,
    q1/q2 with their CIs), drift_range, timer_wall, timer_reference, timer_kind (arrays
    in increasing depth; step_ci_*: one per neighbouring pair). `reference`: the runs'
    reference {"q": ..., "q_ci": (low, high), "p50": ...}; rounds and stop_reason where
    recorded."""
    th = th or Thresholds.defaults()
    ref = reference or {}
    if np.any(np.diff(np.asarray(run["depths"], float)) <= 0):
        raise ValueError(f"run {run.get('run', '?')}: depths must be increasing: "
                         f"{list(run['depths'])}")

    def col(key):
        v = run.get(key)
        return None if v is None else np.asarray(v, float)

    depths, q = col("depths"), col("q")
    relative = {"q_ci_low", "q_ci_high", "q1", "q2"}
    return {
        "monotone": check_monotone(depths, q, col("step_ci_low"), col("step_ci_high"), th),
        "linear": check_linear(depths, q, th),
        "constant_slope": check_constant_slope(depths, q, th),
        "leave_one_out": check_leave_one_out(depths, q, th),
        "timers_agree": check_timers(depths, col("timer_wall"), col("timer_reference"),
                                     run.get("timer_kind"), th),
        "relative_stable": (check_relative_stable(run, ref.get("q"), th, ref.get("q_ci"))
                            if relative <= set(run) else not_applicable("no rounds fit")),
        "precise": (check_precise(run, th) if {"q_ci_low", "q_ci_high"} <= set(run)
                    else not_applicable("no CI of Q")),
        "absolute_stable": (check_absolute_stable(run, ref.get("p50"), th)
                            if {"p50", "iqr"} <= set(run)
                            else not_applicable("no per-call spread")),
    }


def failed(checks: dict, names=GATES) -> list[str]:
    return [name for name in names if checks[name]["pass"] is False]


def verdicts(runs: Sequence[dict], th: Thresholds | None = None) -> list[dict]:
    """Verdicts of several runs of one profiling.

    Two stages: first each run on its own (every check, without the cross-run parts); the
    runs' reference (Q and raw p50 per depth) is then the median over the runs that passed
    every gate at that stage (over all runs when none did), and relative_stable also
    requires every Q within `max_q_run_deviation` of it or the run's CI of Q to overlap the
    reference's (the median over the same runs of their CI bounds),
    absolute_stable every raw p50 within `max_run_deviation`. A robust reference matters:
    when most runs are anomalous, as 3 of 5 were in the paper, a plain median over all
    runs would be anomalous itself.
    With a single run the cross-run parts are not applicable.
    """
    th = th or Thresholds.defaults()
    first = [check_run(r, th) for r in runs]
    depths = [np.asarray(r["depths"], float) for r in runs]
    same_depths = all(np.array_equal(d, depths[0]) for d in depths)
    basis = [i for i, c in enumerate(first) if not failed(c)] or list(range(len(runs)))
    reference = None
    if same_depths and len(runs) > 1:
        def median(k):
            return np.median(np.stack([np.asarray(runs[i][k], float) for i in basis]), axis=0)

        keys = ("q", "p50", "q_ci_low", "q_ci_high")
        reference = {k: median(k) for k in keys if all(k in r for r in runs)}
        if {"q_ci_low", "q_ci_high"} <= set(reference):
            reference["q_ci"] = (reference.pop("q_ci_low"), reference.pop("q_ci_high"))
    out = []
    for i, run in enumerate(runs):
        checks = check_run(run, th, reference) if reference is not None else first[i]
        bad = failed(checks)
        out.append({"run": run.get("run", i), "coherent": not bad, "failed": bad,
                    "absolute_stable": checks["absolute_stable"]["pass"] is True,
                    "why": {name: checks[name]["why"] for name in failed(checks, CHECKS)},
                    "checks": checks})
    return out


def canonical_ladder(depths, q_by_run, coherent, ref_p50: float) -> tuple[np.ndarray, ...]:
    """Per depth, the median over the coherent runs of their Q, and that times `ref_p50`
    (the reference depth's pooled p50); NaN where no run is coherent.

    depths: [D]; q_by_run: [runs, D]; coherent: [runs] booleans.
    Returns (Q [D], p50 [D], number of runs used [D])."""
    q = np.asarray(q_by_run, float).reshape(-1, len(depths))
    keep = np.asarray(coherent, bool)
    if not keep.any():
        nan = np.full(len(depths), np.nan)
        return nan, nan.copy(), np.zeros(len(depths), int)
    med = np.median(q[keep], axis=0)
    return med, med * ref_p50, np.full(len(depths), int(keep.sum()))
