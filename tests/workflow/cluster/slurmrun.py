"""Running the workflow through the SLURM test cluster of up.sh, and reading what SLURM did.

Shared by tests/workflow/cluster/test_slurm.py and bench/slurm_groups.py. Import-safe without SLURM.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from conftest import snakemake  # tests/ is on sys.path: pytest's conftest dir, or the bench's

from workflow_scripts.core import contracts, paths

ROOT = Path(__file__).resolve().parents[3]
PARTITION = "local"  # up.sh's partition
# Rules that the SLURM profile sends to the cluster; every other rule of the bi-encoder study
# is a localrule (Snakefile).
SLURM_RULES = ("train", "evaluate_trained", "evaluate_base", "evaluate_base_one_pass",
               "evaluate_train_once", "evaluate_steps", "evaluate_steps_train_once",
               "evaluate_truncated", "evaluate_truncated_one_pass", "latency_run")
# An evaluation's files: its per-query file, its TREC run and the run's sidecar.
EVAL_SUFFIXES = (".parquet", *paths.RUN_SUFFIXES)


def cluster_problem() -> str | None:
    """Why the test cluster cannot take jobs, or None when it can."""
    if not shutil.which("sinfo"):
        return ("no SLURM client (sinfo) on PATH; tests/workflow/cluster/up.sh installs and starts "
                "one")
    try:
        proc = subprocess.run(["sinfo", "-h", "-p", PARTITION, "-o", "%t"],
                              capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo timed out"
    states = proc.stdout.split()
    if proc.returncode != 0 or not any(s.rstrip("*") in ("idle", "mix", "alloc")
                                       for s in states):
        said = (proc.stderr.strip().splitlines() or [proc.stdout.strip()])[-1]
        return (f"partition {PARTITION!r} is not up (sinfo: {said}); tests/workflow/cluster/up.sh "
                f"starts it")
    return None


def node_cpus() -> int:
    out = subprocess.run(["sinfo", "-h", "-p", PARTITION, "-o", "%c"], capture_output=True,
                         text=True, check=True, timeout=20).stdout
    return int(out.split()[0].rstrip("+"))


def cluster_config(tiny_config: dict) -> dict:
    """The workflow tests' tiny config, cut to what still runs every job kind of the
    bi-encoder study (train, train once, evaluate, latency; stats, figures, report): 1 seed
    per recipe, no ladder. 4 + 1 trainings, 8 + 2 evaluations and 1 of the base's depths
    per benchmark, 1 latency run."""
    cfg = dict(tiny_config)
    cfg.pop("ladder", None)
    cfg["recipes"] = {name: {**spec, "seeds": spec["seeds"][:1]}
                      for name, spec in cfg["recipes"].items()}
    return cfg


def ci_profile(dest: Path, *, groups: bool = True, retries: int = 0) -> Path:
    """profiles/slurm with the CI overrides: the test cluster's partition and account, the
    node's cores for the latency run, fast status checks, every SLURM log kept (the test
    reads them), no retries unless asked for (a failure fails the test). groups=False drops
    the evaluation groups, for the comparison in bench/slurm_groups.py."""
    prof = yaml.safe_load((ROOT / "profiles/slurm/profile.yaml").read_text())
    prof["default-resources"].update(slurm_partition=PARTITION, slurm_account="root")
    prof["set-threads"]["latency_run"] = node_cpus()
    prof["local-cores"] = 1  # the submit host is the node: leave a core to the jobs
    prof["retries"] = retries
    prof["slurm-init-seconds-before-status-checks"] = 10
    prof["slurm-keep-successful-logs"] = True
    if not groups:
        for key in ("groups", "group-components", "resources", "set-resource-scopes"):
            prof.pop(key)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "profile.yaml").write_text(yaml.safe_dump(prof, sort_keys=False))
    return dest


@dataclass
class Run:
    workdir: Path
    output: str  # stdout + stderr
    seconds: float
    run_id: str  # the plugin's run UUID, every SLURM job's name
    submitted: dict[str, Path]  # SLURM job id -> its log file


def run_snakemake(workdir: Path, *args: str, timeout: int = 900) -> tuple[str, float]:
    """The workflow tests' runner (conftest.snakemake), timed: (stdout + stderr, seconds)."""
    t0 = time.monotonic()
    proc = snakemake(workdir, *args, timeout=timeout)
    return proc.stdout + proc.stderr, time.monotonic() - t0


def run_on_slurm(workdir: Path, configfile: Path, profile: Path, timeout: int = 900,
                 targets: tuple[str, ...] = ()) -> Run:
    output, seconds = run_snakemake(workdir, "--configfile", str(configfile), "--profile",
                                    str(profile), *targets, timeout=timeout)
    run_id = re.search(r"SLURM run ID: (\S+)", output)
    assert run_id, f"no 'SLURM run ID' in the output: did the slurm executor run?\n{output}"
    submitted = {m["id"]: Path(m["log"]) for m in re.finditer(
        r"has been submitted with SLURM jobid (?P<id>\d+) \(log: (?P<log>\S+)\)", output)}
    return Run(workdir, output, seconds, run_id[1], submitted)


def kill_when(ready, comment_prefix: str, process: str, timeout: float = 300) -> str:
    """Wait until ready() is true, then SIGKILL the process running `process` (an argument
    of its command line) in the running SLURM job whose comment starts with comment_prefix,
    as the OOM killer or a crashing node would end it; return the SLURM job id.

    Not `scancel`: SLURM records a cancelled job as "CANCELLED by <uid>", which the slurm
    executor plugin (2.8.0) does not recognise as failed, so Snakemake would wait for it
    forever (docs/guide.md, "When things go wrong")."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError("the condition to kill on never came")
        time.sleep(0.05)
    out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i|%k"], capture_output=True,
                         text=True, check=True, timeout=20).stdout
    ids = [i for i, c in (line.split("|", 1) for line in out.splitlines())
           if c.startswith(comment_prefix)]
    if len(ids) != 1:
        raise RuntimeError(f"expected one running job {comment_prefix}*, squeue has:\n{out}")
    # The job's processes on this node (the test cluster's node is this machine).
    pids = subprocess.run(["scontrol", "listpids", ids[0]], capture_output=True, text=True,
                          check=True, timeout=20).stdout.split()
    # The process running the stage `process` (core/launch.py starts it as `python -m
    # workflow_scripts.core.launch stage process ...`): not the job's shell (the whole command
    # line is one argument of it) nor the launcher waiting on the stage.
    stage = ["-m", "workflow_scripts.core.launch", "stage", process]
    victims = [int(p) for p in pids if p.isdigit() and _argv(int(p))[1:5] == stage]
    if len(victims) != 1:
        raise RuntimeError(f"expected one {process!r} process in job {ids[0]}, found {victims}")
    os.kill(victims[0], signal.SIGKILL)
    return ids[0]


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:  # ended meanwhile
        return []


@dataclass
class SlurmJob:
    job_id: str
    comment: str
    state: str
    partition: str
    gpus: int  # from AllocTRES gres/gpu
    outputs: frozenset[str]  # files the Snakemake jobs inside it wrote (from its log)


def sacct_jobs(run: Run) -> list[SlurmJob]:
    """Every SLURM job of the run, as the accounting database recorded it."""
    fields = "JobIDRaw,Comment,State,Partition,AllocTRES"
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-S", "now-2days", "--name", run.run_id, "-o", fields],
        capture_output=True, text=True, check=True, timeout=30).stdout
    jobs = []
    for line in out.splitlines():
        job_id, comment, state, partition, tres = line.split("|")
        gpus = re.search(r"gres/gpu=(\d+)", tres)
        log = run.submitted.get(job_id)
        outputs = log_outputs(log.read_text()) if log and log.exists() else frozenset()
        jobs.append(SlurmJob(job_id, comment, state, partition, int(gpus[1]) if gpus else 0,
                             outputs))
    return jobs


def log_outputs(log: str) -> frozenset[str]:
    """Output files of the Snakemake jobs that a SLURM job's log shows running."""
    return frozenset(f for m in re.finditer(r"^\s*output: (.+)$", log, re.M)
                     for f in m[1].split(", "))


def per_depth_models(cfg: dict) -> list[tuple]:
    return [(r, s, d, seed) for r, spec in cfg["recipes"].items() for s in cfg["strategies"]
            for d in cfg["depths"] for seed in spec["seeds"]]


def train_once_models(cfg: dict) -> list[tuple]:
    """(recipe, arm, seed) of every train-once training (at the deepest depth)."""
    return [(r, s, seed) for r, spec in cfg["recipes"].items()
            for s in spec.get("train_once", []) for seed in spec["seeds"]]


def truncated_models(cfg: dict) -> list[tuple]:
    """(recipe, truncated arm, seed) of every fine-tuned-then-truncated arm: a recipe's
    `truncated` key (on by default), where the grid has a shallower depth to cut to."""
    if len(set(cfg["depths"])) < 2:
        return []
    return [(r, contracts.TRUNCATED[s], seed) for r, spec in cfg["recipes"].items()
            if spec.get("truncated", True) for s in cfg["strategies"] if s in contracts.TRUNCATED
            for seed in spec["seeds"]]


def slurm_outputs(cfg: dict) -> set[str]:
    """Every file that the SLURM rules write for a config: an evaluation also at each of
    eval.dims (a dim<N>/ folder beside it), and beside each of those files (not the
    learning-curve snapshots') its TREC run and the run's sidecar."""
    deepest = max(cfg["depths"])
    shallower = sorted(set(cfg["depths"]))[:-1]
    models = per_depth_models(cfg) + [(r, s, deepest, seed)
                                      for r, s, seed in train_once_models(cfg)]
    trained = per_depth_models(cfg) + [(r, s, d, seed) for r, s, seed in train_once_models(cfg)
                                       for d in cfg["depths"]]
    # A truncated arm has no learning curve: it cuts the final model only.
    arms = trained + [(r, s, d, seed) for r, s, seed in truncated_models(cfg) for d in shallower]
    bases = [(s, d) for s in cfg["strategies"] for d in cfg["depths"]]
    folders = [""] + [f"dim{m}/" for m in cfg.get("eval", {}).get("dims", [])]
    return (
        {f"checkpoints/default/{r}/{s}{d}/seed{seed}/{f}" for r, s, d, seed in models
         for f in ("model.safetensors", "train_summary.json")}
        | {f"results/default/eval/{r}/{s}{d}/seed{seed}/{f}{b}{x}" for r, s, d, seed in arms
           for f in folders for b in cfg["benchmarks"] for x in EVAL_SUFFIXES}
        | {f"results/default/eval/base/{s}{d}/{f}{b}{x}" for s, d in bases
           for f in folders for b in cfg["benchmarks"] for x in EVAL_SUFFIXES}
        | {f"results/default/latency/run{r}.parquet" for r in range(cfg["latency"]["runs"])}
        | {f"checkpoints/default/{r}/{s}{d}/seed{seed}/steps/step{n}/model.safetensors"
           for r, s, d, seed in models for n in snapshot_steps(cfg["recipes"][r])}
        | {f"results/default/eval/{r}/{s}{d}/seed{seed}/steps/{b}.parquet"
           for r, s, d, seed in trained
           if snapshot_steps(cfg["recipes"][r]) for b in cfg["benchmarks"]}
    )


def snapshot_steps(recipe: dict) -> list[int]:
    """The learning-curve snapshots a recipe's training writes (its last step is the model)."""
    return contracts.snapshot_steps(recipe.get("eval_steps", []), recipe["steps"])


def expected_submissions(cfg: dict, *, groups: bool = True) -> int:
    """SLURM jobs the study takes: one per training and latency run, and with groups one per
    model for its evaluations, its snapshots' included, one for the untrained base of
    strategy top and one per truncated arm and seed (else one per evaluation job: a
    train-once model's and top's base evaluate every depth, top's truncated arm every
    shallower depth, in one job per benchmark)."""
    models, once = per_depth_models(cfg), train_once_models(cfg)
    bases = [s for s in cfg["strategies"] if s != "top"] * len(cfg["depths"])
    one_pass_base = "top" in cfg["strategies"]
    n_bench = len(cfg["benchmarks"])
    # A truncated arm of strategy top cuts to every shallower depth in one job per
    # benchmark, the others one job per depth and benchmark; a group holds them all.
    n_shallower = len(set(cfg["depths"])) - 1
    truncated = truncated_models(cfg)
    truncated_jobs = sum(1 if s == "truncated" else n_shallower for _, s, _ in truncated)
    # A recipe with a learning curve evaluates its final model in its snapshots' job.
    per_benchmark = (len(models) + len(once) + len(bases) + one_pass_base
                     + (len(truncated) if groups else truncated_jobs))
    evaluations = per_benchmark if groups else per_benchmark * n_bench
    return len(models) + len(once) + evaluations + cfg["latency"]["runs"]


def expected_comments(cfg: dict) -> list[str]:
    """The job comments that the plugin (2.8.0) gives the study's SLURM jobs with groups:
    rule_<rule>_wildcards_<values>, or rule_<group id>_<rules, sorted> for a group."""
    models, deepest = per_depth_models(cfg), max(cfg["depths"])
    return sorted(
        [f"rule_train_wildcards_{r}_{s}_{d}_{seed}" for r, s, d, seed in models]
        + [f"rule_train_wildcards_{r}_{s}_{deepest}_{seed}"
           for r, s, seed in train_once_models(cfg)]
        + [f"rule_eval_{r}_{s}{d}_seed{seed}_"
           + ("evaluate_steps" if snapshot_steps(cfg["recipes"][r]) else "evaluate_trained")
           for r, s, d, seed in models]
        + [f"rule_eval_{r}_{s}_seed{seed}_"
           + ("evaluate_steps_train_once" if snapshot_steps(cfg["recipes"][r])
              else "evaluate_train_once")
           for r, s, seed in train_once_models(cfg)]
        + [f"rule_eval_{r}_{s}_seed{seed}_"
           + ("evaluate_truncated_one_pass" if s == "truncated" else "evaluate_truncated")
           for r, s, seed in truncated_models(cfg)]
        + [f"rule_eval_base_{s}{d}_evaluate_base" for s in cfg["strategies"] if s != "top"
           for d in cfg["depths"]]
        + (["rule_eval_base_one_pass_evaluate_base_one_pass"]
           if "top" in cfg["strategies"] else [])
        + [f"rule_latency_run_wildcards_{r}" for r in range(cfg["latency"]["runs"])])


def problems(jobs: list[SlurmJob], submitted: set[str], expected_outputs: set[str],
             expected_jobs: int, local_outputs: set[str]) -> list[str]:
    """Everything that shows a job did not go through SLURM as the profile says: a SLURM
    output that no SLURM job wrote (it ran locally), a submission that accounting lacks,
    a failed job, the wrong partition, a job without its GPU, a local rule run on SLURM."""
    found = []
    written = set().union(*(j.outputs for j in jobs))
    def by_slurm(f: str) -> bool:  # the file, or a directory output holding it
        return f in written or any(str(d) in written for d in Path(f).parents)

    for f in sorted(f for f in expected_outputs if not by_slurm(f)):
        found.append(f"{f}: written by no SLURM job (ran locally?)")
    for f in sorted(written & local_outputs):
        found.append(f"{f}: a localrule's output, written inside a SLURM job")
    ids = {j.job_id for j in jobs}
    if ids != submitted:
        found.append(f"submitted {sorted(submitted)} but sacct has {sorted(ids)}")
    if len(jobs) != expected_jobs:
        found.append(f"{len(jobs)} SLURM jobs, expected {expected_jobs}")
    for j in jobs:
        if j.state != "COMPLETED":
            found.append(f"SLURM job {j.job_id} ({j.comment}): {j.state}")
        if j.partition != PARTITION:
            found.append(f"SLURM job {j.job_id} ({j.comment}): partition {j.partition}")
        if j.gpus < 1:  # --exclusive (latency) gets all of the node's
            found.append(f"SLURM job {j.job_id} ({j.comment}): no GPU")
    return found
