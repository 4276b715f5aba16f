"""The relative latency ladder of one profiling run, free of the machine's drift.

Each round times every depth once, close together in time, so a round is a block: the
machine's speed in it multiplies every depth alike. With t[round, depth] the time of a
visit's timed calls (their median), a robust two-way fit (Tukey's median polish)

    log t[r, d] = alpha_r + beta_d + e[r, d],      beta_ref = 0

separates the machine's speed per round (alpha_r: the log time of the reference depth in
round r) from the ladder (Q_d = exp(beta_d) = t_d / t_ref, the *relative ladder*). Drift that
scales every call alike (a CPU running slower at times, a shared host) moves alpha only.
CIs resample whole rounds, all depths together, so Q's CI and the CI of each paired
increment between neighbouring depths keep the within-round pairing. The fit on each half
of the run (by time) says whether Q itself moved; drift diagnostics describe alpha (its
range, its trend over time) and whether the residuals follow alpha (they do when the drift
is additive rather than proportional: a fixed delay weighs more on a fast model).

numpy only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def round_matrix(calls: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t [rounds, depths] in seconds: the median of each visit's timed calls, depths,
    each round's start time in seconds) from the timed forward calls of one run."""
    t = calls.pivot_table(index="round", columns="depth", values="seconds", aggfunc="median")
    if t.isna().any().any():
        r, d = np.argwhere(t.isna().to_numpy())[0]
        raise ValueError(f"run {calls['run'].iloc[0]}: round {t.index[r]} has no timed call of "
                         f"depth {t.columns[d]}: every round must time every depth")
    start = (calls.groupby("round")["start_s"].min().reindex(t.index).to_numpy(float)
             if "start_s" in calls else np.arange(len(t), dtype=float))
    return t.to_numpy(float), t.columns.to_numpy(), start


def median_polish(y: np.ndarray, iters: int = 20, tol: float = 1e-10):
    """Tukey's median polish of y [..., R, D] (leading axes: independent tables):
    (overall [...], row [..., R], col [..., D], residual [..., R, D]) with
    y = overall + row + col + residual and the row and column effects' medians zero."""
    res = np.array(y, dtype=float)
    overall = np.zeros(res.shape[:-2])
    row = np.zeros(res.shape[:-1])
    col = np.zeros(res.shape[:-2] + res.shape[-1:])
    for _ in range(iters):
        rm = np.median(res, axis=-1)
        res -= rm[..., None]
        row += rm
        m = np.median(col, axis=-1)
        col -= m[..., None]
        overall += m
        cm = np.median(res, axis=-2)
        res -= cm[..., None, :]
        col += cm
        m = np.median(row, axis=-1)
        row -= m[..., None]
        overall += m
        if np.max(np.abs(rm), initial=0) < tol and np.max(np.abs(cm), initial=0) < tol:
            break
    return overall, row, col, res


def fit(t: np.ndarray, ref: int) -> dict:
    """The two-way fit of t [R, D] (seconds) with depth column `ref` as the reference:
    log_q [D], alpha [R] (log seconds of the reference depth per round), residuals."""
    overall, row, col, res = median_polish(np.log(t))
    return {"log_q": col - col[..., [ref]], "alpha": overall + row + col[ref], "resid": res}


def bootstrap_log_q(t: np.ndarray, ref: int, *, nboot: int, seed: int) -> np.ndarray:
    """log Q [nboot, D] refitted on rounds resampled with replacement (whole rounds: every
    depth of a drawn round comes along)."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(t), size=(nboot, len(t)))
    _, _, col, _ = median_polish(np.log(t)[draws])
    return col - col[:, [ref]]


def reference_index(depths, reference_depth) -> int:
    """Column of the reference depth: `reference_depth`, or the shallowest (None)."""
    depths = [int(d) for d in depths]
    if reference_depth is None:
        return int(np.argmin(depths))
    if int(reference_depth) not in depths:
        raise ValueError(f"config key latency.reference_depth: {reference_depth} is not one of "
                         f"the profiled depths {depths}")
    return depths.index(int(reference_depth))


def half_widths(t: np.ndarray, ref: int, *, nboot: int, level: float, seed: int) -> np.ndarray:
    """Per depth, the half-width of Q's CI over Q (as `relative_ladder` gives them, with
    the same arguments): the precision a run reached, and what its stopping rule reads."""
    f = fit(t, ref)
    lo, hi = _interval(bootstrap_log_q(t, ref, nboot=nboot, seed=seed), level)
    return (np.exp(hi) - np.exp(lo)) / 2 / np.exp(f["log_q"])


def canonical_ci(calls: pd.DataFrame, runs, reference_depth, *, nboot: int, level: float,
                 seed: int) -> tuple[np.ndarray, np.ndarray]:
    """CI per depth of the canonical ladder's Q (the median over `runs` of their Q) from
    the timed forward `calls`: runs resampled, then whole rounds within each
    (`canonical_samples`, which the latency claims read too)."""
    return _interval(canonical_samples(calls, runs, reference_depth, nboot=nboot,
                                       seed=seed)[2], level)


def canonical_samples(calls: pd.DataFrame, runs, reference_depth, *, nboot: int,
                      seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(depths [D], the canonical ladder's Q [D]: per depth the median over `runs` of each
    run's Q from its two-way fit over rounds x every depth, as the summary's canonical
    ladder; its bootstrap samples [nboot, D]: runs resampled, then whole rounds within
    each) from the timed forward `calls`."""
    q, boot, depths = [], [], None
    for i, r in enumerate(runs):
        t, depths, _ = round_matrix(calls[calls["run"] == r])
        ref = reference_index(depths, reference_depth)
        q.append(fit(t, ref)["log_q"])
        boot.append(bootstrap_log_q(t, ref, nboot=nboot, seed=seed + 7919 * i))
    boot = np.exp(np.stack(boot))  # [runs, nboot, D]
    rng = np.random.default_rng(seed)
    picked = rng.integers(len(runs), size=(nboot, len(runs)))
    which = rng.integers(nboot, size=(nboot, len(runs)))
    return (np.asarray(depths), np.median(np.exp(np.stack(q)), axis=0),
            np.median(boot[picked, which], axis=1))


def _interval(samples: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    a = (1 - level) / 2
    return np.quantile(samples, a, axis=0), np.quantile(samples, 1 - a, axis=0)


def relative_ladder(t: np.ndarray, ref: int, *, nboot: int, level: float, seed: int) -> dict:
    """Q per depth with its CI, the CI of each paired increment log(Q[i+1] / Q[i]), and the
    per-call spread of the fit's residuals (`paired_resid_iqr`, log units: about a
    relative spread)."""
    f = fit(t, ref)
    boot = bootstrap_log_q(t, ref, nboot=nboot, seed=seed)
    lo, hi = _interval(boot, level)
    step_lo, step_hi = _interval(np.diff(boot, axis=1), level)
    return {"q": np.exp(f["log_q"]), "q_ci_low": np.exp(lo), "q_ci_high": np.exp(hi),
            "step": np.diff(f["log_q"]), "step_ci_low": step_lo, "step_ci_high": step_hi,
            "resid_iqr": paired_resid_iqr(f["resid"], ref), "alpha": f["alpha"],
            "resid": f["resid"]}


def paired_resid_iqr(resid: np.ndarray, ref: int) -> float:
    """The noise of one call left after the round's speed is taken out: the IQR of
    e[r, d] - e[r, ref] over rounds and the other depths, over sqrt(2) (two calls). Not the
    plain IQR of e: median polish sets one residual per round to 0 when D is odd, which
    would hide a third of the noise at 3 depths."""
    if resid.shape[1] < 2:
        return 0.0
    paired = np.delete(resid, ref, axis=1) - resid[:, [ref]]
    return float(np.subtract(*np.quantile(paired, [0.75, 0.25])) / np.sqrt(2))


def halves(t: np.ndarray, ref: int, *, nboot: int, level: float, seed: int) -> list[dict]:
    """The relative ladder of the first and of the second half of the rounds (by time)."""
    k = len(t) // 2
    return [relative_ladder(part, ref, nboot=nboot, level=level, seed=seed + i)
            for i, part in enumerate((t[:k], t[k:]))]


def drift(alpha: np.ndarray, resid: np.ndarray, start_s: np.ndarray) -> dict:
    """How the machine's speed moved during the run: alpha's range between its 5th and 95th
    percentiles and from its minimum to its maximum (as ratios - 1), its least-squares trend
    over the run (relative change per minute and over the whole run), and per depth the
    correlation of the fit's residuals with alpha (near 0 for proportional drift)."""
    q5, q95 = np.quantile(alpha, [0.05, 0.95])
    minutes = (start_s - start_s[0]) / 60.0
    span = float(minutes[-1] - minutes[0]) if len(minutes) > 1 else 0.0
    slope = float(np.polyfit(minutes, alpha, 1)[0]) if span > 0 else float("nan")
    corr = []
    for e in resid.T:
        ok = np.std(e) > 0 and np.std(alpha) > 0
        corr.append(float(np.corrcoef(alpha, e)[0, 1]) if ok else float("nan"))
    return {"drift_range": float(np.expm1(q95 - q5)),
            "drift_full_range": float(np.expm1(alpha.max() - alpha.min())),
            "drift_per_min": float(np.expm1(slope)), "drift_over_run": float(
                np.expm1(slope * span)) if np.isfinite(slope) else float("nan"),
            "minutes": span, "resid_alpha_corr": np.array(corr)}


def switch_cost(calls: pd.DataFrame) -> list[float]:
    """Per position after a switch, the median over visits of (that call / the visit's last
    call) - 1: what switching to a depth costs the calls right after it, measured."""
    if "position" not in calls or calls["position"].nunique() < 2:
        return []
    key = ["depth", "round"]
    last = calls.loc[calls.groupby(key)["position"].idxmax()].set_index(key)["seconds"]
    ratio = calls["seconds"].to_numpy(float) / last.reindex(
        pd.MultiIndex.from_frame(calls[key])).to_numpy(float)
    med = pd.Series(ratio).groupby(calls["position"].to_numpy()).median()
    return [float(x - 1) for x in med.to_numpy()]
