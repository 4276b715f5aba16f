"""Seeds on demand, the looks' logic (claims/looks/: run.py, arms.py) on synthetic
per-query files of known truth: a claim limited by seed noise is driven to its decision
within the budget, a claim limited by the examples gets no seeds and says why, and each look
asks only for the open claims' arms' next seeds. The workflow around it:
tests/workflow/test_adaptive_seeds.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.claims import spec
from workflow_scripts.claims.looks import arms as look_arms
from workflow_scripts.claims.looks import run as looks
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import Claims, Looks
from workflow_scripts.stats import look_plan, sequential

BENCH = ("b1", "b2")
QUERIES = 200
SEEDS = list(range(1, 9))  # every seed a look could ask for: 3 configured, up to 8


def _config(claims: list[dict], max_seeds: int = 8, **plan) -> dict:
    """`plan`: step= or looks= (default step 1)."""
    return {"recipes": {"r1": {"seeds": [1, 2, 3]}}, "depths": [1, 2, 3],
            "strategies": ["top"], "benchmarks": list(BENCH), "claims": claims,
            "stats": {"interval": "calibrated", "nboot": 200, "ci": 0.95, "seed": 0},
            "adaptive_seeds": {"claims": [c["id"] for c in claims], "max_seeds": max_seeds,
                               **(plan or {"step": 1}), "spending": "obrien-fleming"}}


def _write_results(results, means: dict, seed_sd: float, rng) -> None:
    """Per-query files of r1/top<depth>/seed<s>: mean + a seed effect (large: seed noise
    dominates) + query effects shared by the depths (paired) + noise."""
    effects = {b: rng.normal(0, 0.15, QUERIES) for b in BENCH}
    qids = [f"q{i:03d}" for i in range(QUERIES)]
    for depth, mean in means.items():
        for s in SEEDS:
            shift = rng.normal(0, seed_sd)
            for b in BENCH:
                scores = np.clip(mean + shift + effects[b] + rng.normal(0, 0.02, QUERIES), 0, 1)
                path = results / "eval" / "r1" / f"top{depth}" / f"seed{s}" / f"{b}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                pd.DataFrame({"query_id": qids, "recipe": "r1", "strategy": "top",
                              "depth": depth, "seed": s, "benchmark": b,
                              **{m: scores for m in contracts.METRICS}}).to_parquet(path)


def _run_looks(config: dict, results) -> list[dict]:
    settings = Claims.from_config(config)
    grid = spec.grid_from_config(config)
    docs, previous = [], None
    for k in range(10):
        previous = looks.run_look(k, settings, grid, config["adaptive_seeds"], previous,
                                  results)
        docs.append(json.loads(json.dumps(previous)))  # as the workflow reads it back
        if previous["stop"]:
            return docs
    raise AssertionError("the looks never stopped")


def test_seed_noise_claim_is_driven_to_a_decision_and_examples_limited_gets_none(tmp_path):
    rng = np.random.default_rng(5)
    results = tmp_path / "results"
    # depth 2 is 0.03 above depth 1; each seed shifts a model by sd 0.01
    _write_results(results, {1: 0.40, 2: 0.43, 3: 0.40}, seed_sd=0.01, rng=rng)
    # The mean of depth 3 pinned to its own sample mean over every query of its first 3
    # seeds: the margin (1e-5) is far below what the examples' noise lets any seed count
    # reach.
    d3 = pd.concat(pd.read_parquet(results / f"eval/r1/top3/seed{s}/{b}.parquet")
                   for s in (1, 2, 3) for b in BENCH)
    pinned = float(d3.groupby("benchmark")["ndcg@10"].mean().mean()) + 1e-5
    claims = [
        {"id": "deeper", "statement": "L2 beats L1", "a": {"recipe": "r1", "depth": 1},
         "b": {"recipe": "r1", "depth": 2}, "test": "greater"},
        {"id": "pinned", "statement": "L3 scores above a hair over its mean",
         "estimate": "mean", "arm": {"recipe": "r1", "depth": 3}, "test": "greater",
         "threshold": pinned},
    ]
    config = _config(claims)
    docs = _run_looks(config, results)
    plan = look_plan.plan_looks(3, 8, 1)
    assert docs[0]["plan"]["seeds"] == plan
    assert docs[0]["plan"]["alphas"] == pytest.approx(
        sequential.look_alphas(plan, 0.025, "obrien-fleming"), rel=1e-12)
    last = docs[-1]["claims"]
    # The seed-noise claim: open at look 0, supported at a later look within the budget.
    assert docs[0]["claims"]["deeper"]["status"] == "open"
    assert last["deeper"]["status"] == "decided" and last["deeper"]["verdict"] == "supported"
    k = last["deeper"]["look"]
    assert 0 < k < len(plan)
    assert look_arms.arms_of(last["deeper"]["arms"]) == {
        ("r1", "top", 1): SEEDS[:plan[k]], ("r1", "top", 2): SEEDS[:plan[k]]}
    # The examples-limited claim: inconclusive at look 0, no seeds, the reason said.
    assert last["pinned"]["status"] == "examples limit" and last["pinned"]["look"] == 0
    assert "the examples limit it" in last["pinned"]["reason"]
    # Each look asks only for the open claim's arms, at the next look's seeds.
    for j, doc in enumerate(docs[:-1]):
        assert look_arms.arms_of(doc["next"]) == {
            ("r1", "top", d): SEEDS[:plan[j + 1]] for d in (1, 2)}
    assert docs[-1]["next"] == [] and docs[-1]["stop"]
    table = looks.gather(_write_docs(tmp_path, docs))
    assert list(table.columns) == list(looks.COLUMNS)
    assert len(table) == 1 + (k + 1)  # pinned at look 0; deeper at looks 0..k
    row = table[(table.claim == "deeper") & (table.look == k)].iloc[0]
    assert row.verdict == "supported" and row.p_support <= row.boundary
    assert row.seeds == plan[k] and row.boundary == pytest.approx(docs[k]["plan"]["alphas"][k])
    earlier = table[(table.claim == "deeper") & (table.look < k)]
    assert (earlier.p_support > earlier.boundary).all()  # why it stayed open
    md = looks.markdown(_write_docs(tmp_path, docs), {"r1": [1, 2, 3]})
    assert f"- **deeper** (supported, look {k}): supported at look {k}" in md
    assert "- **pinned** (inconclusive, look 0): no seeds added" in md
    assert f"| {k} | deeper | {plan[k]} |" in md and "uses the configured seeds (r1: 1, 2, 3)" in md


def test_explicit_looks_decide_at_the_listed_seed_counts(tmp_path):
    rng = np.random.default_rng(5)
    results = tmp_path / "results"
    _write_results(results, {1: 0.40, 2: 0.43}, seed_sd=0.01, rng=rng)
    claims = [{"id": "deeper", "statement": "L2 beats L1", "a": {"recipe": "r1", "depth": 1},
               "b": {"recipe": "r1", "depth": 2}, "test": "greater"}]
    config = _config(claims, max_seeds=8, looks=[3, 5, 8])
    # The workflow passes the stage's settings as JSON: the list survives the round trip.
    adaptive_cfg = json.loads(Looks.from_json(Looks.from_config(config).to_json()).to_json())
    assert adaptive_cfg["looks"] == [3, 5, 8] and adaptive_cfg["step"] is None
    settings, grid = Claims.from_config(config), spec.grid_from_config(config)
    docs, previous = [], None
    for k in range(3):
        previous = looks.run_look(k, settings, grid, adaptive_cfg, previous, results)
        docs.append(json.loads(json.dumps(previous)))
        if previous["stop"]:
            break
    alphas = sequential.look_alphas([3, 5, 8], 0.025, "obrien-fleming")
    assert docs[0]["plan"] == {"claims": ["deeper"], "max_seeds": 8,
                               "spending": "obrien-fleming", "seeds": [3, 5, 8],
                               "alphas": pytest.approx(alphas, rel=1e-12)}
    assert alphas[-1] > 0.02  # three looks keep most of alpha for the last
    # Open at 3 seeds, the next look jumps to 5 seeds, then 8; decided within the budget.
    assert docs[0]["claims"]["deeper"]["status"] == "open"
    assert look_arms.arms_of(docs[0]["next"]) == {("r1", "top", d): SEEDS[:5] for d in (1, 2)}
    last = docs[-1]["claims"]["deeper"]
    assert last["status"] == "decided" and last["verdict"] == "supported"
    k = last["look"]
    assert k > 0 and last["alpha"] == pytest.approx(alphas[k], rel=1e-12)
    assert look_arms.arms_of(last["arms"])[("r1", "top", 1)] == SEEDS[:[3, 5, 8][k]]


def _write_docs(tmp_path, docs) -> list:
    paths = []
    for doc in docs:
        p = tmp_path / "looks" / f"look{doc['look']}.json"
        p.parent.mkdir(exist_ok=True)
        p.write_text(json.dumps(doc))
        paths.append(p)
    return paths


def test_a_look_refuses_a_plan_made_with_other_settings(tmp_path):
    rng = np.random.default_rng(0)
    _write_results(tmp_path / "results", {1: 0.4, 2: 0.4}, seed_sd=0.02, rng=rng)
    claims = [{"id": "d", "statement": "s", "a": {"recipe": "r1", "depth": 1},
               "b": {"recipe": "r1", "depth": 2}, "test": "greater"}]
    config = _config(claims, max_seeds=5)
    doc = looks.run_look(0, Claims.from_config(config), spec.grid_from_config(config),
                         config["adaptive_seeds"], None, tmp_path / "results")
    changed = {**config["adaptive_seeds"], "max_seeds": 6}
    with pytest.raises(ValueError) as refused:
        looks.run_look(1, Claims.from_config(config), spec.grid_from_config(config), changed,
                       doc, tmp_path / "results")
    # It names both plans and what a reset does: recorded, the driving claims post hoc.
    message = str(refused.value)
    results = tmp_path / "results"
    assert message.startswith(f"look 0's document ({results}/looks/look0.json) was made with "
                              "another look plan (looks at 3, 4, 5 seeds per arm")
    assert "than the config's (looks at 3, 4, 5, 6 seeds per arm" in message
    assert (f"remove {results}/looks; the reset is recorded: {results}/"
            "claims_registration.json keeps the first plan in its history") in message
    assert "the claims they drive (d) will be decided and shown as post hoc" in message


def test_the_schema_offers_the_spending_functions_of_core_sequential():
    from workflow_scripts.core.settings import schema_node

    assert tuple(schema_node("adaptive_seeds.spending")[0]["enum"]) == sequential.SPENDINGS


@pytest.mark.parametrize("value", [[3, 1, 8], "3, 5, 8", [3, 5.5, 8], []])
def test_the_schema_rejects_looks_that_are_not_seed_counts(value):
    from workflow_scripts.core.settings import SettingsError

    with pytest.raises(SettingsError, match=r"config key adaptive_seeds\.looks"):
        Looks.from_json(json.dumps({"claims": ["d"], "max_seeds": 8, "looks": value}))


def test_seeds_continue_after_the_recipes_own():
    assert look_arms.seeds_at([42, 43, 44], 5) == [42, 43, 44, 45, 46]
    assert look_arms.seeds_at([7, 3], 2) == [7, 3]


@pytest.mark.parametrize(("change", "message"), [
    ({"claims": ["nope"]}, "adaptive_seeds.claims[0]: 'nope' is not a claim id"),
    ({"claims": ["lat"]}, "reads the latency study"),
    ({"max_seeds": 3}, "max_seeds: 3 is not more than the 3 seeds"),
    ({"looks": [3, 5, 8]}, "adaptive_seeds.looks: give the looks or the step, not both"),
    ({"step": None, "looks": [3, 5, 5, 8]},
     "adaptive_seeds.looks: looks must increase strictly; got [3, 5, 5, 8] (look 2: 5 after 5)"),
    ({"step": None, "looks": [2, 5, 8]},
     "adaptive_seeds.looks: looks must start at the 3 seeds the arms start with; got [2, 5, 8]"),
    ({"step": None, "looks": [3, 5, 10]},
     "adaptive_seeds.looks: looks must end at max_seeds (8); got [3, 5, 10]"),
])
def test_bad_adaptive_seeds_stop_the_config_check(change, message):
    from workflow_scripts.study_config import claim_errors

    claims = [{"id": "d", "statement": "s", "a": {"recipe": "r1", "depth": 1},
               "b": {"recipe": "r1", "depth": 2}, "test": "greater"},
              {"id": "lat", "statement": "s", "estimate": "latency_coherent"}]
    config = _config(claims)
    config["base_model"] = "nowhere"  # a hub id: the layer check is the first job's
    config["adaptive_seeds"] = {**config["adaptive_seeds"], "claims": ["d"], **change}
    (error,) = claim_errors(config)
    assert message in error


def test_an_open_claims_reason_names_the_level_its_seed_count_is_planned_at():
    """look0.json said 'planner: 6' where claims.md said '5 seeds would settle it': two
    levels; the reason names the look whose α it is planned at (claims.md names its own)."""
    status, reason = looks._state("inconclusive", 6.0, 0, [3, 5], 5, (1, 0.0189516))
    assert status == "open"
    assert reason == ("5 seeds per arm at look 1 (planner: 6 at the last look's α = 0.019, "
                      "the most lenient left)")
    _, reason = looks._state("inconclusive", 6.0, 0, [3, 5, 8], 8, (1, 0.0073))
    assert "(planner: 6 at look 1's α = 0.0073, the most lenient left)" in reason


def test_a_claim_stops_only_where_the_examples_limit_it():
    """The looks stop a claim on seeds_at_margin (the rule validation/sequential.py measured),
    not on the assured count: one that no count decides in 80% of studies like it, yet whose
    expected interval can reach its threshold, stays open and says so."""
    plan = (1, 0.0189516)
    status, reason = looks._state("inconclusive", math.nan, 0, [3, 5], 5, plan, 9.0)
    assert status == "open" and "planner: unreachable in 80% at" in reason
    status, _ = looks._state("inconclusive", 40.0, 0, [3, 5], 5, plan, math.nan)
    assert status == "examples limit"
    members = [{"verdict": "inconclusive", "p_support": 0.1, "p_refute": 0.9,
                "seeds_needed": math.nan, "seeds_at_margin": 7.0}]
    assert math.isnan(looks._need(members)) and looks._need(members, "seeds_at_margin") == 7


@pytest.mark.parametrize("spending", ["obrien-fleming", "pocock"])
def test_an_open_claim_is_planned_at_the_most_lenient_look_left(spending):
    """Only a later look can settle an open claim: its seed count (and the 'examples limit
    it' stop) is planned at the largest level left. That is the last look under
    O'Brien-Fleming spending, whose levels grow, but the next one under Pocock's, whose
    levels fall (at 3, 4, ..., 10 seeds: 0.0027 at look 1 against 0.0016 at the last)."""
    from workflow_scripts.stats.sequential import look_alphas

    alphas = look_alphas(list(range(3, 11)), 0.025, spending)
    for k in range(len(alphas) - 1):
        j, level = looks.plan_level(alphas, k)
        assert level == max(alphas[k + 1:]) and j > k
        assert j == (len(alphas) - 1 if spending == "obrien-fleming" else k + 1)
    assert looks.plan_level(alphas, len(alphas) - 1) == (len(alphas) - 1, alphas[-1])


# ---- the look plan registered before its data (claims/registration.py, docs/claims.md) ----
DEEPER = {"id": "deeper", "statement": "L2 beats L1", "a": {"recipe": "r1", "depth": 1},
          "b": {"recipe": "r1", "depth": 2}, "test": "greater"}
ABOVE = {"id": "above", "statement": "L1 scores above 0.1", "estimate": "mean",
         "arm": {"recipe": "r1", "depth": 1}, "test": "greater", "threshold": 0.1}


def _register(config: dict, results, adaptive: bool = True) -> list[str]:
    """What a run's start records (rules/claims.smk's hook), and the lines it says."""
    import contextlib
    import io

    from workflow_scripts.claims import registration

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        registration.register_study(
            results / "claims_registration.json", Claims.from_config(config),
            spec.parse(config["claims"], spec.grid_from_config(config)), results,
            spec.grid_from_config(config), Looks.from_config(config) if adaptive else None)
    return err.getvalue().splitlines()


def _claims_stage(config: dict, results, tmp_path) -> tuple[dict, str]:
    """The looks from scratch, then the claims stage on them: ({claim: registration}, md)."""
    from workflow_scripts.claims.__main__ import run

    docs = _write_docs(tmp_path, _run_looks(config, results))
    table = run(Claims.from_config(config), spec.grid_from_config(config), results,
                tmp_path / "claims.parquet", tmp_path / "claims.md", look_files=docs)
    heads = table[table.row == "claim"].set_index("claim")
    return heads.registration.to_dict(), (tmp_path / "claims.md").read_text()


def test_a_plan_registered_before_its_data_makes_look_0_the_starting_seeds_report(tmp_path):
    """Registered: the starting seeds' report is look 0, at its level. Re-run after the
    looks are removed, the same plan gives the same looks and stays registered; an edited
    plan is recorded (the first kept in the history) and makes its claims post hoc."""
    import shutil

    results = tmp_path / "results"
    config = _config([DEEPER, ABOVE], max_seeds=8, looks=[3, 5, 8])
    config["adaptive_seeds"]["claims"] = ["deeper"]
    said = _register(config, results)  # a first run starts: no evaluation exists yet
    assert said[-1].startswith("seeds on demand: new look plan (looks at 3, 5, 8 seeds per "
                               "arm, one-sided boundaries ")
    assert said[-1].endswith("(obrien-fleming), driving deeper) registered before its "
                             "driving claims' data")
    _write_results(results, {1: 0.40, 2: 0.43}, seed_sd=0.01, rng=np.random.default_rng(5))
    status, md = _claims_stage(config, results, tmp_path)
    assert status == {"deeper": "registered", "above": "registered"}
    alphas = sequential.look_alphas([3, 5, 8], 0.025, "obrien-fleming")
    assert ("the report at the starting 3 seeds per arm is look 0 of this plan, so those "
            f"claims are decided there at its level {alphas[0]:.3g} (not at the fixed-seed "
            "α)") in md
    assert "Registered before their data: 2 of 2 decided claims" in md

    # The looks removed and run again with the same plan: the same documents, nothing new
    # recorded, still registered.
    first = [json.loads(p.read_text()) for p in sorted((tmp_path / "looks").glob("*.json"))]
    record = (results / "claims_registration.json").read_text()
    shutil.rmtree(tmp_path / "looks")
    assert _register(config, results) == []
    status, _ = _claims_stage(config, results, tmp_path)
    assert [json.loads(p.read_text()) for p in sorted((tmp_path / "looks").glob("*.json"))] \
        == first
    assert (results / "claims_registration.json").read_text() == record
    assert status == {"deeper": "registered", "above": "registered"}

    # Reset with an edited plan: recorded, the first plan kept, the driving claim post hoc.
    shutil.rmtree(tmp_path / "looks")
    config["adaptive_seeds"]["looks"] = [3, 6, 8]
    (said,) = _register(config, results)
    assert said.startswith("seeds on demand: changed look plan (looks at 3, 6, 8 seeds")
    assert said.endswith("after its driving claims' data existed (it replaces the plan "
                         "registered at " + json.loads(record)["looks"]["registered_at"]
                         + ", kept in the record's history: the looks restart): deeper will "
                         "be decided as post hoc")
    saved = json.loads((results / "claims_registration.json").read_text())["looks"]
    assert [h["plan"]["seeds"] for h in saved["history"]] == [[3, 5, 8]]
    status, md = _claims_stage(config, results, tmp_path)
    assert status == {"deeper": "post hoc", "above": "registered"}
    assert "**Post hoc.** The claims this plan drives (deeper) are post hoc" in md
    assert "in place of the plan first registered at" in md and "the looks were reset" in md
    assert "not covered by the error rate): deeper." in md  # the claims section says it too
    # ... and edited back, still post hoc: the plan was chosen again after the data.
    config["adaptive_seeds"]["looks"] = [3, 5, 8]
    shutil.rmtree(tmp_path / "looks")
    assert "after its driving claims' data existed" in _register(config, results)[0]
    assert _claims_stage(config, results, tmp_path)[0]["deeper"] == "post hoc"


def test_seeds_on_demand_turned_on_after_the_data_makes_its_claims_post_hoc(tmp_path):
    """A finished fixed-seed study, then `adaptive_seeds`: its report at α was a look the
    plan does not count, so the claims the plan drives are post hoc; the others are not."""
    results = tmp_path / "results"
    config = _config([DEEPER, ABOVE], max_seeds=5, looks=[3, 5])
    config["adaptive_seeds"]["claims"] = ["deeper"]
    claims_said = _register(config, results, adaptive=False)  # the fixed-seed study starts
    assert len(claims_said) == 2 and all("before its data" in s for s in claims_said)
    _write_results(results, {1: 0.40, 2: 0.43}, seed_sd=0.01, rng=np.random.default_rng(5))
    (said,) = _register(config, results)  # adaptive_seeds turned on
    assert said.endswith("registered after its driving claims' data existed (their "
                         "fixed-seed report at α was a look this plan does not count): "
                         "deeper will be decided as post hoc")
    status, md = _claims_stage(config, results, tmp_path)
    assert status == {"deeper": "post hoc", "above": "registered"}
    assert "| **" in md and "(post hoc) |" in md
    assert ("**Post hoc.** The claims this plan drives (deeper) are post hoc, their verdicts "
            "not covered by the error rate: it was recorded at ") in md
    assert "the fixed-seed report at α was a look the plan does not count." in md
