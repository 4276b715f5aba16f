"""Shared fixtures: the repository root, a tiny random-init BERT, and a Snakemake runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A 3-layer random-init BERT (hidden 32) with the MiniLM package's tokenizer."""
    from workflow_scripts.models import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("models") / "tiny", layers=3, hidden=32,
                           heads=2, intermediate=64, seed=0)


def snakemake(workdir, *args, check=True, timeout=900) -> subprocess.CompletedProcess:
    """Run the repository's workflow in `workdir` (outputs land there, not in the repo)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    cmd = [SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout[-4000:]}\n"
                             f"{proc.stderr[-4000:]}")
    return proc


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table of a Snakemake (dry-)run as {rule: count}."""
    counts, in_table = {}, False
    for line in output.splitlines():
        if line.startswith("Job stats:"):
            in_table, counts = True, {}
            continue
        if in_table:
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                if parts[0] == "total":
                    in_table = False
                else:
                    counts[parts[0]] = int(parts[1])
    return counts
