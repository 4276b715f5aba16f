"""Regenerate every statistics table the docs quote, in one command.

    nice -n 19 .venv/bin/python -m validation                  # every table, the docs' counts
    .venv/bin/python -m validation --scale 0.01                # a smoke run: 1% of the trials
    .venv/bin/python -m validation coverage-3-seeds --write    # one table, rewritten in docs/
    .venv/bin/python -m validation --list

Each table is one validation study's output at the trial counts the docs quote (TABLES); a
doc holds it between `<!-- validation: NAME -->` and `<!-- /validation -->`, and --write
replaces that block with the new output (headed by the command that made it). --scale
multiplies every trial count (at least MIN_TRIALS), for a smoke run: a block written at
another scale says so. The exact (quadrature) tables do not scale.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MIN_TRIALS = 4
BLOCK = re.compile(r"(<!-- validation: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /validation -->)",
                   re.DOTALL)


@dataclass(frozen=True)
class Table:
    """One study's run: its module under validation/, fixed arguments, and the trial counts
    (flag -> the docs' count) that --scale multiplies."""

    module: str
    args: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    fenced: bool = False  # plain-text output (a ```text block), not markdown tables

    def argv(self, scale: float) -> list[str]:
        out = list(self.args)
        for flag, n in self.counts.items():
            out += [flag, str(max(MIN_TRIALS, round(n * scale)))]
        return out

    def command(self, scale: float) -> str:
        return " ".join(["python -m validation." + self.module, *self.argv(scale)])


TABLES = {
    "coverage-grid": Table("coverage", ("--summary", "--workers", "2"),
                           {"--cal-trials": 10_000, "--mb-trials": 1_000,
                            "--mb-trials-other": 300}),
    "coverage-3-seeds": Table("coverage", ("--seeds", "3", "--mb-trials", "0",
                                           "--mb-trials-other", "0", "--workers", "1",
                                           "--summary"), {"--cal-trials": 2_000}),
    "coverage-theory": Table("coverage", ("--theory",)),
    "coverage-edges": Table("coverage_edges", (), {"--trials": 5_000}),
    "coverage-edges-theory": Table("coverage_edges", ("--theory",)),
    "tail-levels": Table("tail_levels", (), {"--studies": 100_000}, fenced=True),
    "tail-levels-arms": Table("tail_levels_arms", (), {"--studies": 100_000}, fenced=True),
    "holm-families": Table("holm_families", (), {"--families": 20_000}, fenced=True),
    "sequential": Table("sequential", (), {"--studies": 20_000, "--power-studies": 4_000}),
    "sequential-focus": Table("sequential", ("--focus",),
                              {"--studies": 20_000, "--power-studies": 4_000}),
    "seed-assurance": Table("seed_assurance", (), {"--studies": 1_000, "--power": 2_000}),
    "seed-assurance-fixed": Table("seed_assurance", ("--fixed",), {"--studies": 2_000}),
    "equivalence-refute": Table("equivalence_refute", (), {"--studies": 20_000}, fenced=True),
}


def run_table(name: str, scale: float = 1.0) -> str:
    """The table's block: the command that made it, then its output."""
    table = TABLES[name]
    module = importlib.import_module(f"validation.{table.module}")
    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        module.main(table.argv(scale))
    wall = time.perf_counter() - t0
    body = out.getvalue().strip("\n")
    at = "" if scale == 1 else f", scale {scale:g} of the docs' trial counts"
    head = f"`{table.command(scale)}` ({wall:.0f} s{at})"
    return f"{head}\n\n" + (f"```text\n{body}\n```" if table.fenced else body) + "\n"


def blocks_in(text: str) -> list[str]:
    """The table names a doc's marked blocks hold."""
    return [m.group("name") for m in BLOCK.finditer(text)]


def replace_blocks(text: str, new: dict[str, str]) -> str:
    """The doc with each marked block whose table is in `new` replaced by its output."""
    def sub(m: re.Match) -> str:
        name = m.group("name")
        return m.group(1) + new[name] + m.group(4) if name in new else m.group(0)
    return BLOCK.sub(sub, text)


def doc_blocks(docs: Path = DOCS) -> dict[Path, list[str]]:
    """doc -> the table names of its marked blocks, for every doc that has one."""
    found = {p: blocks_in(p.read_text(encoding="utf-8")) for p in sorted(docs.glob("*.md"))}
    return {p: names for p, names in found.items() if names}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="*", metavar="TABLE", help="default: every table")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every trial count by this (a smoke run: 0.01)")
    ap.add_argument("--write", action="store_true",
                    help="replace the tables' marked blocks in docs/*.md")
    ap.add_argument("--docs", type=Path, default=DOCS, help=argparse.SUPPRESS)
    ap.add_argument("--list", action="store_true", help="list the tables and their commands")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.tables) - set(TABLES))
    if unknown:
        ap.error(f"unknown tables {unknown}; one of {sorted(TABLES)}")
    names = args.tables or list(TABLES)
    if args.list:
        for name in names:
            print(f"{name}: {TABLES[name].command(args.scale)}")
        return
    new = {}
    for name in names:
        print(f"## {name}", file=sys.stderr, flush=True)
        new[name] = run_table(name, args.scale)
        print(f"<!-- validation: {name} -->\n{new[name]}<!-- /validation -->\n", flush=True)
    if args.write:
        for doc in doc_blocks(args.docs):
            text = doc.read_text(encoding="utf-8")
            updated = replace_blocks(text, new)
            if updated != text:
                doc.write_text(updated, encoding="utf-8")
                print(f"wrote {doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
