"""The timing protocol of one latency profiling run: fixed batch, timer, warm-up, rounds.

- one fixed batch, tokenized outside the timed region: fixed batch size, every text long
  enough to fill the fixed padded length, the identical tensors for every depth;
- warm-up per depth until stable: at least `warmup_calls` calls and 2 x `warmup_window`,
  ending at the first call where the median of the last window is within
  `warmup_tolerance` of the window before it, or at `warmup_max_calls` (recorded as not
  converged);
- rounds: each visits the depths in a fresh random order (drawn with seed + run); per visit
  `discard_calls` untimed calls, then `calls_per_round` timed model calls (the "forward"
  stage: the whole sentence-transformers module stack on the pre-tokenized batch), then
  `encode_calls` timed calls of each auxiliary stage (full `encode()`, tokenization alone);
- each timed call is one row: wall seconds (perf_counter), process CPU seconds, and on
  CUDA the event seconds, with a synchronize before and after every timed call.

The settings are a `workflow_scripts.core.settings.LatencyProfile`.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from workflow_scripts.core import contracts

if TYPE_CHECKING:
    from workflow_scripts.core.settings import LatencyProfile

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


def timer(device: str):
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


def profile_protocol(models: dict, batch: dict, settings: LatencyProfile, *, run: int,
                     device: str, aux: dict | None = None, after_warmup=None):
    """Time `models` (depth -> callable on the batch) with warm-up and interleaved, shuffled
    rounds, as `settings` says; run `run` draws its visiting orders with seed + run.
    `aux`: stage -> {depth -> callable()} timed `settings.encode_calls` times per visit
    after the model calls (full encode(), tokenization); `after_warmup()` runs between
    warm-up and the timed rounds (e.g. to read the GPU clocks). Returns (rows DataFrame with
    COLUMNS, {depth: warm-up record})."""
    import torch

    s = settings
    rng = np.random.default_rng(s.seed + run)
    timed = timer(device)
    aux = aux or {}
    rows = []  # (depth, round, stage, wall, event, cpu)
    warmup = {}
    with torch.inference_mode():
        for depth, model in models.items():
            warmup[int(depth)] = warm_up(functools.partial(model, batch), timed,
                                         min_calls=s.warmup_calls, max_calls=s.warmup_max_calls,
                                         window=s.warmup_window, tol=s.warmup_tolerance)
        if after_warmup is not None:
            after_warmup()
        for rnd in range(s.rounds):
            for depth in rng.permutation(list(models)).tolist():
                call = functools.partial(models[depth], batch)
                for _ in range(s.discard_calls):  # after switching models (cache effects)
                    call()
                for _ in range(s.calls_per_round):
                    rows.append((depth, rnd, "forward", *timed(call)))
                for stage, fns in aux.items():
                    for _ in range(s.encode_calls):
                        rows.append((depth, rnd, stage, *timed(fns[depth])))
    df = pd.DataFrame(rows, columns=["depth", "round", "stage", "seconds", "event_seconds",
                                     "cpu_seconds"])
    n, L = batch["input_ids"].shape
    df["run"], df["batch_size"], df["seq_len"], df["device"] = run, n, L, device
    df["depth"] = df["depth"].astype(int)
    return df[list(COLUMNS)], warmup


def profile(models: dict, batch: dict, settings: LatencyProfile, *, run: int,
            device: str) -> pd.DataFrame:
    """The model calls of `profile_protocol` in the contract's columns only."""
    df, _ = profile_protocol(models, batch, settings, run=run, device=device)
    return df[list(contracts.LATENCY_COLUMNS)]
