"""Every command the docs show is run here or marked not run with its reason
(tests/helpers/doc_blocks.py reads the blocks and the markers).

Shell blocks run, one command at a time, under `bash -e -o pipefail`, in a copy of the
finished tiny study (conftest's tiny_run), with these substitutions and no others:

- `snakemake` is this interpreter's Snakemake with `--cores N` (N, all) -> `--cores 1` and
  the tiny study's config in place of the default's (config/config.yaml, or no
  --configfile); a block naming another config or a profile cannot run here (it is marked);
- `python` is this interpreter; `source .venv/bin/activate` reads an empty stand-in (the
  two above are the venv's already);
- the default config's benchmark names in a path (`data/beir/pandas-docs/...`,
  `.../pandas-docs.run.gz`) -> the tiny study's, in order (BENCHMARK_STANDINS);
- where Graphviz is not installed, `dot` is a stand-in that checks that it reads one DOT
  digraph and writes it out as it came.

Each command must exit 0, and where the docs say what it prints or does (EXPECTED below,
or a console block's output lines), that is checked. Python blocks run in order, one
namespace per file (a doc's first block imports what its later ones use), with the names
the docs leave to the reader (PYTHON_PRELUDE) bound to synthetic scores first.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, job_counts
from doc_blocks import SHELL_LANGUAGES, Block, blocks, command_blocks, shell_commands
from tiny_study import TINY_BENCHMARKS

BLOCKS, PROBLEMS = command_blocks(ROOT)
TO_RUN = [b for b in BLOCKS if b.not_run is None]
SHELL = [b for b in TO_RUN if b.language in SHELL_LANGUAGES]
PYTHON_FILES = sorted({b.path for b in TO_RUN if b.language == "python"})

PROGRAMS = {"snakemake", "python", "rm", "dot", "source"}
# The default config's benchmarks and the tiny study's stand-ins, in order.
BENCHMARK_STANDINS = dict(zip(yaml.safe_load((ROOT / "config/config.yaml").read_text())[
    "benchmarks"], TINY_BENCHMARKS, strict=False))
SEPARATORS = {"|", "||", "&&", ";", "&"}
DEFAULT_CONFIGS = {"config/config.yaml"}


def _where(block: Block) -> str:
    return block.where(ROOT)


def cannot_run(block: Block) -> list[str]:
    """Why the harness cannot run a block as the module docstring says (none: it can)."""
    if block.language == "python":
        try:
            compile(block.code, _where(block), "exec")
        except SyntaxError as e:
            return [f"not valid Python ({e.msg}, its line {e.lineno}): a signature or a sketch?"]
        return []
    why = []
    for command in shell_commands(block.code, console=block.language == "console"):
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        segment: list[str] = []
        for token in [*lexer, ";"]:
            if token not in SEPARATORS:
                segment.append(token)
                continue
            if segment:
                why += _segment_problems(segment)
            segment = []
    return why


def _segment_problems(words: list[str]) -> list[str]:
    program = words[0]
    if program not in PROGRAMS:
        return [f"`{program}`: not a program the harness runs ({', '.join(sorted(PROGRAMS))})"]
    if program == "source" and words[1:] != [".venv/bin/activate"]:
        return [f"`{shlex.join(words)}`: only `source .venv/bin/activate` is run"]
    if program != "snakemake":
        return []
    why = [f"`{w}`: the harness runs the default profile only" for w in words
           if w.startswith("--profile")]
    if "--configfile" in words:
        for w in words[words.index("--configfile") + 1:]:
            if w.startswith("-"):
                break
            if w not in DEFAULT_CONFIGS:
                why.append(f"`--configfile {w}`: only the default config has a tiny stand-in")
    return why


# The docs' word on what a command does, checked on its output (the command as the docs
# write it -> a check of (stdout + stderr, the study folder)).
def _nothing_to_do(out: str, wd: Path) -> None:
    assert "Nothing to be done" in out, out[-2000:]


def _only_pareto(out: str, wd: Path) -> None:  # "rebuild one figure: only its rule runs"
    assert job_counts(out) == {"figure_pareto": 1}, out[-2000:]
    assert (wd / "results/default/figures/pareto.png").stat().st_size > 0


def _written(name: str):
    def check(out: str, wd: Path) -> None:
        assert (wd / name).stat().st_size > 0, f"{name} was not written"
    return check


EXPECTED = {
    ("docs/guide.md", "snakemake -n"): _nothing_to_do,  # a finished study: nothing would run
    ("docs/guide.md", "snakemake --cores all"): _nothing_to_do,  # already up to date
    ("docs/guide.md", "rm results/default/figures/pareto.png && snakemake --cores 1 "
                      "results/default/figures/pareto.png"): _only_pareto,
    ("docs/guide.md", "snakemake --dag | dot -Tsvg > dag.svg"): _written("dag.svg"),
    ("docs/guide.md", "snakemake --rulegraph | dot -Tsvg > rules.svg"): _written("rules.svg"),
    ("docs/guide.md", "snakemake --report results/default/report.html"):
        _written("results/default/report.html"),
    ("docs/guide.md", "snakemake --cores 2 ladder"): _nothing_to_do,
}

SNAKEMAKE_SHIM = '''\
#!{python}
"""The docs' `snakemake`, as tests/docs/test_doc_commands.py runs it."""
import os
import sys

args, words = [], iter(sys.argv[1:])
for word in words:
    if word == "--cores":
        next(words, None)
        args += ["--cores", "1"]
    elif word == "--configfile":
        for config in words:
            if config.startswith("-"):
                args.append(config)
                break
    else:
        args.append(word)
os.execv(sys.executable, [sys.executable, "-m", "snakemake", *args,
                          "--configfile", {config!r}])
'''

DOT_STANDIN = '''\
#!{python}
"""Graphviz's dot where it is not installed: checks that stdin is one DOT digraph and
writes it out as it came."""
import sys

text = sys.stdin.read()
if not (text.lstrip().startswith("digraph") and text.rstrip().endswith("}}")):
    sys.exit("dot stand-in: stdin is not a DOT digraph: " + text[:200])
sys.stdout.write(text)
'''


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def shell_env(bin_dir: Path, config: Path) -> dict[str, str]:
    """PATH with the substitutions of the module docstring first."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    _script(bin_dir / "snakemake", SNAKEMAKE_SHIM.format(python=sys.executable,
                                                         config=str(config)))
    _script(bin_dir / "python", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    if shutil.which("dot") is None:
        _script(bin_dir / "dot", DOT_STANDIN.format(python=sys.executable))
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONHASHSEED": "0"}


def run_shell_block(block: Block, wd: Path, env: dict[str, str], timeout=300) -> list[str]:
    """Run a shell block's commands in `wd`, in order: each must exit 0 and pass its check
    (EXPECTED, or a console block's output lines). Returns their outputs."""
    console = block.language == "console"
    quoted = _console_outputs(block.code) if console else {}
    outputs = []
    for command in shell_commands(block.code, console=console):
        run = re.sub("|".join(map(re.escape, BENCHMARK_STANDINS)),
                     lambda m: BENCHMARK_STANDINS[m.group()], command)
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", run], cwd=wd,
                              env=env, capture_output=True, text=True, timeout=timeout)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, (f"{_where(block)}: `{command}` exited "
                                      f"{proc.returncode}:\n{out[-4000:]}")
        check = EXPECTED.get((str(block.path.relative_to(ROOT)), _bare(command)))
        if check:
            check(out, wd)
        for line in quoted.get(command, []):
            assert line in out, f"{_where(block)}: `{command}` did not print {line!r}:\n{out}"
        outputs.append(out)
    return outputs


def _bare(command: str) -> str:
    """A command without its trailing comment and extra spaces."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return " ".join(lexer)


def _console_outputs(code: str) -> dict[str, list[str]]:
    """A console block's quoted output: the lines after each `$ ` command, by command."""
    quoted, command = {}, None
    for line in code.splitlines():
        if line.startswith("$ "):
            command = line[2:].strip()
            quoted[command] = []
        elif command and line.strip():
            quoted[command].append(line.strip())
    return quoted


PYTHON_PRELUDE = textwrap.dedent("""\
    import numpy as np
    import pandas as pd

    _rng = np.random.default_rng(0)

    def _scores(seeds, examples=40, shift=0.0):
        return np.clip(0.5 + shift + _rng.normal(0, 0.02, (seeds, 1))
                       + _rng.normal(0, 0.1, (seeds, examples)), 0, 1)

    ndcg = scores = _scores(3)
    ndcg_nq, ndcg_fiqa = _scores(3, 30), _scores(3, 50)
    a, base, full_depth = _scores(3), _scores(3), _scores(3)
    b, deep, pruned = _scores(3, shift=0.02), _scores(3, shift=0.02), _scores(3, shift=0.001)
    rr = 1.0 / _rng.integers(1, 4, size=(3, 40))
""")


def run_python_blocks(file_blocks: list[Block]) -> dict:
    """Run one doc's Python blocks in order in one namespace; a failure names its block."""
    namespace: dict = {"__name__": "__doc_blocks__"}
    exec(compile(PYTHON_PRELUDE, "<prelude>", "exec"), namespace)
    for block in file_blocks:
        try:
            exec(compile(block.code, _where(block), "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{_where(block)} failed: {type(e).__name__}: {e}") from e
    return namespace


@pytest.fixture(scope="module")
def doc_study(tiny_run, tmp_path_factory):
    """A copy of the finished tiny study with the substitutions on its PATH: (folder, env)."""
    from tiny_study import copy_study

    wd, cfg, _ = tiny_run
    tmp = tmp_path_factory.mktemp("doc_commands")
    copy, config = copy_study(wd, cfg, tmp / "study")
    (copy / ".venv/bin").mkdir(parents=True)
    (copy / ".venv/bin/activate").write_text("# tests/docs/test_doc_commands.py: python and "
                                              "snakemake are the venv's already\n")
    return copy, shell_env(tmp / "bin", config)


def test_markers_are_well_formed():
    """Every `not run` marker has a reason and stands just before a command block."""
    assert not PROBLEMS, "\n".join(PROBLEMS)


def test_every_command_block_is_run_or_marked():
    """A block not marked not run must be one the harness runs."""
    unrunnable = [f"{_where(b)}: {'; '.join(why)}" for b in TO_RUN if (why := cannot_run(b))]
    assert not unrunnable, ("blocks that the harness cannot run: mark each "
                            "<!-- not run: REASON --> or make it runnable:\n"
                            + "\n".join(unrunnable))


@pytest.mark.parametrize("block", SHELL, ids=_where)
def test_shell_block_runs(block, doc_study):
    wd, env = doc_study
    run_shell_block(block, wd, env)


@pytest.mark.parametrize("path", PYTHON_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(path):
    run_python_blocks([b for b in TO_RUN if b.path == path and b.language == "python"])


def test_every_expected_output_belongs_to_a_block():
    """EXPECTED's commands are still in the docs (a renamed command keeps its check)."""
    shown = {(str(b.path.relative_to(ROOT)), _bare(c)) for b in SHELL
             for c in shell_commands(b.code, console=b.language == "console")}
    assert set(EXPECTED) <= shown, set(EXPECTED) - shown


def _block(code: str, language="bash") -> Block:
    return Block(ROOT / "docs/guide.md", 1, language, code, None)


@pytest.mark.parametrize("code", [
    "snakemake -n --dry-runn",                       # a misspelled flag
    "snakemake --dagg | dot -Tsvg > dag.svg",        # a failing command before a pipe
    "rm results/figures/nope.png && snakemake -n",   # a failing first command
    "python -c 'print(1)'\npython -c 'import no_such_module'",  # a failing later command
])
def test_a_broken_command_fails(code, doc_study):
    """The runner lets no error through: each broken command fails its block."""
    wd, env = doc_study
    with pytest.raises(AssertionError, match="exited"):
        run_shell_block(_block(code), wd, env)


def test_a_wrong_quoted_output_fails(doc_study):
    wd, env = doc_study
    run_shell_block(_block("$ python -c 'print(6 * 7)'\n42", "console"), wd, env)
    with pytest.raises(AssertionError, match="did not print"):
        run_shell_block(_block("$ python -c 'print(6 * 7)'\n43", "console"), wd, env)


def test_a_broken_python_block_fails():
    good = _block("from workflow_scripts.stats import multibootstrap as mb", "python")
    broken = _block("res = mb.bootstrap_mean(ndcg, nbot=2000, seed=0)", "python")
    with pytest.raises(AssertionError, match="nbot"):
        run_python_blocks([good, broken])


def test_what_cannot_run_is_named():
    assert cannot_run(_block("snakemake --profile profiles/slurm --configfile "
                             "config/paper.yaml"))
    assert cannot_run(_block("make study"))
    assert cannot_run(_block("bootstrap_mean(scores, *, nboot) -> BootstrapResult", "python"))
    assert not cannot_run(_block('python -c "import pandas; print(1)"  # a; b | c'))
    assert not cannot_run(_block("snakemake --cores 1 --configfile config/config.yaml"))


def test_markers_are_read(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n\n<!-- not run: needs a GPU -->\n```bash\nnvidia-smi\n```\n\n"
                  "<!-- not run -->\n```sh\nls\n```\n\n<!-- not run: x -->\n\ntext\n\n"
                  "```yaml\na: 1\n```\n```\nuntagged\n```\n")
    found, problems = blocks(md)
    assert [(b.line, b.language, b.not_run) for b in found] == [
        (4, "bash", "needs a GPU"), (9, "sh", None), (17, "yaml", None), (20, "", None)]
    assert [b.is_command for b in found] == [True, True, False, False]
    assert len(problems) == 2 and "needs its reason" in problems[0], problems
    assert "just before" in problems[1]


def test_shell_commands_split():
    assert shell_commands("a \\\n  b  # c\n\n# only a comment\n  d\n") == ["a    b  # c", "d"]
    assert shell_commands("$ ls\nout\n$ pwd", console=True) == ["ls", "pwd"]

