"""The Makefile on a moved clone (issue #28: a moved clone's `make study` failed on the old
path in the venv's #! lines). A stub Python stands in for python3 and the venv, so this
checks the Makefile's logic in a second, without installing anything."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import ROOT

# python3 -m venv DIR: a venv whose pip names DIR in its #! line, as a real one does; its
# python logs every call.
STUB_PYTHON3 = """#!/bin/bash
set -e
[ "$1 $2" = "-m venv" ] || exit 1
mkdir -p "$3/bin"
real=$(cd "$3" && pwd -P)
echo "venv $real" >> "$STUB_LOG"
printf '#!/bin/bash\\necho "python $*" >> "$STUB_LOG"\\n' > "$3/bin/python"
printf '#!%s/bin/python3\\n# pip\\n' "$real" > "$3/bin/pip"
chmod +x "$3/bin/python"
"""


def _clone(d):
    (d / "envs").mkdir(parents=True)
    shutil.copy2(ROOT / "Makefile", d / "Makefile")
    for f in ("requirements.txt", "requirements-dev.txt"):
        shutil.copy2(ROOT / "envs" / f, d / "envs" / f)
    return d


def _make(d, log, *args) -> str:
    stub = log.parent / "python3"
    proc = subprocess.run(["make", "-s", *args, f"PYTHON3={stub}"], cwd=d, text=True,
                          capture_output=True, env={"PATH": "/usr/bin:/bin",
                                                    "STUB_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def stub(tmp_path):
    (tmp_path / "stub").mkdir()
    py = tmp_path / "stub" / "python3"
    py.write_text(STUB_PYTHON3)
    py.chmod(0o755)
    return tmp_path / "stub" / "log"


def test_a_moved_clone_rebuilds_its_venv_once(tmp_path, stub):
    if not shutil.which("make"):
        pytest.skip("no make")
    first = _clone(tmp_path / "a")
    _make(first, stub, "install")
    assert stub.read_text().splitlines() == [
        f"venv {first.resolve()}/.venv",
        "python -m pip install -q --disable-pip-version-check -r envs/requirements-dev.txt"]
    _make(first, stub, "install")  # installed: nothing to do
    assert len(stub.read_text().splitlines()) == 2

    moved = tmp_path / "b"
    shutil.move(first, moved)
    stub.unlink()
    said = _make(moved, stub, "install")
    assert ".venv was made in another folder: rebuilding it" in said
    assert stub.read_text().splitlines()[0] == f"venv {moved.resolve()}/.venv"
    assert "python -m pip install" in stub.read_text()
    stub.unlink()
    _make(moved, stub, "install")  # rebuilt: nothing to do
    assert not stub.exists()


def test_tools_run_as_python_modules(tmp_path, stub):
    if not shutil.which("make"):
        pytest.skip("no make")
    d = _clone(tmp_path / "a")
    _make(d, stub, "install")
    for target, tools in (("study", ["snakemake --cores all"]),
                          ("lint", ["ruff check .", "snakefmt --check Snakefile rules/",
                                    "snakemake --lint"])):
        plan = _make(d, stub, "-n", target)
        for tool in tools:
            assert f".venv/bin/python -m {tool}" in plan
        assert ".venv/bin/snakemake" not in plan and ".venv/bin/ruff" not in plan
