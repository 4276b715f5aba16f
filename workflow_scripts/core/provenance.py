"""What code and which packages made an output, cheaply (no subprocess, nothing imported).

code_version: the git commit of the checkout (read from .git: HEAD, the ref's file or
packed-refs, a worktree's gitdir followed), and a sha256 over the source files of the stage's
workflow modules (core/codedeps.py's import closure), which also tells an edited checkout
from its commit. package_versions: the installed versions of the packages that shape the
numbers, from their metadata. Neither holds a time, so two runs of the same code and config
record the same provenance.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from workflow_scripts.core import codedeps

# The packages whose versions can change a number (weights, embeddings, metrics, sampling).
TRAIN_PACKAGES = ("torch", "transformers", "sentence-transformers", "tokenizers", "safetensors",
                  "accelerate", "datasets", "numpy", "pandas", "pyarrow")
EVALUATE_PACKAGES = ("torch", "transformers", "sentence-transformers", "tokenizers",
                     "safetensors", "numpy", "pandas", "pyarrow", "pytrec_eval-terrier")


def package_versions(names=TRAIN_PACKAGES) -> dict[str, str | None]:
    """{distribution name: installed version, None if not installed}."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _git_dir(root: Path) -> Path | None:
    dot = root / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():  # a worktree or submodule: "gitdir: PATH"
        text = dot.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            d = Path(text.split(":", 1)[1].strip())
            return d if d.is_absolute() else (root / d).resolve()
    return None


def git_commit(root: Path = codedeps.ROOT) -> str | None:
    """The commit checked out at `root`, or None when it is not a git checkout (an archive,
    an installed copy) or .git cannot be read."""
    try:
        gd = _git_dir(root)
        if gd is None:
            return None
        head = (gd / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head or None  # detached
        ref = head.split(":", 1)[1].strip()
        common = gd
        if (gd / "commondir").is_file():  # a worktree keeps branches in the main .git
            common = (gd / (gd / "commondir").read_text(encoding="utf-8").strip()).resolve()
        for d in (gd, common):
            if (d / ref).is_file():
                return (d / ref).read_text(encoding="utf-8").strip()
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return sha
    except OSError:
        return None
    return None


def code_sha256(*modules: str, root: Path = codedeps.ROOT) -> str:
    """sha256 over the source files the stage `modules` import (relative names and contents)."""
    h = hashlib.sha256()
    for f in codedeps.code_files(*modules, root=root):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def code_version(*modules: str, root: Path = codedeps.ROOT) -> dict:
    """{"git_commit": the checkout's commit or None, "modules_sha256": code_sha256}."""
    return {"git_commit": git_commit(root), "modules_sha256": code_sha256(*modules, root=root)}
