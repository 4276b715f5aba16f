"""Adaptive latency rounds on fake machines (a virtual clock, no model): the stopping rule
reaches the target precision where fixed rounds miss it, stops at the minimum on a quiet
machine, says so when a cap stops it, leaves Q unbiased, and the latency claims read the
CI they get (never an error)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import test_claims as tc
import test_coherence as tcoh
import test_latency as tl

from workflow_scripts.biencoder.latency import coherence, protocol
from workflow_scripts.biencoder.latency import relative as rel
from workflow_scripts.biencoder.latency import summary as summ
from workflow_scripts.biencoder.report import results as report
from workflow_scripts.claims.data import Data
from workflow_scripts.core import contracts

FAST = {"nboot": 200}  # the stopping rule's bootstrap: enough to test the rule, and fast


class NoisyMachine(tl.FakeMachine):
    """A fake machine whose calls vary by a log-normal factor (sd `jitter` in log units):
    any noise level stays positive."""

    def model(self, depth):
        def call(batch=None):
            cost = (self.a + self.b * depth) / self.low.get(depth, 1.0)
            self.t += cost * self.drift(self.t) * np.exp(self.jitter * self.rng.standard_normal())
            self.log.append(depth)

        return call


def first(df: pd.DataFrame) -> pd.Series:  # the run's stopping record is on every row
    return df.iloc[0]


def worst_half_width(df: pd.DataFrame) -> float:
    return float(df.groupby("depth")["half_width"].first().max())


def run_q(df: pd.DataFrame) -> np.ndarray:
    """The run's relative ladder Q (reference: the shallowest depth)."""
    fwd = df[(df.stage == "forward") & df.timed]
    t, _, _ = rel.round_matrix(fwd)
    return np.exp(rel.fit(t, 0)["log_q"])


def test_the_adaptive_rounds_reach_the_target_where_30_fixed_rounds_miss_it():
    fixed = NoisyMachine(jitter=0.08, seed=1).run(0, rounds=30, max_rounds=30, **FAST)
    assert first(fixed).rounds_used == 30 and first(fixed).stop_reason == "max_rounds"
    assert worst_half_width(fixed) > 0.03
    adaptive = NoisyMachine(jitter=0.08, seed=1).run(0, rounds=24, max_rounds=240, **FAST)
    row = first(adaptive)
    assert row.stop_reason == "target" and 30 < row.rounds_used < 240
    assert worst_half_width(adaptive) <= 0.03 and row.target_half_width == 0.03
    assert (row.rounds_used - 24) % 6 == 0  # whole blocks of the 3! orders
    fwd = adaptive[(adaptive.stage == "forward") & adaptive.timed]
    assert fwd["round"].nunique() == row.rounds_used
    counts = pd.crosstab(fwd["depth"], fwd.groupby("round").cumcount())
    assert (counts.to_numpy() == row.rounds_used // 3).all()  # balanced in position
    # The run records what the summary reports: the same bootstrap, the same half-widths.
    s = summ.summarize(adaptive, tl.summary_settings(nboot=200)).sort_values("depth")
    assert s.q_half_width.to_numpy() == pytest.approx(
        adaptive.groupby("depth")["half_width"].first().to_numpy())
    assert (s.rounds_used == row.rounds_used).all() and (s.stop_reason == "target").all()


def test_a_quiet_machine_stops_at_the_minimum():
    df = NoisyMachine(jitter=0.005, seed=2).run(0, rounds=24, **FAST)
    assert first(df).rounds_used == 24 and first(df).stop_reason == "target"
    assert worst_half_width(df) < 0.01
    assert first(df).rounds_seconds == pytest.approx(24 * 2 * (0.012 + 0.022 + 0.032),
                                                     rel=0.01)


@pytest.mark.parametrize(("cap", "reason"), [({"max_rounds": 60}, "max_rounds"),
                                             ({"max_seconds": 5.0}, "max_seconds")])
def test_a_hopeless_machine_hits_the_cap_and_says_so(cap, reason):
    machines = [NoisyMachine(jitter=0.5, seed=r) for r in range(3)]
    df = pd.concat([m.run(r, rounds=24, **FAST, **cap) for r, m in enumerate(machines)],
                   ignore_index=True)
    assert (df.stop_reason == reason).all()
    rounds = df.groupby("run")["rounds_used"].first()
    if reason == "max_rounds":
        assert (rounds == 60).all()
    else:  # no block starts after 5 s: the last one ends within a block of it
        seconds = df.groupby("run")["rounds_seconds"].first()
        assert (seconds >= 5.0).all() and (seconds < 5.0 + 6 * 0.14).all()
    settings = tl.summary_settings(nboot=200)
    summary, doc, _ = summ.check(summ.summarize(df, settings),
                                 coherence.Thresholds.of(settings))
    for r in doc["runs"]:
        assert r["precision"]["stop_reason"] == reason
        assert not r["precision"]["reached_target"] and r["precision"]["max_half_width"] > 0.03
        assert r["checks"]["precise"]["pass"] is False
        assert f"stopped at {reason}" in r["why"]["precise"]
        assert "precise" not in r["failed"]  # reported, not gated
    # So noisy that two runs' ladders fail a shape check by chance; run 1 decides.
    assert doc["coherent_runs"] == [1]
    doc = json.loads(json.dumps(doc, default=contracts._json_default))
    data = Data(latency_calls=df, coherence=doc)
    verdicts = set()
    # The canonical ladder's Q(L2)/Q(L3) from run 1 alone: ~0.75, its CI ~[0.6, 0.9]
    for threshold in (0.95, 0.7):
        v, table = tc.verdict({"estimate": "latency_ratio", "a": {"depth": 3},
                               "b": {"depth": 2}, "test": "less", "threshold": threshold},
                              data)
        verdicts.add(v)
        member = table.iloc[1]
        assert member.ci_low < member.ci_high
        # Decided exactly when the CI is on one side of the threshold.
        straddles = member.ci_low <= threshold <= member.ci_high
        assert (v == "inconclusive") == straddles, (threshold, member.ci_low, member.ci_high)
        assert "stopped at a cap" in member.caveats
    assert "inconclusive" in verdicts and len(verdicts) == 2  # one threshold decided


def test_a_cap_run_with_a_wide_ci_still_decides_a_clear_claim():
    """The default's claim: Q(L2)/Q(L3) ~ 0.69 against 0.85. A run at ±5% is not
    precise, but its CI is far from the threshold: supported, with the width as caveat."""
    machines = [NoisyMachine(jitter=0.09, seed=r) for r in range(3)]
    df = pd.concat([m.run(r, rounds=24, max_rounds=30, **FAST) for r, m in
                    enumerate(machines)], ignore_index=True)
    settings = tl.summary_settings(nboot=200)
    summary, doc, ladder = summ.check(summ.summarize(df, settings),
                                      coherence.Thresholds.of(settings))
    text = report.latency_section(summary, ladder)
    assert "| rounds | stopped at | CI of Q ± |" in text.replace("  ", " ")
    assert "Run(s) 0, 1, 2 stopped at a cap before every Q's CI reached the target" in text
    # A noisy run's halves can disagree by chance (run 1 here): its CI is no reason.
    assert doc["coherent_runs"] == [0, 2]
    assert all(not r["precision"]["reached_target"] for r in doc["runs"])
    doc = json.loads(json.dumps(doc, default=contracts._json_default))
    claim = {"all_of": [{"estimate": "latency_coherent"},
                        {"estimate": "latency_ratio", "a": {"depth": 3}, "b": {"depth": 2},
                         "test": "less", "threshold": 0.85}]}
    v, table = tc.verdict(claim, Data(latency_calls=df, coherence=doc))
    assert v == "supported", table[["member", "verdict", "note", "caveats"]]
    assert table.iloc[2].estimate == pytest.approx(22 / 32, rel=0.03)
    assert "2 coherent run(s)" in table.iloc[2].caveats
    assert "widest CI of Q: run 0 ±" in table.iloc[2].caveats
    assert "stopped at a cap before the target precision" in table.iloc[2].caveats


@pytest.mark.parametrize("factor", [2.0, 5.0])
def test_shallow_depths_reading_low_stay_incoherent_under_adaptive_rounds(factor):
    lows = [{}, {1: factor}, {1: factor, 2: factor / 2 + 0.5}]
    machines = [NoisyMachine(jitter=0.05, seed=r, low=low) for r, low in enumerate(lows)]
    df = pd.concat([m.run(r, rounds=24, **FAST) for r, m in enumerate(machines)],
                   ignore_index=True)
    settings = tl.summary_settings(nboot=200)
    _, doc, ladder = summ.check(summ.summarize(df, settings), coherence.Thresholds.of(settings))
    assert doc["coherent_runs"] == [0]
    for r in doc["incoherent_runs"]:
        assert {"linear", "leave_one_out"} & set(r["failed"]), r
    assert ladder.q.to_numpy() == pytest.approx(machines[0].true_q(), rel=0.03)


def test_the_sequential_stop_leaves_q_unbiased():
    """Over many simulated runs whose stop depends on the data (from 24 rounds up to 96),
    the mean Q is within 1% of the truth, as it is for runs of the full length. The
    stopping rule (`adaptive_rounds` reading `half_widths`, as the protocol does) on
    rounds drawn directly: t[round, depth] = true t x the round's speed x noise."""
    truth_t = np.array([12.0, 22.0, 32.0])
    stopped, full, used = [], [], []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        t = (truth_t * np.exp(0.2 * rng.standard_normal((96, 1))
                              + 0.07 * rng.standard_normal((96, 3))))
        out = protocol.adaptive_rounds(
            lambda a, b: None,
            lambda n, t=t, seed=seed: rel.half_widths(t[:n], 0, nboot=100, level=0.95,
                                                      seed=seed),
            lambda: 0.0, first=24, block=6, limit=96, seconds=60, target=0.03)
        n = out["rounds_used"]
        used.append(n)
        stopped.append(np.exp(rel.fit(t[:n], 0)["log_q"]))
        full.append(np.exp(rel.fit(t, 0)["log_q"]))
    truth = truth_t / truth_t[0]
    assert len(set(used)) >= 3 and min(used) < 96  # the stop did depend on the data
    assert np.mean(stopped, axis=0) == pytest.approx(truth, rel=0.01)
    assert np.mean(full, axis=0) == pytest.approx(truth, rel=0.01)


def test_adaptive_rounds_stop_only_at_block_boundaries():
    """The loop itself, on a scripted precision: the minimum, then whole blocks."""
    done, widths = [], iter([0.09, 0.05, 0.031, 0.02])
    out = protocol.adaptive_rounds(lambda a, b: done.append((a, b)),
                                   lambda n: [0.0, next(widths)], lambda: 0.0, first=24,
                                   block=6, limit=240, seconds=60, target=0.03)
    assert done == [(0, 24), (24, 30), (30, 36), (36, 42)]
    assert out["rounds_used"] == 42 and out["stop_reason"] == "target"
    assert out["half_width"].tolist() == [0.0, 0.02]
    # A cap below the next block: stop at what is done.
    out = protocol.adaptive_rounds(lambda a, b: None, lambda n: [0.5], lambda: 0.0,
                                   first=24, block=6, limit=29, seconds=60, target=0.03)
    assert out["rounds_used"] == 24 and out["stop_reason"] == "max_rounds"


def test_runs_agree_when_their_cis_overlap_however_wide():
    """A capped run 6% off the others with ±5% CIs agrees (its CI overlaps theirs); the
    same Q with ±0.5% CIs does not."""
    q = tcoh.cpu_ladder(tcoh.CPU_DEPTHS[:3]) / 12
    off = q * np.r_[1, 1.06, 1.06]
    for rel_ci, agrees in ((0.05, True), (0.005, False)):
        runs = [tcoh.run(tcoh.CPU_DEPTHS[:3], q, run_id=0, rel_ci=rel_ci),
                tcoh.run(tcoh.CPU_DEPTHS[:3], q * 1.005, run_id=1, rel_ci=rel_ci),
                tcoh.run(tcoh.CPU_DEPTHS[:3], off, run_id=2, rel_ci=rel_ci)]
        v = coherence.verdicts(runs)[2]
        assert v["checks"]["relative_stable"]["pass"] is agrees, v["why"]
        assert v["checks"]["relative_stable"]["value"]["max_abs_q_deviation_from_runs"] \
            == pytest.approx(0.06, abs=0.006)
        assert ("off the runs' reference" in v["why"].get("relative_stable", "")) != agrees


def test_the_canonical_ladder_has_a_ci_from_runs_and_rounds(tmp_path):
    machines = [NoisyMachine(jitter=0.05, seed=r) for r in range(3)]
    paths = []
    for r, m in enumerate(machines):
        paths.append(tmp_path / f"run{r}.parquet")
        contracts.write_parquet(paths[-1], m.run(r, rounds=24, **FAST))
    out = tmp_path / "coherence.json"
    summ.main(["--runs", *map(str, paths), "--settings-json", '{"nboot": 200}',
               "--out", str(tmp_path / "summary.parquet"), "--coherence", str(out),
               "--ladder", str(tmp_path / "ladder.parquet")])
    canon = json.loads(out.read_text())["canonical_ladder"]
    q, lo, hi = (np.array(canon[k]) for k in ("q", "q_ci_low", "q_ci_high"))
    assert (lo <= q).all() and (q <= hi).all() and lo[0] == hi[0] == 1.0
    assert ((hi - lo)[1:] / q[1:] < 0.06).all()  # three runs of about ±3% each
    assert lo[2] < machines[0].true_q()[2] < hi[2]
    ladder = pd.read_parquet(tmp_path / "ladder.parquet")
    text = report.latency_section(pd.read_parquet(tmp_path / "summary.parquet"), ladder)
    assert f"{q[2]:.3f} [{lo[2]:.3f}, {hi[2]:.3f}]" in text
