"""bench/doc_numbers.py's adaptive part: docs/adaptive_seeds.md's outcome table of the looks
on the default study, made from a finished study's results (the looks' table, their
documents, the registration), here on synthetic looks; --check compares the doc's marked
block with it and --write replaces it. The default study itself is not run here."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from workflow_scripts.claims import registration
from workflow_scripts.claims.looks import run as looks
from workflow_scripts.core import contracts

ROOT = Path(__file__).resolve().parents[2]
PLAN = {"claims": ["c1", "fam"], "max_seeds": 10, "spending": "obrien-fleming",
        "seeds": [3, 6, 10], "alphas": [4.27e-05, 0.00377, 0.0212]}
SEEDS6 = [42, 43, 44, 45, 46, 47]


def _bench():
    spec = importlib.util.spec_from_file_location("doc_numbers", ROOT / "bench/doc_numbers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(look, claim, member, est, lo, hi, ps, pr, verdict, claim_verdict, status):
    return {"look": look, "claim": claim, "member": member, "seeds": PLAN["seeds"][look],
            "boundary": PLAN["alphas"][look], "estimate": est, "ci_low": lo, "ci_high": hi,
            "p_support": ps, "p_refute": pr, "verdict": verdict,
            "claim_verdict": claim_verdict, "status": status, "reason": "r"}


def _results(tmp_path, before_data: bool) -> Path:
    """A finished looks folder: c1 open at look 0, supported at look 1; fam (two members)
    limited by the examples at look 0."""
    results = tmp_path / "results"
    arm = lambda d, s: ["short", "top", d, s]  # noqa: E731
    docs = [{"look": 0, "plan": {k: v for k, v in PLAN.items()}, "rows": [], "stop": False,
             "claims": {"c1": {"status": "open"}, "fam": {"status": "examples limit"}},
             "next": [arm(1, SEEDS6), arm(3, SEEDS6)]},
            {"look": 1, "plan": PLAN, "rows": [], "stop": True, "next": [],
             "claims": {"c1": {"status": "decided"}, "fam": {"status": "examples limit"}}}]
    for doc in docs:
        path = results / "looks" / f"look{doc['look']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc))
    rows = [_row(0, "c1", "short/top3 − short/top1", 0.0222, 0.0011, 0.0433, 0.035, 0.97,
                 "inconclusive", "inconclusive", "open"),
            _row(0, "fam", "short/top2 − short/top1", 0.001, -0.02, 0.022, 0.2, 0.3,
                 "inconclusive", "inconclusive", "examples limit"),
            _row(0, "fam", "short/top3 − short/top2", 0.004, -0.018, 0.026, 0.41, 0.25,
                 "inconclusive", "inconclusive", "examples limit"),
            _row(1, "c1", "short/top3 − short/top1", 0.0239, 0.0071, 0.0406, 0.0031, 0.9993,
                 "supported", "supported", "decided")]
    contracts.write_parquet(results / "claims_looks.parquet",
                            pd.DataFrame(rows, columns=list(looks.COLUMNS)))
    record, _ = registration.update_plan({"claims": {}}, PLAN, not before_data,
                                         "2026-12-07T10:00:00+00:00")
    contracts.write_json(results / "claims_registration.json", record)
    return results


def test_the_outcome_table_is_made_from_the_looks(tmp_path):
    block = _bench().adaptive_outcome(_results(tmp_path, before_data=True))
    assert block == "\n".join([
        "Look plan: looks at 3, 6, 10 seeds per arm, one-sided boundaries 4.27e-05, 0.00377, "
        "0.0212 (obrien-fleming), driving c1, fam; registered before its driving claims' data "
        "(2026-12-07T10:00:00+00:00), so the 3-seed report is look 0, decided at 4.27e-05.",
        "",
        "| claim | look 0 (3 seeds) | look 1 (6 seeds) | look 2 (10 seeds) |",
        "|---|---|---|---|",
        "| c1 | inconclusive: δ 0.0222 [0.0011, 0.0433], p_support 0.035, p_refute 0.97 > "
        "4.27e-05: open | **supported**: δ 0.0239 [0.0071, 0.0406], p_support 0.0031 ≤ "
        "0.00377 | — |",
        "| fam | inconclusive: weakest member short/top3 − short/top2, δ 0.0040 [-0.0180, "
        "0.0260], p_support 0.41, p_refute 0.25 > 4.27e-05: the examples limit it, no seeds "
        "| — | — |",
        "",
        "2 of 3 looks ran: up to 6 of the 10 budgeted seeds per arm; seeds 45, 46, 47 added "
        "only to short/top1, short/top3."])


def test_a_plan_registered_after_its_data_is_said_post_hoc(tmp_path):
    block = _bench().adaptive_outcome(_results(tmp_path, before_data=False))
    assert block.startswith("Look plan: looks at 3, 6, 10 seeds per arm")
    assert "driving c1, fam; **post hoc**: not registered before its driving claims' data" \
        in block.splitlines()[0]


def test_check_fails_until_write_makes_the_doc_the_runs(tmp_path, monkeypatch, capsys):
    bench = _bench()
    results = _results(tmp_path, before_data=True)
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    shutil.copy(ROOT / "docs/adaptive_seeds.md", root / "docs/adaptive_seeds.md")
    monkeypatch.setattr(bench, "ROOT", root)

    def run(*args) -> int:
        monkeypatch.setattr(sys, "argv", ["doc_numbers.py", "--results", str(results),
                                          "--part", "adaptive", *args])
        with pytest.raises(SystemExit) as done:
            bench.main()
        return done.value.code

    assert run("--check") == 1
    assert "docs/adaptive_seeds.md: MISSING: <!-- doc_numbers: adaptive-outcome -->" in \
        capsys.readouterr().out
    before = (root / "docs/adaptive_seeds.md").read_text()
    monkeypatch.setattr(sys, "argv", ["doc_numbers.py", "--results", str(results), "--part",
                                      "adaptive", "--write"])
    bench.main()
    after = (root / "docs/adaptive_seeds.md").read_text()
    block = bench.doc_block(after, "adaptive-outcome")
    assert bench.adaptive_outcome(results) in block
    # Only the block changed.
    old = bench.doc_block(before, "adaptive-outcome")
    assert after == before.replace(old, block)
    assert run("--check") == 0
    (results / "claims_looks.parquet").unlink()
    assert run("--check") == "error: " + str(results / "claims_looks.parquet") + (
        ": missing; the adaptive part needs the default study run with "
        "config/adaptive_demo.yaml (or leave it out: --part ladder statistics)")


def test_the_docs_block_is_the_demo_plans():
    """docs/adaptive_seeds.md's outcome block names the plan config/adaptive_demo.yaml makes
    on the default study, in the tool's layout (one column per planned look)."""
    import yaml

    from workflow_scripts.claims import spec
    from workflow_scripts.claims.__main__ import read_config
    from workflow_scripts.claims.looks import plan
    from workflow_scripts.core.settings import Claims, Looks

    config = read_config([ROOT / "config/config.yaml", ROOT / "config/adaptive_demo.yaml"])
    assert yaml.safe_load((ROOT / "config/adaptive_demo.yaml").read_text())["adaptive_seeds"]
    grid = spec.grid_from_config(config)
    demo = plan.record(Claims.from_config(config).ci,
                       json.loads(Looks.from_config(config).to_json()),
                       spec.parse(config["claims"], grid), grid.recipe_seeds)
    block = _bench().doc_block((ROOT / "docs/adaptive_seeds.md").read_text(),
                               "adaptive-outcome")
    assert block is not None
    assert f"Look plan: {registration.describe_plan(demo)}; " in block
    header = "| claim | " + " | ".join(f"look {k} ({n} seeds)"
                                       for k, n in enumerate(demo["seeds"])) + " |"
    assert header in block.splitlines()
    assert [line.split(" | ")[0][2:] for line in block.splitlines()
            if line.startswith("| ") and not line.startswith("| claim")] == demo["claims"]
    # The doc's "Registered before the data" quotes what the run and claims.md say.
    doc = " ".join((ROOT / "docs/adaptive_seeds.md").read_text().split())
    (said,) = registration.update_plan({"claims": {}}, demo, True, "t")[1]
    assert said in doc
    record = registration.update_plan({"claims": {}}, demo, False, "t")[0]
    text = looks.registration_text(record, demo)
    assert text[text.index("the report at"):text.index(", and the error rate")] in doc
