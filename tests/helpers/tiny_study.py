"""The tiny study: a config that runs every rule of the workflow in a few minutes on CPU, and
the finished run of it that the workflow tests share (conftest's `tiny_run`)."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import yaml

TINY_BENCHMARKS = ["tiny-a", "tiny-b"]


def tiny_config(model_dir) -> dict:
    """Two depths, two budgets, two seeds, two tiny benchmarks, a tiny ladder."""
    return {
        # The default study's stand-in (tests/docs/test_doc_commands.py runs the docs' commands
        # on it); edited copies of this config, in files of other names, stay this study.
        "study": "default",
        "base_model": str(model_dir),
        "depths": [1, 2],
        "strategies": ["top"],
        "max_seq_length": 32,
        "recipes": {
            # r1 without the fine-tuned-then-truncated arm (the recipe key off), r4 with it
            # (the default): r4's top2 models cut to depth 1, evaluations only
            "r1": {"batch_size": 4, "steps": 2, "lr": 1e-3, "warmup": 0, "seeds": [1, 2],
                   "truncated": False},
            "r4": {"batch_size": 4, "steps": 8, "lr": 1e-3, "warmup": 0, "seeds": [1, 2],
                   "eval_steps": [2, 4, 8],  # a learning curve: snapshots at 2 and 4
                   "train_once": ["adaptive"]},  # one training per seed serves depths 1, 2
        },
        "train_data": "tiny-train",
        "benchmarks": TINY_BENCHMARKS,
        "datasets": {
            "tiny-train": {"source": "docstrings", "packages": ["numpy"], "max_triples": 64},
            "tiny-a": {"source": "docstrings", "packages": ["pandas"], "max_queries": 12,
                       "max_docs": 30, "seed": 0},
            "tiny-b": {"source": "docstrings", "packages": ["pandas"], "max_queries": 12,
                       "max_docs": 30, "seed": 1},
        },
        # The layer x dimension grid: 8 and 16 of the tiny model's 32 dimensions, from the
        # same evaluation jobs (files under dim8/, dim16/; figure depth_by_dim).
        "eval": {"top_k": 100, "batch_size": 16, "min_queries": 10, "dims": [8, 16]},
        "latency": {"runs": 1, "batch_size": 4, "seq_len": 16, "warmup_calls": 2,
                    "rounds": 2, "max_rounds": 2, "calls_per_round": 2},
        "stats": {"nboot": 200, "seed": 0},
        "figures": {"budget_pair": ["r1", "r4"], "formats": ["png"]},
        # One block, one job per run (k = 0, 1 for both seeds) and the crosscheck's
        # standalone models; tests/workflow/test_ladder_workflow.py checks the ladder's own
        # staleness on copies.
        "ladder": copy.deepcopy(TINY_LADDER),
        "claims": TINY_CLAIMS,
    }


TINY_LADDER = {
    "dataset": {"name": "digits", "n_train": 100, "n_test": 60, "split_seed": 0},
    "configs": [{"name": "t", "d": 8, "L": 1}],
    "methods": ["bp"],
    "seeds": [1, 2],
    "train": {"epochs": 2, "batch_size": 32},
    "crosscheck": True,
    "stats": {"nboot": 200},
}


# One claim of each study (bi-encoder, latency, ladder), of the train-once arm and of the
# fine-tuned-then-truncated arm, so that the tiny run decides them. `budget` leaves r4's
# strategy out: its per-depth one, top.
TINY_CLAIMS = [
    {"id": "deeper-helps", "statement": "Two layers beat one at r1",
     "a": {"recipe": "r1", "depth": 1}, "b": {"recipe": "r1", "depth": 2}, "test": "greater"},
    {"id": "per-depth-beats-train-once", "statement": "Per-depth training beats adaptive",
     "for_each": {"depth": "all"}, "a": {"recipe": "r4", "strategy": "adaptive"},
     "b": {"recipe": "r4", "strategy": "top"}, "test": "greater"},
    {"id": "per-depth-beats-truncated", "statement": "Per-depth training beats truncating",
     "for_each": {"strategy": "truncated", "depth": "all"},
     "a": {"recipe": "r4", "strategy": "truncated"}, "b": {"recipe": "r4", "strategy": "top"},
     "test": "greater"},
    {"id": "budget", "statement": "r4 is no better than r1 at any depth",
     "for_each": {"depth": "all"}, "a": {"recipe": "r1"}, "b": {"recipe": "r4"},
     "test": "less", "threshold": 0.05},
    {"id": "latency", "statement": "Latency is linear and L1 is faster",
     "all_of": [{"estimate": "latency_coherent"},
                {"estimate": "latency_ratio", "a": {"depth": 2}, "b": {"depth": 1},
                 "test": "less", "threshold": 0.95}]},
    {"id": "ladder-bp", "statement": "BP uses the block",
     "a": {"method": "bp", "k": 0}, "b": {"method": "bp", "k": 1}, "test": "greater"},
]


def run_tiny_study(dest: Path, model_dir: Path):
    """The whole DAG once, on the tiny config, in a copy of the workflow (as in a clone):
    (workdir, config file, the finished snakemake process)."""
    from conftest import copy_workflow, snakemake

    wd = copy_workflow(dest)
    cfg = wd / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config(model_dir)))
    proc = snakemake(wd, "--configfile", str(cfg), "--cores", "2")
    return wd, cfg, proc


def copy_study(wd: Path, cfg: Path, dest: Path) -> tuple[Path, Path]:
    """A copy of a finished study (modification times kept, .snakemake included) for a test
    that changes it: (workdir, config file) of the copy."""
    shutil.copytree(wd, dest, symlinks=True)
    return dest, dest / cfg.relative_to(wd)
