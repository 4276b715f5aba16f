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
from workflow_scripts.core.contracts import (
    COMPUTE_TABLES,
    CURVE_TABLES,
    PER_DEPTH_REFERENCE,
    STATS_TABLES,
    TRAIN_ONCE,
)
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
    MAX_DEPTH = DEPTHS[-1]
    STRATEGIES = config["strategies"]  # per-depth: one model per depth
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
        "quality_vs_compute",
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
    strategy="[a-z]([a-z0-9]*[a-z])?",  # ends with a letter: matryoshka2d3 = matryoshka2d, 3
    depth="[0-9]+",
    seed="[0-9]+",
    benchmark="[A-Za-z0-9][A-Za-z0-9_.-]*",
    r="[0-9]+",


def benchmark_files(benchmark):
    d = f"data/beir/{benchmark}"
    return [f"{d}/corpus.jsonl", f"{d}/queries.jsonl", f"{d}/qrels/test.tsv"]


def regex(names):
    """A wildcard constraint matching exactly these names (none: nothing)."""
    return "|".join(map(re.escape, names)) or "(?!)"


def recipe_strategies(recipe):
    """A recipe's arms: the per-depth strategies, then its train-once arms."""
    return [*STRATEGIES, *RECIPES[recipe]["train_once"]]


def trained_arms():
    """(recipe, strategy, depth) of every trained arm; a train-once arm has every depth."""
    return [(r, s, d) for r in RECIPES for s in recipe_strategies(r) for d in DEPTHS]


def model_depth(strategy, depth):
    """The trained depth behind an arm's depth: a train-once model holds the deepest."""
    return MAX_DEPTH if strategy in TRAIN_ONCE else depth


def trained_model_keys():
    """[recipe, strategy, trained depth, seed] of every model to train: one per seed for a
    train-once arm (at the deepest depth), one per seed and depth otherwise."""
    keys = dict.fromkeys(
        (r, s, model_depth(s, d), seed)
        for r, s, d in trained_arms()
        for seed in RECIPES[r]["seeds"]
    )
    return [list(k) for k in keys]


def trained_models():
    """recipe/strategy+depth/seed of every model to train (trained_model_keys)."""
    return [f"{r}/{s}{d}/seed{seed}" for r, s, d, seed in trained_model_keys()]


def arm_seeds(keep=lambda strategy: True):
    """recipe/strategy+depth/seed of every trained arm's evaluation folder (of the strategies
    `keep` keeps)."""
    return [
        f"{r}/{s}{d}/seed{seed}"
        for r, s, d in trained_arms()
        if keep(s)
        for seed in RECIPES[r]["seeds"]
    ]


def trained_eval_files():
    return [f"results/eval/{m}/{b}.parquet" for m in arm_seeds() for b in BENCHMARKS]


def one_pass_jobs(recipe_filter=lambda r: True):
    """(recipe, strategy, seed) of every train-once model: one evaluation job per benchmark
    writes all its depths."""
    return [
        (r, s, seed)
        for r, spec in RECIPES.items()
        if recipe_filter(r)
        for s in spec["train_once"]
        for seed in spec["seeds"]
    ]


def train_settings_json(wc):
    """A training's settings: the recipe's, and a train-once arm's loss settings."""
    cls = stage_settings.train_settings(wc.strategy)
    return cls.from_config(config, recipe=wc.recipe).to_json()


def base_eval_files():
    return [
        f"results/eval/base/{s}{d}/{b}.parquet"
        for s in STRATEGIES
        for d in DEPTHS
        for b in BENCHMARKS
    ]


def expected_grid():
    """The grid the stats stage checks its evaluations against (core/arms.py grid_gaps)."""
    trained = [[r, s, d, RECIPES[r]["seeds"]] for r, s, d in trained_arms()]
    base = [["base", s, d, [-1]] for s in STRATEGIES for d in DEPTHS]
    return json.dumps({"benchmarks": BENCHMARKS, "arms": base + trained})


def snapshot_steps(recipe):
    """A recipe's learning-curve steps that get a snapshot: all but its last step, whose
    point is the final model."""
    return _snapshot_steps(RECIPES[recipe]["eval_steps"], RECIPES[recipe]["steps"])


def curve_models():
    """recipe/strategy+depth/seed of every trained arm with snapshots."""
    return [m for m in arm_seeds() if snapshot_steps(m.split("/")[0])]


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
        for m in arm_seeds()
        if m.split("/")[0] in CURVE_RECIPES
        for b in BENCHMARKS
    ]
    return base_eval_files() + final + curve_eval_files()


def curve_grid():
    """The curves the curves stage computes and checks its evaluations against."""
    curves = [
        [r, s, d, RECIPES[r]["seeds"], snapshot_steps(r), RECIPES[r]["steps"]]
        for r in CURVE_RECIPES
        for s in recipe_strategies(r)
        for d in DEPTHS
    ]
    return json.dumps({"benchmarks": BENCHMARKS, "curves": curves})


def latency_runs():
    return [f"results/latency/run{r}.parquet" for r in range(config["latency"]["runs"])]


def figure_files(name):
    return [f"results/figures/{name}.{fmt}" for fmt in FIGURE_FORMATS]


def dataset_names(source):
    """A wildcard regex matching the registry's datasets of one source."""
    return regex(n for n, spec in DATASETS.items() if spec["source"] == source)


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


def beir_train_files(name):
    # qrels/test.tsv where the folder has it: its queries are kept out of the pairs.
    files = local_files(name, ["corpus.jsonl", "queries.jsonl", "qrels/train.tsv"])
    test = local_files(name, ["qrels/test.tsv"])
    return files + [f for f in test if os.path.exists(f)]


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
        # Every training job's (train and train_seeds*), as train_benchmarks() says.
        "train": train_benchmarks(),
        "compute": [bench("results/stats/compute.parquet")],
        # A curve recipe's final models are evaluated by the evaluate_steps* jobs.
        "evaluate_trained": [
            bench(f"results/eval/{m}/{b}.parquet")
            for m in arm_seeds(lambda s: s not in TRAIN_ONCE)
            if m.split("/")[0] not in CURVE_RECIPES
            for b in BENCHMARKS
        ],
        "evaluate_train_once": [
            bench(f"results/eval/{r}/{s}{DEPTHS[0]}/seed{seed}/{b}.parquet")
            for r, s, seed in one_pass_jobs(lambda r: r not in CURVE_RECIPES)
            for b in BENCHMARKS
        ],
        "evaluate_base": [
            bench(f"results/eval/base/{s}{d}/{b}.parquet")
            for s in STRATEGIES
            if s != PER_DEPTH_REFERENCE
            for d in DEPTHS
            for b in BENCHMARKS
        ],
        "evaluate_base_one_pass": [
            bench(f"results/eval/base/{PER_DEPTH_REFERENCE}{DEPTHS[0]}/{b}.parquet")
            for b in BENCHMARKS
            if PER_DEPTH_REFERENCE in STRATEGIES
        ],
        **(
            {
                "evaluate_steps": [
                    bench(f"results/eval/{m}/steps/{b}.parquet")
                    for m in arm_seeds(lambda s: s not in TRAIN_ONCE)
                    if m.split("/")[0] in CURVE_RECIPES
                    for b in BENCHMARKS
                ],
                "evaluate_steps_train_once": [
                    bench(
                        f"results/eval/{r}/{s}{DEPTHS[0]}/seed{seed}/steps/{b}.parquet"
                    )
                    for r, s, seed in one_pass_jobs(lambda r: r in CURVE_RECIPES)
                    for b in BENCHMARKS
                ],
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
    "beir-train": "beir_train",
}
BENCHMARK_RULE = {"docstrings": "docstring_benchmark", "beir": "beir_download"}


def benchmarks_by_rule():
    """The benchmarks each data rule makes."""
    out = {}
    for b in BENCHMARKS:
        out.setdefault(BENCHMARK_RULE[DATASETS[b]["source"]], []).append(b)
    return out
