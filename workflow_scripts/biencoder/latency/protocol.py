"""The timing protocol of one latency profiling run: fixed batch, timer, warm-up, rounds.

- one fixed batch, tokenized outside the timed region: fixed batch size, every text long
  enough to fill the fixed padded length, the identical tensors for every depth;
- balanced orders: the rounds cycle through the permutations of the depths, shuffled with
  seed + run, so each depth comes equally often in each position (exactly so when `rounds`
  is a multiple of D!; beyond 5 depths, blocks of D rounds form shuffled Latin squares);
- warm-up interleaved in the same orders, one call per depth and round, until every depth
  is stable: at least `warmup_calls` calls and 2 x `warmup_window`, ending at the first
  round where, for every depth, the median of its last window is within
  `warmup_tolerance` of the window before, or at `warmup_max_calls` (recorded as not
  converged);
- adaptive rounds: at least `rounds`, then blocks of one balance period (D! rounds, or D
  beyond 5 depths) until every depth's Q = t_d / t_ref has a CI half-width within
  `target_half_width` of Q (relative.py's fit and round bootstrap, with the summary's
  nboot, level, seed and reference depth, so the run records what the summary will
  report), or until a cap: no block starts past `max_rounds` rounds or once the model
  rounds have taken `max_seconds`. The run stops only between blocks, so the design stays
  balanced; why the data-dependent stop leaves Q unbiased: docs/latency.md;
- timed rounds: each visits every depth once; a visit makes `discard_calls` calls after
  the switch and then `calls_per_round` calls of the model (the "forward" stage: the whole
  sentence-transformers module stack on the pre-tokenized batch). Every call is recorded,
  with its start time and its position after the switch: the analysis uses the calls
  from position `discard_calls` on and measures what the first ones cost;
- full `encode()` and tokenization alone are timed in `encode_calls` rounds of their own
  after the model rounds, in the same balanced orders and visit structure;
- the timer is a parameter (`timer()` by default: perf_counter and process CPU time, and
  on CUDA events with a synchronize before and after every call), so that tests can run
  the protocol on a virtual clock.

The settings are a `workflow_scripts.core.settings.LatencyProfile`.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from workflow_scripts.biencoder.latency.relative import half_widths, reference_index
from workflow_scripts.core import contracts

if TYPE_CHECKING:
    from workflow_scripts.core.settings import LatencyProfile

# Content does not matter for latency at a fixed padded length; a fixed text keeps the
# batch identical across runs and machines. It is repeated to fill any padded length, so
# that the pre-tokenized batch and encode()'s own tokenization give the same shape.
TEXT = ("Compute the arithmetic mean along the specified axis, ignoring NaNs, and return "
        "the average of the array elements over the flattened array by default.")
STAGES = ("forward", "encode", "tokenize")
# What the stopping rule did, on every row of the run: rounds, seconds of model rounds,
# why it stopped (target, max_rounds, max_seconds), the target and the reached half-width
# of the row's depth.
PRECISION_COLUMNS = ("rounds_used", "rounds_seconds", "stop_reason", "target_half_width",
                     "half_width")
COLUMNS = (*contracts.LATENCY_COLUMNS, "stage", "cpu_seconds", *PRECISION_COLUMNS)


def long_text(seq_len: int) -> str:
    """TEXT repeated to more than `seq_len` words, hence more than `seq_len` tokens."""
    return " ".join([TEXT] * (seq_len // 20 + 1))


def fixed_batch(tokenizer, batch_size: int, seq_len: int) -> dict:
    """`tokenizer`: the model's own (transformers'), so its saved truncation side applies, as
    in encode(); every text fills `seq_len`, so no padding side does."""
    enc = tokenizer([long_text(seq_len)] * batch_size, padding="max_length", truncation=True,
                    max_length=seq_len, return_tensors="pt")
    return dict(enc)


def timer(device: str, *, wall=time.perf_counter, cpu=time.process_time):
    """A function timing one call: (start s, wall s, CUDA event s or NaN, process CPU s).
    `wall` and `cpu` are the clocks (a fake machine's virtual clock in tests)."""
    nan = float("nan")
    if device == "cuda":
        import torch

        def timed(fn):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            c0, t0 = cpu(), wall()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            t1, c1 = wall(), cpu()
            return t0, t1 - t0, start.elapsed_time(end) / 1000.0, c1 - c0

        return timed

    def timed(fn):
        c0, t0 = cpu(), wall()
        fn()
        t1, c1 = wall(), cpu()
        return t0, t1 - t0, nan, c1 - c0

    return timed


def balanced_orders(depths, rounds: int, rng: np.random.Generator) -> list[list]:
    """`rounds` visiting orders of `depths`: the permutations cycled in a shuffled order
    (each depth equally often in each position and after each other depth over every D!
    rounds); beyond 5 depths (D! > 120) shuffled cyclic Latin squares, balanced in
    position over every D rounds."""
    depths = list(depths)
    d = len(depths)
    if d <= 5:
        perms = list(itertools.permutations(depths))
        idx = rng.permutation(len(perms))
        return [list(perms[idx[k % len(perms)]]) for k in range(rounds)]
    out = []
    while len(out) < rounds:
        base = rng.permutation(depths).tolist()
        for shift in rng.permutation(d).tolist():
            out.append(base[shift:] + base[:shift])
    return out[:rounds]


def balance_period(n_depths: int) -> int:
    """Rounds after which `balanced_orders` is balanced again: D!, or D beyond 5 depths."""
    return math.factorial(n_depths) if n_depths <= 5 else n_depths


def _settled(times: list, window: int, tol: float) -> bool:
    last, before = np.median(times[-window:]), np.median(times[-2 * window:-window])
    return bool(abs(last - before) <= tol * before)


def warm_up(fns: dict, timed, orders, *, min_calls: int, max_calls: int | None = None,
            window: int = 0, tol: float = 0.02) -> dict:
    """Call every depth of `fns` once per round, in `orders` (cycled), until each one's
    timing is stable (see the module docstring); window 0: exactly `min_calls` rounds.
    Returns per depth the calls made, whether it converged and its last window's p50."""
    need = max(min_calls, 2 * window) if window > 0 else min_calls
    limit = max(max_calls or need, need)
    times = {d: [] for d in fns}
    done: dict = {} if need else {d: {"calls": 0, "converged": True, "p50_ms": float("nan")}
                                  for d in fns}
    k = 0
    while len(done) < len(fns):
        for d in orders[k % len(orders)]:
            if window <= 0:
                fns[d]()
                times[d].append(float("nan"))
            else:
                times[d].append(timed(fns[d])[1])
        k += 1
        for d, t in times.items():
            if d in done or len(t) < need:
                continue
            if window <= 0 or _settled(t, window, tol) or len(t) >= limit:
                converged = window <= 0 or _settled(t, window, tol)
                p50 = float(np.median(t[-window:])) * 1e3 if window > 0 else float("nan")
                done[d] = {"calls": len(t), "converged": converged, "p50_ms": p50}
    return {d: done[d] for d in fns}


def _visits(fns: dict, timed, orders, stage: str, rows: list, *, first_round: int,
            discard: int, calls: int, t0: float) -> None:
    """One round per order: each depth's visit makes `discard` + `calls` recorded calls."""
    for k, order in enumerate(orders):
        for d in order:
            for pos in range(discard + calls):
                start, wall, event, cpu = timed(fns[d])
                rows.append((d, first_round + k, stage, pos, pos >= discard, start - t0,
                             wall, event, cpu))


def round_times(rows: list, depths: list, rounds: int) -> np.ndarray:
    """t [rounds, depths]: the median of each visit's timed forward calls in `rows`."""
    col = {d: j for j, d in enumerate(depths)}
    calls = [[[] for _ in depths] for _ in range(rounds)]
    for d, k, stage, _, timed, _, wall, _, _ in rows:
        if stage == "forward" and timed:
            calls[k][col[d]].append(wall)
    return np.array([[np.median(c) for c in row] for row in calls])


def adaptive_rounds(run_rounds, precision, clock, *, first: int, block: int, limit: int,
                    seconds: float, target: float) -> dict:
    """Run rounds [0, first), then blocks of `block` rounds until `precision(rounds)` (the
    half-width of every depth's Q over Q) is at most `target`, or a cap: the next block
    would pass `limit` rounds, or `clock()` says `seconds` have passed. `run_rounds(a, b)`
    times rounds [a, b). Returns the rounds used, the seconds, the reached half-widths
    and why it stopped."""
    t0, n = clock(), min(first, limit)
    run_rounds(0, n)
    while True:
        half = np.asarray(precision(n), float)
        elapsed = clock() - t0
        if np.all(half <= target):
            stop = "target"
        elif n + block > limit:
            stop = "max_rounds"
        elif elapsed >= seconds:
            stop = "max_seconds"
        else:
            run_rounds(n, n + block)
            n += block
            continue
        return {"rounds_used": n, "rounds_seconds": elapsed, "stop_reason": stop,
                "half_width": half}


def profile_protocol(models: dict, batch: dict, settings: LatencyProfile, *, run: int,
                     device: str, aux: dict | None = None, after_warmup=None, timed=None):
    """Time `models` (depth -> callable on the batch) with interleaved warm-up and balanced
    rounds, as `settings` says; run `run` draws its orders with seed + run. `aux`: stage ->
    {depth -> callable()} timed in `settings.encode_calls` rounds of their own after the
    model rounds (full encode(), tokenization); `after_warmup()` runs between warm-up and
    the timed rounds (e.g. to read the GPU clocks); `timed`: the timer (default
    `timer(device)`). Returns (rows DataFrame with COLUMNS, {depth: warm-up record})."""
    import torch

    s = settings
    rng = np.random.default_rng(s.seed + run)
    timed = timed or timer(device)
    aux = aux or {}
    depths = sorted(models)
    block = balance_period(len(depths))
    limit = max(s.max_rounds, s.rounds)
    orders = balanced_orders(depths, limit, rng)
    calls = {d: functools.partial(models[d], batch) for d in depths}
    rows: list = []
    with torch.inference_mode():
        warmup = warm_up(calls, timed, orders, min_calls=s.warmup_calls,
                         max_calls=s.warmup_max_calls, window=s.warmup_window,
                         tol=s.warmup_tolerance)
        if after_warmup is not None:
            after_warmup()
        t0 = timed(lambda: None)[0]

        def run_rounds(a: int, b: int) -> None:
            _visits(calls, timed, orders[a:b], "forward", rows, first_round=a,
                    discard=s.discard_calls, calls=s.calls_per_round, t0=t0)

        ref = reference_index(depths, s.reference_depth)

        def precision(n: int) -> np.ndarray:
            if len(depths) < 2:  # Q of the reference alone is 1: nothing to estimate
                return np.zeros(len(depths))
            return half_widths(round_times(rows, depths, n), ref, nboot=s.nboot,
                               level=s.ci, seed=s.seed + 1000 * run)

        stop = adaptive_rounds(run_rounds, precision, lambda: timed(lambda: None)[0],
                               first=s.rounds, block=block, limit=limit,
                               seconds=s.max_seconds, target=s.target_half_width)
        aux_orders = balanced_orders(depths, s.encode_calls, rng)
        for stage, fns in aux.items():
            _visits(fns, timed, aux_orders, stage, rows, first_round=0,
                    discard=s.discard_calls, calls=1, t0=t0)
    df = pd.DataFrame(rows, columns=["depth", "round", "stage", "position", "timed",
                                     "start_s", "seconds", "event_seconds", "cpu_seconds"])
    n, L = batch["input_ids"].shape
    df["run"], df["batch_size"], df["seq_len"], df["device"] = run, n, L, device
    df["depth"] = df["depth"].astype(int)
    for k in ("rounds_used", "rounds_seconds", "stop_reason"):
        df[k] = stop[k]
    df["target_half_width"] = s.target_half_width
    df["half_width"] = df["depth"].map(dict(zip(depths, stop["half_width"].tolist(),
                                                strict=True))).astype(float)
    return df[list(COLUMNS)], {int(d): w for d, w in warmup.items()}


def profile(models: dict, batch: dict, settings: LatencyProfile, *, run: int,
            device: str, timed=None) -> pd.DataFrame:
    """The model calls of `profile_protocol` in the contract's columns only."""
    df, _ = profile_protocol(models, batch, settings, run=run, device=device, timed=timed)
    return df[list(contracts.LATENCY_COLUMNS)]
