"""The source files a stage's command runs: the import closure of its module inside the
workflow_scripts package, found with `ast` (no module is imported, so this is cheap enough
for every Snakemake invocation).

Rules list these files as inputs, so that a change to any module a stage imports reruns
that stage, and only the stages that import it. Every import statement counts, also
those inside functions (the stages import heavy libraries lazily), and a module brings
its packages' __init__.py files, which Python runs on import.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = "workflow_scripts"
ROOT = Path(__file__).resolve().parents[2]


def module_path(module: str, root: Path = ROOT) -> Path:
    """workflow_scripts.a.b -> root/workflow_scripts/a/b.py (or its package __init__.py)."""
    base = root.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _is_package(module: str, root: Path) -> bool:
    return root.joinpath(*module.split(".")).is_dir()


@functools.cache
def direct_imports(module: str, root: Path = ROOT) -> frozenset[str]:
    """The package's modules that `module` imports anywhere in its source (each module is
    parsed once per process)."""
    path = module_path(module, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module if _is_package(module, root) else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x, from ..core import y
                parts = here.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            found.add(base)
            # `from pkg import name`: name may be a module of pkg
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(m for m in found if _in_package(m, root))


def _in_package(module: str, root: Path) -> bool:
    if module != PACKAGE and not module.startswith(PACKAGE + "."):
        return False
    base = root.joinpath(*module.split("."))
    return base.is_dir() or base.with_suffix(".py").is_file()


@functools.cache
def closure(module: str, root: Path = ROOT) -> tuple[str, ...]:
    """Every module `module` imports, directly or not, itself and the packages on the way
    included, sorted."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages
        todo.extend(direct_imports(m, root) - seen)
    return tuple(sorted(seen))


def code_files(*modules: str, root: Path = ROOT) -> list[Path]:
    """Source files of the closure of `modules` (names relative to the package, e.g.
    "biencoder.train"), absolute, sorted. A package with a __main__.py brings that module's
    closure too: `python -m` of the package runs it (claims.looks)."""
    mods = set()
    for m in modules:
        name = f"{PACKAGE}.{m}"
        mods.update(closure(name, root))
        if _is_package(name, root) and (module_path(name, root).parent / "__main__.py").is_file():
            mods.update(closure(f"{name}.__main__", root))
    return sorted(module_path(m, root) for m in mods)
