# Shared names: the interpreter, the job launcher, code inputs, settings, wildcard
# constraints. Parsed on every snakemake call: imports here stay light (no torch).
import json
import shlex
import sys
from pathlib import Path

from workflow_scripts.core import launch
from workflow_scripts.core import paths
from workflow_scripts.core import settings as stage_settings
from workflow_scripts.core.codedeps import code_files
from workflow_scripts.core.shellargs import option, spaced
from workflow_scripts.core.contracts import (
    CURVE_TABLES,
    DIMS_TABLE,
    PER_DEPTH_REFERENCE,
    STATS_TABLES,
    TRAIN_ONCE,
)
from workflow_scripts.study_plan import regex

ROOT = Path(workflow.basedir)
# Seeds on demand: the looks' documents and evaluations on disk (rules/looks.smk), targets of all.
LOOKS_PROMISED = []
DATASETS = config.get("datasets", {})
CONDA_ENV = "../envs/depthlab.yaml"
# Stage modules run as `python -m workflow_scripts.X` from any working directory, with the
# interpreter that runs Snakemake (the project's venv) first on PATH.
_BIN = shlex.quote(str(Path(sys.executable).parent))
JOB_ENV = {"TOKENIZERS_PARALLELISM": "false"}
shell.prefix(
    f"set -euo pipefail; export PATH={_BIN}:$PATH"
    f" PYTHONPATH={shlex.quote(str(ROOT))}${{{{PYTHONPATH:+:$PYTHONPATH}}}}"
    + "".join(f" {k}={v}" for k, v in JOB_ENV.items())
    + "; "
)
# Every job runs its stage through core/launch.py: the stage's output goes to the job's log,
# named logs/<study>/<rule>.log or logs/<study>/<rule>/... (PATHS.log), and its wall time, CPU
# time and peak memory to the record beside that name under results/<study>/benchmarks/ (the
# usage table globs them).
LAUNCH = "python -m workflow_scripts.core.launch --log {log} --outputs {output} --"
# Stages that import torch run, in a local run, in a process forked from one interpreter
# that imported it once (core/launch.py): importing sentence-transformers costs more than a
# small training. Which process runs a job decides nothing about what is stale.
PRELOADED = LAUNCH.replace("--log", "--preloaded --log")


def code(*modules):
    """Source files of the stage modules' import closure (e.g. code("biencoder.train")),
    relative to the working directory: listed as inputs, a change to any module a stage
    imports reruns it, and a moved clone reruns nothing."""
    return [os.path.relpath(p) for p in code_files(*modules)]


def settings_json(stage, **names):
    """A stage's settings (workflow_scripts/core/settings.py) as one JSON argument: the
    keys it reads and nothing else, so a job reruns exactly when one of them changes."""
    return getattr(stage_settings, stage).from_config(config, **names).to_json()


def all_cores():
    """Every core of this invocation (latency jobs take them all, so nothing runs beside a
    timing); 1 where no core count is defined, as for `snakemake --report`."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def literal(text):
    """`text` as one shell word of a rule's shell command, fixed when the Snakefile is read:
    quoted, its braces doubled so that Snakemake's formatting leaves them as they are."""
    return shlex.quote(text).replace("{", "{{").replace("}", "}}")


def run_stage(stage, preloaded=False):
    """The shell command of a job: `stage` (a workflow_scripts module and its arguments)
    through the launcher."""
    return f"{PRELOADED if preloaded else LAUNCH} workflow_scripts.{stage}"


# ---- input and param helpers of the rules (they ask the plan) ------------------------------


def beir_location(name):
    """The command's --url/--md5 or --path of a BEIR dataset."""
    spec = DATASETS[name]
    if "path" in spec:
        return f"--path {shlex.quote(spec['path'])}"
    return f"--url {shlex.quote(spec['url'])} --md5 {spec['md5']}"


def local_files(name, files):
    """The files of a dataset's local folder that its job reads (none for a url)."""
    path = DATASETS[name].get("path")
    return [os.path.join(path, f) for f in files] if path else []


def at_depths(template, depths=None):
    """A template's files at every depth, or at `depths` (one-pass jobs): {depth} filled,
    the rest kept."""
    return [template.replace("{depth}", str(d)) for d in depths or PLAN.depths]


def dim_args(files):
    """An evaluation's --dims and --dim-out (eval.dims; '' where none)."""
    if not PLAN.dims:
        return ""
    return f"--dims {' '.join(map(str, PLAN.dims))} --dim-out {spaced(files)}"


def snapshots_source(wc, input, output):
    return (
        f"--snapshots {input.steps} --steps {' '.join(map(str, PLAN.snapshot_steps(wc.recipe)))}"
        f" --final {os.path.dirname(input.model)} --final-out {spaced(output.final)}"
    )


def figure_outputs(name, category="Bi-encoder depth study"):
    """A figure's files, registered for `snakemake --report` with its caption."""
    cap, files = f"../docs/report/{name}.rst", PLAN.figure_files(name)
    return [report(p, caption=cap, category=category) for p in files]


wildcard_constraints:
    recipe="[A-Za-z][A-Za-z0-9_]*",
    strategy="[a-z]([a-z0-9]*[a-z])?",  # ends with a letter: matryoshka2d3 = matryoshka2d, 3
    depth="[0-9]+",
    seed="[0-9]+",
    benchmark="[A-Za-z0-9][A-Za-z0-9_.-]*",
    r="[0-9]+",
    k="[0-9]+",


# The preloaded interpreter: started for a local run with two or more jobs to run in it,
# stopped when the run ends (it also ends by itself when Snakemake is gone). A server named
# by DEPTHLAB_PRELOAD when Snakemake starts (started with the jobs' environment, as
# tests/conftest.py does once per test process) is used instead; preload off uses none.
PRELOAD = []


# What a run does when it starts (not on a dry run), besides the preload: rules/claims.smk
# registers the claims there.
ONSTART = []


onstart:
    launch.note_interrupts()
    for hook in ONSTART:
        hook()
    jobs = [
        j
        for j in workflow.dag.needrun_jobs()
        if PRELOADED in (j.rule.shellcmd or "")
    ]
    given = os.environ.get(launch.SOCKET_ENV, "")
    if not (config["preload"] and workflow.local_exec):
        os.environ.pop(launch.SOCKET_ENV, None)
    elif len(jobs) >= 2 and not os.path.exists(given):
        modules = ["torch", "pandas", "pyarrow.parquet"]
        if PLAN.has_biencoder:
            modules.append("sentence_transformers")
        os.environ.update(JOB_ENV)
        PRELOAD.append(launch.start_server(modules, log=PATHS.log("preload")))
        os.environ[launch.SOCKET_ENV] = PRELOAD[0].socket


onsuccess:
    for server in PRELOAD:
        server.stop()


onerror:
    for server in PRELOAD:
        server.stop()
    if launch.INTERRUPTED:
        print(launch.RESUME_NOTE, file=sys.stderr)
