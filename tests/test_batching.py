"""Batching is an execution detail (issue #28): switching batch_seeds, ladder.batch_seeds or
ladder.batch_methods, or adding a seed to one recipe, never retrains a finished model or
run; a batched job trains only what is still to do, and recipes may list different seeds.
A training-only tiny study (trainings and ladder runs as targets), then dry runs."""

from __future__ import annotations

import copy
import hashlib
import re

import pytest
import yaml
from conftest import copy_workflow, job_counts, snakemake


def _config(model) -> dict:
    return {
        "base_model": str(model), "depths": [1], "strategies": ["top"], "max_seq_length": 16,
        "batch_seeds": True,
        # Different seed lists: allowed with batch_seeds.
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
                   "crosscheck": False, "batch_seeds": True, "batch_methods": True},
    }


def _targets(conf) -> list[str]:
    models = [f"checkpoints/{r}/top1/seed{s}/model.safetensors"
              for r, spec in conf["recipes"].items() for s in spec["seeds"]]
    lad = conf["ladder"]
    runs = [f"results/ladder/runs/t/{m}/k{k}/seed{s}.parquet"
            for m in lad["methods"] for k in (0, 1) for s in lad["seeds"]]
    return models + runs


def _run(wd, conf, *args):
    cfg = wd / "batching.yaml"
    cfg.write_text(yaml.safe_dump(conf))
    proc = snakemake(wd, "--configfile", str(cfg), "--cores", "2", *args, *_targets(conf))
    return proc.stdout + proc.stderr


def _hashes(wd) -> dict:
    files = [*wd.glob("checkpoints/**/*.safetensors"), *wd.glob("results/ladder/runs/**/*")]
    return {str(p.relative_to(wd)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files if p.is_file()}


def _trainings(out: str) -> dict:
    return {r: n for r, n in job_counts(out).items()
            if r.startswith(("train", "ladder_train"))}


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_model):
    wd = copy_workflow(tmp_path_factory.mktemp("batching") / "study")
    conf = _config(tiny_model)
    out = _run(wd, conf)
    return wd, conf, out


@pytest.mark.slow
def test_batched_jobs_train_the_models_still_to_do(study):
    wd, conf, out = study
    # r1's two seeds in one job, r2's one seed alone; the ladder: one job per k for both
    # methods and both seeds.
    assert _trainings(out) == {"train_seeds": 1, "train": 1, "ladder_train_batch0": 2}
    assert "Nothing to be done" in _run(wd, conf, "-n")


@pytest.mark.slow
def test_switching_batching_off_or_on_retrains_nothing(study):
    wd, conf, _ = study
    for off in ({"batch_seeds": False}, {"ladder": {"batch_seeds": False}},
                {"ladder": {"batch_methods": False}},
                {"batch_seeds": False, "ladder": {"batch_seeds": False,
                                                  "batch_methods": False}}):
        edited = copy.deepcopy(conf)
        edited.update({k: v for k, v in off.items() if k != "ladder"})
        edited["ladder"].update(off.get("ladder", {}))
        assert "Nothing to be done" in _run(wd, edited, "-n"), off


@pytest.mark.slow
def test_added_seeds_train_only_themselves(study):
    wd, conf, _ = study
    before = _hashes(wd)
    more = copy.deepcopy(conf)
    more["recipes"]["r1"]["seeds"] += [3, 4]  # one recipe only
    more["ladder"]["seeds"].append(3)
    plan = _run(wd, more, "-n")
    assert _trainings(plan) == {"train_seeds": 1, "ladder_train_batch0": 2}
    outputs = "\n".join(ln for ln in plan.splitlines() if ln.strip().startswith("output:"))
    trained = set(re.findall(r"checkpoints/(r\d/top1/seed\d)/model.safetensors", outputs))
    assert trained == {"r1/top1/seed3", "r1/top1/seed4"}
    assert set(re.findall(r"runs/t/\w+/k\d/seed(\d)\.parquet", outputs)) == {"3"}

    _run(wd, more)
    after = _hashes(wd)
    assert {k: after[k] for k in before} == before  # no finished model or run changed
    assert len(after) == len(before) + 2 + 4
    # ...and with batching off, the study made batched is up to date as it is.
    flat = copy.deepcopy(more)
    flat["batch_seeds"] = False
    flat["ladder"].update(batch_seeds=False, batch_methods=False)
    assert "Nothing to be done" in _run(wd, flat, "-n")
    # Per-seed jobs when off: a seed added then is one job of its own.
    flat["recipes"]["r2"]["seeds"].append(2)
    assert _trainings(_run(wd, flat, "-n")) == {"train": 1}
