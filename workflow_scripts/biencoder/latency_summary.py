"""Summary of latency profiling runs: statistics, coherence verdicts, canonical ladder.

`summarize` reduces the per-call rows to per (run, depth) p50 / IQR / p90 and a bootstrap
CI of the median that resamples whole rounds (settings: `LatencySummary`); `check` checks
every run's ladder for physical coherence (workflow_scripts/biencoder/coherence.py) and
gives the summary with each run's verdict, the coherence document (coherence.json) and the
canonical ladder: per depth the median over the coherent runs of their p50.

CLI: python -m workflow_scripts.biencoder.latency_summary --runs run0.parquet ... \
        --settings-json '{...}' --out summary.parquet [--coherence coherence.json] \
        [--ladder ladder.parquet]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import pandas as pd

from workflow_scripts.biencoder import coherence
from workflow_scripts.biencoder.latency_host import other_work
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import LatencySummary, SettingsError

ENV_COLUMNS = ("device", "device_name", "threads", "dtype", "torch", "batch_size", "seq_len",
               "host_cpus", "loadavg_before", "loadavg_after",
               *(f"{k}_{w}" for w in ("before", "after")
                 for k in ("host_busy_s", "host_steal_s", "proc_cpu_s", "clock_s")))
# Columns the canonical ladder takes over from the summary (one setup per profiling).
SETUP_COLUMNS = ("device", "device_name", "threads", "dtype", "batch_size", "seq_len")


def _q(x: np.ndarray, q: float) -> float:
    return float(np.quantile(x, q)) * 1e3


def summarize(df: pd.DataFrame, settings: LatencySummary) -> pd.DataFrame:
    """Per (run, depth) of the model calls: p50, IQR, p90 and a bootstrap CI of the median
    (resampling whole rounds) in milliseconds; the event and CPU timers' p50; the p50 of
    full encode() and of tokenization; warm-up and environment columns where present."""
    stage = df["stage"] if "stage" in df else pd.Series("forward", index=df.index)
    fwd = df[stage == "forward"]
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
            v = df.loc[(stage == st) & (df["run"] == run) & (df["depth"] == depth), "seconds"]
            row[f"{st}_p50_ms"] = _q(v.to_numpy(float), 0.5) if len(v) else float("nan")
        for col in ("warmup_calls", "warmup_converged", *ENV_COLUMNS):
            if col in g:
                row[col] = g[col].iloc[0]
        rows.append(row)
    return pd.DataFrame(rows)


def _run_record(s: pd.DataFrame) -> dict:
    s = s.sort_values("depth")
    rec = {"run": int(s["run"].iloc[0]), "depths": s["depth"].to_numpy(float),
           "p50": s["p50_ms"].to_numpy(float), "iqr": s["iqr_ms"].to_numpy(float)}
    if {"ci_low_ms", "ci_high_ms"} <= set(s):
        rec["ci_low"] = s["ci_low_ms"].to_numpy(float)
        rec["ci_high"] = s["ci_high_ms"].to_numpy(float)
    device = s["device"].iloc[0] if "device" in s else "cpu"
    if device == "cuda" and "event_p50_ms" in s:
        rec.update(timer_kind="cuda_event", timer_wall=rec["p50"],
                   timer_reference=s["event_p50_ms"].to_numpy(float))
    elif "cpu_p50_ms" in s and "threads" in s:
        # CPU time per thread cannot exceed wall time; contention shows as wall > CPU.
        rec.update(timer_kind="process_cpu", timer_wall=rec["p50"],
                   timer_reference=s["cpu_p50_ms"].to_numpy(float) / s["threads"].to_numpy(float))
    return rec


def check(summary: pd.DataFrame, th: coherence.Thresholds | None = None):
    """(summary with `coherent`, `failed_checks`, `why` and `notes` columns, coherence
    document, canonical ladder)."""
    th = th or coherence.Thresholds()
    runs = [_run_record(g) for _, g in summary.groupby("run", sort=True)]
    verdicts = coherence.verdicts(runs, th)
    by_run = {v["run"]: v for v in verdicts}
    summary = summary.copy()
    summary["coherent"] = summary["run"].map(lambda r: by_run[int(r)]["coherent"])
    summary["failed_checks"] = summary["run"].map(lambda r: ", ".join(by_run[int(r)]["failed"]))
    summary["why"] = summary["run"].map(
        lambda r: "; ".join(f"{k}: {w}" for k, w in by_run[int(r)]["why"].items()))
    notes = {int(r): busy_note(g, "stable" in by_run[int(r)]["failed"])
             for r, g in summary.groupby("run")}
    summary["notes"] = summary["run"].map(lambda r: notes[int(r)])

    wide = summary.pivot(index="run", columns="depth", values="p50_ms").sort_index()
    depths = wide.columns.to_numpy()
    coherent = np.array([by_run[int(r)]["coherent"] for r in wide.index])
    ladder, good = _ladder(summary, wide, coherent)
    p50 = ladder["p50_ms"].to_numpy(float)
    doc = {
        "thresholds": dataclasses.asdict(th),
        "depths": [int(d) for d in depths],
        "coherent_runs": [int(r) for r in good],
        "incoherent_runs": [{"run": v["run"], "failed": v["failed"], "why": v["why"]}
                            for v in verdicts if not v["coherent"]],
        "canonical_ladder": {
            "depth": [int(d) for d in depths],
            "p50_ms": [None if not np.isfinite(x) else round(float(x), 4) for x in p50],
            "runs_used": [int(r) for r in good],
        },
        "runs": [{**v, "notes": notes[v["run"]], "env": _env_of(summary, v["run"])}
                 for v in verdicts],
    }
    if len(good) and len(depths) >= 2:
        # Unrounded: the report prints the fit from here, and rounding twice could move
        # its last digit.
        a, b, r2 = coherence.linear_fit(depths, p50)
        doc["canonical_ladder"]["fit"] = {"a_ms": a, "b_ms_per_layer": b, "r2": r2}
    return summary, doc, ladder


def _ladder(summary: pd.DataFrame, wide: pd.DataFrame, coherent: np.ndarray):
    """(canonical ladder, the coherent runs) from the per-run p50 table `wide`."""
    depths = wide.columns.to_numpy()
    p50, used = coherence.canonical_ladder(depths, wide.to_numpy(), coherent)
    good = wide.index[coherent]
    ladder = pd.DataFrame({"depth": depths.astype(int), "p50_ms": p50, "runs_used": used,
                           "runs": ",".join(map(str, good)),
                           "p50_all_runs_ms": np.median(wide.to_numpy(), axis=0)})
    used_rows = summary[summary["run"].isin(good)].groupby("depth")
    ladder["min_run_p50_ms"] = ladder["depth"].map(used_rows["p50_ms"].min()).astype(float)
    ladder["max_run_p50_ms"] = ladder["depth"].map(used_rows["p50_ms"].max()).astype(float)
    for col in ("encode_p50_ms", "tokenize_p50_ms"):
        if col in summary:
            ladder[col] = ladder["depth"].map(used_rows[col].median()).astype(float)
    ladder["coherent"] = ladder["runs_used"] > 0
    for col in SETUP_COLUMNS:
        if col in summary:
            ladder[col] = summary[col].iloc[0]
    return ladder, good


def busy_note(rows: pd.DataFrame, unstable: bool = False) -> str:
    """What shared the machine with a CPU run. Measured from /proc/stat where recorded: the
    cores other processes kept busy during the timed rounds, and the hypervisor's steal.
    Else the load average (runnable threads, this run's included, a 1-minute mean that also
    remembers jobs that have just ended) above the run's own threads."""
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
        return (quiet + "; so the spread is the CPU itself running slower at times (CPU time "
                "per call tracks wall time), e.g. a virtual machine whose host is shared")
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
    summary, doc, ladder = check(summarize(df, settings))
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
