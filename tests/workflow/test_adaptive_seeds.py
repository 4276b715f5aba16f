"""Seeds on demand in the workflow (rules/looks.smk, docs/adaptive_seeds.md) on a copy of the
finished tiny study: `deeper-helps` (inconclusive at 2 seeds, the planner finds a seed
count: seed noise) and `budget` (more seeds alone would not settle it: the examples limit
it) drive looks at 2 and 3 seeds per arm. The looks' logic on data of known truth:
tests/unit/claims/test_adaptive_seeds_looks.py."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time

import pandas as pd
import pytest
import yaml
from conftest import SNAKEMAKE, job_counts, snakemake

NEW = ("r1/top1/seed3", "r1/top2/seed3")  # the seed-noise claim's arms at look 1


def _digests(wd) -> dict:
    files = [p for d in ("checkpoints", "results/default/eval") for p in (wd / d).rglob("*")
             if p.is_file()]
    return {str(p.relative_to(wd)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _run_until(wd, cfg, path) -> None:
    """`snakemake --cores 1` killed (SIGKILL, with its jobs) once `path` exists. Without the
    preloaded interpreter (which reruns nothing): its import would be killed unused."""
    proc = subprocess.Popen([*SNAKEMAKE, "-s", str(wd / "Snakefile"), "--directory", str(wd),
                             "--configfile", str(cfg), "--cores", "1",
                             "--config", "preload=false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    deadline = time.monotonic() + 300
    while not (wd / path).exists():
        assert proc.poll() is None and time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_seeds_on_demand_train_only_the_open_claims_arms(tiny_run_copy):
    wd, cfg = tiny_run_copy
    config = yaml.safe_load(cfg.read_text())
    config["adaptive_seeds"] = {"claims": ["deeper-helps", "budget"], "max_seeds": 3}
    cfg = wd / "adaptive.yaml"
    cfg.write_text(yaml.safe_dump(config))
    before = _digests(wd)
    # Look 0 decides both claims at the configured 2 seeds: one stays open, one is
    # limited by the examples.
    started = snakemake(wd, "--configfile", str(cfg), "--cores", "2",
                        "results/default/looks/look0.json")
    # Turned on after the fixed-seed study: the run start records the plan after its data.
    assert ("seeds on demand: new look plan (looks at 2, 3 seeds per arm, one-sided "
            "boundaries ") in started.stderr
    assert "registered after its driving claims' data existed" in started.stderr
    look0 = json.loads((wd / "results/default/looks/look0.json").read_text())
    assert look0["plan"]["seeds"] == [2, 3] and not look0["stop"]
    assert look0["claims"]["deeper-helps"]["status"] == "open"
    budget = look0["claims"]["budget"]
    assert budget["status"] == "examples limit" and "the examples limit it" in budget["reason"]
    assert sorted(look0["next"]) == [["r1", "top", 1, [1, 2, 3]], ["r1", "top", 2, [1, 2, 3]]]
    # The dry run shows the next look's jobs: seed 3 of the open claim's arms, nothing else.
    dry = snakemake(wd, "--configfile", str(cfg), "--cores", "1", "-n")
    out = dry.stdout + dry.stderr
    counts = job_counts(out)
    assert counts["train"] == 2 and counts["evaluate_trained"] == 2 * 2
    assert counts["claims_look"] == 1 and "wildcards: k=1" in out
    # ...its cost said once at parse time, and the claims command names look 1 whole
    assert out.count("seeds on demand: look 1 (3 seeds per arm) runs 2 trainings and 4 "
                     "evaluation jobs next") == 1
    looks = "results/default/looks"
    assert (f"--looks {looks}/look0.json {looks}/look1.json --threads" in out
            or f"--looks {looks}/look1.json --threads" in out)
    assert " r e s u l t s" not in out
    assert not {"stats", "curves", "compute", "evaluate_steps"} & set(counts)
    trained = {line.split("--out ")[1].split()[0] for line in out.splitlines()
               if "workflow_scripts.biencoder.train " in line}
    assert trained == {f"checkpoints/default/{m}" for m in NEW}
    # Killed in look 1 (its first training started), resumed: look 0 is not redone.
    _run_until(wd, cfg, "logs/default/train/r1/top1/seed3.log")
    snakemake(wd, "--configfile", str(cfg), "--unlock")  # a killed run leaves its lock
    resumed = snakemake(wd, "--configfile", str(cfg), "--cores", "2")
    assert "claims_look" in job_counts(resumed.stdout + resumed.stderr)
    assert json.loads((wd / "results/default/looks/look0.json").read_text()) == look0
    after = _digests(wd)
    assert {p: after[p] for p in before} == before  # every earlier model and evaluation
    assert {p.split("/seed3/")[0] + "/seed3" for p in set(after) - set(before)} == {
        f"{d}/{m}" for d in ("checkpoints/default", "results/default/eval") for m in NEW}
    table = pd.read_parquet(wd / "results/default/claims_looks.parquet")
    assert list(zip(table.look, table.claim, table.seeds, strict=True)) == [
        (0, "deeper-helps", 2), (0, "budget", 2), (0, "budget", 2), (1, "deeper-helps", 3)]
    assert table.boundary.tolist() == [look0["plan"]["alphas"][k] for k in table.look]
    assert table[["estimate", "p_support", "p_refute"]].notna().all().all()
    last = table.iloc[-1]
    assert last.status in ("decided", "budget spent") and last.verdict == last.claim_verdict
    claims = pd.read_parquet(wd / "results/default/claims.parquet")
    head = claims[(claims.claim == "deeper-helps") & (claims.row == "claim")].iloc[0]
    assert head.verdict == last.claim_verdict and head.alpha == last.boundary
    assert head.p_support == pytest.approx(last.p_support)  # decided at 3 seeds, as look 1
    marks = claims[claims.row == "claim"].set_index("claim").registration
    assert marks["deeper-helps"] == "post hoc"  # driven by a plan registered after the data
    assert (marks.drop(["deeper-helps", "budget"]).isin(["registered", ""])).all()
    results = (wd / "results/default/RESULTS.md").read_text()
    assert "**Post hoc.** The claims this plan drives (" in results
    assert "### Seeds on demand" in results and "the examples limit it" in results
    assert "uses the configured seeds (r1: 1, 2; r4: 1, 2)" in results
    again = snakemake(wd, "--configfile", str(cfg), "--cores", "1", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
    # A deleted look document or look evaluation is rebuilt by a plain run (both are
    # targets of all, read from the documents on disk), the looks and claims after it.
    for rel, rule in (("results/default/looks/look1.json", "claims_look"),
                      (f"results/default/eval/{NEW[0]}/tiny-a.parquet", "evaluate_trained")):
        path = wd / rel
        kept, stat = path.read_bytes(), path.stat()
        path.unlink()
        try:
            dry = snakemake(wd, "--configfile", str(cfg), "--cores", "1", "-n")
        finally:
            path.write_bytes(kept)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        planned = job_counts(dry.stdout + dry.stderr)
        assert {rule, "claims_look", "claims", "claims_looks", "report"} <= set(planned), (
            rel, planned)
        assert "train" not in planned
