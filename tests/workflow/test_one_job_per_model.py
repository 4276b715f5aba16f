"""One job per model and per ladder run, whatever runs them (issues #28, #37, #40): the DAG is
a function of the config, never of what is on disk; sharing a preloaded interpreter
(config key preload) is an execution detail that reruns nothing; adding a seed trains only
that seed; a run killed in its second training keeps the first one's model as it was.
A training-only tiny study (trainings and ladder runs as targets), then dry runs."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import signal
import subprocess
import time

import pytest
import yaml
from conftest import (
    SNAKEMAKE,
    copy_workflow,
    ctrl_c_reaches_it,
    job_counts,
    planned_jobs,
    snakemake,
)

from workflow_scripts.core import launch, paths


def _config(model) -> dict:
    return {
        "base_model": str(model), "depths": [1], "strategies": ["top"], "max_seq_length": 16,
        # Recipes may list different seeds.
        "recipes": {"r1": {"batch_size": 4, "steps": 2, "lr": 1e-3, "seeds": [1, 2]},
                    "r2": {"batch_size": 4, "steps": 2, "lr": 1e-3, "seeds": [1]}},
        "train_data": "tiny-train", "benchmarks": ["tiny-a"],
        "datasets": {"tiny-train": {"source": "docstrings", "packages": ["numpy"],
                                    "max_triples": 24},
                     "tiny-a": {"source": "docstrings", "packages": ["pandas"],
                                "max_queries": 12, "max_docs": 30}},
        "ladder": {"dataset": {"name": "digits", "n_train": 60, "n_test": 30},
                   "configs": [{"name": "t", "d": 8, "L": 1}], "methods": ["bp", "fa"],
                   "seeds": [1, 2], "train": {"epochs": 1, "batch_size": 32},
                   "crosscheck": False},
    }


def _targets(conf) -> list[str]:
    models = [f"checkpoints/study/{r}/top1/seed{s}/model.safetensors"
              for r, spec in conf["recipes"].items() for s in spec["seeds"]]
    lad = conf["ladder"]
    runs = [f"results/study/ladder/runs/t/{m}/k{k}/seed{s}.parquet"
            for m in lad["methods"] for k in (0, 1) for s in lad["seeds"]]
    return models + runs


def _write(wd, conf):
    cfg = wd / "study.yaml"
    cfg.write_text(yaml.safe_dump(conf))
    return cfg


def _run(wd, conf, *args, targets=None, env=None):
    cfg = _write(wd, conf)
    proc = snakemake(wd, *args, *(targets or _targets(conf)), "--cores", "2",
                     f"--configfile={cfg}", env=env)
    return proc.stdout + proc.stderr


def _hashes(wd) -> dict:
    files = [*wd.glob("checkpoints/study/**/*.safetensors"),
             *wd.glob("results/study/ladder/runs/**/*")]
    return {str(p.relative_to(wd)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files if p.is_file()}


def _trainings(out: str) -> dict:
    return {r: n for r, n in job_counts(out).items() if r in ("train", "ladder_train")}


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_model):
    wd = copy_workflow(tmp_path_factory.mktemp("jobs") / "study")
    conf = _config(tiny_model)
    out = _run(wd, conf, env={launch.SOCKET_ENV: ""})  # no server given: the run starts one
    return wd, conf, out


def test_every_model_and_run_is_its_own_job_in_the_preloaded_interpreter(study):
    wd, conf, out = study
    assert _trainings(out) == {"train": 3, "ladder_train": 8}
    assert "Nothing to be done" in _run(wd, conf, "-n")
    # Each job's record: measured, and run in a process forked from the preloaded one.
    records = [json.loads(p.read_text()) for p in (wd / "results/study/benchmarks").rglob("*.json")]
    modes = {r["mode"] for r in records}
    assert len(records) >= 11 and modes == {"preloaded", "fresh"}, modes
    train = json.loads(next((wd / "results/study/benchmarks/train").rglob("*.json")).read_text())
    assert train["mode"] == "preloaded" and train["cpu_s"] > 0 and train["max_rss_mb"] > 50
    # The run started its own server (none was given), and stopped it.
    assert "preloaded torch pandas pyarrow.parquet sentence_transformers; serving" in (
        wd / "logs/study/preload.log").read_text()


def test_switching_preload_reruns_nothing(study):
    wd, conf, _ = study
    assert "Nothing to be done" in _run(wd, {**conf, "preload": False}, "-n")


def test_two_parses_plan_the_same_dag_whatever_is_on_disk(study, tmp_path):
    """The rule set and every job (rule, outputs, command) are the same in a fresh folder
    and in one where half the trainings are done, as on a cluster node parsing again."""
    wd, conf, _ = study
    fresh = copy_workflow(tmp_path / "fresh")

    def parse(folder):
        cfg = _write(folder, conf)
        rules = snakemake(folder, "--list-rules", f"--configfile={cfg}").stdout
        jobs = snakemake(folder, "-n", "-F", "-p", "--cores", "2", f"--configfile={cfg}",
                         *_targets(conf)).stdout
        plan = sorted(re.sub(r"\[.*?\]|jobid: \d+|reason: .*", "", block).strip()
                      for block in jobs.split("\n\n") if "output:" in block)
        return rules, plan

    assert parse(wd) == parse(fresh)


def test_added_seeds_train_only_themselves(study):
    wd, conf, _ = study
    before = _hashes(wd)
    more = copy.deepcopy(conf)
    more["recipes"]["r1"]["seeds"] += [3, 4]  # one recipe only
    more["ladder"]["seeds"].append(3)
    plan = _run(wd, more, "-n")
    assert _trainings(plan) == {"train": 2, "ladder_train": 4}
    outputs = "\n".join(ln for ln in plan.splitlines() if ln.strip().startswith("output:"))
    trained = set(re.findall(r"checkpoints/study/(r\d/top1/seed\d)/model.safetensors", outputs))
    assert trained == {"r1/top1/seed3", "r1/top1/seed4"}
    assert set(re.findall(r"runs/t/\w+/k\d/seed(\d)\.parquet", outputs)) == {"3"}
    served = (wd / "logs/study/preload.log").read_text()
    _run(wd, more)  # in the server conftest gives: the run starts none of its own
    after = _hashes(wd)
    assert {k: after[k] for k in before} == before  # no finished model or run changed
    assert len(after) == len(before) + 2 + 4
    assert (wd / "logs/study/preload.log").read_text() == served
    new = json.loads((wd / paths.record_of("logs/study/train/r1/top1/seed3.log")).read_text())
    assert new["mode"] == "preloaded"


def test_a_run_killed_in_its_second_training_keeps_the_first(study, tmp_path):
    """Snakemake interrupted (Ctrl-C) while the second of two trainings runs: the first
    model keeps its bytes and mtime, and the next run plans only the second."""
    wd, conf, _ = study
    seeds = copy.deepcopy(conf)
    seeds["recipes"]["r2"]["seeds"] = [5, 6]
    seeds["recipes"]["r2"]["steps"] = 300  # long enough to be caught while it trains
    cfg = _write(wd, seeds)
    models = [wd / f"checkpoints/study/r2/top1/seed{s}/model.safetensors" for s in (5, 6)]
    proc = subprocess.Popen([*SNAKEMAKE, "-s", str(wd / "Snakefile"), "--directory", str(wd),
                             "--cores", "1", f"--configfile={cfg}",
                             *(str(m.relative_to(wd)) for m in models)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=ctrl_c_reaches_it)

    def wait_for(check):
        deadline = time.monotonic() + 300
        while not check() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read()[-3000:]
            time.sleep(0.1)

    wait_for(lambda: any(m.exists() for m in models))
    first = next(m for m in models if m.exists())
    second = next(m for m in models if m != first)
    log = wd / "logs/study/train/r2/top1" / f"{second.parent.name}.log"
    wait_for(log.exists)  # the second training has started
    time.sleep(0.5)
    stat = first.stat()
    digest = hashlib.sha256(first.read_bytes()).hexdigest()
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
    out = proc.communicate(timeout=120)[0]
    assert not second.exists(), out[-3000:]
    assert hashlib.sha256(first.read_bytes()).hexdigest() == digest
    assert first.stat().st_mtime_ns == stat.st_mtime_ns
    plan = snakemake(wd, "-n", "--cores", "1", f"--configfile={cfg}",
                     *(str(m.relative_to(wd)) for m in models)).stdout
    assert job_counts(plan)["train"] == 1 and str(second.relative_to(wd)) in plan
    assert str(first.relative_to(wd)) not in plan.split("Job stats")[1]
    print(f"\n{first.relative_to(wd)}: sha256 {digest[:16]}..., mtime kept; the next run: "
          + "; ".join(f"{rule}: {reason}" for rule, reason, _ in planned_jobs(plan)))
