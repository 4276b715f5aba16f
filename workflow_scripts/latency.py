"""Latency stage: encode latency per depth, all depths in one process, checked for coherence.

Latency depends on the architecture, not on trained weights, so it runs on the truncated
base and needs no training upstream.

Protocol of one profiling run (`profile`, one process, one job per run):
- every depth loaded in this process, in eval mode, with an explicit dtype; on CPU the torch
  thread count is set before any torch work and recorded;
- one fixed batch, tokenized outside the timed region: fixed batch size, every text long
  enough to fill the fixed padded length, the identical tensors for every depth;
- warm-up per depth until stable: at least `warmup_calls` calls and 2 x `warmup_window`,
  ending at the first call where the median of the last window is within `warmup_tol` of
  the window before it, or at `warmup_max_calls` (recorded as not converged);
- rounds: each visits the depths in a fresh seeded random order; per visit `discard_calls`
  untimed calls, then `calls_per_round` timed model calls (the "forward" stage: the whole
  sentence-transformers module stack on the pre-tokenized batch), then `encode_calls`
  timed full `encode()` calls (tokenization included) and as many of tokenization alone;
- each timed call is one row: wall seconds (perf_counter), process CPU seconds, and on
  CUDA the event seconds, with a synchronize before and after every timed call;
- the environment: torch version, device name, threads, dtype, load average and on CUDA
  the GPU clocks before and after the timed rounds.

`summary` reduces the runs to per (run, depth) p50 / IQR / p90 and a bootstrap CI of the
median that resamples whole rounds, checks every run's ladder for physical coherence
(workflow_scripts/coherence.py) and writes the canonical ladder: per depth the median over
the coherent runs of their p50.

CLI: python -m workflow_scripts.latency profile --base SPEC --depths 1 2 3 --run 0 --out FILE
     python -m workflow_scripts.latency summary --runs run0.parquet ... --out summary.parquet
            --coherence coherence.json --ladder ladder.parquet
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import os
import platform
import time

import numpy as np
import pandas as pd

from workflow_scripts import coherence, contracts

# Content does not matter for latency at a fixed padded length; a fixed text keeps the
# batch identical across runs and machines. It is repeated to fill any padded length, so
# that the pre-tokenized batch and encode()'s own tokenization give the same shape.
TEXT = ("Compute the arithmetic mean along the specified axis, ignoring NaNs, and return "
        "the average of the array elements over the flattened array by default.")
STAGES = ("forward", "encode", "tokenize")
COLUMNS = (*contracts.LATENCY_COLUMNS, "stage", "cpu_seconds")


def long_text(seq_len: int) -> str:
    """TEXT repeated to more than `seq_len` words, hence more than `seq_len` tokens."""
    return " ".join([TEXT] * (seq_len // 20 + 1))


def fixed_batch(tokenizer, batch_size: int, seq_len: int) -> dict:
    enc = tokenizer([long_text(seq_len)] * batch_size, padding="max_length", truncation=True,
                    max_length=seq_len, return_tensors="pt")
    return dict(enc)


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _timer(device: str):
    """A function timing one call: (wall s, CUDA event s or NaN, process CPU s)."""
    perf, cpu, nan = time.perf_counter, time.process_time, float("nan")
    if device == "cuda":
        import torch

        def timed(fn):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            c0, t0 = cpu(), perf()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            t1, c1 = perf(), cpu()
            return t1 - t0, start.elapsed_time(end) / 1000.0, c1 - c0

        return timed

    def timed(fn):
        c0, t0 = cpu(), perf()
        fn()
        t1, c1 = perf(), cpu()
        return t1 - t0, nan, c1 - c0

    return timed


def warm_up(fn, timed, *, min_calls: int, max_calls: int | None = None, window: int = 0,
            tol: float = 0.02) -> dict:
    """Call `fn` until its timing is stable (see the module docstring); window 0: exactly
    `min_calls` calls. Returns calls made, whether it converged, and the last window's p50."""
    if window <= 0:
        for _ in range(min_calls):
            fn()
        return {"calls": min_calls, "converged": True, "p50_ms": float("nan")}
    need = max(min_calls, 2 * window)
    limit = max(max_calls or need, need)
    times = []
    while True:
        times.append(timed(fn)[0])
        if len(times) >= need:
            last, before = np.median(times[-window:]), np.median(times[-2 * window:-window])
            if abs(last - before) <= tol * before:
                return {"calls": len(times), "converged": True, "p50_ms": float(last) * 1e3}
        if len(times) >= limit:
            return {"calls": len(times), "converged": False,
                    "p50_ms": float(np.median(times[-window:])) * 1e3}


def profile_protocol(models: dict, batch: dict, *, run: int, rounds: int,
                     calls_per_round: int, device: str, seed: int, warmup_calls: int,
                     warmup_max_calls: int | None = None, warmup_window: int = 0,
                     warmup_tol: float = 0.02, discard_calls: int = 1,
                     aux: dict | None = None, aux_calls: int = 0, after_warmup=None):
    """Time `models` (depth -> callable on the batch) with warm-up and interleaved, shuffled
    rounds. `aux`: stage -> {depth -> callable()} timed `aux_calls` times per visit after
    the model calls (full encode(), tokenization); `after_warmup()` runs between warm-up
    and the timed rounds (e.g. to read the GPU clocks). Returns (rows DataFrame with
    COLUMNS, {depth: warm-up record})."""
    import torch

    rng = np.random.default_rng(seed)
    timed = _timer(device)
    aux = aux or {}
    rows = []  # (depth, round, stage, wall, event, cpu)
    warmup = {}
    with torch.inference_mode():
        for depth, model in models.items():
            warmup[int(depth)] = warm_up(functools.partial(model, batch), timed,
                                         min_calls=warmup_calls, max_calls=warmup_max_calls,
                                         window=warmup_window, tol=warmup_tol)
        if after_warmup is not None:
            after_warmup()
        for rnd in range(rounds):
            for depth in rng.permutation(list(models)).tolist():
                call = functools.partial(models[depth], batch)
                for _ in range(discard_calls):  # after switching models (cache effects)
                    call()
                for _ in range(calls_per_round):
                    rows.append((depth, rnd, "forward", *timed(call)))
                for stage, fns in aux.items():
                    for _ in range(aux_calls):
                        rows.append((depth, rnd, stage, *timed(fns[depth])))
    df = pd.DataFrame(rows, columns=["depth", "round", "stage", "seconds", "event_seconds",
                                     "cpu_seconds"])
    n, L = batch["input_ids"].shape
    df["run"], df["batch_size"], df["seq_len"], df["device"] = run, n, L, device
    df["depth"] = df["depth"].astype(int)
    return df[list(COLUMNS)], warmup


def profile(models: dict, batch: dict, *, run: int, warmup_calls: int, rounds: int,
            calls_per_round: int, device: str, seed: int, **kw) -> pd.DataFrame:
    """The model calls of `profile_protocol` in the contract's columns only."""
    df, _ = profile_protocol(models, batch, run=run, warmup_calls=warmup_calls, rounds=rounds,
                             calls_per_round=calls_per_round, device=device, seed=seed, **kw)
    return df[list(contracts.LATENCY_COLUMNS)]


# ---------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_clocks() -> dict:
    """Current SM / memory clocks (MHz), temperature and power of the current GPU; NaN where
    neither nvidia-smi nor torch can tell."""
    import subprocess

    import torch

    keys = ("clocks.sm", "clocks.mem", "clocks.max.sm", "temperature.gpu", "power.draw")
    out = dict.fromkeys(("gpu_sm_mhz", "gpu_mem_mhz", "gpu_max_sm_mhz", "gpu_temp_c",
                         "gpu_power_w"), float("nan"))
    try:
        idx = torch.cuda.current_device()
        res = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(keys)}", "-i", str(idx),
                              "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=10, check=True)
        for k, v in zip(out, res.stdout.strip().split(","), strict=False):
            with contextlib.suppress(ValueError):
                out[k] = float(v)
    except Exception:  # noqa: BLE001 - no nvidia-smi: try torch (needs pynvml)
        with contextlib.suppress(Exception):
            out["gpu_sm_mhz"] = float(torch.cuda.clock_rate())
    return out


def environment(device: str, dtype: str) -> dict:
    import torch

    env = {"torch": torch.__version__, "threads": torch.get_num_threads(),
           "interop_threads": torch.get_num_interop_threads(), "dtype": dtype,
           "python": platform.python_version(), "host_cpus": os.cpu_count() or 0,
           "device_name": (torch.cuda.get_device_name() if device == "cuda"
                           else _cpu_model())}
    return env


def host_cpu_seconds() -> dict:
    """CPU seconds of the whole host (/proc/stat: busy = user + nice + system + irq + softirq;
    steal = taken by the hypervisor), of this process, and a monotonic clock. Differences
    over the timed rounds say how much other work ran beside them (`other_work`)."""
    out = {"host_busy_s": np.nan, "host_steal_s": np.nan}
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/stat", encoding="ascii") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        tick = os.sysconf("SC_CLK_TCK")
        out = {"host_busy_s": (v[0] + v[1] + v[2] + v[5] + v[6]) / tick,
               "host_steal_s": v[7] / tick}
    return {**out, "proc_cpu_s": time.process_time(), "clock_s": time.monotonic()}


def other_work(env) -> tuple[float, float]:
    """(cores busy with other processes, share of the host's CPU time stolen by the
    hypervisor) on average over the timed rounds; NaN where not recorded."""
    try:
        wall = float(env["clock_s_after"]) - float(env["clock_s_before"])
        busy = float(env["host_busy_s_after"]) - float(env["host_busy_s_before"])
        own = float(env["proc_cpu_s_after"]) - float(env["proc_cpu_s_before"])
        steal = float(env["host_steal_s_after"]) - float(env["host_steal_s_before"])
        cpus = float(env["host_cpus"])
    except (KeyError, TypeError, ValueError):
        return float("nan"), float("nan")
    if not wall > 0:
        return float("nan"), float("nan")
    return max(0.0, (busy - own) / wall), steal / (wall * cpus)


def _snapshot(device: str, when: str) -> dict:
    snap = {f"loadavg_{when}": os.getloadavg()[0] if hasattr(os, "getloadavg") else np.nan}
    snap.update({f"{k}_{when}": v for k, v in host_cpu_seconds().items()})
    if device == "cuda":
        snap.update({f"{k}_{when}": v for k, v in gpu_clocks().items()})
    return snap


# ---------------------------------------------------------------------------------------
# Summary, coherence, canonical ladder
# ---------------------------------------------------------------------------------------
ENV_COLUMNS = ("device", "device_name", "threads", "dtype", "torch", "batch_size", "seq_len",
               "host_cpus", "loadavg_before", "loadavg_after",
               *(f"{k}_{w}" for w in ("before", "after")
                 for k in ("host_busy_s", "host_steal_s", "proc_cpu_s", "clock_s")))


def _q(x: np.ndarray, q: float) -> float:
    return float(np.quantile(x, q)) * 1e3


def summarize(df: pd.DataFrame, *, nboot: int = 2000, level: float = 0.95,
              seed: int = 0) -> pd.DataFrame:
    """Per (run, depth) of the model calls: p50, IQR, p90 and a bootstrap CI of the median
    (resampling whole rounds) in milliseconds; the event and CPU timers' p50; the p50 of
    full encode() and of tokenization; warm-up and environment columns where present."""
    stage = df["stage"] if "stage" in df else pd.Series("forward", index=df.index)
    fwd = df[stage == "forward"]
    rows = []
    for (run, depth), g in fwd.groupby(["run", "depth"], sort=True):
        s = g["seconds"].to_numpy(float)
        rnd = g["round"].to_numpy() if "round" in g else np.arange(len(g))
        lo, hi = coherence.bootstrap_median_ci(s, rnd, nboot=nboot, level=level,
                                               seed=seed + 1000 * int(run) + int(depth))
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
    """(summary with `coherent` and `failed_checks` columns, coherence document, ladder)."""
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
    for col in ("device", "device_name", "threads", "dtype", "batch_size", "seq_len"):
        if col in summary:
            ladder[col] = summary[col].iloc[0]

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
        a, b, r2 = coherence.linear_fit(depths, p50)
        doc["canonical_ladder"]["fit"] = {"a_ms": round(a, 4), "b_ms_per_layer": round(b, 4),
                                          "r2": round(r2, 6)}
    return summary, doc, ladder


def busy_note(rows: pd.DataFrame, unstable: bool = False) -> str:
    """What shared the machine with a CPU run. Measured from /proc/stat where recorded: the
    cores other processes kept busy during the timed rounds, and the hypervisor's steal.
    Else the load average (runnable threads, this run's included, a 1-minute mean that also
    remembers jobs that have just ended) above the run's own threads."""
    if "device" not in rows or rows["device"].iloc[0] != "cpu":
        return ""
    first = rows.iloc[0]
    others, steal = other_work(first)
    if np.isfinite(others):
        if others > 0.25 or steal > 0.05:
            return (f"the machine was busy: other processes kept {others:.2f} cores busy and "
                    f"the hypervisor took {steal:.0%} of the CPU time during the timed rounds; "
                    "other work slows the calls unevenly, so rerun on a quiet machine")
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
            f"CPUs with {int(first['threads'])} profiling thread(s); other work slows the "
            "calls unevenly, so rerun on a quiet machine")


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


# ---------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------
def _profile_cli(a) -> None:
    from workflow_scripts.models import load_truncated, set_threads

    set_threads(a.threads)  # before any torch work
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = getattr(torch, a.dtype)
    models = {}
    for d in sorted(a.depths):
        m = load_truncated(a.base, a.strategy, d, device=device).to(dtype).eval()
        m.max_seq_length = a.seq_len  # encode() truncates to the fixed length too
        models[d] = m
    tokenizer = models[min(models)].tokenizer
    texts = [long_text(a.seq_len)] * a.batch_size
    batch = {k: v.to(device) for k, v in
             fixed_batch(tokenizer, a.batch_size, a.seq_len).items()}
    # A fresh dict per call: SentenceTransformer.forward adds its outputs to the dict.
    calls = {d: (lambda b, m=m: m(dict(b))) for d, m in models.items()}

    def tokenize():
        fixed_batch(tokenizer, a.batch_size, a.seq_len)

    aux = {"encode": {d: (lambda m=m: m.encode(texts, batch_size=a.batch_size,
                                               show_progress_bar=False))
                      for d, m in models.items()},
           "tokenize": dict.fromkeys(models, tokenize)}
    env, before = environment(device, a.dtype), {}
    df, warmup = profile_protocol(
        calls, batch, run=a.run, rounds=a.rounds, calls_per_round=a.calls_per_round,
        device=device, seed=a.seed + a.run, warmup_calls=a.warmup_calls,
        warmup_max_calls=a.warmup_max_calls, warmup_window=a.warmup_window,
        warmup_tol=a.warmup_tol, discard_calls=a.discard_calls, aux=aux,
        aux_calls=a.encode_calls, after_warmup=lambda: before.update(_snapshot(device, "before")))
    after = _snapshot(device, "after")
    for k, v in {**env, **before, **after}.items():
        df[k] = v
    df["warmup_calls"] = df["depth"].map({d: w["calls"] for d, w in warmup.items()})
    df["warmup_converged"] = df["depth"].map({d: w["converged"] for d, w in warmup.items()})
    contracts.write_parquet(a.out, df)
    print("environment:", {**env, **before, **after})
    print("warm-up:", warmup)
    print(summarize(df, nboot=200).to_string(index=False))


def _summary_cli(a) -> None:
    df = pd.concat([contracts.read_latency(p) for p in a.runs], ignore_index=True)
    summary = summarize(df, nboot=a.nboot, level=a.ci, seed=a.seed)
    summary, doc, ladder = check(summary)
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


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Per-depth encode latency.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("profile", help="one profiling run: all depths in this process")
    p.add_argument("--base", required=True)
    p.add_argument("--strategy", default="top")
    p.add_argument("--depths", type=int, nargs="+", required=True)
    p.add_argument("--run", type=int, required=True)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--warmup-calls", type=int, default=20, help="minimum warm-up calls")
    p.add_argument("--warmup-max-calls", type=int, default=200)
    p.add_argument("--warmup-window", type=int, default=10, help="0: fixed warm-up count")
    p.add_argument("--warmup-tol", type=float, default=0.02)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--calls-per-round", type=int, default=5)
    p.add_argument("--discard-calls", type=int, default=2)
    p.add_argument("--encode-calls", type=int, default=1,
                   help="timed encode() and tokenization calls per depth and round")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="run r shuffles with seed + r")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_profile_cli)
    s = sub.add_parser("summary", help="per (run, depth) statistics, coherence, ladder")
    s.add_argument("--runs", nargs="+", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--coherence", help="coherence.json to write")
    s.add_argument("--ladder", help="canonical ladder parquet to write")
    s.add_argument("--nboot", type=int, default=2000)
    s.add_argument("--ci", type=float, default=0.95)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=_summary_cli)
    a = ap.parse_args(argv)
    a.func(a)


if __name__ == "__main__":
    main()
