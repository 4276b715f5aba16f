"""The claims CLI outside Snakemake (docs/claims.md): it never writes into the workflow's
results by default, refuses to unless told, and docs/claims.md's commands run as written on
a partial results folder, every claim whose inputs are missing (or lack its rows: an onset
table made by another config) not-applicable by name."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from conftest import ROOT

from workflow_scripts.core import contracts


def _partial_results(d):
    """A results folder another config made: the workflow's claims.*, curve onset tables
    for an arm no documented config has, and latency runs of depths 1, 2, 4 (no documented
    config profiles depth 4)."""
    stats = d / "results" / "stats"
    stats.mkdir(parents=True)
    latency = d / "results" / "latency"
    latency.mkdir()
    for r in range(3):
        calls = pd.DataFrame({c: [0] * 3 for c in contracts.LATENCY_COLUMNS})
        calls["run"], calls["depth"] = r, [1, 2, 4]
        calls.to_parquet(latency / f"run{r}.parquet")
    (latency / "coherence.json").write_text(json.dumps(
        {"depths": [1, 2, 4], "coherent_runs": [0, 1, 2], "runs": [],
         "canonical_ladder": {"depth": [1, 2, 4]}}))
    arm = dict(metric=["ndcg@10"], recipe=["other"], strategy=["top"], depth=[1],
               benchmark=["all"])
    onset = {c: [0.0] for c in contracts.CURVE_TABLES["curves_onset"]}
    onset.update(arm, interval=["calibrated"], resample=["seeds"])
    pd.DataFrame(onset).to_parquet(stats / "curves_onset.parquet")
    dist = {c: [0.0] for c in contracts.CURVE_TABLES["curves_onset_dist"]}
    pd.DataFrame({**dist, **arm}).to_parquet(stats / "curves_onset_dist.parquet")
    (d / "results" / "claims.md").write_text("the workflow's claims\n")
    (d / "results" / "claims.parquet").write_bytes(b"the workflow's table")
    shutil.copytree(ROOT / "config", d / "config")
    return d


def _tree(folder) -> dict:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _run(cmd: str, cwd) -> subprocess.CompletedProcess:
    argv = shlex.split(cmd)
    assert argv[:3] == ["python", "-m", "workflow_scripts.claims"]
    return subprocess.run([sys.executable, *argv[1:]], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _doc_commands() -> list[str]:
    lines = (ROOT / "docs/claims.md").read_text(encoding="utf-8").splitlines()
    cli = "python -m workflow_scripts.claims"
    return [ln.strip() for ln in lines if ln.strip().startswith(cli)]


def test_docs_examples_run_as_written_on_a_partial_results_folder(tmp_path):
    d = _partial_results(tmp_path)
    before = _tree(d / "results")
    commands = _doc_commands()
    assert commands
    for cmd in commands:
        proc = _run(cmd, d)
        assert proc.returncode == 0, proc.stderr
        assert _tree(d / "results") == before  # the workflow's outputs untouched
        table = pd.read_parquet(d / "claims-cli" / "claims.parquet")
        heads = table[table["row"] == "claim"]
        assert (heads["verdict"] == "not-applicable").all()
        assert heads["note"].str.len().gt(0).all()  # each names what is missing
    onset = table[(table["row"] == "claim") & table["note"].str.contains("curves_onset")]
    latency = table[(table["row"] == "member") & (table["study"] == "latency")]
    assert len(latency) and latency["verdict"].eq("not-applicable").all()
    assert latency["note"].str.contains("profiled depths 1, 2, 4, not ").all()
    if "paper.yaml" in " ".join(commands):  # its onset claim: the table lacks its rows
        assert onset["note"].str.contains("has no row for onset of b32_80k").all()
        assert len(onset) == 1


@pytest.mark.parametrize("config", ["config/ladder.yaml", "config/config.yaml",
                                    "config/laptop.yaml"])
def test_another_configs_claims_leave_results_untouched(tmp_path, config):
    d = _partial_results(tmp_path)
    before = _tree(d / "results")
    proc = _run(f"python -m workflow_scripts.claims --config {config} --results results", d)
    assert proc.returncode == 0, proc.stderr
    assert _tree(d / "results") == before
    assert "wrote claims-cli/claims.parquet and claims-cli/claims.md" in proc.stdout
    table = pd.read_parquet(d / "claims-cli" / "claims.parquet")
    heads = table[table["row"] == "claim"]
    assert (heads["verdict"] == "not-applicable").all() and heads["note"].str.len().gt(0).all()


def test_writing_into_results_is_refused_unless_told(tmp_path):
    d = _partial_results(tmp_path)
    before = _tree(d / "results")
    cmd = ("python -m workflow_scripts.claims --config config/ladder.yaml --results results "
           "--table results/claims.parquet --markdown elsewhere.md")
    proc = _run(cmd, d)
    assert proc.returncode != 0
    assert "results/claims.parquet lies in the results folder results" in proc.stderr
    assert "--into-results" in proc.stderr
    assert _tree(d / "results") == before and not (d / "elsewhere.md").exists()
    proc = _run(cmd + " --into-results", d)
    assert proc.returncode == 0, proc.stderr
    assert _tree(d / "results") != before
