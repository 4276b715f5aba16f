"""The two speeds (tests/conftest.py): a test outside the `workflow` marker that starts
Snakemake or a training fails at once, so `make check` stays free of both; this test is
itself in the fast set, where the guard is on."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys

import conftest
import pytest
from conftest import ROOT


def test_starting_snakemake_in_the_fast_set_fails():
    with pytest.raises(RuntimeError, match="started Snakemake.*mark it @pytest.mark.workflow"):
        subprocess.run([sys.executable, "-m", "snakemake", "--version"], capture_output=True)
    # another process starts as usual
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0


def test_only_a_process_that_runs_snakemake_is_a_snakemake_start():
    py = sys.executable
    assert conftest.starts_snakemake([py, "-m", "snakemake", "-n"])
    assert conftest.starts_snakemake(["/venv/bin/snakemake", "--cores", "1"])
    assert conftest.starts_snakemake(["bash", "-e", "-c", "cd x && snakemake -n | head"])
    assert not conftest.starts_snakemake([py, "-c", "print('snakemake' in 'snakemake -n')"])
    assert not conftest.starts_snakemake(["bash", "-c", "grep -r snakemake_x rules/"])
    assert not conftest.starts_snakemake([py, "-m", "workflow_scripts.core.launch"])


def test_a_guarded_training_fails_in_the_fast_set(monkeypatch, tmp_path):
    """The mechanism on a stand-in module (the real entry imports torch); the real entry
    point exists where the guard names it."""
    for name, attr in conftest.TRAINING.items():
        tree = ast.parse((ROOT / (name.replace(".", "/") + ".py")).read_text())
        assert attr in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    (tmp_path / "stand_in_training.py").write_text("def fit():\n    return 'trained'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(conftest.TRAINING, "stand_in_training", "fit")
    monkeypatch.delitem(sys.modules, "stand_in_training", raising=False)
    module = importlib.import_module("stand_in_training")
    with pytest.raises(RuntimeError, match="trained a model"):
        module.fit()
    monkeypatch.setattr(conftest._FastGuard, "active", None)  # as in a workflow test
    assert module.fit() == "trained"


def test_workflow_tests_are_known_by_where_they_live():
    assert conftest.is_workflow_test(conftest.TESTS / "workflow" / "test_x.py")
    assert not conftest.is_workflow_test(conftest.TESTS / "unit" / "stats" / "test_x.py")
