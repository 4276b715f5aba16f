"""Claims registered before their data (claims/registration.py): the record a run writes
when it starts, and the status the claims stage reads from it."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import ROOT

from workflow_scripts.claims import analysis as an
from workflow_scripts.claims import registration as reg
from workflow_scripts.claims import render
from workflow_scripts.core import contracts
from workflow_scripts.core.deciding_keys import AXIS_KEYS, DECIDING_KEYS

A = {"id": "a", "statement": "L1 matches L2", "pairs": {"depth": "all"}, "test": "equivalent",
     "epsilon": 0.01}
B = {"id": "b", "statement": "long degrades", "a": {"recipe": "short"},
     "b": {"recipe": "long"}, "test": "less"}


def test_registered_before_the_data_and_post_hoc_after():
    record, said = reg.update({}, [A], has_data=lambda c: False, now="t0")
    assert said == ["claims: new claim 'a' registered before its data"]
    assert reg.status(record, A) == reg.REGISTERED
    # B added once the data existed; A untouched keeps its entry
    record, said = reg.update(record, [A, B], has_data=lambda c: True, now="t1")
    assert said == ["claims: new claim 'b' registered after its data existed: it will be "
                    "decided as post hoc"]
    assert reg.status(record, A) == reg.REGISTERED and reg.status(record, B) == reg.POST_HOC
    assert record["claims"]["a"]["registered_at"] == "t0"


def test_an_edit_after_the_data_is_post_hoc_even_edited_back():
    record, _ = reg.update({}, [A], has_data=lambda c: False, now="t0")
    edited = {**A, "epsilon": 0.02}
    assert reg.status(record, edited) == reg.POST_HOC  # not the registered claim
    record, said = reg.update(record, [edited], has_data=lambda c: True, now="t1")
    assert said[0].startswith("claims: edited claim 'a' registered after its data")
    assert [h["registered_at"] for h in record["claims"]["a"]["history"]] == ["t0"]
    record, _ = reg.update(record, [A], has_data=lambda c: True, now="t2")
    assert reg.status(record, A) == reg.POST_HOC  # chosen again after seeing the data
    assert len(record["claims"]["a"]["history"]) == 2


def test_seeds_changed_after_the_data_are_post_hoc_before_it_registered():
    # The planner's "n seeds would settle it" followed by editing the recipes' seeds is a
    # second look no plan counts: the claim's entry is renewed after its data, post hoc.
    three, five = {"short": [42, 43, 44]}, {"short": [42, 43, 44, 45, 46]}
    record, _ = reg.update({}, [B], lambda c: False, "t0", seeds_of=lambda c: three)
    assert record["claims"]["b"]["seeds"] == three
    assert reg.status(record, B, seeds=three) == reg.REGISTERED
    assert reg.status(record, B, seeds=five) == reg.POST_HOC  # the CLI on a record not renewed
    again, said = reg.update(record, [B], lambda c: True, "t1", seeds_of=lambda c: three)
    assert said == [] and again == record  # same seeds: nothing to say or write
    record, said = reg.update(record, [B], lambda c: True, "t1", seeds_of=lambda c: five)
    assert said == ["claims: claim 'b': its arms' seeds changed (short: 42, 43, 44 -> short: "
                    "42, 43, 44, 45, 46) after its data existed: deciding it again on other "
                    "seeds is a look no plan counts (seeds on demand adds seeds within the "
                    "error rate: docs/adaptive_seeds.md); it will be decided as post hoc"]
    assert reg.status(record, B, seeds=five) == reg.POST_HOC
    assert record["claims"]["b"]["history"] == [
        {"fingerprint": reg.fingerprint(B), "registered_at": "t0", "before_data": True,
         "statement": B["statement"], "seeds": three}]
    # Seeds set before any data existed (the config edited before the first run) are fine.
    record, said = reg.update(reg.update({}, [B], lambda c: False, "t0",
                                         seeds_of=lambda c: three)[0],
                              [B], lambda c: False, "t1", seeds_of=lambda c: five)
    assert said[0].endswith("before its data")
    assert reg.status(record, B, seeds=five) == reg.REGISTERED


def test_an_entry_made_before_seeds_were_kept_adopts_them(tmp_path):
    path = tmp_path / "claims_registration.json"
    reg.register(path, [B], lambda c: False)  # no seeds_of: as a record of the version before
    assert "seeds" not in reg.read(path)["claims"]["b"]
    assert reg.register(path, [B], lambda c: True, seeds_of=lambda c: {"short": [1, 2]}) == []
    entry = reg.read(path)["claims"]["b"]
    assert entry["seeds"] == {"short": [1, 2]} and entry["before_data"]


def test_ladder_seeds_are_kept_and_an_entry_without_them_adopts_them():
    """A ladder claim's seeds are the ladder's: an entry recorded before they were kept
    (seeds {}) adopts them and stays registered; editing them after the data is post hoc."""
    ladder = {an.LADDER_SEEDS: [42, 123, 456]}
    record, _ = reg.update({}, [B], lambda c: False, "t0", seeds_of=lambda c: {})
    record, said = reg.update(record, [B], lambda c: True, "t1", seeds_of=lambda c: ladder)
    assert said == [] and record["claims"]["b"]["seeds"] == ladder
    assert reg.status(record, B, seeds=ladder) == reg.REGISTERED
    more = {an.LADDER_SEEDS: [42, 123, 456, 789]}
    record, said = reg.update(record, [B], lambda c: True, "t2", seeds_of=lambda c: more)
    assert said[0].startswith("claims: claim 'b': its arms' seeds changed (ladder.seeds: 42, "
                              "123, 456 -> ladder.seeds: 42, 123, 456, 789) after its data")
    assert reg.status(record, B, seeds=more) == reg.POST_HOC


def test_a_claim_missing_from_the_record_is_post_hoc():
    assert reg.status({"claims": {}}, A) == reg.POST_HOC


def test_register_writes_once_and_a_broken_record_names_its_file(tmp_path):
    path = tmp_path / "results" / "claims_registration.json"
    assert reg.register(path, [A], lambda c: False)
    stamp = path.stat().st_mtime_ns
    assert reg.register(path, [A], lambda c: True) == []  # nothing new: not rewritten
    assert path.stat().st_mtime_ns == stamp
    assert reg.status(reg.read(path), A) == reg.REGISTERED
    path.write_text("{not json")
    with pytest.raises(contracts.DataError, match="claims_registration.json: not valid JSON"):
        reg.register(path, [A], lambda c: False)
    assert path.read_text() == "{not json"  # left as it was
    path.write_text(json.dumps({"other": 1}))
    with pytest.raises(contracts.DataError, match="no 'claims' mapping"):
        reg.read(path)


def test_the_report_says_which_claims_are_post_hoc():
    base = {"row": "claim", "statement": "s", "member": "", "test": "greater",
            "threshold": 0.0, "epsilon": float("nan"), "estimate": 0.1, "ci_low": 0.05,
            "ci_high": 0.15, "ci": 0.95, "interval": "calibrated", "verdict": "supported",
            "p_support_holm": 0.001, "p_refute_holm": 0.9, "seeds_needed": float("nan"),
            "alpha": 0.025, "caveats": "", "note": ""}
    table = pd.DataFrame([{**base, "claim": "a", "registration": reg.REGISTERED},
                          {**base, "claim": "b", "registration": reg.POST_HOC}])
    md = render.markdown(table)
    assert "Registered before their data: 1 of 2 decided claims" in md
    assert "not covered by the error rate): b." in md
    rows = [line for line in md.splitlines() if line.startswith(("| a |", "| b |"))]
    assert "| **supported** |" in rows[0] and "| **supported** (post hoc) |" in rows[1]


PLAN = {"claims": ["a"], "max_seeds": 10, "spending": "obrien-fleming", "seeds": [3, 6, 10],
        "alphas": [4.27e-05, 0.00377, 0.0212]}


def test_a_look_plan_registered_before_its_data_keeps_its_claims_registered():
    record, _ = reg.update({}, [A, B], has_data=lambda c: False, now="t0")
    record, said = reg.update_plan(record, PLAN, had_data=False, now="t0")
    assert said == ["seeds on demand: new look plan (looks at 3, 6, 10 seeds per arm, "
                    "one-sided boundaries 4.27e-05, 0.00377, 0.0212 (obrien-fleming), "
                    "driving a) registered before its driving claims' data"]
    assert reg.plan_status(record, PLAN) == reg.REGISTERED
    assert reg.status(record, A, PLAN) == reg.REGISTERED
    assert reg.update_plan(record, json.loads(json.dumps(PLAN)), True, "t1") == (record, [])
    # The claims' entries survive the plan's, and the plan's a claim's update.
    assert set(record["claims"]) == {"a", "b"}
    assert reg.update(record, [A, B], lambda c: True, "t1")[0]["looks"] == record["looks"]
    # A last-digit difference in a level is the same plan; another level is not.
    same = {**PLAN, "alphas": [4.27e-05 * (1 + 1e-14), 0.00377, 0.0212]}
    assert reg.plan_status(record, same) == reg.REGISTERED
    assert reg.plan_status(record, {**PLAN, "alphas": [1e-4, 0.00377, 0.0212]}) == reg.POST_HOC


def test_a_plan_after_its_data_makes_only_the_claims_it_drives_post_hoc():
    record, _ = reg.update({}, [A, B], has_data=lambda c: False, now="t0")
    record, (said,) = reg.update_plan(record, PLAN, had_data=True, now="t1")
    assert said.endswith("registered after its driving claims' data existed (their "
                         "fixed-seed report at α was a look this plan does not count): a "
                         "will be decided as post hoc")
    assert reg.status(record, A, PLAN) == reg.POST_HOC  # a is driven by the plan
    assert reg.status(record, B, PLAN) == reg.REGISTERED  # b is not
    assert reg.status(record, A) == reg.REGISTERED  # decided without the looks


def test_a_plan_changed_after_its_data_keeps_the_first_in_its_history():
    record, _ = reg.update({}, [A], has_data=lambda c: False, now="t0")
    record, _ = reg.update_plan(record, PLAN, had_data=False, now="t0")
    edited = {**PLAN, "seeds": [3, 5, 10], "alphas": [4.27e-05, 0.0025, 0.0223]}
    assert reg.status(record, A, edited) == reg.POST_HOC  # not the registered plan
    record, (said,) = reg.update_plan(record, edited, had_data=True, now="t1")
    assert "(it replaces the plan registered at t0, kept in the record's history: the " \
           "looks restart): a will be decided as post hoc" in said
    assert [h["plan"] for h in record["looks"]["history"]] == [PLAN]
    record, _ = reg.update_plan(record, PLAN, had_data=True, now="t2")  # edited back
    assert reg.status(record, A, PLAN) == reg.POST_HOC
    assert [h["registered_at"] for h in record["looks"]["history"]] == ["t0", "t1"]


def test_register_records_the_plan_once_and_a_broken_plan_entry_names_its_file(tmp_path):
    path = tmp_path / "claims_registration.json"
    said = reg.register(path, [A, B], lambda c: c["id"] == "b", PLAN)  # b's data exist
    assert said[-1].endswith("registered before its driving claims' data")  # a's do not
    record = reg.read(path)
    assert reg.status(record, A, PLAN) == reg.REGISTERED
    assert reg.register(path, [A, B], lambda c: True, PLAN) == []
    assert reg.read(path) == record
    path.write_text(json.dumps({"claims": {}, "looks": {"plan": PLAN}}))
    with pytest.raises(contracts.DataError, match=r"claims_registration.json: 'looks' is not "
                       r"a look plan's entry \(fingerprint, plan, before_data\)"):
        reg.read(path)


def test_seeds_on_demand_turned_off_and_on_again_after_the_data_is_post_hoc():
    """Off, the claims are reported at α on the configured seeds: a look the plan does not
    count, so the same plan turned on again after the data is post hoc; off and on before
    any data changes nothing."""
    record, _ = reg.update({}, [A], has_data=lambda c: False, now="t0")
    assert reg.update_plan(record, None, False, "t0") == (record, [])  # never on: nothing
    record, _ = reg.update_plan(record, PLAN, had_data=False, now="t0")
    before, (said,) = reg.update_plan(record, None, False, "t1")
    assert said == ("seeds on demand: turned off; the look plan registered at t0 stays in the "
                    "record's history, and a plan turned on again after its driving claims' "
                    "data existed will make them post hoc")
    assert reg.update_plan(before, None, True, "t2") == (before, [])  # still off: no entry
    again, _ = reg.update_plan(before, PLAN, had_data=False, now="t2")  # no data yet
    assert reg.status(again, A, PLAN) == reg.REGISTERED
    after, (said,) = reg.update_plan(before, PLAN, had_data=True, now="t2")
    assert "(seeds on demand was off from t1: the fixed-seed report at α was a look this " \
           "plan does not count): a will be decided as post hoc" in said
    assert reg.status(after, A, PLAN) == reg.POST_HOC
    assert [h["plan"] for h in after["looks"]["history"]] == [PLAN, None]


def test_the_looks_section_says_why_a_plan_is_post_hoc():
    from workflow_scripts.claims.looks.run import registration_text

    record, _ = reg.update({}, [A], has_data=lambda c: False, now="t0")
    assert registration_text(record, PLAN) == (
        "**Post hoc.** The claims this plan drives (a) are post hoc, their verdicts not "
        "covered by the error rate: it is not the plan the study's claims_registration.json "
        "records.")
    on, _ = reg.update_plan(record, PLAN, had_data=False, now="t0")
    assert registration_text(on, PLAN).startswith(
        "**Registered before the data.** This plan was recorded in "
        "the study's claims_registration.json at t0, before any data of the claims it drives (a) "
        "existed: the report at the starting 3 seeds per arm is look 0 of this plan, so those "
        "claims are decided there at its level 4.27e-05 (not at the fixed-seed α)")
    off, _ = reg.update_plan(on, None, True, "t1")
    back, _ = reg.update_plan(off, PLAN, True, "t2")
    assert registration_text(back, PLAN).endswith(
        "it was recorded at t2, after their data existed, in place of the plan first "
        "registered at t0 (looks at 3, 6, 10 seeds per arm, one-sided boundaries 4.27e-05, "
        "0.00377, 0.0212 (obrien-fleming), driving a): seeds on demand was turned off at t1 "
        "(its fixed-seed report at α is a look the plan does not count).")


def test_arm_seeds_are_the_recipes_a_parsed_claim_trains():
    from workflow_scripts.claims import spec

    g = spec.grid_from_config({
        "recipes": {"r1": {"seeds": [1, 2, 3]}, "r2": {"seeds": [7, 8]}}, "depths": [1, 2],
        "strategies": ["top"], "benchmarks": ["x"],
        "ladder": {"configs": [{"name": "c", "L": 2}], "methods": ["bp"], "seeds": [1, 2, 3]}})
    claims = spec.parse([
        {"id": "d", "statement": "r2 beats r1", "a": {"recipe": "r1", "depth": 2},
         "b": {"recipe": "r2", "depth": 2}, "test": "greater"},
        {"id": "base", "statement": "training helps", "a": {"recipe": "base", "depth": 1},
         "b": {"recipe": "r1", "depth": 1}, "test": "greater"}], g)
    assert an.arm_seeds(claims[0], g) == {"r1": [1, 2, 3], "r2": [7, 8]}
    assert an.arm_seeds(claims[1], g) == {"r1": [1, 2, 3]}  # the untrained base has none
    (ladder,) = spec.parse([{"id": "l", "statement": "the last block helps",
                             "a": {"config": "c", "method": "bp", "k": 0},
                             "b": {"config": "c", "method": "bp", "k": 1},
                             "test": "greater"}], g)
    assert an.arm_seeds(ladder, g) == {an.LADDER_SEEDS: [1, 2, 3]}


# ---- the analysis: the grid, the models' settings, the metric, the level, the interval ----
STUDY = {"recipes": {"r1": {"seeds": [1, 2, 3], "lr": 1e-3, "steps": 8, "batch_size": 4,
                            "warmup": 0},
                     "r2": {"seeds": [1, 2, 3], "lr": 1e-3, "steps": 8, "batch_size": 4,
                            "warmup": 0}},
         "depths": [1, 2, 3], "strategies": ["top"], "benchmarks": ["x", "y"],
         "base_model": "m1", "train_data": "t",
         "datasets": {d: {"source": "local"} for d in ("t", "x", "y")},
         "stats": {"interval": "calibrated", "ci": 0.95, "metric": "ndcg@10", "nboot": 2000}}
INVARIANT = {"id": "inv", "statement": "depth from L1 to L3 is invariant",
             "pairs": {"recipe": "r1", "depth": "all"}, "test": "equivalent", "epsilon": 0.01}
ENDS = {"id": "ends", "statement": "L3 beats L1", "a": {"recipe": "r1", "depth": 1},
        "b": {"recipe": "r1", "depth": 3}, "test": "greater"}


def _edited(config: dict, key: str, value) -> dict:
    import copy

    out = copy.deepcopy(config)
    node = out
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    return out


def _registered(config: dict, claims: list[dict], record=None, has_data=False, now="t0"):
    """(record, lines) of a run that starts on `config`: reg.update as register_study calls
    it, the claims parsed on the config's grid."""
    from workflow_scripts.claims import spec

    grid = spec.grid_from_config(config)
    parsed = {c.id: c for c in spec.parse(claims, grid)}
    return reg.update(record or {}, claims, lambda c: has_data, now,
                      lambda c: an.arm_seeds(parsed[c["id"]], grid),
                      lambda c: an.analysis(parsed[c["id"]], grid))


def _status(record: dict, config: dict, claim: dict) -> tuple[str, str]:
    """(label, why) the claims stage gives `claim` on `config`."""
    from workflow_scripts.claims import spec

    grid = spec.grid_from_config(config)
    (parsed,) = spec.parse([claim], grid)
    args = (record, claim, None, an.arm_seeds(parsed, grid), an.analysis(parsed, grid))
    return reg.status(*args), reg.why_post_hoc(*args)


@pytest.mark.parametrize(("key", "value", "named"), [
    ("stats.interval", "multibootstrap", "stats.interval (calibrated -> multibootstrap)"),
    ("stats.ci", 0.9, "stats.ci (0.95 -> 0.9)"),
    ("stats.metric", "recall@100", "stats.metric ([ndcg@10] -> [recall@100])"),
    ("recipes.r1.lr", 2e-3, "recipes.r1.lr (0.001 -> 0.002)"),
    ("recipes.r1.steps", 16, "recipes.r1.steps (8 -> 16)"),
    ("recipes.r1.precision", "bf16", "recipes.r1.precision (fp32 -> bf16)"),
    ("benchmarks", ["x"], "benchmarks ([x, y] -> [x])"),
    ("base_model", "m2", "base_model (m1 -> m2)"),
    ("stats.study_wide", "holm", "stats.study_wide (none -> holm)"),
])
def test_each_deciding_key_edited_after_the_data_makes_the_claim_post_hoc(key, value, named):
    record, _ = _registered(STUDY, [ENDS])
    assert _status(record, STUDY, ENDS) == (reg.REGISTERED, "")
    edited = _edited(STUDY, key, value)
    # The claims stage on a record the run has not renewed (the claims CLI) says why too.
    assert _status(record, edited, ENDS) == (reg.POST_HOC, f"{named} changed since it was "
                                                           "registered")
    record, said = _registered(edited, [ENDS], record, has_data=True, now="t1")
    assert said == [f"claims: claim 'ends': its analysis changed: {named} after its data "
                    "existed: it will be decided as post hoc, on what the config says now"]
    assert _status(record, edited, ENDS) == (reg.POST_HOC, f"{named} changed after its data "
                                                           "existed")
    entry = record["claims"]["ends"]
    assert entry["changed"] == [named] and entry["history"][0]["registered_at"] == "t0"
    # Edited back after the data: chosen again after seeing it, still post hoc.
    record, _ = _registered(STUDY, [ENDS], record, has_data=True, now="t2")
    assert _status(record, STUDY, ENDS)[0] == reg.POST_HOC


def test_an_analysis_changed_before_the_data_stays_registered():
    record, _ = _registered(STUDY, [ENDS])
    edited = _edited(STUDY, "stats.interval", "multibootstrap")
    record, said = _registered(edited, [ENDS], record, has_data=False, now="t1")
    assert said == ["claims: claim 'ends': its analysis changed: stats.interval (calibrated "
                    "-> multibootstrap) before its data"]
    assert _status(record, edited, ENDS) == (reg.REGISTERED, "")


def test_what_a_claim_does_not_read_leaves_it_registered():
    """Only the keys that decide this claim count: another recipe's settings, a depth it
    does not compare, the bootstrap's samples under the calibrated interval."""
    record, _ = _registered(STUDY, [ENDS])
    for key, value in [("recipes.r2.lr", 5e-3), ("depths", [1, 2, 3, 4]),
                       ("stats.nboot", 500), ("stats.seed", 7)]:
        edited = _edited(STUDY, key, value)
        assert _registered(edited, [ENDS], record, has_data=True)[1] == [], key
        assert _status(record, edited, ENDS) == (reg.REGISTERED, ""), key
    # Under the Multi-Bootstrap its samples decide the verdict: they count.
    boot = _edited(STUDY, "stats.interval", "multibootstrap")
    record, _ = _registered(boot, [ENDS])
    assert _status(record, _edited(boot, "stats.nboot", 500), ENDS)[1] == (
        "stats.nboot (2000 -> 500) changed since it was registered")


def test_a_family_whose_range_a_grid_edit_narrows_is_post_hoc_never_silently_narrowed():
    """'depth from L1 to L3' (depth: all) on depths [1, 2] is decided on L1, L2 as the
    config says now, and post hoc, the missing range named; a claim naming depth 3 itself
    is not-applicable as before, its entry untouched."""
    from workflow_scripts.claims import spec

    names3 = {**ENDS, "id": "names3"}
    record, _ = _registered(STUDY, [INVARIANT, names3])
    fewer = _edited(STUDY, "depths", [1, 2])
    record, said = _registered(fewer, [INVARIANT, names3], record, has_data=True, now="t1")
    assert said == ["claims: claim 'inv': its analysis changed: depths ([1, 2, 3] -> [1, 2]) "
                    "after its data existed: it will be decided as post hoc, on what the "
                    "config says now"]
    assert _status(record, fewer, INVARIANT) == (
        reg.POST_HOC, "depths ([1, 2, 3] -> [1, 2]) changed after its data existed")
    (narrowed, na) = spec.parse([INVARIANT, names3], spec.grid_from_config(fewer))
    assert [m.label for m in narrowed.members] == ["r1/top2 − r1/top1 [all]"]
    assert na.not_applicable and record["claims"]["names3"]["registered_at"] == "t0"
    # Registered on [1, 2] from the start, the same claim is that config's question.
    assert _status(_registered(fewer, [INVARIANT])[0], fewer, INVARIANT)[0] == reg.REGISTERED


def test_an_entry_made_before_the_analysis_was_kept_adopts_it(tmp_path):
    """A record of the version before (entries with seeds, no analysis) stays registered
    and adopts the analysis; an edit after that is post hoc."""
    from workflow_scripts.claims import spec

    path = tmp_path / "claims_registration.json"
    grid = spec.grid_from_config(STUDY)
    (parsed,) = spec.parse([ENDS], grid)
    seeds = an.arm_seeds(parsed, grid)
    reg.register(path, [ENDS], lambda c: False, seeds_of=lambda c: seeds)
    assert "analysis" not in reg.read(path)["claims"]["ends"]
    now = an.analysis(parsed, grid)
    assert reg.register(path, [ENDS], lambda c: True, seeds_of=lambda c: seeds,
                        analysis_of=lambda c: now) == []
    entry = reg.read(path)["claims"]["ends"]
    assert entry["analysis"] == now and entry["before_data"] and entry["registered_at"]
    assert _status(reg.read(path), STUDY, ENDS) == (reg.REGISTERED, "")
    # Keys added to the list later are adopted the same way, one by one.
    older = {k: v for k, v in now.items() if k != "stats.ci"}
    record = {"claims": {"ends": {**entry, "analysis": older}}}
    record, said = reg.update(record, [ENDS], lambda c: True, "t2", lambda c: seeds,
                              lambda c: now)
    assert said == [] and record["claims"]["ends"]["analysis"] == now


def test_a_dry_run_names_what_the_run_would_make_post_hoc_and_writes_nothing(tmp_path):
    path = tmp_path / "claims_registration.json"
    reg.register(path, [A], lambda c: False, analysis_of=lambda c: {"stats.ci": 0.95})
    text = path.read_text()
    # B is new before its data: registered, nothing to warn of; A's level changed after.
    said = reg.would_post_hoc(path, [A, B], lambda c: c["id"] == "a",
                              analysis_of=lambda c: {"stats.ci": 0.9})
    assert said == ["claims: claim 'a': its analysis changed: stats.ci (0.95 -> 0.9) after "
                    "its data existed: it will be decided as post hoc, on what the config "
                    "says now"]
    assert path.read_text() == text
    assert reg.would_post_hoc(path, [A], lambda c: True,
                              analysis_of=lambda c: {"stats.ci": 0.95}) == []
    assert reg.would_post_hoc(tmp_path / "none.json", [A], lambda c: True) == [
        "claims: new claim 'a' registered after its data existed: it will be decided as post "
        "hoc"]
    assert not (tmp_path / "none.json").exists()
    # A look plan recorded after its driving claims' data: its line too.
    assert reg.would_post_hoc(path, [A], lambda c: True, PLAN,
                              analysis_of=lambda c: {"stats.ci": 0.95})[0].startswith(
        "seeds on demand: new look plan")


def test_the_analysis_names_the_grid_and_settings_of_each_study():
    """Ladder claims record the ladder's configs, methods, training and ladder.stats.*;
    latency claims every latency depth and latency.*; each from the one list."""
    from workflow_scripts.claims import spec

    config = {**STUDY, "ladder": {"configs": [{"name": "c", "d": 8, "L": 2}],
                                  "methods": ["bp", "fa"], "seeds": [1, 2],
                                  "dataset": {"name": "digits"},
                                  "train": {"epochs": 3, "lr": 0.01}}}
    grid = spec.grid_from_config(config)
    lad, lat = spec.parse([
        {"id": "l", "statement": "s", "adjacent": {"config": "c", "method": "bp", "k": "all"},
         "test": "greater"},
        {"id": "t", "statement": "s", "estimate": "latency_ratio", "a": {"depth": 3},
         "b": {"depth": 2}, "test": "less", "threshold": 0.85}], grid)
    ladder = an.analysis(lad, grid)
    assert ladder["ladder.configs"] == {"c": {"name": "c", "d": 8, "L": 2}}
    assert ladder["ladder.methods"] == ["bp"] and ladder["ladder.train.lr"] == 0.01
    assert ladder["ladder.stats.interval"] == "calibrated" and "ladder.stats.nboot" not in ladder
    # The one stats.* key a ladder claim reads: the study-wide control, every claim's.
    assert ladder["stats.study_wide"] == "none"
    assert not any(k.startswith(("recipes", "stats.", "latency")) for k in ladder
                   if k != "stats.study_wide")
    latency = an.analysis(lat, grid)
    assert latency["depths"] == [1, 2, 3] and "latency.nboot" in latency
    assert "latency.checks.max_residual" in latency and "stats.ci" in latency
    assert not any(k.startswith(("recipes", "stats.interval", "ladder")) for k in latency)
    # A ladder config's shape (its rungs) edited after the data names the entry's key.
    record, _ = _registered(config, [lad_raw := {"id": "l", "statement": "s", "adjacent": {
        "config": "c", "method": "bp", "k": "all"}, "test": "greater"}])
    wider = _edited(config, "ladder.configs", [{"name": "c", "d": 8, "L": 3}])
    assert _status(record, wider, lad_raw)[1] == (
        "ladder.configs.c.L (2 -> 3) changed since it was registered")


@pytest.mark.workflow
def test_a_dry_run_says_which_claims_an_edit_makes_post_hoc(tmp_path):
    """The default study registered, one claim's data on disk, stats.interval switched:
    `snakemake -n` prints the run's lines for the claims it would make post hoc, and writes
    no record."""
    from conftest import snakemake

    from workflow_scripts.claims import spec
    from workflow_scripts.claims.__main__ import read_config
    from workflow_scripts.claims.layout import input_files
    from workflow_scripts.core import paths

    config = read_config(["config/config.yaml"])
    grid = spec.grid_from_config(config)
    parsed = {c.id: c for c in spec.parse(config["claims"], grid)}
    results = paths.Study(config["study"]).results
    path = tmp_path / results / paths.CLAIMS_REGISTRY
    reg.register(path, config["claims"], lambda c: False, None,
                 lambda c: an.arm_seeds(parsed[c["id"]], grid),
                 lambda c: an.analysis(parsed[c["id"]], grid))
    data = tmp_path / input_files(results, grid, [parsed["deepest-beats-shallowest-short"]])[0]
    data.parent.mkdir(parents=True)
    data.touch()
    record = path.read_text()
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--config",
                     "stats={interval: multibootstrap}", env={"PYTHONHASHSEED": "0"})
    said = "dry run (nothing recorded): claims: claim '{}': its analysis changed: " \
           "stats.interval (calibrated -> multibootstrap) {}"
    assert said.format("deepest-beats-shallowest-short", "after its data existed: it will be "
                       "decided as post hoc, on what the config says now") in proc.stderr
    # A claim without data is reanalysed before it, registered: not worth a line; the
    # ladder's interval is its own.
    assert "claim 'deepest-beats-shallowest'" not in proc.stderr
    assert "claim 'bp-climbs'" not in proc.stderr
    assert path.read_text() == record


def test_docs_name_every_registered_key():
    """docs/claims.md's table of what an entry records names each key of the one list (a
    group as `section.*`, the training stages' keys by their last part)."""

    doc = (ROOT / "docs/claims.md").read_text(encoding="utf-8")
    section = doc[doc.index("The entry keeps the claim's analysis"):]
    section = section[:section.index("\n## ")]
    for entries in DECIDING_KEYS.values():
        for entry in entries:
            key = entry if isinstance(entry, str) else entry[0]
            if key.startswith("recipes.*."):
                name = key.removeprefix("recipes.*.").split(".")[0]
            elif key.startswith(("ladder.dataset.", "ladder.train.")):
                name = ".".join(key.split(".")[:2]) + ".*"
            elif key.startswith("latency.") and key != "latency.runs":
                name = "latency.*"
            else:
                name = key.replace(".*", ".<name>")
            assert f"`{name}" in section, key
    assert all(f"`{k}`" in section for k in AXIS_KEYS.values())
