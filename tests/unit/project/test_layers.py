"""The package's layers import one way (docs/architecture.md, "Layout"): core imports no study,
the statistics (stats) nothing of the workflow, a study's subpackages only what the table
below allows. Every import counts, also those inside functions (codedeps.direct_imports),
since a lazy import is still a dependency."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

from workflow_scripts.core import codedeps

# layer -> the layers it may import besides itself. A layer is a top-level package of
# workflow_scripts, or one of biencoder's subpackages; biencoder's top-level modules are the
# stages (train, evaluate, retrieval, stats, curves, compute).
ALLOWED = {
    # the statistics library: numpy, scipy and itself (a notebook imports it without the rest)
    "stats": set(),
    "core": set(),
    "biencoder.model": {"core"},
    "biencoder.data": {"core"},
    "biencoder": {"core", "biencoder.model", "stats"},
    "biencoder.latency": {"core", "biencoder.model"},
    "biencoder.report": {"core"},
    # the exports read artifacts (per-query files, a model folder), not other stages' code
    "biencoder.export": {"core"},
    "ladder": {"core", "stats"},
    # claims decide latency claims from the relative ladder and its coherence checks, and
    # name the ladder study's vocabularies
    # the claims' grid is the study plan's
    "claims": {"core", "ladder", "biencoder.latency", "stats", "study_plan"},
    # the study plan: config -> models, evaluations, runs, outputs (standard library only)
    "study_plan": {"core", "ladder"},
    # the whole config check: core's and each study's (the Snakefile imports it)
    "study_config": {"core", "biencoder.model", "claims"},
}
# Command-line entry points may also use the composed config check.
ENTRY_POINTS = {"workflow_scripts.claims.__main__": {"study_config"}}


def modules(root: Path) -> list[str]:
    out = []
    for path in sorted((root / codedeps.PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def layer(module: str, root: Path) -> str | None:
    """The layer of a module; None for workflow_scripts and workflow_scripts.biencoder
    themselves, the packages that hold layers (Python runs their __init__ on any import
    below them, so they may import nothing of the package)."""
    parts = module.split(".")[1:]
    if parts in ([], ["biencoder"]):
        return None
    if parts[0] == "biencoder" and len(parts) > 1 and (
            root / codedeps.PACKAGE / "biencoder" / parts[1]).is_dir():
        return f"biencoder.{parts[1]}"
    return parts[0]


def violations(root: Path) -> list[str]:
    """Every import that crosses layers against ALLOWED, and every module of an undeclared
    layer, as 'module -> imported (layer -> layer)'."""
    found = []
    for m in modules(root):
        here = layer(m, root)
        if here is not None and here not in ALLOWED:
            found.append(f"{m}: layer {here} is not declared in ALLOWED")
            continue
        allowed = (ALLOWED.get(here, set()) | ENTRY_POINTS.get(m, set()) | {here}
                   if here is not None else set())
        for dep in sorted(codedeps.direct_imports(m, root)):
            there = layer(dep, root)
            if there is not None and there not in allowed:
                found.append(f"{m} -> {dep} ({here} may not import {there})")
    return found


def test_the_package_imports_one_way():
    assert violations(ROOT) == []


def test_the_allowed_graph_has_no_cycle():
    state: dict[str, str] = {}

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert state.get(node) != "open", f"cycle: {' -> '.join((*path, node))}"
        if state.get(node) == "done":
            return
        state[node] = "open"
        for nxt in sorted(ALLOWED[node]):
            visit(nxt, (*path, node))
        state[node] = "done"

    for node in ALLOWED:
        visit(node, ())


# What the statistics may import besides the standard library and themselves (threadpoolctl:
# optional, the engine keeps BLAS on one thread where it is installed).
STATS_IMPORTS = {"numpy", "scipy", "threadpoolctl"}


def _top_level_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add((node.module or "").split(".")[0])
    return found


def test_the_statistics_import_numpy_and_scipy_only():
    allowed = set(sys.stdlib_module_names) | STATS_IMPORTS | {codedeps.PACKAGE}
    for path in sorted((ROOT / codedeps.PACKAGE / "stats").glob("*.py")):
        assert _top_level_imports(path) <= allowed, path.name


def test_the_look_plan_imports_no_numpy():
    """The Snakefile's config check plans the looks at parse time: stats.look_plan (and the
    package's __init__) load the standard library only."""
    code = ("import sys, workflow_scripts.stats.look_plan; "
            "print([m for m in ('numpy', 'scipy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


def _copy_package(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / codedeps.PACKAGE, tmp_path / codedeps.PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_forbidden_import_is_caught(tmp_path):
    """core importing a study (the fault docs/architecture.md forbids), even inside a
    function, the report importing a stage, and the statistics importing core."""
    root = _copy_package(tmp_path)
    contracts = root / codedeps.PACKAGE / "core" / "contracts.py"
    contracts.write_text(contracts.read_text() + "\n\ndef _layers():\n"
                         "    from workflow_scripts.biencoder.model import architectures\n")
    figures = root / codedeps.PACKAGE / "biencoder" / "report" / "figures.py"
    figures.write_text(figures.read_text() + "\nfrom workflow_scripts.biencoder import stats\n")
    engine = root / codedeps.PACKAGE / "stats" / "bootstrap_engine.py"
    engine.write_text(engine.read_text() + "\nfrom workflow_scripts.core import runtime\n")
    codedeps.direct_imports.cache_clear()
    try:
        found = violations(root)
    finally:
        codedeps.direct_imports.cache_clear()
    assert found == [
        "workflow_scripts.biencoder.report.figures -> workflow_scripts.biencoder.stats "
        "(biencoder.report may not import biencoder)",
        "workflow_scripts.core.contracts -> workflow_scripts.biencoder.model "
        "(core may not import biencoder.model)",
        "workflow_scripts.core.contracts -> workflow_scripts.biencoder.model.architectures "
        "(core may not import biencoder.model)",
        "workflow_scripts.stats.bootstrap_engine -> workflow_scripts.core "
        "(stats may not import core)",
        "workflow_scripts.stats.bootstrap_engine -> workflow_scripts.core.runtime "
        "(stats may not import core)",
    ]


def test_a_new_subpackage_must_be_declared(tmp_path):
    root = _copy_package(tmp_path)
    (root / codedeps.PACKAGE / "biencoder" / "serving").mkdir()
    (root / codedeps.PACKAGE / "biencoder" / "serving" / "__init__.py").write_text("")
    codedeps.direct_imports.cache_clear()
    try:
        found = violations(root)
    finally:
        codedeps.direct_imports.cache_clear()
    assert found == ["workflow_scripts.biencoder.serving: layer biencoder.serving is not "
                     "declared in ALLOWED"]


def import_cycles(root: Path) -> list[str]:
    """Every cycle among the package's modules, as 'a -> b -> a' (imports inside functions
    count: a lazy import that closes a cycle still ties the two modules together). A
    package's __init__ imported by its own modules is no edge back: Python runs it first."""
    graph = {m: sorted(d for d in codedeps.direct_imports(m, root)
                       if not m.startswith(d + ".")) for m in modules(root)}
    state: dict[str, str] = {}
    found: list[str] = []

    def visit(node: str, path: tuple[str, ...]) -> None:
        if state.get(node) == "open":
            found.append(" -> ".join((*path[path.index(node):], node)))
            return
        if state.get(node) == "done":
            return
        state[node] = "open"
        for nxt in graph.get(node, []):
            visit(nxt, (*path, node))
        state[node] = "done"

    for node in graph:
        visit(node, ())
    return found


def test_no_import_cycle_among_modules():
    assert import_cycles(ROOT) == []


def test_an_import_cycle_is_caught(tmp_path):
    """forest importing render's helpers while render's CLI imports forest: the cycle that
    claims/table.py broke."""
    root = _copy_package(tmp_path)
    forest = root / codedeps.PACKAGE / "claims" / "forest.py"
    forest.write_text(forest.read_text() + "\n\ndef _f():\n"
                      "    from workflow_scripts.claims.render import estimate_text\n")
    codedeps.direct_imports.cache_clear()
    try:
        found = import_cycles(root)
    finally:
        codedeps.direct_imports.cache_clear()
    assert found == ["workflow_scripts.claims.render -> workflow_scripts.claims.forest -> "
                     "workflow_scripts.claims.render"]
