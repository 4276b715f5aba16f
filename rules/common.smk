# Shared names: interpreter, code inputs, settings, target lists, path helpers.
# Parsed on every snakemake call: imports here stay light (no torch, no transformers).
import json
import os
import re
import shlex
import sys
from pathlib import Path

from workflow_scripts.core import settings as stage_settings
from workflow_scripts.core.codedeps import code_files
from workflow_scripts.core.contracts import CURVE_TABLES, STATS_TABLES
from workflow_scripts.core.contracts import snapshot_steps as _snapshot_steps

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


def code(*modules):
    """Source files of the stage modules' import closure (e.g. code("biencoder.train")),
    relative to the working directory: listed as inputs, a change to any module a stage
    imports reruns it, and a moved clone reruns nothing."""
    return [os.path.relpath(p) for p in code_files(*modules)]


def bench(output):
    """Where Snakemake's measurement (wall time, peak memory, I/O) of the job writing
    `output` goes; the usage rule gathers them into results/usage.parquet."""
    return f"results/benchmarks/{output.removeprefix('results/')}.tsv"


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


BIENCODER_OUTPUTS = []
if HAS_BIENCODER:
    # ---- the grid -------------------------------------------------------------------------
    DATASETS = config["datasets"]
    DEPTHS = sorted(config["depths"])
    STRATEGIES = config["strategies"]
    RECIPES = config["recipes"]
    BENCHMARKS = config["benchmarks"]
    TRAIN_DATA = config["train_data"]
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
    # Recipes with a learning curve (eval_steps), in budget order.
    CURVE_RECIPES = [r for r in BUDGET_ORDER if RECIPES[r]["eval_steps"]]
    if CURVE_RECIPES:
        FIGURES.append("learning_curves")
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


def trained_models():
    """recipe/strategy+depth/seed of every model to train."""
    return [
        f"{r}/{s}{d}/seed{seed}"
        for r, spec in RECIPES.items()
        for s in STRATEGIES
        for d in DEPTHS
        for seed in spec["seeds"]
    ]


def trained_eval_files():
    return [
        f"results/eval/{m}/{b}.parquet" for m in trained_models() for b in BENCHMARKS
    ]


def base_eval_files():
    return [
        f"results/eval/base/{s}{d}/{b}.parquet"
        for s in STRATEGIES
        for d in DEPTHS
        for b in BENCHMARKS
    ]


def expected_grid():
    """The grid the stats stage checks its evaluations against (core/arms.py grid_gaps)."""
    trained = [
        [r, s, d, RECIPES[r]["seeds"]]
        for r in RECIPES
        for s in STRATEGIES
        for d in DEPTHS
    ]
    base = [["base", s, d, [-1]] for s in STRATEGIES for d in DEPTHS]
    return json.dumps({"benchmarks": BENCHMARKS, "arms": base + trained})


def snapshot_steps(recipe):
    """A recipe's learning-curve steps that get a snapshot: all but its last step, whose
    point is the final model."""
    return _snapshot_steps(RECIPES[recipe]["eval_steps"], RECIPES[recipe]["steps"])


def curve_models():
    """recipe/strategy+depth/seed of every trained model with snapshots."""
    return [m for m in trained_models() if snapshot_steps(m.split("/")[0])]


def curve_eval_files():
    return [
        f"results/eval/{m}/steps/{b}.parquet"
        for m in curve_models()
        for b in BENCHMARKS
    ]


def curve_input_files():
    """What the curves stage reads: the bases (step 0), the curve recipes' final models
    (the last step) and their snapshots."""
    final = [
        f"results/eval/{m}/{b}.parquet"
        for m in trained_models()
        if m.split("/")[0] in CURVE_RECIPES
        for b in BENCHMARKS
    ]
    return base_eval_files() + final + curve_eval_files()


def curve_grid():
    """The curves the curves stage computes and checks its evaluations against."""
    curves = [
        [r, s, d, RECIPES[r]["seeds"], snapshot_steps(r), RECIPES[r]["steps"]]
        for r in CURVE_RECIPES
        for s in STRATEGIES
        for d in DEPTHS
    ]
    return json.dumps({"benchmarks": BENCHMARKS, "curves": curves})


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


def biencoder_benchmarks():
    """rule -> the benchmark files (bench() of the output) of each of its jobs."""
    return {
        DATA_RULE[DATASETS[TRAIN_DATA]["source"]]: [
            bench(f"data/train/{TRAIN_DATA}.parquet")
        ],
        **{
            name: [bench(f"data/beir/{b}/corpus.jsonl") for b in benchmarks]
            for name, benchmarks in benchmarks_by_rule().items()
        },
        "train": [
            bench(f"checkpoints/{m}/model.safetensors") for m in trained_models()
        ],
        "evaluate_trained": [bench(f) for f in trained_eval_files()],
        "evaluate_base": [bench(f) for f in base_eval_files()],
        **(
            {
                "evaluate_steps": [bench(f) for f in curve_eval_files()],
                "curves": [bench("results/stats/curves.parquet")],
            }
            if CURVE_RECIPES
            else {}
        ),
        "latency_run": [bench(f) for f in latency_runs()],
        "latency_summary": [bench("results/latency/summary.parquet")],
        "stats": [bench("results/stats/ci.parquet")],
        **{f"figure_{name}": [bench(figure_files(name)[0])] for name in FIGURES},
    }


# The rule that makes a dataset of each source.
DATA_RULE = {
    "docstrings": "docstring_triples",
    "triples-jsonl-gz": "triples_download",
}
BENCHMARK_RULE = {"docstrings": "docstring_benchmark", "beir": "beir_download"}


def benchmarks_by_rule():
    """The benchmarks each data rule makes."""
    out = {}
    for b in BENCHMARKS:
        out.setdefault(BENCHMARK_RULE[DATASETS[b]["source"]], []).append(b)
    return out
