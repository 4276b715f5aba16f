"""Code inputs derived from imports: the ast closure against what Python really imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from workflow_scripts.core import codedeps

STAGES = ["biencoder.train", "biencoder.evaluate", "biencoder.latency.profile",
          "biencoder.latency.summary", "biencoder.stats", "biencoder.curves",
          "biencoder.report.figures", "biencoder.report.results", "biencoder.compute",
          "biencoder.dims_stats",
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


# One interpreter imports the stages' third-party libraries once, then forks a child per
# stage that imports the stage and lists what it loaded of workflow_scripts: the parent has
# none of it loaded, so each child loads exactly what the stage imports (one torch import for
# all stages, not one per stage).
LOADED_BY_STAGE = """
import json, os, sys
import matplotlib.pyplot, numpy, pandas, pyarrow.parquet, scipy.stats, torch, transformers
import sentence_transformers
assert not any(m.startswith("workflow_scripts") for m in sys.modules)
out = {}
for stage in sys.argv[1:]:
    r, w = os.pipe()
    if os.fork() == 0:
        os.close(r)
        __import__(f"workflow_scripts.{stage}")
        os.write(w, json.dumps([m for m in sys.modules if m.startswith("workflow_scripts")])
                 .encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out[stage] = json.loads(f.read())
    assert os.wait()[1] == 0, stage
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def loaded_by_stage() -> dict[str, list[str]]:
    return json.loads(subprocess.run([sys.executable, "-c", LOADED_BY_STAGE, *STAGES], cwd=ROOT,
                                     check=True, capture_output=True, text=True).stdout)


@pytest.mark.parametrize("stage", STAGES)
def test_closure_holds_every_module_the_stage_imports(stage, loaded_by_stage):
    """Importing the stage and calling nothing loads a subset of the closure (the closure
    also counts imports inside functions, which run only when called)."""
    module = f"workflow_scripts.{stage}"
    assert set(loaded_by_stage[stage]) <= set(codedeps.closure(module))


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
