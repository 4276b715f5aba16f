"""The laptop study's plan and its predicted time: every job `snakemake -n` plans for a
config, priced with per-job figures measured by bench/laptop_sizing.py.

Pure functions (no measurement): `dry_run` plans the config in an empty folder (so every job
of a fresh study), `parse_jobs` reads each job's rule and command, `job_seconds` prices one
job, `predict` sums them into core-seconds and a wall-clock estimate on `cores` cores;
`median_ci` is the interval of a median of repeated timings, `precise` the stopping rule.

The cost model, per job (seconds on one core; `figures` holds the measured values):
- training (train, one job per model): the job's start (imports) + per seed the training's own
  fixed cost (load, data, save) + steps x the measured step time at that strategy and depth;
- evaluation (evaluate_*): the job's start + per model encoded (final model, snapshots) its
  load, encoding the benchmark (corpus + queries) at the job's deepest depth (one pass gives
  every shallower depth: encoder.encode_depths) and the exact search with the metrics;
- latency_run: the job's start + warm-up + the minimum rounds + the encode rounds, from the
  measured call time per depth; it takes every core, so it adds its whole time to the wall;
- every other job (downloads' preparation, stats, curves, figures, claims, report): the
  measured start of a pandas + matplotlib process.
A run's usage table (results/<study>/usage.parquet: each rule's measured CPU seconds)
calibrates the model: `calibrate` divides each rule's measured seconds by the model's for
the jobs that run planned, and `predict(..., scale=)` prices another plan with those factors.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN, EVALUATE, LATENCY = ("workflow_scripts.biencoder.train",
                            "workflow_scripts.biencoder.evaluate",
                            "workflow_scripts.biencoder.latency.profile")


@dataclass
class Job:
    rule: str
    module: str = ""  # the `python -m` module the job runs ("" for none)
    args: dict = field(default_factory=dict)  # option -> list of values


def dry_run(config) -> str:
    """`snakemake -n` of `config` (a file, or a list of files stacked as --configfile
    stacks them) in an empty folder: the jobs of a fresh study."""
    files = [str(c) for c in (config if isinstance(config, list | tuple) else [config])]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "-s",
             str(ROOT / "Snakefile"), "--directory", tmp, "--configfile", *files],
            capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"snakemake -n --configfile {' '.join(files)} failed:\n"
                         f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout + proc.stderr


def load_config(files) -> dict:
    """The config of stacked files, merged as Snakemake merges them (key by key)."""
    import yaml
    from snakemake.utils import update_config

    cfg: dict = {}
    for f in files:
        update_config(cfg, yaml.safe_load(Path(f).read_text()))
    return cfg


def _options(argv: list[str]) -> dict:
    out, key = {}, None
    for tok in argv:
        if tok.startswith("--"):
            key = tok[2:]
            out[key] = []
        elif key is not None:
            out[key].append(tok)
    return out


def parse_jobs(output: str) -> list[Job]:
    """Every planned job of a dry run (not the target rule `all`): its rule, and for a
    `python -m` command the module and options."""
    jobs, rule = [], None
    for line in output.splitlines():
        if m := re.match(r"(?:local)?rule (\w+):$", line.strip()):
            rule = m[1]
        elif rule and line.startswith("Shell command:"):
            cmd = line.split(":", 1)[1].strip()
            if rule != "all":
                argv = shlex.split(cmd) if cmd != "None" else []
                if "--" in argv:  # python -m workflow_scripts.core.launch ... -- MODULE ARGS
                    argv = ["python", "-m", *argv[argv.index("--") + 1:]]
                if argv[:2] == ["python", "-m"]:
                    jobs.append(Job(rule, argv[2], _options(argv[3:])))
                else:
                    jobs.append(Job(rule))
            rule = None
    return jobs


def training_work(job: Job) -> tuple[str, int, int, int]:
    """(kind, depth, seeds, steps) of a training job; kind is `top` or the train-once arm."""
    settings = json.loads(job.args["settings-json"][0])
    return (job.args["strategy"][0], int(job.args["depth"][0]), len(job.args["seed"]),
            int(settings["steps"]))


def evaluation_work(job: Job) -> tuple[str, int, int]:
    """(benchmark, depth encoded, models encoded) of an evaluation job: one pass at the
    deepest of its depths for each model (the final one and every snapshot)."""
    depths = [int(d) for d in job.args.get("depths", job.args.get("depth", []))]
    models = len(job.args.get("steps", [])) + (1 if "final" in job.args else 0)
    return job.args["benchmark"][0], max(depths), models or 1


def job_seconds(job: Job, f: dict) -> float:
    """Predicted seconds of one job on one core (a latency run: on the whole machine) from
    the measured figures `f` (bench/laptop_sizing.py's `figures`)."""
    if job.module == TRAIN:
        kind, depth, seeds, steps = training_work(job)
        step = f["train_step"][f"{kind}{depth}"]
        return f["train_job_start"] + seeds * (f["training_fixed"] + steps * step)
    if job.module == EVALUATE:
        bench, depth, models = evaluation_work(job)
        per_model = f["model_load"] + f["encode"][bench][depth] + f["search"][bench]
        return f["eval_job_start"] + models * per_model
    if job.module == LATENCY:
        return f["latency_run"]
    return f["tail_job_start"]


def read_usage(path) -> dict[str, float]:
    """{rule: measured seconds} of a run's usage table (results/<study>/usage.parquet, from
    the jobs' own records): CPU seconds of a one-core job, what it takes on an idle core;
    the wall seconds of a latency run, which takes every core."""
    import pandas as pd

    use = pd.read_parquet(path)
    return {r.rule: float(r.seconds_total if r.rule == "latency_run" else r.cpu_seconds)
            for r in use.itertuples()}


def calibrate(jobs_run: list[Job], measured: dict[str, float], f: dict) -> dict[str, float]:
    """Per rule, the usage table's seconds over the cost model's for the jobs of the run
    that wrote it: what the real data and machine cost beyond the bench's synthetic texts
    (real documents are longer in tokens, the job's own overheads). A rule that the table
    or the run lacks gets no factor."""
    model: dict[str, float] = {}
    for job in jobs_run:
        model[job.rule] = model.get(job.rule, 0.0) + job_seconds(job, f)
    return {rule: sec / model[rule] for rule, sec in measured.items() if model.get(rule)}


def predict(jobs: list[Job], f: dict, cores: int = 2, scale: dict | None = None) -> dict:
    """Core-seconds of the one-core jobs, the latency runs' seconds (each takes every
    core), and the wall clock: the one-core jobs spread over `cores` (never less than the
    longest chain of one training job and its longest evaluation) plus the latency runs.
    `scale`: a factor per rule (calibrate()) on each of its jobs' seconds."""
    scale = scale or {}

    def seconds(job):
        return job_seconds(job, f) * scale.get(job.rule, 1.0)

    per_rule: dict[str, list[float]] = {}
    for job in jobs:
        per_rule.setdefault(job.rule, []).append(seconds(job))
    latency = sum(per_rule.pop("latency_run", []))
    core_seconds = sum(sum(v) for v in per_rule.values())
    train = [seconds(j) for j in jobs if j.module == TRAIN]
    evals = [seconds(j) for j in jobs if j.module == EVALUATE]
    chain = (max(train) if train else 0.0) + (max(evals) if evals else 0.0)
    wall = max(core_seconds / cores, chain) + latency
    return {"per_rule": {r: (len(v), sum(v)) for r, v in sorted(per_rule.items())},
            "core_seconds": core_seconds, "latency_seconds": latency, "chain": chain,
            "wall_seconds": wall, "jobs": len(jobs)}


def median_ci(x, level: float = 0.95) -> tuple[float, float, float, float]:
    """Median, and the order-statistics interval (x_(k), x_(n-k+1)) with the largest k whose
    coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least `level`; with too few values for
    that, (min, max). Returns (median, low, high, coverage)."""
    x = sorted(x)
    n = len(x)
    cover = [1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
             for k in range(1, n // 2 + 1)]
    k = max([k + 1 for k, c in enumerate(cover) if c >= level], default=1)
    coverage = cover[k - 1] if cover else 0.0
    return float(statistics.median(x)), x[k - 1], x[n - k], coverage


def precise(x, target: float) -> bool:
    med, lo, hi, cov = median_ci(x)
    return cov >= 0.95 and max(med - lo, hi - med) <= target * med


def latency_run_seconds(cfg, start: float, load: float, calls: dict) -> tuple[float, float]:
    """A profiling run on a quiet machine (it stops at the minimum rounds: warm-up, rounds,
    encode rounds, each call priced at the measured call time) and at its cap (the rounds
    stop after latency.max_seconds)."""
    lat = cfg["latency"]
    per_round = sum(median_ci(v)[0] for v in calls.values())
    loads = load * len(calls)
    warm = lat["warmup_calls"] * per_round
    rounds = lat["rounds"] * (lat["discard_calls"] + lat["calls_per_round"]) * per_round
    encode = lat["encode_calls"] * 2 * per_round  # encode() and tokenization, at most a call
    return (start + loads + warm + rounds + encode,
            start + loads + warm + max(rounds, lat["max_seconds"]) + encode)
