"""Study-wide control across claims (stats.study_wide, docs/claims.md "The study as a whole"):
Holm and Bonferroni over the claims' decisive p at the levels they must give, a claim decided
exactly when its adjusted p is at most alpha, control that only ever undecides, the claims.md
and RESULTS.md wording on and off, and its refusal beside seeds on demand."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import test_claims as tc
from test_report_figures import write_tables

from workflow_scripts.biencoder.report import results as report
from workflow_scripts.claims import decide, render, spec

ALPHA = 0.025


def test_holm_and_bonferroni_across_claims_decide_at_their_levels():
    """Five claims' decisive p: Holm tests 0.001 at α/5, 0.004 at α/4, then 0.012 fails α/3
    and every later p is judged at α/3; Bonferroni tests each at α/5."""
    p = [0.001, 0.012, 0.004, 0.5, 0.03, math.nan]  # NaN: a claim no test decides
    adjusted, levels = decide.study_wide(p, ALPHA, "holm")
    np.testing.assert_allclose(adjusted[:5], [0.005, 0.036, 0.016, 0.5, 0.06])
    np.testing.assert_allclose(levels[:5], [ALPHA / 5, ALPHA / 3, ALPHA / 4, ALPHA / 3,
                                            ALPHA / 3])
    assert math.isnan(adjusted[5]) and math.isnan(levels[5])
    adjusted, levels = decide.study_wide(p, ALPHA, "bonferroni")
    np.testing.assert_allclose(adjusted[:5], [0.005, 0.06, 0.02, 1.0, 0.15])
    np.testing.assert_allclose(levels[:5], ALPHA / 5)
    adjusted, levels = decide.study_wide(p, ALPHA, "none")
    assert np.isnan(adjusted).all() and np.isnan(levels).all()


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_a_claim_is_decided_at_its_level_exactly_when_its_adjusted_p_is_at_most_alpha(method):
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = rng.uniform(0, 0.05, rng.integers(1, 16)) ** rng.uniform(1, 3)
        adjusted, levels = decide.study_wide(p, ALPHA, method)
        np.testing.assert_array_equal(p <= levels, adjusted <= ALPHA)
        assert (levels <= ALPHA).all()  # never looser than a claim's own level


CLAIMS = [
    {"id": "deep", "statement": "r1 at depth 3 beats depth 1",
     "a": {"recipe": "r1", "depth": 1}, "b": {"recipe": "r1", "depth": 3}, "test": "greater"},
    {"id": "close", "statement": "r2 at depth 2 beats depth 1",
     "a": {"recipe": "r2", "depth": 1}, "b": {"recipe": "r2", "depth": 2}, "test": "greater"},
    {"id": "worse", "statement": "r2 beats r1 at depth 3",
     "a": {"recipe": "r1", "depth": 3}, "b": {"recipe": "r2", "depth": 3}, "test": "greater"},
    {"id": "same", "statement": "r1 at depth 2 is within 0.01 of depth 3",
     "a": {"recipe": "r1", "depth": 2}, "b": {"recipe": "r1", "depth": 3},
     "test": "equivalent", "epsilon": 0.01},
    {"id": "every", "statement": "r2 beats r1 at every depth", "for_each": {"depth": "all"},
     "a": {"recipe": "r1"}, "b": {"recipe": "r2"}, "test": "greater"},
]


@pytest.fixture(scope="module")
def decided() -> dict:
    """The five claims decided on one synthetic study under each setting: method -> table."""
    rng = np.random.default_rng(3)
    data = tc.data_for({("r1", 1): 0.30, ("r1", 2): 0.34, ("r1", 3): 0.40, ("r2", 1): 0.31,
                        ("r2", 2): 0.322, ("r2", 3): 0.30}, rng, seed_sd=0.002)
    claims = spec.parse(CLAIMS, tc.grid())
    return {method: decide.decide(claims, data, decide.Options(
        dataclasses.replace(tc.FAST.settings, study_wide=method)))
        for method in ("none", "holm", "bonferroni")}


def _heads(table):
    return table[table.row == "claim"].set_index("claim")


def test_study_wide_control_only_turns_decided_claims_undecided(decided):
    off = _heads(decided["none"])
    assert off.verdict.to_dict() == {"deep": "supported", "close": "supported",
                                     "worse": "refuted", "same": "refuted",
                                     "every": "refuted"}
    assert np.allclose(off.alpha, ALPHA) and off.p_study_wide.isna().all()
    for method, decided_ids in (("holm", {"deep", "worse"}), ("bonferroni", {"deep"})):
        on = _heads(decided[method])
        assert set(on.index[on.verdict != "inconclusive"]) == decided_ids, method
        for cid, v in on.verdict.items():
            assert v in (off.verdict[cid], "inconclusive"), (method, cid)
        # The decisive p is the claim's own, whatever the control; decided exactly when its
        # adjusted p is at most α, at its step's level.
        np.testing.assert_allclose(on.p_decisive, off.p_decisive)
        assert ((on.p_study_wide <= ALPHA) == (on.verdict != "inconclusive")).all()
        assert ((on.p_decisive <= on.alpha) == (on.p_study_wide <= ALPHA)).all()
        assert np.allclose(on.study_alpha, ALPHA) and (on.study_wide == method).all()
        # A claim's members are decided at its level too (Holm within it at that level).
        members = decided[method][decided[method].row == "member"]
        assert (members.alpha.to_numpy() == on.alpha[members.claim].to_numpy()).all()
    holm = _heads(decided["holm"])
    assert holm.alpha["deep"] == pytest.approx(ALPHA / 5)
    assert holm.alpha["worse"] == pytest.approx(ALPHA / 4)
    # An undecided claim plans its seeds at the level that would decide it now.
    # An undecided claim plans its seeds at the level that would decide it now (Holm's step
    # α/3, and within the claim α/3 of that for a member leaning to refute).
    notes = " ".join(decided["holm"][decided["holm"].claim == "every"].note)
    assert "at α = 0.00833" in notes and "at α/3 = 0.00278" in notes


def test_claims_md_and_results_md_say_what_the_verdicts_control(decided, tmp_path):
    off = render.markdown(decided["none"])
    assert ("Study-wide control is off (`stats.study_wide: none`): each verdict holds its "
            "error rate on its own (α = 0.025 per claim); across the 5 claims a test decides, "
            "the chance that at least one verdict is wrong is not controlled (the union bound "
            "allows up to 5 × α = 0.125)") in off
    assert "study-wide p" not in off
    on = render.markdown(decided["holm"])
    assert "Study-wide control is on (`stats.study_wide: holm`): the 5 claims" in on
    assert "| study-wide p |" in on and "(level 0.005)" in on
    assert "(α = 0.025)" in on  # the rules name the family's α, not each step's
    # RESULTS.md opens with claims.md, the statement included.
    stats = tmp_path / "stats"
    write_tables(stats, 0.95)
    (tmp_path / "claims.md").write_text(off, encoding="utf-8")
    assert "the chance that at least one verdict is wrong is not controlled" in report.build(
        stats, claims=tmp_path / "claims.md")


def test_study_wide_control_is_refused_with_seeds_on_demand():
    from test_adaptive_seeds_looks import _config

    from workflow_scripts.study_config import claim_errors

    config = {**_config([CLAIMS[0]]), "base_model": "nowhere"}  # a hub id: not looked up
    assert claim_errors(config) == []
    config["stats"]["study_wide"] = "holm"
    (error,) = claim_errors(config)
    assert error.startswith("config key stats.study_wide:") and "adaptive_seeds" in error
    # The stage refuses it too, where a --settings-json reaches it without the check.
    options = decide.Options(dataclasses.replace(tc.FAST.settings, study_wide="holm"))
    with pytest.raises(ValueError, match="stats.study_wide"):
        decide.decide(spec.parse([CLAIMS[0]], tc.grid()), None, options, {"deep": (None, 0.01)})
