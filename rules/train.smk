# Training: one model per (recipe, strategy, depth, seed); a train-once arm (recipe key
# train_once) trains once per seed, at the deepest depth. Its params are exactly what changes
# the model (the recipe's settings, a train-once arm's loss settings, the base model); the
# recipe's seed list and how often trainer state is saved are not, so adding a seed or turning
# on checkpoints retrains nothing. The learning curve's snapshots (recipe key eval_steps) are
# outputs: a folder steps/ with one weights folder per snapshot step (empty without), its step
# list a param.
#
# batch_seeds (sentence-transformers' import costs more than a small training) only decides
# which trainings share a process: the models still to train (missing, or recorded with other
# settings: train_todo) of arms needing the same seeds are one train_seeds job per group,
# training them in turn; everything else is rule train's, one job per model. Both rules run
# one command with the same params (the seeds and folders derive from the outputs), so
# Snakemake decides staleness per model whichever rule made it (docs/architecture.md).

TRAIN_DIR = "checkpoints/{recipe}/{strategy}{depth}/seed{seed}"
# The models still to train, read once per parse (every model's train_summary.json).
TRAIN_TODO = train_todo()
TRAIN_BATCHES = group_by_todo(TRAIN_TODO) if config["batch_seeds"] else []
# One command for both rules: a changed command text reruns what the other rule made.
TRAIN_SHELL = (
    "python -m workflow_scripts.biencoder.train --base {params.base:q}"
    " --strategy {params.strategy} --depth {params.depth} --seed {params.seeds}"
    " --settings-json {params.settings:q} --triples {input.triples}"
    " --checkpoint-every {resources.checkpoint_every} --eval-steps {params.eval_steps}"
    " --threads {threads}"
    " --out {params.out} > {log} 2>&1"
)


rule train:
    input:
        triples=f"data/train/{TRAIN_DATA}.parquet",
        code=code("biencoder.train"),
    output:
        model=f"{TRAIN_DIR}/model.safetensors",
        steps=directory(f"{TRAIN_DIR}/steps"),
        summary=f"{TRAIN_DIR}/train_summary.json",
    log:
        "logs/train/{recipe}/{strategy}{depth}/seed{seed}.log",
    benchmark:
        bench(f"{TRAIN_DIR}/model.safetensors")
    # Trainings (and their triples) first: they head the longest chains (train, evaluate,
    # curves); the short jobs of the ladder and of evaluation then fill the cores at the end
    # instead of one long training running alone.
    priority: 1
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
        gpu=1,
        # A resource, not a param: it sets how often trainer state is saved (for resuming),
        # which does not change the model, so it must not be a rerun trigger.
        checkpoint_every=lambda wc: RECIPES[train_arm(wc)[0]]["checkpoint_every"],
    params:
        **TRAIN_PARAMS,
    shell:
        TRAIN_SHELL


# batch_seeds: one rule per group of arms needing the same seeds (usually one), its arm a
# wildcard matching exactly those arms (recipe/strategy+depth).
for _i, (_seeds, _arms) in enumerate(TRAIN_BATCHES):
    _dirs = [f"checkpoints/{{arm}}/seed{seed}" for seed in _seeds]

    rule:
        name:
            "train_seeds" if _i == 0 else f"train_seeds_{_i + 1}"
        input:
            triples=f"data/train/{TRAIN_DATA}.parquet",
            code=code("biencoder.train"),
        output:
            model=[f"{d}/model.safetensors" for d in _dirs],
            steps=[directory(f"{d}/steps") for d in _dirs],
            summary=[f"{d}/train_summary.json" for d in _dirs],
        log:
            f"logs/train/{{arm}}/seeds{'-'.join(map(str, _seeds))}.log",
        benchmark:
            bench(f"{_dirs[0]}/model.safetensors")
        wildcard_constraints:
            arm=regex(f"{r}/{s}{d}" for r, s, d in _arms),
        priority: 1
        conda:
            CONDA_ENV
        threads: 1
        resources:
            mem_mb=4000,
            runtime=120 * len(_seeds),
            gpu=1,
            checkpoint_every=lambda wc: RECIPES[train_arm(wc)[0]]["checkpoint_every"],
        params:
            **TRAIN_PARAMS,
        shell:
            TRAIN_SHELL

    workflow.ruleorder("train_seeds" if _i == 0 else f"train_seeds_{_i + 1}", "train")
