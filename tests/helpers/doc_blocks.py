"""The commands the docs show: the fenced code blocks of README.md, config/README.md and
docs/**/*.md tagged sh, bash, shell, console or python, each with its file, line and the
`not run` marker on the line before it, if any. tests/docs/test_doc_commands.py runs them.

A block is a command when its fence names one of those languages (```bash, ```python ...).
An untagged block (``` alone) or one in another language (yaml, text, output, mermaid) is
not a command: it shows a file, a layout, a table or an output, and is never run here.
Nor is an indented (4-space) code block, which has no tag: docs/claims.md's one, the claims
CLI, is run as written by tests/unit/claims/test_claims_cli.py.

A block that is not run here says so, with its reason, on the line just before its fence:

    <!-- not run: needs a SLURM cluster -->
    ```bash
    snakemake --profile profiles/slurm --configfile config/paper.yaml
    ```

The reason is required: a marker without one (`<!-- not run -->`, `<!-- not run: -->`) is
reported as a problem, as is a marker not followed by a command block. Pure: reads files,
runs nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

COMMAND_LANGUAGES = {"sh", "bash", "shell", "console", "python"}
SHELL_LANGUAGES = COMMAND_LANGUAGES - {"python"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
MARKER = re.compile(r"^\s*<!--\s*not run\b(?P<rest>.*?)-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: `line` is its opening fence's (1-based), `code` its text."""

    path: Path
    line: int
    language: str
    code: str
    not_run: str | None  # the marker's reason; None: the block is run

    @property
    def is_command(self) -> bool:
        return self.language in COMMAND_LANGUAGES

    def where(self, root: Path | None = None) -> str:
        path = self.path.relative_to(root) if root else self.path
        return f"{path}:{self.line}"


def doc_files(root: Path) -> list[Path]:
    """README.md, config/README.md and docs/**/*.md that exist under `root`."""
    files = [root / "README.md", root / "config" / "README.md",
             *sorted((root / "docs").rglob("*.md"))]
    return [f for f in files if f.is_file()]


def blocks(path: Path) -> tuple[list[Block], list[str]]:
    """Every fenced block of one markdown file, and the problems of its markers (a marker
    without a reason, a marker not before a command block, an unclosed fence)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, problems, i = [], [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        marker = MARKER.match(lines[i])
        if marker and not (i + 1 < len(lines) and FENCE.match(lines[i + 1])):
            problems.append(f"{path}:{i + 1}: a `not run` marker must be the line just "
                            "before a command block's fence")
        if not m:
            i += 1
            continue
        fence, start = m["fence"], i
        language = m["info"].split()[0].lower() if m["info"].strip() else ""
        body, i = [], i + 1
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and not lines[i].strip().strip(fence[0])):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            problems.append(f"{path}:{start + 1}: the block's fence is never closed")
        i += 1
        reason = None
        before = MARKER.match(lines[start - 1]) if start else None
        if before:
            reason = before["rest"].strip().removeprefix(":").strip()
            if not before["rest"].strip().startswith(":") or not reason:
                problems.append(f"{path}:{start}: a `not run` marker needs its reason: "
                                "<!-- not run: REASON -->")
                reason = None
            if language not in COMMAND_LANGUAGES:
                kind = f"{language} block" if language else "untagged block"
                problems.append(f"{path}:{start}: a `not run` marker before a {kind}, "
                                "which is not a command")
        found.append(Block(path, start + 1, language, "\n".join(body), reason))
    return found, problems


def command_blocks(root: Path) -> tuple[list[Block], list[str]]:
    """The command blocks of every doc file under `root` and all their marker problems."""
    out, problems = [], []
    for path in doc_files(root):
        found, bad = blocks(path)
        out += [b for b in found if b.is_command]
        problems += bad
    return out, problems


def shell_commands(code: str, *, console: bool = False) -> list[str]:
    """A shell block's commands, one per line: `\\` continuations joined; blank lines and
    comment lines dropped (a trailing comment stays: bash reads it as one). In a console
    block only the lines after a `$ ` prompt are commands (the others are their output)."""
    commands, current = [], ""
    for line in code.splitlines():
        text = line.rstrip()
        if not current:
            text = text.lstrip()
            if console:
                if not text.startswith("$ "):
                    continue
                text = text[2:].lstrip()
            if not text or text.startswith("#"):
                continue
        if text.endswith("\\"):
            current += text[:-1] + " "
            continue
        commands.append(current + text)
        current = ""
    if current:
        commands.append(current.rstrip())
    return commands
