"""Latency claims, read from the profiling runs (results/<study>/latency/run<r>.parquet) and the
coherence document: the ratio of two depths on the canonical ladder, the very ratio of
RESULTS.md's latency table (each depth's median over the coherent runs of their relative
ladder Q from the fit over every profiled depth, which the drift of the machine leaves alone:
biencoder/latency/relative.canonical_samples, as the summary's), with a bootstrap over
coherent runs and, within each, whole rounds (every round times every depth, so rounds pair
the depths); and whether the canonical ladder is coherent. A ratio from runs on a busy
machine (the summary's note) says so.

Precision does not gate: a run that stopped at its cap with a wide CI is used, and its
width reaches the claim through the bootstrap, so the claim is inconclusive only when the
interval straddles the threshold. When no run is coherent, the runs that pass the shape
gates (every gate but relative_stable: their halves or the runs disagree) decide, with a
caveat; when none passes them the claim is inconclusive.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from workflow_scripts.biencoder.latency import coherence as coh
from workflow_scripts.biencoder.latency import relative as rel
from workflow_scripts.claims.data import Data, missing_depths
from workflow_scripts.claims.spec import Member

SHAPE_CHECKS = ("monotone", "linear", "constant_slope", "leave_one_out")
SHAPE_GATES = (*SHAPE_CHECKS, "timers_agree")


def usable_runs(doc: dict) -> tuple[list[int], str]:
    """(the runs a latency claim uses, a caveat): the coherent runs, else the runs that
    pass the shape gates."""
    if doc.get("coherent_runs"):
        return list(doc["coherent_runs"]), ""
    shaped = [r["run"] for r in doc.get("runs", []) if not set(r["failed"]) & set(SHAPE_GATES)]
    return shaped, ("no run is coherent (halves or runs disagree); these pass the shape gates"
                    if shaped else "")


def precision_caveat(doc: dict, runs) -> str:
    """Each used run's widest CI half-width of Q, and which runs stopped at a cap."""
    prec = {r["run"]: r.get("precision") or {} for r in doc.get("runs", [])}
    widths = [f"run {r} ±{prec[r]['max_half_width']:.1%}" for r in runs
              if prec.get(r, {}).get("max_half_width") is not None]
    capped = [f"run {r} ({prec[r]['stop_reason']})" for r in runs
              if prec.get(r, {}).get("stop_reason") not in (None, "target")]
    out = ("widest CI of Q: " + ", ".join(widths)) if widths else ""
    if capped:
        out += ("; " if out else "") + ("stopped at a cap before the target precision, used "
                                        "with its wider CI: " + ", ".join(capped))
    return out

def decide_latency(m: Member, data: Data, ci: float, nboot: int, seed: int) -> dict:
    """A latency member's estimate, interval and p-values, or its coherence verdict."""
    doc = data.coherence
    wanted = data.latency_depths if m.estimate == "latency_coherent" else (m.a[0], m.b[0])
    if (err := missing_depths(data, wanted)) is not None:
        raise err
    row = {"interval": "bootstrap", "design": "coherent runs x rounds", "resample": "runs,rounds",
           "ci": ci, "caveats": "", "mb_ci_low": math.nan, "mb_ci_high": math.nan,
           "estimate": math.nan, "ci_low": math.nan, "ci_high": math.nan,
           "p_support": math.nan, "p_refute": math.nan}
    if m.estimate == "latency_coherent":
        return {**row, **coherence_verdict(doc)}
    runs, caveat = usable_runs(doc)
    if not runs:
        return {**row, "note": "no latency run passes the shape gates: the ladder was not "
                               "measured reliably"}
    est, lo, hi, samples = latency_ratio(data.latency_calls, runs, m.a[0], m.b[0],
                                         reference_depth=doc.get("reference_depth"), ci=ci,
                                         nboot=nboot, seed=seed)
    ge = (np.sum(samples >= m.threshold) + 1) / (len(samples) + 1)
    le = (np.sum(samples <= m.threshold) + 1) / (len(samples) + 1)
    p_g, p_l = le, ge  # H0 ratio <= t is rejected when few samples lie at or below t
    sup, ref = (p_g, p_l) if m.test == "greater" else (p_l, p_g)
    if m.test == "consistent":
        sup, ref = math.nan, min(p_g, p_l)
    return {**row, "estimate": est, "ci_low": lo, "ci_high": hi, "p_support": sup,
            "p_refute": ref, "caveats": "; ".join(x for x in (
                f"{len(runs)} {'coherent ' * (not caveat)}run(s) on this machine", caveat,
                busy_caveat(doc, runs), precision_caveat(doc, runs)) if x)}


def busy_caveat(doc: dict, runs) -> str:
    """The used runs the summary found on a busy machine (its note, as RESULTS.md and
    pareto.png show it)."""
    busy = [r["run"] for r in doc.get("runs", [])
            if r["run"] in runs and str(r.get("notes", "")).startswith("the machine was busy")]
    if not busy:
        return ""
    return (f"the machine was busy during run(s) {', '.join(map(str, busy))} (other processes "
            "took CPU time: RESULTS.md's latency notes), which slows the calls unevenly; rerun "
            "on a quiet machine before relying on the ratio")


def latency_ratio(calls: pd.DataFrame, runs, depth_a: int, depth_b: int, *,
                  reference_depth, ci: float, nboot: int,
                  seed: int) -> tuple[float, float, float, np.ndarray]:
    """Q(b) / Q(a) of the canonical ladder of `runs` (RESULTS.md's latency table:
    relative.canonical_samples, the summary's definition), a percentile interval and the
    bootstrap samples (runs resampled, then whole rounds within each)."""
    calls = calls[calls["stage"] == "forward"] if "stage" in calls else calls
    if "timed" in calls:
        calls = calls[calls["timed"].astype(bool)]
    depths, q, boot = rel.canonical_samples(calls, runs, reference_depth, nboot=nboot,
                                            seed=seed)
    a, b = (list(depths).index(d) for d in (depth_a, depth_b))
    samples = boot[:, b] / boot[:, a]
    lo, hi = np.quantile(samples, [(1 - ci) / 2, (1 + ci) / 2])
    return float(q[b] / q[a]), float(lo), float(hi), samples


def coherence_verdict(doc: dict) -> dict:
    """Latency linear in depth: supported when the canonical ladder (coherent runs; without
    any, the median Q of the runs that pass the shape gates) passes the shape checks;
    refuted when it fails them, or every run fails one; else (no run passes the shape
    gates, e.g. the timers disagree) inconclusive."""
    runs = doc.get("runs", [])
    shape_fail = [sorted(set(r["failed"]) & set(SHAPE_CHECKS)) for r in runs]
    if runs and all(shape_fail):
        return {"verdict": "refuted", "note": "every run fails a shape check: "
                + "; ".join(f"run {r['run']}: {', '.join(f)}" for r, f in zip(runs, shape_fail,
                                                                               strict=True))}
    ladder = doc.get("canonical_ladder", {})
    q = ladder.get("q") or []
    used, caveat = usable_runs(doc)
    if used and caveat:  # no coherent run: the median Q of the runs that pass the shapes
        q = np.median([r["relative_ladder"]["q"] for r in runs if r["run"] in used],
                      axis=0).tolist()
    if not used or not q or any(x is None for x in q):
        return {"verdict": "inconclusive", "note": "no latency run passes the shape gates"}
    checks = coh.check_run({"depths": ladder["depth"], "q": q})
    failed = [n for n in coh.failed(checks) if n in SHAPE_CHECKS]
    if failed:
        return {"verdict": "refuted", "note": "canonical ladder fails " + ", ".join(failed)}
    fit = ladder.get("fit") or {}
    what = (f"p50 = {fit['a_ms']:.2f} + {fit['b_ms_per_layer']:.3f}·n ms, R² {fit['r2']:.3f}"
            if fit else "")
    if what and not ladder.get("absolute_verified", doc.get("absolute_verified", False)):
        what += "; the milliseconds are not verified on this machine (absolute_stable)"
    return {"verdict": "supported", "note": "canonical ladder passes monotone, linear, "
            "constant slope and leave-one-out" + (f" ({what})" if what else "")
            + (f"; {caveat}" if caveat else "")}
