"""Latency protocol pieces that need no model."""

from __future__ import annotations

import pandas as pd

from workflow_scripts import contracts, latency


def test_profile_interleaves_depths_and_records_every_call():
    calls = []
    models = {d: (lambda b, d=d: calls.append(d)) for d in (1, 2, 3)}
    batch = {"input_ids": __import__("torch").zeros((4, 8), dtype=__import__("torch").long)}
    df = latency.profile(models, batch, run=0, warmup_calls=2, rounds=3, calls_per_round=4,
                         device="cpu", seed=0)
    assert list(df.columns) == list(contracts.LATENCY_COLUMNS)
    assert len(df) == 3 * 3 * 4 and (df.batch_size == 4).all() and (df.seq_len == 8).all()
    orders = [tuple(g.drop_duplicates("depth").depth) for _, g in df.groupby("round")]
    assert len(set(orders)) > 1  # a fresh order per round
    assert len(calls) == 3 * 2 + 3 * 3 * (1 + 4)  # warm-up, one discarded + timed per visit


def test_summary_quantiles():
    df = pd.DataFrame({"run": 0, "depth": 1, "seconds": [0.001, 0.002, 0.003, 0.004, 0.005]})
    s = latency.summarize(df).iloc[0]
    assert s.p50_ms == 3.0 and s.iqr_ms == 2.0 and s.calls == 5
