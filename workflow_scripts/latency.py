"""Latency stage: encode latency per depth, all depths in one process.

Latency depends on the architecture, not on trained weights, so it runs on the truncated
base and needs no training upstream. Protocol: one fixed pre-tokenized batch (fixed batch
size, fixed padded length, identical tensors for every depth), eval + inference mode,
torch threads set before any torch work, warm-up per depth, then rounds that visit the
depths in a fresh seeded random order; each timed call is one row.

CLI: python -m workflow_scripts.latency profile --base SPEC --depths 1 2 3 --run 0 --out FILE
     python -m workflow_scripts.latency summary --runs run0.parquet ... --out summary.parquet
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from workflow_scripts import contracts

# Content does not matter for latency at a fixed padded length; a fixed text keeps the
# batch identical across runs and machines.
TEXT = ("Compute the arithmetic mean along the specified axis, ignoring NaNs, and return "
        "the average of the array elements over the flattened array by default.")


def fixed_batch(tokenizer, batch_size: int, seq_len: int) -> dict:
    enc = tokenizer([TEXT] * batch_size, padding="max_length", truncation=True,
                    max_length=seq_len, return_tensors="pt")
    return dict(enc)


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def time_call(fn, device: str) -> tuple[float, float]:
    """(wall seconds, CUDA event seconds or NaN) of one call."""
    if device == "cuda":
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _sync(device)
        t0 = time.perf_counter()
        start.record()
        fn()
        end.record()
        _sync(device)
        return time.perf_counter() - t0, start.elapsed_time(end) / 1000.0
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0, float("nan")


def profile(models: dict, batch: dict, *, run: int, warmup_calls: int, rounds: int,
            calls_per_round: int, device: str, seed: int) -> pd.DataFrame:
    """Time `models` (depth -> callable on the batch) with interleaved, shuffled rounds."""
    import torch

    rng = np.random.default_rng(seed)
    rows = []
    with torch.inference_mode():
        for model in models.values():
            for _ in range(warmup_calls):
                model(batch)
        for rnd in range(rounds):
            for depth in rng.permutation(list(models)).tolist():
                model = models[depth]
                model(batch)  # one discarded call after switching models (cache effects)
                for _ in range(calls_per_round):
                    wall, event = time_call(lambda m=model: m(batch), device)
                    rows.append({"run": run, "depth": int(depth), "round": rnd,
                                 "seconds": wall, "event_seconds": event})
    df = pd.DataFrame(rows)
    n, L = batch["input_ids"].shape
    df["batch_size"], df["seq_len"], df["device"] = n, L, device
    return df[list(contracts.LATENCY_COLUMNS)]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Per (run, depth): p50, IQR, p90 in milliseconds."""
    g = df.groupby(["run", "depth"])["seconds"]
    out = pd.DataFrame({
        "p50_ms": g.median() * 1e3,
        "iqr_ms": (g.quantile(0.75) - g.quantile(0.25)) * 1e3,
        "p90_ms": g.quantile(0.9) * 1e3,
        "calls": g.size(),
    }).reset_index()
    return out


def canonical_ladder(summary: pd.DataFrame) -> pd.DataFrame:
    """Per depth: the median over runs of each run's p50."""
    return (summary.groupby("depth")["p50_ms"].median().rename("p50_ms").reset_index())


def _profile_cli(a) -> None:
    from workflow_scripts.models import load_truncated, set_threads

    set_threads(a.threads)  # before any torch work
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    models = {d: load_truncated(a.base, a.strategy, d, device=device).eval()
              for d in sorted(a.depths)}
    tokenizer = models[min(models)].tokenizer
    batch = {k: v.to(device) for k, v in
             fixed_batch(tokenizer, a.batch_size, a.seq_len).items()}
    # A fresh dict per call: SentenceTransformer.forward adds its outputs to the dict.
    calls = {d: (lambda b, m=m: m(dict(b))) for d, m in models.items()}
    df = profile(calls, batch, run=a.run, warmup_calls=a.warmup_calls, rounds=a.rounds,
                 calls_per_round=a.calls_per_round, device=device, seed=a.run)
    df["threads"] = torch.get_num_threads()
    df["dtype"] = "float32"
    df["torch"] = torch.__version__
    contracts.write_parquet(a.out, df)
    print(summarize(df).to_string(index=False))


def _summary_cli(a) -> None:
    df = pd.concat([contracts.read_latency(p) for p in a.runs], ignore_index=True)
    summary = summarize(df)
    contracts.write_parquet(a.out, summary)
    print(summary.to_string(index=False))


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
    p.add_argument("--warmup-calls", type=int, default=20)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--calls-per-round", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", required=True)
    p.set_defaults(func=_profile_cli)
    s = sub.add_parser("summary", help="per (run, depth) p50, IQR, p90")
    s.add_argument("--runs", nargs="+", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=_summary_cli)
    a = ap.parse_args(argv)
    a.func(a)


if __name__ == "__main__":
    main()
