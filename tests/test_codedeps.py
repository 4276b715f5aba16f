"""Code inputs derived from imports: the ast closure against what Python really imports."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

from workflow_scripts.core import codedeps

STAGES = ["biencoder.train", "biencoder.evaluate", "biencoder.latency.profile",
          "biencoder.latency.summary", "biencoder.stats", "biencoder.curves",
          "biencoder.report.figures", "biencoder.report.results", "biencoder.compute",
          "biencoder.data.docstrings", "biencoder.data.prepare_data", "core.usage", "ladder.train",
          "ladder.stats", "ladder.identity", "ladder.report", "ladder.data"]


def test_closure_follows_absolute_relative_and_from_imports(tmp_path):
    pkg = tmp_path / "workflow_scripts"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a/__init__.py").write_text("")
    (pkg / "a/one.py").write_text("from . import two\n\ndef f():\n    import numpy\n")
    (pkg / "a/two.py").write_text("from workflow_scripts.a.three import x\n")
    (pkg / "a/three.py").write_text("x = 1\n")
    (pkg / "a/lonely.py").write_text("import json\n")
    got = codedeps.closure("workflow_scripts.a.one", tmp_path)
    assert got == ("workflow_scripts", "workflow_scripts.a", "workflow_scripts.a.one",
                   "workflow_scripts.a.three", "workflow_scripts.a.two")


@pytest.mark.parametrize("stage", STAGES)
def test_closure_holds_every_module_the_stage_imports(stage):
    """Importing the stage and calling nothing loads a subset of the closure (the closure
    also counts imports inside functions, which run only when called)."""
    module = f"workflow_scripts.{stage}"
    code = (f"import sys, {module}; "
            "print('\\n'.join(m for m in sys.modules if m.startswith('workflow_scripts')))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    assert set(loaded) <= set(codedeps.closure(module))


def test_a_stage_never_imports_another_stage():
    """Stages share core/ and their study's libraries, never each other's modules; the report
    reads artifacts."""
    # ladder.data is also the ladder's data library (ladder.train loads the npz with it).
    stages = {f"workflow_scripts.{s}" for s in STAGES} - {"workflow_scripts.ladder.data"}
    for s in stages:
        others = (set(codedeps.closure(s)) & stages) - {s}
        assert not others, f"{s} imports the stage(s) {sorted(others)}"


def test_a_package_run_with_python_m_brings_its_main(tmp_path):
    """code("claims.looks") is what `python -m workflow_scripts.claims.looks` runs: the
    package's __main__.py and its closure, not only the (empty) __init__.py."""
    pkg = tmp_path / "workflow_scripts"
    (pkg / "tool").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "tool/__init__.py").write_text('"""Nothing imported."""\n')
    (pkg / "tool/__main__.py").write_text("from workflow_scripts.tool.run import main\n")
    (pkg / "tool/run.py").write_text("def main():\n    pass\n")
    (pkg / "lib").mkdir()
    (pkg / "lib/__init__.py").write_text("")
    got = codedeps.code_files("tool", root=tmp_path)
    assert [p.relative_to(pkg).as_posix() for p in got] == [
        "__init__.py", "tool/__init__.py", "tool/__main__.py", "tool/run.py"]
    assert [p.relative_to(pkg).as_posix() for p in codedeps.code_files("lib", root=tmp_path)
            ] == ["__init__.py", "lib/__init__.py"]


def test_the_looks_code_holds_their_statistics():
    """The looks' rules list code("claims.looks"): the look runner, the plan of the looks
    and the levels (stats/look_plan.py, stats/sequential.py) are among its inputs."""
    got = {p.relative_to(ROOT).as_posix() for p in codedeps.code_files("claims.looks")}
    assert {"workflow_scripts/claims/looks/__main__.py", "workflow_scripts/claims/looks/run.py",
            "workflow_scripts/claims/looks/arms.py", "workflow_scripts/stats/look_plan.py",
            "workflow_scripts/stats/sequential.py"} <= got
