"""What each verdict rests on, wherever it appears (claims/decide.py, table.py, render.py,
forest.py): a family's refute side is read at its Holm step's interval, a verdict that
flips when a one-seed arm's borrowed seed sd is doubled is labelled and counted as fragile,
post hoc verdicts are labelled and counted, claims.png names each strip's unit, test and p,
and the latency claim's ratio is the canonical ladder's."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_claims import data_for, verdict

from workflow_scripts.claims import decide, forest, render, table
from workflow_scripts.stats import intervals

ALPHA = 0.025


def test_holm_levels_are_each_steps_until_the_first_that_fails():
    # adjusted: 0.015 (rejected), 0.026 (not: Holm stops), then every later p at that level
    assert decide.holm_levels([0.19, 0.005, 0.013], ALPHA).tolist() == pytest.approx(
        [ALPHA / 2, ALPHA / 3, ALPHA / 2])
    assert decide.holm_levels([0.002, 0.001, math.nan], ALPHA)[:2].tolist() == pytest.approx(
        [ALPHA, ALPHA / 2])


def families():
    """Families of three 'r2 beats r1' members with r2 below r1 by about the CI's width."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        data = data_for({("r1", d): 0.3 for d in (1, 2, 3)}
                        | {("r2", d): 0.3 - 0.006 * d for d in (1, 2, 3)}, rng,
                        seed_sd=0.004)
        yield verdict({"for_each": {"depth": [1, 2, 3]}, "a": {"recipe": "r1"},
                       "b": {"recipe": "r2"}, "test": "greater"}, data)[1]


def test_a_familys_refute_side_reads_off_its_holm_step_interval():
    """The issue's long-degrades: a member whose plain CI lies wholly on the refute side but
    Holm leaves inconclusive has a decision interval that reaches the threshold, and every
    member's refutation is exactly its Holm step's interval clearing it."""
    beyond_but_inconclusive = 0
    for t in families():
        members = t[t.row == "member"]
        levels = decide.holm_levels(members.p_refute.to_numpy(), ALPHA)
        assert members.holm_ci.to_numpy() == pytest.approx(
            [intervals.ci_of(a) for a in levels])
        for (_, m), level in zip(members.iterrows(), levels, strict=True):
            assert m.holm_ci_high - m.holm_ci_low >= m.ci_high - m.ci_low  # as strict or more
            assert (m.verdict == "refuted") == (m.holm_ci_high < 0.0), (m.member, level)
            beyond_but_inconclusive += m.ci_high < 0.0 and m.verdict == "inconclusive"
            if m.verdict != "supported" and m.holm_ci > m.ci:  # a stricter step: shown
                assert "refute side, Holm" in table.holm_text(m.to_dict())
    assert beyond_but_inconclusive, "no member shows the case the decision interval is for"


def fragile_table() -> pd.DataFrame:
    """A one-member claim supported, fragile and post hoc beside a plain refuted one."""
    def rec(cid, row, verdict, fragile, registration):
        return {"claim": cid, "statement": "s", "row": row, "member": "r1/top1 − r2/top1 [all]",
                "study": "biencoder", "estimand": "difference", "metric": "ndcg@10",
                "test": "greater", "threshold": 0.0, "epsilon": math.nan, "estimate": 0.02,
                "ci_low": 0.001, "ci_high": 0.04, "ci": 0.95, "interval": "calibrated",
                "verdict": verdict, "p_support": 0.02, "p_refute": 0.98,
                "p_support_holm": 0.02, "p_refute_holm": 0.98, "alpha": ALPHA,
                "fragile": fragile, "registration": registration, "n_members": 1.0}
    return pd.DataFrame([rec("weak", "claim", "supported", True, "post hoc"),
                         rec("weak", "member", "supported", True, ""),
                         rec("firm", "claim", "refuted", False, "registered"),
                         rec("firm", "member", "refuted", False, "")])


def test_a_fragile_verdict_is_counted_as_fragile_and_labelled():
    md = render.markdown(fragile_table())
    assert ("2 claims: 1 refuted, 1 fragile (supported only with the borrowed seed sd as "
            "measured; 1 post hoc)") in md
    assert "Registered before their data: 1 of 2 decided claims" in md
    assert "| **supported** (post hoc, fragile) |" in md
    assert "| **refuted** |" in md


def test_a_borrowed_seed_family_member_that_flips_makes_its_claim_fragile():
    """decide.py: the claim's verdict again from its members' verdicts at the doubled sd."""
    from test_claims import one_seed_arm_verdicts

    seen = set()
    for v, t in one_seed_arm_verdicts().values():
        head, member = t.iloc[0], t.iloc[1]
        assert head.fragile == member.fragile == ("fragile:" in member.caveats)
        assert t.fragile.dtype == bool
        seen.add((v, bool(head.fragile)))
    assert ("supported", True) in seen and ("supported", False) in seen, seen


def texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_claims_png_names_each_strips_unit_test_p_and_labels():
    fig = forest.forest_figure(fragile_table())
    try:
        got = texts(fig)
        assert "NDCG@10 difference > 0.0000 · p 0.0200 (support)" in got
        assert "NDCG@10 difference > 0.0000 · p 0.9800 (refute)" in got
        assert "post hoc, fragile" in got and "registered" in got
    finally:
        forest.plt.close(fig)


def test_claims_png_draws_the_holm_step_interval_it_decided_at():
    t = next(families())
    fig = forest.forest_figure(t)
    try:
        claim = t.iloc[0]
        labels = [x for x in texts(fig) if "Holm" in x]
        if table.holm_interval(claim.to_dict()) is None:
            assert not labels
        else:
            assert labels == [f"thin: {table.level_label(claim.holm_ci)} Holm (refute)"]
            ax = fig.axes[0]
            thin = [line for line in ax.lines if line.get_marker() == "|"]
            assert [tuple(thin[0].get_xdata())] == [pytest.approx(
                (claim.holm_ci_low, claim.holm_ci_high))]
    finally:
        forest.plt.close(fig)


@pytest.mark.parametrize(("rec", "unit"), [
    ({"estimand": "difference", "metric": "ndcg@10", "study": "biencoder"}, "NDCG@10 difference"),
    ({"estimand": "mean", "metric": "mrr@10", "study": "biencoder"}, "mean MRR@10"),
    ({"estimand": "difference", "metric": "", "study": "ladder"}, "accuracy difference"),
    ({"estimand": "latency_ratio", "metric": "", "study": "latency"}, "latency ratio"),
    ({"estimand": "onset", "metric": "ndcg@10", "study": "curves"}, "steps"),
    ({"estimand": "latency_coherent", "metric": "", "study": "latency"}, ""),
])
def test_each_estimand_has_its_unit(rec, unit):
    assert table.unit(rec) == unit


def test_the_latency_claims_ratio_is_the_canonical_ladders():
    """Q(L2) / Q(L3) of the claim is the canonical ladder's (summary.check: the median over
    runs of each depth's Q from the fit over every depth), on runs whose own two-depth ratios
    have another median; a busy run's note reaches the claim's caveats."""
    import json

    import test_latency as tl

    from workflow_scripts.biencoder.latency import coherence
    from workflow_scripts.biencoder.latency import summary as summ
    from workflow_scripts.claims.data import Data
    from workflow_scripts.core import contracts

    machines = [tl.FakeMachine(a=a, b=b, seed=r, jitter=0.02)
                for r, (a, b) in enumerate([(2e-3, 10e-3), (6e-3, 9e-3), (1e-3, 12e-3)])]
    df = pd.concat([m.run(r, rounds=12) for r, m in enumerate(machines)], ignore_index=True)
    settings = tl.summary_settings(nboot=200)
    _, doc, ladder = summ.check(summ.summarize(df, settings), coherence.Thresholds.of(settings))
    doc = json.loads(json.dumps(doc, default=contracts._json_default))
    doc["coherent_runs"] = [0, 1, 2]  # the ratio whatever the checks said
    doc["runs"][1]["notes"] = "the machine was busy: other processes kept 1.70 cores busy"
    q = ladder.set_index("depth")["q"]
    _, t = verdict({"estimate": "latency_ratio", "a": {"depth": 3}, "b": {"depth": 2},
                    "test": "less", "threshold": 0.85},
                   Data(latency_calls=df, coherence=doc, latency_depths=(1, 2, 3)))
    member = t.iloc[1]
    assert member.estimate == pytest.approx(q[2] / q[3], rel=1e-12)
    per_run = [m.true_q()[1] / m.true_q()[2] for m in machines]
    assert abs(np.median(per_run) - q[2] / q[3]) > 1e-3  # the two definitions differ here
    assert member.ci_low < member.estimate < member.ci_high
    assert "the machine was busy during run(s) 1" in member.caveats
