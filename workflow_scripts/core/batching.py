"""Batching as an execution detail: which runs share one process (rules/train.smk,
rules/ladder.smk).

Every run has its own outputs and its own params, so Snakemake decides staleness per run.
When batching is on, the runs still to do (output missing, or made with other settings) are
put into batched jobs, one per group of runs that one process can do in turn; a finished run
is never part of one, so adding a seed or switching batching on or off retrains nothing.
Runs left alone by batching (a group of one) are the per-run rule's jobs. Imports: standard
library only (the Snakefile reads this on every call).
"""

from __future__ import annotations

import json
from pathlib import Path


def model_is_current(folder, expected: dict) -> bool:
    """A trained bi-encoder folder holds its weights and a train_summary.json whose recorded
    keys equal `expected` (settings, snapshot steps, base model)."""
    folder = Path(folder)
    if not (folder / "model.safetensors").exists():
        return False
    try:
        summary = json.loads((folder / "train_summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return all(summary.get(k) == v for k, v in expected.items())


def group_by_todo(todo: dict) -> list[tuple[tuple, list]]:
    """{unit: runs still to do} -> [(runs, [units])]: units needing the same runs, in order,
    for those with two runs or more (one run is the per-run rule's job)."""
    groups: dict[tuple, list] = {}
    for unit, runs in todo.items():
        if len(runs) > 1:
            groups.setdefault(tuple(runs), []).append(unit)
    return list(groups.items())


def ladder_jobs(todo: list[tuple], by_method: bool, by_seed: bool) -> list[tuple]:
    """Ladder runs still to do, (config, k, method, seed), as batched jobs (config, k,
    methods, seeds) of two runs or more. The CLI runs every method for every seed, so a
    (config, k) whose methods need different seeds is one job per method."""
    if not (by_method or by_seed):
        return []
    units: dict[tuple, dict] = {}
    for arch, k, method, seed in todo:
        unit = (arch, k) if by_method else (arch, k, method)
        unit = unit if by_seed else (*unit, seed)
        units.setdefault(unit, {}).setdefault(method, []).append(seed)
    jobs = []
    for unit, seeds_of in units.items():
        arch, k = unit[:2]
        if len({tuple(s) for s in seeds_of.values()}) == 1:
            parts = [(list(seeds_of), next(iter(seeds_of.values())))]
        else:
            parts = [([m], s) for m, s in seeds_of.items()]
        jobs += [(arch, k, methods, seeds) for methods, seeds in parts
                 if len(methods) * len(seeds) > 1]
    return jobs


def job_benchmarks(runs, batches, todo, bench_of) -> list[str]:
    """The benchmark file (bench_of(run)) of every job that ran or will run: a batched job's
    is its first run's (batches: lists of runs, first first); a run left to the per-run rule
    has its own when it is still to do (todo) or was made by that rule (the file exists); a
    run made second in a batch has none."""
    heads = {b[0] for b in batches}
    batched = {r for b in batches for r in b}
    return [bench_of(r) for r in runs
            if r in heads or (r not in batched and (r in todo or Path(bench_of(r)).exists()))]


def ladder_cli(paths) -> dict:
    """The ladder training CLI's arguments for a job's output files (run files of one
    config, method-major): results/ladder/runs/ARCH/METHOD/kK/seedS.parquet or
    results/ladder/standalone/ARCH/KIND/seedS.parquet."""
    keys = [Path(p).parts[-4:] if "/runs/" in str(p) else Path(p).parts[-3:] for p in paths]
    seeds = list(dict.fromkeys(k[-1].removeprefix("seed").removesuffix(".parquet")
                               for k in keys))
    if "/runs/" in str(paths[0]):
        methods = list(dict.fromkeys(k[1] for k in keys))
        run = f"ladder --method {' '.join(methods)} --k {keys[0][2].removeprefix('k')}"
    else:
        run = f"standalone --kind {keys[0][1]}"
    return {"run": run, "arch": keys[0][0], "seeds": " ".join(seeds)}
