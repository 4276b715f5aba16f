"""Summary of latency profiling runs: statistics, coherence verdicts, canonical ladder.

`summarize` reduces each run's calls (the timed ones: position >= discard_calls) to per
(run, depth) statistics: the raw p50 / IQR / p90 with a bootstrap CI of the median that
resamples whole rounds, and the run's relative ladder Q_d = t_d / t_ref from a two-way
fit over rounds x depths (latency_relative.py) with CIs resampling whole rounds, the
paired increments' CIs, both halves' Q, the fit's residual spread, drift diagnostics and
the measured cost of the calls after a switch. `check` checks every run
(workflow_scripts/biencoder/latency/coherence.py) and gives the summary with each run's verdict,
the coherence document (coherence.json) and the canonical ladder: per depth the median
over the coherent runs of their Q, times the median over them of the reference depth's
p50; `absolute_verified` when every coherent run also passed `absolute_stable`.

CLI: python -m workflow_scripts.biencoder.latency.summary --runs run0.parquet ... \
        --settings-json '{...}' --out summary.parquet [--coherence coherence.json] \
        [--ladder ladder.parquet]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import pandas as pd

from workflow_scripts.biencoder.latency import coherence
from workflow_scripts.biencoder.latency import relative as latency_relative
from workflow_scripts.biencoder.latency.host import other_work
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import LatencySummary, SettingsError

ENV_COLUMNS = ("device", "device_name", "threads", "dtype", "torch", "batch_size", "seq_len",
               "host_cpus", "loadavg_before", "loadavg_after",
               *(f"{k}_{w}" for w in ("before", "after")
                 for k in ("host_busy_s", "host_steal_s", "proc_cpu_s", "clock_s")))
# What each run's stopping rule did (protocol.PRECISION_COLUMNS; absent in older runs).
STOP_COLUMNS = ("rounds_used", "rounds_seconds", "stop_reason", "target_half_width")
# Columns the canonical ladder takes over from the summary (one setup per profiling).
SETUP_COLUMNS = ("device", "device_name", "threads", "dtype", "batch_size", "seq_len")


def _q(x: np.ndarray, q: float) -> float:
    return float(np.quantile(x, q)) * 1e3


def _timed(df: pd.DataFrame, stage: str) -> pd.DataFrame:
    st = df["stage"] if "stage" in df else pd.Series("forward", index=df.index)
    keep = st == stage
    if "timed" in df:
        keep &= df["timed"].astype(bool)
    return df[keep]


# Kept here as the summary's API (tests and callers name it so).
reference_index = latency_relative.reference_index


def relative_rows(calls: pd.DataFrame, run: int, settings: LatencySummary) -> pd.DataFrame:
    """Per depth of one run: the relative ladder, its CIs, both halves, the fit's residual
    spread, the drift diagnostics and the measured cost of the calls after a switch."""
    t, depths, start = latency_relative.round_matrix(_timed(calls, "forward"))
    ref = reference_index(depths, settings.reference_depth)
    kw = {"nboot": settings.nboot, "level": settings.ci, "seed": settings.seed + 1000 * run}
    rel = latency_relative.relative_ladder(t, ref, **kw)
    first, second = latency_relative.halves(t, ref, **kw)
    drift = latency_relative.drift(rel["alpha"], rel["resid"], start)
    fwd = calls[calls["stage"] == "forward"] if "stage" in calls else calls
    nan = np.array([np.nan])
    out = pd.DataFrame({
        "depth": depths.astype(int), "ref_depth": int(depths[ref]), "q": rel["q"],
        "q_ci_low": rel["q_ci_low"], "q_ci_high": rel["q_ci_high"],
        "step_ci_low": np.concatenate([nan, rel["step_ci_low"]]),
        "step_ci_high": np.concatenate([nan, rel["step_ci_high"]]),
        **{f"q{i}{k}": h[f"q{k}"] for i, h in ((1, first), (2, second))
           for k in ("", "_ci_low", "_ci_high")},
        "q_half_width": (rel["q_ci_high"] - rel["q_ci_low"]) / 2 / rel["q"],
        "resid_iqr": rel["resid_iqr"], "resid_alpha_corr": drift.pop("resid_alpha_corr"),
        **drift, "rounds_fit": len(t)})
    cost = {int(d): latency_relative.switch_cost(g) for d, g in fwd.groupby("depth")}
    out["switch_cost_first"] = out["depth"].map(
        {d: c[0] if c else np.nan for d, c in cost.items()}).astype(float)
    return out


def summarize(df: pd.DataFrame, settings: LatencySummary) -> pd.DataFrame:
    """Per (run, depth) of the timed model calls: p50, IQR, p90 and a bootstrap CI of the
    median (resampling whole rounds) in milliseconds; the event and CPU timers' p50; the
    p50 of full encode() and of tokenization; the relative ladder (`relative_rows`);
    warm-up and environment columns where present."""
    fwd = _timed(df, "forward")
    rows = []
    for (run, depth), g in fwd.groupby(["run", "depth"], sort=True):
        s = g["seconds"].to_numpy(float)
        rnd = g["round"].to_numpy() if "round" in g else np.arange(len(g))
        lo, hi = coherence.bootstrap_median_ci(
            s, rnd, nboot=settings.nboot, level=settings.ci,
            seed=settings.seed + 1000 * int(run) + int(depth))
        row = {"run": run, "depth": depth, "p50_ms": _q(s, 0.5),
               "iqr_ms": _q(s, 0.75) - _q(s, 0.25), "p90_ms": _q(s, 0.9),
               "ci_low_ms": lo * 1e3, "ci_high_ms": hi * 1e3, "calls": len(s),
               "rounds": len(np.unique(rnd))}
        for col, name in (("event_seconds", "event_p50_ms"), ("cpu_seconds", "cpu_p50_ms")):
            v = g[col].to_numpy(float) if col in g else np.array([np.nan])
            row[name] = float(np.median(v)) * 1e3 if np.isfinite(v).all() else float("nan")
        for st in ("encode", "tokenize"):
            aux = _timed(df, st)
            v = aux.loc[(aux["run"] == run) & (aux["depth"] == depth), "seconds"]
            row[f"{st}_p50_ms"] = _q(v.to_numpy(float), 0.5) if len(v) else float("nan")
        for col in ("warmup_calls", "warmup_converged", *STOP_COLUMNS, *ENV_COLUMNS):
            if col in g:
                row[col] = g[col].iloc[0]
        rows.append(row)
    out = pd.DataFrame(rows)
    rel = pd.concat([relative_rows(g, int(r), settings).assign(run=r)
                     for r, g in df.groupby("run", sort=True)], ignore_index=True)
    return out.merge(rel, on=["run", "depth"], how="left", validate="one_to_one")


PER_DEPTH = ("q", "q_ci_low", "q_ci_high", "q1", "q1_ci_low", "q1_ci_high", "q2", "q2_ci_low",
             "q2_ci_high")


def _run_record(s: pd.DataFrame) -> dict:
    s = s.sort_values("depth")
    rec = {"run": int(s["run"].iloc[0]), "depths": s["depth"].to_numpy(float),
           "p50": s["p50_ms"].to_numpy(float), "iqr": s["iqr_ms"].to_numpy(float)}
    if "q" in s:
        rec.update({k: s[k].to_numpy(float) for k in PER_DEPTH})
        rec["step_ci_low"] = s["step_ci_low"].to_numpy(float)[1:]
        rec["step_ci_high"] = s["step_ci_high"].to_numpy(float)[1:]
        rec["resid_iqr"] = float(s["resid_iqr"].iloc[0])
        rec["rounds"] = int(s["rounds_fit"].iloc[0])
        if "stop_reason" in s:
            rec["stop_reason"] = str(s["stop_reason"].iloc[0])
        rec["drift_range"] = float(s["drift_range"].iloc[0])
    device = s["device"].iloc[0] if "device" in s else "cpu"
    if device == "cuda" and "event_p50_ms" in s:
        rec.update(timer_kind="cuda_event", timer_wall=rec["p50"],
                   timer_reference=s["event_p50_ms"].to_numpy(float))
    elif "cpu_p50_ms" in s and "threads" in s:
        # CPU time per thread cannot exceed wall time; contention shows as wall > CPU.
        rec.update(timer_kind="process_cpu", timer_wall=rec["p50"],
                   timer_reference=s["cpu_p50_ms"].to_numpy(float) / s["threads"].to_numpy(float))
    return rec


HOW_TO_READ = {
    "q": "relative ladder: per depth t_d / t_ref from a two-way fit log t[round, depth] = "
         "alpha_round + beta_depth (median polish), free of drift that scales every call "
         "alike; runs[i].relative_ladder holds each run's Q with its CI (whole rounds "
         "resampled)",
    "coherent": "a run is coherent when no gate fails: monotone, linear, constant_slope, "
                "leave_one_out, timers_agree, relative_stable (halves and runs agree); "
                "precise and absolute_stable are reported but do not gate",
    "precision": "runs[i].precision: the rounds the run used (at least latency.rounds, then "
                 "blocks until every Q's CI half-width / Q <= target_half_width or a cap: "
                 "stop_reason target, max_rounds or max_seconds), the seconds of its model "
                 "rounds and the half-width it reached per depth; a run stopped at a cap is "
                 "used with its wider CI",
    "canonical_ladder": "q: median over the coherent runs of their Q; p50_ms: q times "
                        "reference_p50_ms (median over the coherent runs of the reference "
                        "depth's p50); absolute_verified: every coherent run also passed "
                        "absolute_stable, so the milliseconds hold beyond this run's machine "
                        "state",
    "drift": "alpha per round is the machine's speed; drift_range: exp(alpha's 95th - 5th "
             "percentile) - 1; drift_over_run: the least-squares trend over the run; "
             "resid_alpha_corr: residuals vs alpha per depth (far from 0: drift that is not "
             "proportional, e.g. a fixed added delay)",
    "switch_cost": "per position after switching to a depth, median of (call / the visit's "
                   "last call) - 1; positions below discard_calls are left out of the ladder",
}


def check(summary: pd.DataFrame, th: coherence.Thresholds | None = None):
    """(summary with `coherent`, `absolute_stable`, `failed_checks`, `why` and `notes`
    columns, coherence document, canonical ladder)."""
    th = th or coherence.Thresholds.defaults()
    runs = [_run_record(g) for _, g in summary.groupby("run", sort=True)]
    verdicts = coherence.verdicts(runs, th)
    by_run = {v["run"]: v for v in verdicts}
    summary = summary.copy()
    for col, get in (("coherent", lambda v: v["coherent"]),
                     ("absolute_stable", lambda v: v["absolute_stable"]),
                     ("failed_checks", lambda v: ", ".join(v["failed"])),
                     ("why", lambda v: "; ".join(f"{k}: {w}" for k, w in v["why"].items()))):
        summary[col] = summary["run"].map(lambda r, get=get: get(by_run[int(r)]))
    notes = {int(r): busy_note(g, not by_run[int(r)]["absolute_stable"])
             for r, g in summary.groupby("run")}
    summary["notes"] = summary["run"].map(lambda r: notes[int(r)])

    wide = summary.pivot(index="run", columns="depth", values="q").sort_index()
    depths = wide.columns.to_numpy()
    coherent = np.array([by_run[int(r)]["coherent"] for r in wide.index])
    ladder, good = _ladder(summary, wide, coherent)
    verified = bool(ladder["absolute_verified"].iloc[0])
    ref_depth = int(summary["ref_depth"].iloc[0])
    doc = {
        "how_to_read": HOW_TO_READ,
        "thresholds": dataclasses.asdict(th),
        "depths": [int(d) for d in depths],
        "reference_depth": ref_depth,
        "coherent_runs": [int(r) for r in good],
        "absolute_verified": verified,
        "incoherent_runs": [{"run": v["run"], "failed": v["failed"], "why": v["why"]}
                            for v in verdicts if not v["coherent"]],
        "canonical_ladder": {
            "depth": [int(d) for d in depths],
            "q": _rounded(ladder["q"]), "p50_ms": _rounded(ladder["p50_ms"]),
            "reference_depth": ref_depth,
            "reference_p50_ms": _rounded(ladder["ref_p50_ms"])[0],
            "absolute_verified": verified,
            "runs_used": [int(r) for r in good],
        },
        "runs": [{**{k: v[k] for k in ("run", "coherent", "absolute_stable", "failed", "why")},
                  **_run_details(summary, v["run"]), "checks": v["checks"],
                  "notes": notes[v["run"]], "env": _env_of(summary, v["run"])}
                 for v in verdicts],
    }
    if len(good) and len(depths) >= 2:
        # Unrounded: the report prints the fit from here, and rounding twice could move
        # its last digit.
        a, b, r2 = coherence.linear_fit(depths, ladder["p50_ms"].to_numpy(float))
        a_rel, b_rel, _ = coherence.linear_fit(depths, ladder["q"].to_numpy(float))
        doc["canonical_ladder"]["fit"] = {"a_ms": a, "b_ms_per_layer": b, "r2": r2,
                                          "a_ref": a_rel, "b_ref_per_layer": b_rel}
    return summary, doc, ladder


def _rounded(values) -> list:
    return [None if not np.isfinite(x) else round(float(x), 4) for x in np.asarray(values, float)]


def _run_details(summary: pd.DataFrame, run: int) -> dict:
    """A run's relative ladder, drift diagnostics and switch cost for coherence.json."""
    s = summary[summary["run"] == run].sort_values("depth")
    first = s.iloc[0]
    return {
        "relative_ladder": {"depth": s["depth"].astype(int).tolist(),
                            **{k: _rounded(s[k]) for k in PER_DEPTH},
                            "p50_ms": _rounded(s["p50_ms"])},
        "drift": {**{k: coherence.plain(float(first[k])) for k in (
            "drift_range", "drift_full_range", "drift_per_min", "drift_over_run", "minutes",
            "resid_iqr")}, "resid_alpha_corr": _rounded(s["resid_alpha_corr"]),
            "rounds": int(first["rounds_fit"])},
        "switch_cost_first_call": _rounded(s["switch_cost_first"]),
        "precision": precision(s),
    }


def precision(s: pd.DataFrame) -> dict:
    """One run's rows: the rounds, seconds and stop of its stopping rule (where recorded)
    and the half-width of Q's CI / Q it reached per depth."""
    first, half = s.iloc[0], s["q_half_width"].to_numpy(float)
    out = {"rounds": int(first["rounds_fit"]), "half_width": _rounded(half),
           "max_half_width": _rounded([half.max()])[0]}
    for col, key in (("rounds_seconds", "seconds"), ("stop_reason", "stop_reason"),
                     ("target_half_width", "target_half_width")):
        if col in s:
            out[key] = coherence.plain(first[col])
    if "target_half_width" in s:
        out["reached_target"] = bool(half.max() <= float(first["target_half_width"]))
    return out


def _ladder(summary: pd.DataFrame, wide: pd.DataFrame, coherent: np.ndarray):
    """(canonical ladder, the coherent runs) from the per-run Q table `wide`."""
    depths = wide.columns.to_numpy()
    good = wide.index[coherent]
    ref_depth = int(summary["ref_depth"].iloc[0])
    ref_rows = summary[(summary["depth"] == ref_depth) & summary["run"].isin(good)]
    ref_p50 = float(ref_rows["p50_ms"].median()) if len(ref_rows) else float("nan")
    q, p50, used = coherence.canonical_ladder(depths, wide.to_numpy(), coherent, ref_p50)
    p50_wide = summary.pivot(index="run", columns="depth", values="p50_ms").sort_index()
    ladder = pd.DataFrame({"depth": depths.astype(int), "q": q, "p50_ms": p50,
                           "ref_depth": ref_depth, "ref_p50_ms": ref_p50, "runs_used": used,
                           "runs": ",".join(map(str, good)),
                           "p50_all_runs_ms": np.median(p50_wide.to_numpy(), axis=0)})
    used_q = wide.loc[good]
    # The runs' spread in Q, in the canonical ladder's milliseconds.
    ladder["min_run_p50_ms"] = (used_q.min().to_numpy(float) * ref_p50 if len(good)
                                else np.nan)
    ladder["max_run_p50_ms"] = (used_q.max().to_numpy(float) * ref_p50 if len(good)
                                else np.nan)
    used_rows = summary[summary["run"].isin(good)].groupby("depth")
    for col in ("encode_p50_ms", "tokenize_p50_ms"):
        if col in summary:
            ladder[col] = ladder["depth"].map(used_rows[col].median()).astype(float)
    ladder["coherent"] = ladder["runs_used"] > 0
    stable = summary[summary["run"].isin(good)].groupby("run")["absolute_stable"].first()
    ladder["absolute_verified"] = bool(len(good)) and bool(stable.all())
    for col in SETUP_COLUMNS:
        if col in summary:
            ladder[col] = summary[col].iloc[0]
    return ladder, good


def busy_note(rows: pd.DataFrame, unstable: bool = False) -> str:
    """What shared the machine with a CPU run. Measured from /proc/stat where recorded: the
    cores other processes kept busy during the timed rounds, and the hypervisor's steal.
    Else the load average (runnable threads, this run's included, a 1-minute mean that also
    remembers jobs that have just ended) above the run's own threads. `unstable`: the run
    failed absolute_stable, which a quiet machine then explains."""
    if "device" not in rows or rows["device"].iloc[0] != "cpu":
        return ""
    first = rows.iloc[0]
    others, steal = other_work(first)
    rerun = "other work slows the calls unevenly, so rerun on a quiet machine"
    if np.isfinite(others):
        if others > 0.25 or steal > 0.05:
            return (f"the machine was busy: other processes kept {others:.2f} cores busy and "
                    f"the hypervisor took {steal:.0%} of the CPU time during the timed rounds; "
                    + rerun)
        quiet = f"nothing else ran: other processes {others:.2f} cores, steal {steal:.0%}"
        if not unstable:
            return quiet
        return (quiet + "; so the absolute spread is the CPU itself running slower at times "
                "(CPU time per call tracks wall time), e.g. a virtual machine whose host is "
                "shared; the relative ladder takes it out")
    need = {"host_cpus", "threads", "loadavg_before", "loadavg_after"}
    if not need <= set(rows):
        return ""
    load = max(float(first["loadavg_before"]), float(first["loadavg_after"]))
    if not load > float(first["threads"]) + 0.5:
        return ""
    return (f"the machine was busy: load average up to {load:.2f} on {int(first['host_cpus'])} "
            f"CPUs with {int(first['threads'])} profiling thread(s); " + rerun)


def _env_of(summary: pd.DataFrame, run: int) -> dict:
    s = summary[summary["run"] == run]
    env = {}
    for col in (*ENV_COLUMNS, "warmup_calls", "warmup_converged"):
        if col in s:
            vals = s[col].tolist()
            v = vals[0] if len(set(map(str, vals))) == 1 else vals
            env[col] = coherence.plain(v)
    for col in s.columns:
        if col.startswith("gpu_"):
            env[col] = coherence.plain(s[col].iloc[0])
    if len(s):
        others, steal = other_work(s.iloc[0])
        if np.isfinite(others):
            env["other_processes_cores"] = round(others, 4)
            env["steal_share"] = round(steal, 4)
    return env


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Latency runs: per (run, depth) statistics, "
                                             "coherence verdicts, canonical ladder.")
    ap.add_argument("--runs", nargs="+", required=True)
    ap.add_argument("--settings-json", help="LatencySummary settings (absent keys: defaults)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--coherence", help="coherence.json to write")
    ap.add_argument("--ladder", help="canonical ladder parquet to write")
    a = ap.parse_args(argv)
    try:
        settings = LatencySummary.from_json(a.settings_json)
    except SettingsError as e:
        ap.error(str(e))
    df = pd.concat([contracts.read_latency(p) for p in a.runs], ignore_index=True)
    summary, doc, ladder = check(summarize(df, settings), coherence.Thresholds.of(settings))
    if len(used := doc["canonical_ladder"]["runs_used"]):  # the canonical Q's CI
        lo, hi = latency_relative.canonical_ci(_timed(df, "forward"), used,
                                               settings.reference_depth, nboot=settings.nboot,
                                               level=settings.ci, seed=settings.seed)
        ladder["q_ci_low"], ladder["q_ci_high"] = lo, hi
        doc["canonical_ladder"].update(q_ci_low=_rounded(lo), q_ci_high=_rounded(hi))
    contracts.write_parquet(a.out, summary)
    if a.coherence:
        contracts.write_json(a.coherence, doc)
    if a.ladder:
        contracts.write_parquet(a.ladder, ladder)
    with pd.option_context("display.width", 200):
        print(summary.to_string(index=False))
        print("\ncanonical ladder:\n" + ladder.to_string(index=False))
    for v in doc["runs"]:
        print(f"run {v['run']}: " + ("coherent" if v["coherent"] else "INCOHERENT: " + "; ".join(
            f"{name}: {why}" for name, why in v["why"].items())))


if __name__ == "__main__":
    main()
