"""Mistakes at the edges of a run, made as a user makes them, and what the run says: a clone's
Snakefile run from another folder, Ctrl-C during a training."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT, snakemake


def _dry_run_in(folder, *args) -> str:
    """`snakemake -s CLONE/Snakefile -n` started in `folder`, as a user in another folder."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"),
                           "-n", "--cores", "1", *args], cwd=folder, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout + proc.stderr


def test_a_clones_snakefile_run_from_another_folder_says_where_it_writes(tmp_path):
    out = _dry_run_in(tmp_path)
    assert (f"depthlab: results/, checkpoints/ and logs/ go under {tmp_path.resolve()} (not "
            f"the clone {ROOT}, whose Snakefile runs); to continue the clone's study, pass "
            f"--directory {ROOT}") in out
    # a folder that holds a study already, or one named with --directory: nothing to say
    (tmp_path / "results").mkdir()
    assert "depthlab: results/" not in _dry_run_in(tmp_path)
    named = snakemake(tmp_path / "named", "-n", "--cores", "1")
    assert "depthlab: results/" not in named.stdout + named.stderr
