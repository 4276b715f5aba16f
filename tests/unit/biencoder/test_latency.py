"""Latency protocol pieces that need no model."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.biencoder.latency import coherence
from workflow_scripts.biencoder.latency import host as host
from workflow_scripts.biencoder.latency import profile as latency
from workflow_scripts.biencoder.latency import protocol as protocol
from workflow_scripts.biencoder.latency import summary as summ
from workflow_scripts.biencoder.report import figures
from workflow_scripts.biencoder.report import results as report
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import LatencyProfile, LatencySummary


def profile_settings(**kw) -> LatencyProfile:
    """Schema defaults, but a fixed warm-up, one discarded call and no auxiliary stages
    unless `kw` says otherwise."""
    base = {"warmup_window": 0, "discard_calls": 1, "encode_calls": 0}
    return dataclasses.replace(LatencyProfile.from_json(json.dumps(base)), **kw)


def summary_settings(**kw) -> LatencySummary:
    return dataclasses.replace(LatencySummary.from_json("{}"), **kw)


def summarize(df, **kw) -> pd.DataFrame:
    return summ.summarize(df, summary_settings(**kw))


class FakeMachine:
    """A virtual clock that each model call advances by (a + b * depth) x drift(t) x jitter
    (+ additive(t)): drift, jitter and anomalies without a real model or real time.
    `low`: depth -> factor by which that depth's calls read low (the seed study's anomaly)."""

    def __init__(self, a=2e-3, b=10e-3, *, drift=None, jitter=0.01, additive=None, low=None,
                 seed=0):
        self.t, self.a, self.b, self.jitter = 0.0, a, b, jitter
        self.drift = drift or (lambda t: 1.0)
        self.additive = additive or (lambda t: 0.0)
        self.low = low or {}
        self.rng = np.random.default_rng(seed)
        self.log = []  # the depth of every model call

    def now(self) -> float:
        return self.t

    def model(self, depth):
        def call(batch=None):
            cost = (self.a + self.b * depth) / self.low.get(depth, 1.0)
            noise = 1 + self.jitter * self.rng.standard_normal()
            self.t += cost * self.drift(self.t) * noise + self.additive(self.t)
            self.log.append(depth)

        return call

    def timer(self):
        return protocol.timer("cpu", wall=self.now, cpu=self.now)

    def run(self, run: int, depths=(1, 2, 3), **kw) -> pd.DataFrame:
        settings = profile_settings(**{"warmup_calls": 5, **kw})
        df, _ = protocol.profile_protocol({d: self.model(d) for d in depths}, _batch(),
                                          settings, run=run, device="cpu", timed=self.timer())
        return df

    def true_q(self, depths=(1, 2, 3)) -> np.ndarray:
        return np.array([(self.a + self.b * d) / (self.a + self.b * depths[0]) for d in depths])


def slow_drift(seed: int, amplitude=0.2, period=3.0):
    """A smooth random speed factor within 1 +- amplitude, changing over `period` seconds
    of virtual time (a round takes about 0.2 s)."""
    rng = np.random.default_rng(seed)
    phase, freq = rng.uniform(0, 2 * np.pi, 3), rng.uniform(0.5, 1.5, 3) / period
    return lambda t: 1 + amplitude * np.tanh(np.sum(np.sin(2 * np.pi * freq * t + phase))
                                             / np.sqrt(3))


def analyse(machines, **kw):
    """Three profiling runs on fake machines through summary and checks."""
    df = pd.concat([m.run(r, **kw) for r, m in enumerate(machines)], ignore_index=True)
    settings = summary_settings(nboot=400)
    return summ.check(summ.summarize(df, settings), coherence.Thresholds.of(settings))


def test_quiet_machine_passes_everything_and_verifies_the_milliseconds():
    machines = [FakeMachine(seed=r) for r in range(3)]
    summary, doc, ladder = analyse(machines)
    assert doc["coherent_runs"] == [0, 1, 2] and doc["absolute_verified"]
    assert all(r["checks"][k]["pass"] in (True, None) for r in doc["runs"] for k in r["checks"])
    assert ladder.q.to_numpy() == pytest.approx(machines[0].true_q(), rel=0.01)
    assert ladder.p50_ms.to_numpy() == pytest.approx([12, 22, 32], rel=0.01)
    assert ladder.absolute_verified.all() and doc["canonical_ladder"]["absolute_verified"]


def test_slow_random_drift_keeps_the_relative_ladder_and_flags_the_milliseconds():
    """+-20% drift: the old `stable` gate (IQR/median of the raw calls < 0.1, raw p50 within
    10% across runs) fails; the relative gates pass; absolute_verified is false."""
    machines = [FakeMachine(seed=r, drift=slow_drift(r)) for r in range(3)]
    summary, doc, ladder = analyse(machines)
    old_stable = [coherence.check_absolute_stable({**r, "drift_range": None})
                  for r in (summ._run_record(g) for _, g in summary.groupby("run"))]
    assert not any(c["pass"] for c in old_stable)
    assert all(c["value"]["max_iqr_over_median"] > 0.1 for c in old_stable)
    assert doc["coherent_runs"] == [0, 1, 2]
    assert all(r["checks"]["relative_stable"]["pass"] for r in doc["runs"])
    assert not doc["absolute_verified"] and not ladder.absolute_verified.any()
    assert all(r["drift"]["drift_range"] > 0.2 for r in doc["runs"])
    assert ladder.q.to_numpy() == pytest.approx(machines[0].true_q(), rel=0.02)


def test_a_slowdown_ramp_leaves_q_unbiased_and_flags_the_milliseconds():
    # A run of 60 rounds takes about 9 s of virtual time (warm-up included): 30% slower by
    # its end. (Each half is then 5 whole cycles of the orders, balanced under the ramp.)
    machines = [FakeMachine(seed=r, drift=lambda t: 1 + 0.3 * t / 9) for r in range(3)]
    summary, doc, ladder = analyse(machines, rounds=60)
    assert doc["coherent_runs"] == [0, 1, 2] and not doc["absolute_verified"]
    for r in doc["runs"]:
        assert r["relative_ladder"]["q"] == pytest.approx(machines[0].true_q(), rel=0.015)
        assert r["drift"]["drift_over_run"] == pytest.approx(0.3, abs=0.05)
        assert "speed moved" in r["why"]["absolute_stable"]


@pytest.mark.parametrize("factor", [2.0, 3.0, 5.0])
def test_shallow_depths_reading_low_stay_incoherent(factor):
    """The seed study's anomaly: 2 of 3 runs read the shallow depths 2-5x low."""
    lows = [{}, {1: factor}, {1: factor, 2: factor / 2 + 0.5}]
    summary, doc, ladder = analyse([FakeMachine(seed=r, low=low) for r, low in
                                    enumerate(lows)])
    assert doc["coherent_runs"] == [0]
    for r in doc["incoherent_runs"]:
        assert {"linear", "leave_one_out"} & set(r["failed"]), r
    assert ladder.p50_ms.to_numpy() == pytest.approx([12, 22, 32], rel=0.02)


def test_additive_drift_is_caught_by_the_two_halves():
    """A fixed delay that grows over the run weighs more on the fast depth: Q itself moves,
    so the halves disagree (and the residuals follow alpha)."""
    machines = [FakeMachine(seed=r, additive=lambda t: 0.010 * t / 12) for r in range(3)]
    summary, doc, ladder = analyse(machines)
    assert doc["coherent_runs"] == [] and ladder.p50_ms.isna().all()
    for r in doc["runs"]:
        assert r["failed"] == ["relative_stable"]
        assert "two halves of the run disagree" in r["why"]["relative_stable"]
        assert r["drift"]["resid_alpha_corr"][0] > 0.3  # the fast depth follows alpha


def test_the_same_seed_gives_the_same_orders_and_another_run_others():
    def orders(run, seed=0):
        m = FakeMachine()
        m.run(run, seed=seed, warmup_calls=0)
        return m.log

    assert orders(0) == orders(0) != orders(1)
    assert orders(1, seed=5) == orders(0, seed=6)  # run r draws with seed + r


def test_orders_are_balanced_over_positions():
    rng = np.random.default_rng(0)
    for depths, rounds in (([1, 2, 3], 12), ([3, 6, 9, 12], 48), (list(range(1, 8)), 14)):
        orders = protocol.balanced_orders(depths, rounds, rng)
        assert len(orders) == rounds and all(sorted(o) == depths for o in orders)
        counts = pd.DataFrame(orders).apply(lambda col: col.value_counts()).to_numpy()
        assert (counts == rounds // len(depths)).all(), counts  # each depth, each position
    three = protocol.balanced_orders([1, 2, 3], 6, np.random.default_rng(1))
    assert len({tuple(o) for o in three}) == 6  # every permutation once per cycle


def test_the_calls_after_a_switch_are_recorded_and_their_cost_measured():
    """A switch costs the first call after it 50% more, the second 10%: recorded with the
    calls' positions, left out of the ladder and measured."""
    m = FakeMachine(jitter=0.0)
    since = {"depth": None, "n": 0}
    base = {d: m.model(d) for d in (1, 2, 3)}

    def model(d):
        def call(batch=None):
            since.update(n=since["n"] + 1 if since["depth"] == d else 0, depth=d)
            t0 = m.t
            base[d]()
            m.t += (m.t - t0) * {0: 0.5, 1: 0.1}.get(since["n"], 0.0)
        return call

    settings = profile_settings(rounds=12, discard_calls=2, calls_per_round=2, warmup_calls=0)
    df, _ = protocol.profile_protocol({d: model(d) for d in (1, 2, 3)}, _batch(), settings,
                                      run=0, device="cpu", timed=m.timer())
    assert df.groupby("position").size().tolist() == [36] * 4
    assert df.timed.tolist() == (df.position >= 2).tolist()
    assert (np.diff(df.start_s) > 0).all() and df.start_s.iloc[0] == 0
    cost = summ.relative_rows(df, 0, summary_settings(nboot=100))
    # The last depth of a round can open the next one: no switch there, so medians.
    assert cost.switch_cost_first.to_numpy() == pytest.approx([0.5] * 3, abs=1e-9)
    s = summ.summarize(df, summary_settings(nboot=100)).set_index("depth")
    assert s.p50_ms.to_numpy() == pytest.approx([12, 22, 32])  # switch calls left out


def test_profile_records_every_call_in_the_contract_columns():
    m = FakeMachine()
    df = protocol.profile({d: m.model(d) for d in (1, 2, 3)}, _batch(),
                          profile_settings(warmup_calls=2, rounds=3, calls_per_round=4, seed=0),
                          run=0, device="cpu", timed=m.timer())
    assert list(df.columns) == list(contracts.LATENCY_COLUMNS)
    assert len(df) == 3 * 3 * (1 + 4) and (df.batch_size == 4).all() and (df.seq_len == 8).all()
    assert df.timed.sum() == 3 * 3 * 4
    assert len(m.log) == 3 * 2 + 3 * 3 * (1 + 4)  # interleaved warm-up, then the rounds
    assert m.log[:6] != sorted(m.log[:6])  # warm-up interleaves the depths


def test_summary_quantiles():
    df = pd.DataFrame({"run": 0, "depth": 1, "round": [0, 1, 2, 3, 4],
                       "seconds": [0.001, 0.002, 0.003, 0.004, 0.005]})
    s = summarize(df).iloc[0]
    assert s.p50_ms == 3.0 and s.iqr_ms == 2.0 and s.calls == 5 and s.q == 1.0


# ---------------------------------------------------------------------------------------
# The protocol: warm-up, discarded calls, separate stages (fake models, no torch model)
# ---------------------------------------------------------------------------------------
def _batch(n=4, L=8):
    import torch

    return {"input_ids": torch.zeros((n, L), dtype=torch.long)}


def test_protocol_times_stages_in_rounds_of_their_own():
    m = FakeMachine()
    aux_calls = []
    models = {d: m.model(d) for d in (1, 2, 3)}
    aux = {"encode": {d: (lambda d=d: aux_calls.append(("encode", d))) for d in (1, 2, 3)},
           "tokenize": dict.fromkeys((1, 2, 3), lambda: aux_calls.append(("tokenize", 0)))}
    settings = profile_settings(rounds=4, calls_per_round=3, seed=1, warmup_calls=5,
                                discard_calls=2, encode_calls=2)
    df, warmup = protocol.profile_protocol(models, _batch(), settings, run=7, device="cpu",
                                           aux=aux, timed=m.timer())
    assert list(df.columns) == list(protocol.COLUMNS)
    assert df.groupby("stage").size().to_dict() == {"forward": 60, "encode": 18, "tokenize": 18}
    assert df[df.timed].groupby("stage").size().to_dict() == {"forward": 36, "encode": 6,
                                                              "tokenize": 6}
    assert len(m.log) == 3 * 5 + 4 * 3 * (2 + 3)  # fixed warm-up (window 0), the rounds
    assert [s for s, _ in aux_calls] == ["encode"] * 18 + ["tokenize"] * 18
    assert warmup == {d: {"calls": 5, "converged": True, "p50_ms": pytest.approx(np.nan,
                                                                                  nan_ok=True)}
                      for d in (1, 2, 3)}
    assert (df.run == 7).all() and df.event_seconds.isna().all()
    assert (df.seconds >= 0).all() and df.cpu_seconds.notna().all()


def _scripted_timer(times):
    it = iter(times)
    return lambda fn: (fn(), 0.0, next(it), float("nan"), 0.0)[1:]


def test_warm_up_runs_until_two_windows_agree():
    # Slow first calls (cold caches), then a steady 10 ms.
    times = [0.05, 0.04, 0.03, 0.02, 0.015] + [0.010] * 100
    w = protocol.warm_up({1: lambda: None}, _scripted_timer(times), [[1]], min_calls=6,
                         max_calls=100, window=4, tol=0.02)[1]
    # Call 12: the window of calls 9-12 and that of calls 5-8 both have median 10 ms.
    assert w["converged"] and w["calls"] == 12 and w["p50_ms"] == pytest.approx(10.0)
    # At least `min_calls`, even when stable earlier.
    w = protocol.warm_up({1: lambda: None}, _scripted_timer([0.01] * 100), [[1]],
                         min_calls=30, max_calls=100, window=4, tol=0.02)[1]
    assert w == {"calls": 30, "converged": True, "p50_ms": pytest.approx(10.0)}


def test_warm_up_interleaves_the_depths_until_each_is_stable():
    m = FakeMachine(jitter=0.0)
    cold = {"left": 10}

    def slow_start():  # depth 2: slower for its first 10 calls (cold caches), 5x at first
        t0 = m.t
        m.model(2)()
        m.t += 0.4 * cold["left"] * (m.t - t0)
        cold["left"] = max(0, cold["left"] - 1)

    fns = {1: m.model(1), 2: slow_start}
    w = protocol.warm_up(fns, m.timer(), [[1, 2], [2, 1]], min_calls=2, max_calls=500,
                         window=3, tol=0.02)
    assert m.log[:4] == [1, 2, 2, 1]  # the rounds' orders, alternating
    assert w[1] == {"calls": 6, "converged": True, "p50_ms": pytest.approx(12.0)}
    # Calls 11-13 and 14-16 are warm: converged by call 16 at the latest.
    assert w[2]["converged"] and 10 < w[2]["calls"] <= 16
    assert w[2]["p50_ms"] == pytest.approx(22.0)


def test_warm_up_gives_up_and_says_so():
    drifting = [0.01 * 1.05 ** i for i in range(100)]  # never settles
    w = protocol.warm_up({1: lambda: None}, _scripted_timer(drifting), [[1]], min_calls=5,
                         max_calls=40, window=4, tol=0.02)[1]
    assert w["calls"] == 40 and not w["converged"]


def test_fixed_text_fills_the_padded_length():
    for L in (8, 64, 256, 512):
        assert len(protocol.long_text(L).split()) > L  # every word is at least one piece


# ---------------------------------------------------------------------------------------
# Summary, coherence and the canonical ladder from synthetic per-call rows
# ---------------------------------------------------------------------------------------
def synthetic_run(run: int, ladder_ms: dict, *, rounds=8, calls=5, jitter=0.01, seed=0):
    """Per-call rows of one run: forward calls around `ladder_ms` (no switch effect, all
    timed), encode a bit slower, in rounds of their own."""
    rng = np.random.default_rng(seed + run)
    rows, clock = [], 0.0
    for stage, n_rounds in (("forward", rounds), ("encode", rounds), ("tokenize", rounds)):
        for rnd in range(n_rounds):
            for depth, ms in ladder_ms.items():
                for pos in range(calls if stage == "forward" else 1):
                    s = {"forward": ms * (1 + rng.normal(0, jitter)), "encode": ms + 3,
                         "tokenize": 2.0}[stage] / 1e3
                    rows.append({"depth": depth, "round": rnd, "stage": stage,
                                 "position": pos, "timed": True, "start_s": clock,
                                 "seconds": s, "cpu_seconds": s * 0.98})
                    clock += s
    df = pd.DataFrame(rows)
    df["run"], df["batch_size"], df["seq_len"], df["device"] = run, 8, 32, "cpu"
    df["event_seconds"] = float("nan")
    df["threads"], df["dtype"], df["torch"], df["device_name"] = 1, "float32", "x", "test cpu"
    df["warmup_calls"], df["warmup_converged"] = 50, True
    return df


GOOD = {1: 12.0, 2: 22.0, 3: 32.0}
SHALLOW_LOW = {1: 4.0, 2: 22.0, 3: 32.0}  # depth 1 reads 3x low


def test_summary_separates_stages_and_gives_a_round_bootstrap_ci():
    s = summarize(synthetic_run(0, GOOD), nboot=500).set_index("depth")
    assert s.p50_ms.to_numpy() == pytest.approx([12, 22, 32], rel=0.01)
    assert (s.ci_low_ms < s.p50_ms).all() and (s.p50_ms < s.ci_high_ms).all()
    assert s.encode_p50_ms.to_numpy() == pytest.approx([15, 25, 35])
    assert s.tokenize_p50_ms.to_numpy() == pytest.approx([2, 2, 2])
    assert (s.calls == 40).all() and (s.rounds == 8).all()
    assert s.cpu_p50_ms.to_numpy() == pytest.approx(0.98 * s.p50_ms.to_numpy())


def test_check_keeps_only_coherent_runs_in_the_canonical_ladder():
    df = pd.concat([synthetic_run(0, GOOD), synthetic_run(1, {d: 1.02 * v for d, v in
                                                              GOOD.items()}),
                    synthetic_run(2, SHALLOW_LOW)], ignore_index=True)
    summary, doc, ladder = summ.check(summarize(df, nboot=300))
    assert doc["coherent_runs"] == [0, 1]
    assert [r["run"] for r in doc["incoherent_runs"]] == [2]
    assert {"linear", "leave_one_out"} <= set(doc["incoherent_runs"][0]["failed"])
    assert all(doc["runs"][0]["checks"][k]["pass"] in (True, None) for k in doc["runs"][0]
               ["checks"])
    assert doc["runs"][0]["checks"]["timers_agree"]["value"]["timer"] == "process_cpu"
    json.dumps(doc)
    assert ladder.p50_ms.to_numpy() == pytest.approx([12.12, 22.22, 32.32], rel=0.01)
    assert (ladder.runs_used == 2).all() and (ladder.runs == "0,1").all()
    assert ladder.coherent.all()
    assert summary.groupby("run").coherent.first().tolist() == [True, True, False]
    assert "linear" in summary[summary.run == 2].failed_checks.iloc[0]


def test_summary_cli_writes_summary_coherence_and_ladder(tmp_path):
    paths = []
    for r, ladder in enumerate([GOOD, GOOD, SHALLOW_LOW]):
        p = tmp_path / f"run{r}.parquet"
        synthetic_run(r, ladder).to_parquet(p)
        paths.append(str(p))
    out = tmp_path / "out"
    summ.main(["--runs", *paths, "--settings-json", '{"nboot": 200}',
                  "--out", str(out / "s.parquet"), "--coherence", str(out / "c.json"),
                  "--ladder", str(out / "l.parquet")])
    doc = json.loads((out / "c.json").read_text())
    assert doc["coherent_runs"] == [0, 1] and doc["canonical_ladder"]["runs_used"] == [0, 1]
    assert doc["canonical_ladder"]["fit"]["b_ms_per_layer"] == pytest.approx(10, rel=0.05)
    assert set(doc["runs"][0]["checks"]) == set(coherence.CHECKS)
    assert doc["runs"][0]["env"]["threads"] == 1
    lad = pd.read_parquet(out / "l.parquet")
    assert lad.depth.tolist() == [1, 2, 3] and lad.p50_ms.notna().all()
    assert len(pd.read_parquet(out / "s.parquet")) == 9


def _stats():
    rows = [{"recipe": r, "strategy": "top", "depth": d, "benchmark": "all", "metric": "ndcg@10",
             "estimate": e, "ci_low": e - 0.02, "ci_high": e + 0.02, "ci": 0.95,
             "interval": "calibrated"}
            for r, base in (("short", 0.2), ("base", 0.1)) for d, e in
            ((1, base), (2, base + 0.05), (3, base + 0.08))]
    return {"ci": pd.DataFrame(rows)}


def test_report_and_pareto_show_the_canonical_ladder_and_the_incoherent_runs(tmp_path):
    df = pd.concat([synthetic_run(0, GOOD), synthetic_run(1, GOOD),
                    synthetic_run(2, SHALLOW_LOW)], ignore_index=True)
    summary, doc, ladder = summ.check(summarize(df, nboot=200))
    md = report.latency_section(summary, ladder)
    assert "## Latency ladder" in md and "### Per-run verdicts" in md
    assert "| 1 | 1.000 | 12.00 | 2 |" in md  # canonical p50 at depth 1: run 2's 4 ms left out
    assert "**Absolute milliseconds: verified**" in md
    assert "- run 2: " in md and "linear" in md.split("- run 2: ")[1]
    assert "| 2 | INCOHERENT |" in md and "| 0 | coherent |" in md
    fig = figures.pareto(_stats(), ladder, ["short"])
    xs = sorted(x for line in fig.axes[0].lines for x in line.get_xdata())
    assert min(xs) == pytest.approx(12.0, rel=0.02)
    assert "UNVERIFIED" not in fig.axes[0].get_title()
    assert "ms verified" in fig.axes[0].get_xlabel()
    figures.save(fig, [tmp_path / "p.png"])
    drifting = ladder.assign(absolute_verified=False)
    assert "ms NOT verified" in figures.pareto(_stats(), drifting, ["short"]).axes[0].get_xlabel()
    assert "**Absolute milliseconds: not verified**" in report.latency_section(summary, drifting)
    with pytest.raises(ValueError, match="canonical latency ladder"):
        figures.pareto(_stats(), summary, ["short"])  # per-run rows are not a ladder


def test_no_coherent_run_is_impossible_to_miss():
    df = pd.concat([synthetic_run(0, SHALLOW_LOW), synthetic_run(1, SHALLOW_LOW)])
    summary, doc, ladder = summ.check(summarize(df, nboot=200))
    assert doc["coherent_runs"] == [] and ladder.p50_ms.isna().all()
    assert "fit" not in doc["canonical_ladder"]
    md = report.latency_section(summary, ladder)
    assert "No profiling run passed the coherence check" in md and "Fit:" not in md
    fig = figures.pareto(_stats(), ladder, ["short"])
    assert "UNVERIFIED" in fig.axes[0].get_title()


# ---------------------------------------------------------------------------------------
# One real profiling run on the tiny random BERT (a few seconds)
# ---------------------------------------------------------------------------------------
def test_profile_cli_on_a_tiny_model(tiny_model, tmp_path):
    import torch

    threads = torch.get_num_threads()
    out = tmp_path / "run3.parquet"
    try:
        settings = {"batch_size": 2, "seq_len": 16, "warmup_calls": 3, "warmup_window": 2,
                    "warmup_max_calls": 20, "rounds": 2, "calls_per_round": 2,
                    "discard_calls": 1, "max_rounds": 2}
        latency.main(["--base", str(tiny_model), "--strategy", "top", "--depths",
                      "1", "3", "--run", "3", "--threads", "1",
                      "--settings-json", json.dumps(settings), "--out", str(out)])
    finally:
        torch.set_num_threads(threads)
    df = contracts.read_latency(out)
    assert set(df.stage) == {"forward", "encode", "tokenize"} and set(df.depth) == {1, 3}
    assert (df.seq_len == 16).all() and (df.batch_size == 2).all() and (df.run == 3).all()
    assert (df.threads == 1).all() and (df.dtype == "float32").all()
    assert {"torch", "device_name", "loadavg_before", "loadavg_after", "warmup_calls",
            "warmup_converged"} <= set(df.columns)
    assert (df.warmup_calls >= 4).all() and (df.warmup_calls <= 20).all()
    fwd = df[df.stage == "forward"]
    assert len(fwd) == 2 * 2 * (1 + 2) and fwd.timed.sum() == 2 * 2 * 2
    assert set(fwd.position) == {0, 1, 2} and (fwd.timed == (fwd.position >= 1)).all()
    # The stopping rule's record: 2 rounds is the cap here.
    assert (df.rounds_used == 2).all() and (df.target_half_width == 0.03).all()
    assert set(df.stop_reason) <= {"target", "max_rounds"} and df.half_width.notna().all()


def test_a_busy_machine_is_named_as_the_likely_cause():
    quiet, busy = synthetic_run(0, GOOD), synthetic_run(1, GOOD)
    for df, load in ((quiet, 1.2), (busy, 2.6)):
        df["host_cpus"], df["loadavg_before"], df["loadavg_after"] = 2, load, load
    summary, doc, _ = summ.check(summarize(pd.concat([quiet, busy]), nboot=200))
    assert doc["runs"][0]["notes"] == ""
    assert "load average up to 2.60 on 2 CPUs" in doc["runs"][1]["notes"]
    assert doc["runs"][1]["env"]["loadavg_before"] == 2.6


def test_other_work_is_measured_from_host_cpu_time():
    """/proc/stat accounting over the timed rounds: cores other processes used, and steal;
    a quiet but unstable run is told apart from a busy one."""
    quiet, busy = synthetic_run(0, GOOD), synthetic_run(1, GOOD)
    for df, other in ((quiet, 0.05), (busy, 0.9)):
        df["device"], df["host_cpus"], df["threads"] = "cpu", 2, 1
        before = {"clock_s": 100.0, "proc_cpu_s": 10.0, "host_busy_s": 500.0,
                  "host_steal_s": 1.0}
        # 30 s of rounds: this process used 30 CPU-s, others `other` cores, no steal
        after = {"clock_s": 130.0, "proc_cpu_s": 40.0, "host_busy_s": 530.0 + 30 * other,
                 "host_steal_s": 1.0}
        for k in before:
            df[f"{k}_before"], df[f"{k}_after"] = before[k], after[k]
    summary, doc, _ = summ.check(summarize(pd.concat([quiet, busy]), nboot=200))
    assert doc["runs"][0]["notes"].startswith("nothing else ran: other processes 0.05 cores")
    assert "CPU itself" not in doc["runs"][0]["notes"]  # coherent: no explanation needed
    assert "other processes kept 0.90 cores busy" in doc["runs"][1]["notes"]
    assert doc["runs"][1]["env"]["other_processes_cores"] == pytest.approx(0.9)
    assert doc["runs"][0]["env"]["steal_share"] == 0.0
    env = host.host_cpu_seconds()
    assert env["proc_cpu_s"] > 0 and env["clock_s"] > 0
    assert np.isnan(env["host_busy_s"]) or env["host_busy_s"] > 0


def test_cuda_runs_compare_wall_with_event_time():
    ok = synthetic_run(0, GOOD)
    ok["device"], ok["event_seconds"] = "cuda", ok["seconds"] * 0.95
    bad = synthetic_run(1, GOOD)
    bad["device"] = "cuda"
    # Shallow depth: the event time exceeds the wall time (an unsynchronized wall timer).
    bad["event_seconds"] = bad["seconds"] * np.where(bad["depth"] == 1, 1.5, 0.95)
    _, doc, _ = summ.check(summarize(pd.concat([ok, bad]), nboot=200))
    timers = [r["checks"]["timers_agree"] for r in doc["runs"]]
    assert timers[0]["pass"] is True and timers[0]["value"]["timer"] == "cuda_event"
    assert timers[1]["pass"] is False and doc["runs"][1]["failed"] == ["timers_agree"]


def test_cli_settings_come_from_the_json_only(tmp_path, capsys):
    """No setting has a CLI flag; a key the stage does not read is an error."""
    args = ["--runs", "r.parquet", "--out", str(tmp_path / "s.parquet")]
    with pytest.raises(SystemExit):
        summ.main([*args, "--settings-json", '{"rounds": 3}'])
    assert "unknown setting(s) rounds" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        summ.main([*args, "--nboot", "200"])
    with pytest.raises(SystemExit):
        latency.main(["--base", "x", "--strategy", "top", "--depths", "1",
                      "--run", "0", "--threads", "1", "--out", "o.parquet",
                      "--settings-json", '{"batch_size": 0}'])
    assert "batch_size" in capsys.readouterr().err


def test_a_reference_depth_outside_the_depths_is_a_config_error():
    import yaml
    from conftest import ROOT

    from workflow_scripts.study_config import check_config

    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["latency"]["reference_depth"] = 4
    with pytest.raises(ValueError, match=r"config key latency.reference_depth: 4 is not one "
                                         r"of depths \[1, 2, 3\]"):
        check_config(cfg)
    df = synthetic_run(0, GOOD)
    rows = summarize(df, reference_depth=2).set_index("depth")
    assert rows.q.to_numpy() == pytest.approx([12 / 22, 1, 32 / 22], rel=0.01)
    with pytest.raises(ValueError, match="latency.reference_depth: 4 is not one of"):
        summarize(df, reference_depth=4)
