"""Latency coherence checks on synthetic ladders (numpy only, no model, fast)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workflow_scripts.biencoder.latency import coherence as c

CPU_DEPTHS = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
PAPER_DEPTHS = np.array([3.0, 6.0, 9.0, 12.0])


def cpu_ladder(depths=CPU_DEPTHS):
    """A small intercept and a steep slope, as on a CPU: p50 = 2 + 10 n ms."""
    return 2.0 + 10.0 * np.asarray(depths, float)


def paper_ladder(depths=PAPER_DEPTHS):
    """The paper's coherent GPU ladder: p50 = 12.3 + 0.33 n ms."""
    return 12.3 + 0.33 * np.asarray(depths, float)


def r_squared(depths, p50) -> float:
    return c.linear_fit(depths, p50)[2]


def run(depths, q, *, run_id=0, rel_ci=0.005, rel_iqr=0.03, resid_iqr=0.02, drift=0.02,
        halves=None, ms=10.0, **extra) -> dict:
    """A run record as latency_summary gives it: the relative ladder `q` with CIs of
    +-rel_ci, paired increments' CIs, both halves (`halves`: their Q, default q), raw p50
    = q * ms milliseconds with IQR rel_iqr of it."""
    q = np.asarray(q, float)
    q1, q2 = (q, q) if halves is None else (np.asarray(h, float) for h in halves)
    step = np.diff(np.log(q))
    return {"run": run_id, "depths": np.asarray(depths, float), "q": q,
            "q_ci_low": q * (1 - rel_ci), "q_ci_high": q * (1 + rel_ci),
            "step_ci_low": step - 2 * rel_ci, "step_ci_high": step + 2 * rel_ci,
            **{f"q{i}{k}": h * f for i, h in ((1, q1), (2, q2))
               for k, f in (("", 1), ("_ci_low", 1 - 1.4 * rel_ci),
                            ("_ci_high", 1 + 1.4 * rel_ci))},
            "resid_iqr": resid_iqr, "drift_range": drift, "p50": q * ms,
            "iqr": q * ms * rel_iqr, **extra}


def test_a_coherent_ladder_passes_every_check():
    for depths, p50 in [(CPU_DEPTHS, cpu_ladder()), (PAPER_DEPTHS, paper_ladder()),
                        (CPU_DEPTHS[:3], cpu_ladder(CPU_DEPTHS[:3]))]:
        checks = c.check_run(run(depths, p50 / p50[0]))
        assert c.failed(checks, c.CHECKS) == [], {k: v["why"] for k, v in checks.items()}
        for name in ("monotone", "linear", "constant_slope", "leave_one_out",
                     "relative_stable", "absolute_stable"):
            assert checks[name]["pass"] is True, name
        assert checks["timers_agree"]["pass"] is None  # no second timer given


def test_the_shape_checks_are_scale_free():
    """Q in units of any depth, or milliseconds: the same verdicts and residuals."""
    p50 = cpu_ladder()
    p50[0] /= 3
    for scale in (1.0, 1 / p50[0], 1 / p50[2], 1e-3):
        checks = c.check_run({"depths": CPU_DEPTHS, "q": p50 * scale})
        assert c.failed(checks) == ["linear", "constant_slope", "leave_one_out"], scale
        assert checks["linear"]["value"]["rel_residuals"] == pytest.approx(
            c.check_run({"depths": CPU_DEPTHS, "q": p50})["linear"]["value"]["rel_residuals"])


@pytest.mark.parametrize(("depths", "factors"), [
    (CPU_DEPTHS, (2.0,)), (CPU_DEPTHS, (3.0,)), (CPU_DEPTHS, (5.0,)), (CPU_DEPTHS, (3.0, 2.0)),
    (CPU_DEPTHS[:3], (2.0,)), (CPU_DEPTHS[:3], (3.0,)), (CPU_DEPTHS[:3], (5.0,)),
])
def test_shallow_depths_reading_low_are_flagged_although_r2_is_high(depths, factors):
    """The paper's anomalous runs: shallow p50 under-reported 2-5x. R^2 stays above 0.95
    on these ladders, so a check on R^2 alone would pass them."""
    p50 = cpu_ladder(depths)
    for i, f in enumerate(factors):
        p50[i] /= f
    assert r_squared(depths, p50) > 0.95
    checks = c.check_run(run(depths, p50 / p50[0]))
    bad = c.failed(checks)
    assert "linear" in bad and "leave_one_out" in bad, bad
    assert checks["linear"]["value"]["r2"] > 0.95  # reported, but not what decides


def test_three_x_low_shallowest_point_on_the_paper_ladder_is_flagged():
    p50 = paper_ladder()
    p50[0] /= 3
    bad = c.failed(c.check_run(run(PAPER_DEPTHS, p50 / p50[0])))
    assert {"linear", "constant_slope", "leave_one_out"} <= set(bad)


def test_a_non_monotone_ladder_is_flagged():
    p50 = cpu_ladder()
    p50[3], p50[4] = p50[4], p50[3]  # depth 5 faster than depth 4
    checks = c.check_run(run(CPU_DEPTHS, p50 / p50[0]))
    assert checks["monotone"]["pass"] is False
    assert "does not rise from depth 4 to 5" in checks["monotone"]["why"]


def test_a_paired_increment_whose_ci_reaches_zero_fails_monotone_even_when_q_rises():
    q = cpu_ladder(CPU_DEPTHS[:3]) / 12.0
    rec = run(CPU_DEPTHS[:3], q)
    rec["step_ci_low"] = np.array([0.3, -0.01])
    checks = c.check_run(rec)
    assert checks["monotone"]["pass"] is False
    assert "increment from depth 2 to 3 reaches -1.0%" in checks["monotone"]["why"]
    assert checks["linear"]["pass"] is True


def test_a_ladder_with_a_kink_fails_constant_slope():
    p50 = np.array([12.0, 22.0, 32.0, 52.0, 72.0, 92.0])  # slope 10, then 20 ms/layer
    checks = c.check_run(run(CPU_DEPTHS, p50 / 12))
    assert checks["constant_slope"]["pass"] is False
    assert checks["constant_slope"]["value"]["ratio"] == pytest.approx(2.0)


def test_uneven_depth_spacing_uses_per_layer_increments():
    depths = np.array([1.0, 2.0, 4.0, 8.0])
    checks = c.check_run(run(depths, cpu_ladder(depths)))
    assert checks["constant_slope"]["pass"] is True
    assert checks["constant_slope"]["value"]["increments"] == pytest.approx([10, 10, 10])


def test_few_depths_mark_checks_not_applicable_instead_of_failing():
    two = c.check_run(run([1, 2], [1.0, 22 / 12]))
    assert two["monotone"]["pass"] is True and two["linear"]["pass"] is True
    assert two["constant_slope"]["pass"] is None and two["leave_one_out"]["pass"] is None
    assert c.failed(two) == []
    # With 2 depths the fit is exact, but the intercept floor still bites.
    assert c.failed(c.check_run(run([1, 2], [1.0, 5.5]))) == ["linear"]
    one = c.check_run(run([3], [1.0]))
    assert c.failed(one) == [] and one["monotone"]["pass"] is None
    with pytest.raises(ValueError, match="increasing"):
        c.check_run(run([2, 1], [1.0, 2.0]))


def test_timers_disagreeing_are_flagged():
    p50 = paper_ladder()
    q = p50 / p50[0]
    good = c.check_run(run(PAPER_DEPTHS, q, timer_kind="cuda_event", timer_wall=p50,
                           timer_reference=p50 * 0.97))
    assert good["timers_agree"]["pass"] is True
    # Wall below the event time: the timed region missed part of the work.
    low = c.check_run(run(PAPER_DEPTHS, q, timer_kind="cuda_event", timer_wall=p50,
                          timer_reference=p50 * 1.3))
    assert low["timers_agree"]["pass"] is False and "below" in low["timers_agree"]["why"]
    # Wall/event drifting with depth: e.g. host overhead hidden for the shallow models.
    ref = p50 / np.array([2.0, 1.5, 1.1, 1.0])
    drift = c.check_run(run(PAPER_DEPTHS, q, timer_kind="cuda_event", timer_wall=p50,
                            timer_reference=ref))
    assert drift["timers_agree"]["pass"] is False
    assert drift["timers_agree"]["value"]["spread"] == pytest.approx(2.0)


def test_noisy_raw_calls_fail_absolute_stable_only_which_does_not_gate():
    """What the old `stable` gate measured (IQR/median of the raw calls) is the machine's
    drift: it flags the milliseconds, not the run."""
    q = cpu_ladder() / 12
    checks = c.check_run(run(CPU_DEPTHS, q, rel_iqr=0.12, drift=0.3))
    assert c.failed(checks) == [] and c.failed(checks, c.CHECKS) == ["absolute_stable"]
    assert checks["absolute_stable"]["value"]["max_iqr_over_median"] == pytest.approx(0.12)
    assert "speed moved 30.0%" in checks["absolute_stable"]["why"]


def test_relative_stable_needs_agreeing_halves():
    q = cpu_ladder() / 12
    halves = (q, q * np.r_[1, 1.04, 1, 1, 1, 1])
    checks = c.check_run(run(CPU_DEPTHS, q, halves=halves))
    assert c.failed(checks) == ["relative_stable"]
    assert "the two halves of the run disagree at depth 2" in checks["relative_stable"]["why"]
    # Halves 4% apart whose CIs still overlap agree; so do halves 1.5% apart whose CIs
    # (from a bootstrap of few rounds) are too narrow to overlap.
    wide = c.check_run(run(CPU_DEPTHS, q, rel_ci=0.02, halves=halves))
    assert wide["relative_stable"]["pass"] is True
    close = c.check_run(run(CPU_DEPTHS, q, rel_ci=0.001, halves=(q, q * 1.015)))
    assert close["relative_stable"]["pass"] is True


@pytest.mark.parametrize(("change", "message"), [
    ({"rel_ci": 0.06}, "is ±6.0% (target ±3.0%)"),
    ({"rel_ci": 0.04, "stop_reason": "max_seconds", "rounds": 150},
     "is ±4.0% (target ±3.0%); stopped at max_seconds after 150 rounds"),
])
def test_precision_is_reported_not_gated(change, message):
    """A wide CI (a noisy run that stopped at its cap) or a large residual spread fails
    `precise`, which does not gate: the run is used with its wider CI."""
    q = cpu_ladder() / 12
    checks = c.check_run(run(CPU_DEPTHS, q, resid_iqr=0.12, **change))
    assert c.failed(checks) == [] and c.failed(checks, c.CHECKS) == ["precise"]
    assert message in checks["precise"]["why"]
    assert checks["precise"]["value"]["resid_iqr"] == pytest.approx(0.12)
    assert checks["precise"]["value"]["max_q_half_width"] == pytest.approx(change["rel_ci"])
    assert c.verdicts([run(CPU_DEPTHS, q, **change)])[0]["coherent"]


def test_paper_scenario_two_of_five_runs_coherent():
    """3 of 5 runs under-report the shallow depths; a plain median over all runs would
    itself be anomalous. The canonical ladder comes from the 2 coherent runs."""
    true = paper_ladder()
    runs = [run(PAPER_DEPTHS, true / true[0], run_id=0, ms=true[0] * 1.01),
            run(PAPER_DEPTHS, true / true[0], run_id=1, ms=true[0] * 0.99)]
    for r, factors in [(2, (3.0, 2.0)), (3, (5.0, 2.5)), (4, (2.0, 2.0))]:
        p = true.copy()
        p[0] /= factors[0]
        p[1] /= factors[1]
        runs.append(run(PAPER_DEPTHS, p / p[0], run_id=r, ms=p[0]))
    verdicts = c.verdicts(runs)
    assert [v["coherent"] for v in verdicts] == [True, True, False, False, False]
    for v in verdicts[2:]:
        assert v["failed"] and all(v["why"][name] for name in v["failed"])
    q, p50, used = c.canonical_ladder(PAPER_DEPTHS, np.stack([r["q"] for r in runs]),
                                      [v["coherent"] for v in verdicts], true[0])
    np.testing.assert_allclose(p50, true)
    np.testing.assert_allclose(q, true / true[0])
    assert used.tolist() == [2, 2, 2, 2]
    naive = np.median(np.stack([r["p50"] for r in runs]), axis=0)
    assert naive[0] < 0.6 * true[0]  # what a median over every run would have reported
    json.dumps(verdicts, default=lambda o: o.tolist())  # coherence.json takes them as they are


def test_runs_must_agree_in_q_and_are_flagged_in_milliseconds_only_if_q_agrees():
    q = cpu_ladder(CPU_DEPTHS[:3]) / 12
    runs = [run(CPU_DEPTHS[:3], q, run_id=0), run(CPU_DEPTHS[:3], q * 1.01, run_id=1),
            run(CPU_DEPTHS[:3], q, run_id=2, ms=12.5),  # the same Q, 25% slower machine
            run(CPU_DEPTHS[:3], q * np.r_[1, 1.08, 1.08], run_id=3)]  # Q 8% off
    verdicts = c.verdicts(runs)
    assert [v["failed"] for v in verdicts] == [[], [], [], ["relative_stable"]]
    assert [v["absolute_stable"] for v in verdicts] == [True, True, False, True]
    assert "off the runs' reference" in verdicts[3]["why"]["relative_stable"]
    assert "raw p50 at depth 1 is +24.4%" in verdicts[2]["why"]["absolute_stable"]
    # A single run: the cross-run parts do not apply.
    assert c.verdicts(runs[3:])[0]["coherent"]


def test_no_coherent_run_gives_no_canonical_ladder():
    q, p50, used = c.canonical_ladder([1, 2], [[1.0, 2.0], [1.0, 2.1]], [False, False], 10.0)
    assert np.isnan(q).all() and np.isnan(p50).all() and used.tolist() == [0, 0]


def test_thresholds_come_from_the_schema():
    from workflow_scripts.core.settings import LatencySummary, schema_node

    th = c.Thresholds.defaults()
    assert th.max_loo_error == schema_node("latency.checks.max_loo_error")[0]["default"]
    assert th.target_half_width == schema_node("latency.target_half_width")[0]["default"]
    strict = c.Thresholds.of(LatencySummary.from_json('{"max_loo_error": 0.001}'))
    assert c.failed(c.check_run(run([1, 2, 3], [1, 1.85, 2.667]), strict)) == ["leave_one_out"]
    assert c.failed(c.check_run(run([1, 2, 3], [1, 1.85, 2.667]))) == []
    precise = c.Thresholds.of(LatencySummary.from_json('{"target_half_width": 0.001}'))
    checks = c.check_run(run([1, 2, 3], [1, 2, 3]), precise)
    assert c.failed(checks) == [] and c.failed(checks, c.CHECKS) == ["precise"]


def test_bootstrap_ci_resamples_whole_rounds():
    rng = np.random.default_rng(0)
    rounds = np.repeat(np.arange(10), 20)
    # Each round sits at its own level (machine state), with little noise within a round.
    values = 10.0 + rounds * 0.5 + rng.normal(0, 0.01, rounds.size)
    lo, hi = c.bootstrap_median_ci(values, rounds, nboot=2000, seed=0)
    assert lo < np.median(values) < hi
    # Resampling single calls (each its own "round") would claim far more precision.
    lo1, hi1 = c.bootstrap_median_ci(values, np.arange(values.size), nboot=2000, seed=0)
    assert (hi - lo) > 1.5 * (hi1 - lo1)
    assert (lo, hi) == c.bootstrap_median_ci(values, rounds, nboot=2000, seed=0)
    # Unequal rounds take the general path and agree with the vectorized one roughly.
    keep = np.ones(values.size, bool)
    keep[:3] = False
    lo2, hi2 = c.bootstrap_median_ci(values[keep], rounds[keep], nboot=2000, seed=0)
    assert abs(lo2 - lo) < 0.5 and abs(hi2 - hi) < 0.5
