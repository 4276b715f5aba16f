# Shared names: interpreter, code paths, config views, target lists, path helpers.
# Parsed on every snakemake call: imports here stay light (no torch, no transformers).
import json
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(workflow.basedir)
CONDA_ENV = "../envs/depthlab.yaml"
# Stage modules run as `python -m workflow_scripts.X` from any working directory, with the
# interpreter that runs Snakemake (the project's venv) first on PATH.
_BIN = shlex.quote(str(Path(sys.executable).parent))
shell.prefix(
    f"set -euo pipefail; export PATH={_BIN}:$PATH"
    f" PYTHONPATH={shlex.quote(str(ROOT))}${{{{PYTHONPATH:+:$PYTHONPATH}}}}"
    " TOKENIZERS_PARALLELISM=false; "
)


def CODE(*paths):
    """Absolute paths of source files, listed as inputs so that code changes rerun a stage."""
    return [str(ROOT / p) for p in paths]


def all_cores():
    """Every core of this invocation (latency jobs take them all, so nothing runs beside a
    timing); 1 where no core count is defined, as for `snakemake --report`."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def config_error(key, message):
    raise WorkflowError(f"config key {key}: {message}")


BIENCODER_OUTPUTS = []
if HAS_BIENCODER:
    # ---- cross-key checks that a JSON schema cannot express -------------------------------
    DATASETS = config["datasets"]
    for _key, _name in [("train_data", config["train_data"])] + [
        (f"benchmarks[{i}]", b) for i, b in enumerate(config["benchmarks"])
    ]:
        if _name not in DATASETS:
            config_error(_key, f"{_name!r} is not in the datasets registry (datasets:)")
    # Keys each source needs, for a training set and for a benchmark.
    _NEEDS = {
        ("docstrings", "train"): ["packages", "max_triples"],
        ("docstrings", "benchmark"): ["packages", "max_queries", "max_docs"],
        ("triples-jsonl-gz", "train"): ["url"],
        ("beir", "benchmark"): ["url", "md5"],
    }
    for _name, _role in [(config["train_data"], "train")] + [
        (b, "benchmark") for b in config["benchmarks"]
    ]:
        _src = DATASETS[_name]["source"]
        if (_src, _role) not in _NEEDS:
            config_error(
                f"datasets.{_name}.source", f"{_src!r} cannot serve as a {_role}"
            )
        for _k in _NEEDS[(_src, _role)]:
            if _k not in DATASETS[_name]:
                config_error(f"datasets.{_name}", f"a {_src} {_role} needs {_k}")
    for _i, _r in enumerate(config["figures"].get("budget_pair", [])):
        if _r not in config["recipes"]:
            config_error(f"figures.budget_pair[{_i}]", f"{_r!r} is not a recipe")

    # ---- the grid -------------------------------------------------------------------------
    DEPTHS = sorted(config["depths"])
    STRATEGIES = config["strategies"]
    RECIPES = config["recipes"]
    BENCHMARKS = config["benchmarks"]
    TRAIN_DATA = config["train_data"]
    MAX_SEQ = config["max_seq_length"]
    FIGURE_FORMATS = config["figures"]["formats"]
    # Recipes ordered by training budget (examples seen), smallest first.
    BUDGET_ORDER = sorted(
        RECIPES, key=lambda r: (RECIPES[r]["steps"] * RECIPES[r]["batch_size"], r)
    )
    BUDGET_PAIR = config["figures"].get("budget_pair") or [
        BUDGET_ORDER[0],
        BUDGET_ORDER[-1],
    ]
    REPORT_EXTRAS = ["results/ladder/summary.md"] if HAS_LADDER else []
    FIGURES = [
        "depth_vs_budget",
        "per_benchmark_degradation",
        "seed_variance",
        "pareto",
    ]
    BIENCODER_OUTPUTS = ["results/RESULTS.md"] + [
        f"results/figures/{name}.{fmt}" for name in FIGURES for fmt in FIGURE_FORMATS
    ]


wildcard_constraints:
    recipe="[A-Za-z][A-Za-z0-9_]*",
    strategy="[a-z]+",
    depth="[0-9]+",
    seed="[0-9]+",
    benchmark="[A-Za-z0-9][A-Za-z0-9_.-]*",
    r="[0-9]+",


def benchmark_files(benchmark):
    d = f"data/beir/{benchmark}"
    return [f"{d}/corpus.jsonl", f"{d}/queries.jsonl", f"{d}/qrels/test.tsv"]


def trained_eval_files():
    return [
        f"results/eval/{r}/{s}{d}/seed{seed}/{b}.parquet"
        for r, spec in RECIPES.items()
        for s in STRATEGIES
        for d in DEPTHS
        for seed in spec["seeds"]
        for b in BENCHMARKS
    ]


def base_eval_files():
    return [
        f"results/eval/base/{s}{d}/{b}.parquet"
        for s in STRATEGIES
        for d in DEPTHS
        for b in BENCHMARKS
    ]


def latency_runs():
    return [f"results/latency/run{r}.parquet" for r in range(config["latency"]["runs"])]


def figure_files(name):
    return [f"results/figures/{name}.{fmt}" for fmt in FIGURE_FORMATS]


def dataset_names(source):
    """A wildcard regex matching the registry's datasets of one source."""
    names = [n for n, spec in DATASETS.items() if spec["source"] == source]
    return "|".join(map(re.escape, names)) or "(?!)"


def figure_outputs(name, category="Bi-encoder depth study"):
    """A figure's files, registered for `snakemake --report` with its caption."""
    caption = f"../docs/report/{name}.rst"
    return [report(p, caption=caption, category=category) for p in figure_files(name)]


def eval_args(benchmark):
    """Evaluation options of one benchmark (identical-id dropping is per dataset)."""
    ev = config["eval"]
    args = f"--top-k {ev['top_k']} --batch-size {ev['batch_size']} --max-seq-length {MAX_SEQ}"
    if DATASETS[benchmark].get("ignore_identical_ids"):
        args += " --ignore-identical-ids"
    return args
