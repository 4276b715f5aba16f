# Training: one job per (recipe, strategy, depth, seed); a train-once arm (recipe key
# train_once) trains once per seed, at the deepest depth. Its params are exactly what changes
# the model (the recipe's settings, a train-once arm's loss settings, the base model); the
# recipe's seed list and how often trainer state is saved are not, so adding a seed or turning
# on checkpoints retrains nothing. The learning curve's snapshots (recipe key eval_steps) are
# outputs: a folder steps/ with one weights folder per snapshot step (empty without), its step
# list a param. With batch_seeds one job trains a (recipe, strategy, depth)'s seeds in turn
# (still a folder each): sentence-transformers' import costs more than a small training; then
# adding a seed retrains the other seeds of those jobs too.

TRAIN_DIR = "checkpoints/{recipe}/{strategy}{depth}/seed{seed}"
if TRAIN_SEEDS:
    TRAIN_DIRS = expand(TRAIN_DIR, seed=TRAIN_SEEDS, allow_missing=True)
    TRAIN_LOG = "logs/train/{recipe}/{strategy}{depth}.log"
else:
    TRAIN_DIRS = [TRAIN_DIR]
    TRAIN_LOG = "logs/train/{recipe}/{strategy}{depth}/seed{seed}.log"


rule train:
    input:
        triples=f"data/train/{TRAIN_DATA}.parquet",
        code=code("biencoder.train"),
    output:
        model=[f"{d}/model.safetensors" for d in TRAIN_DIRS],
        steps=[directory(f"{d}/steps") for d in TRAIN_DIRS],
        summary=[f"{d}/train_summary.json" for d in TRAIN_DIRS],
    log:
        TRAIN_LOG,
    benchmark:
        bench(f"{TRAIN_DIRS[0]}/model.safetensors")
    # Trainings (and their triples) first: they head the longest chains (train, evaluate,
    # curves); the short jobs of the ladder and of evaluation then fill the cores at the end
    # instead of one long training running alone.
    priority: 1
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120 * len(TRAIN_DIRS),
        gpu=1,
        # A resource, not a param: it sets how often trainer state is saved (for resuming),
        # which does not change the model, so it must not be a rerun trigger.
        checkpoint_every=lambda wc: RECIPES[wc.recipe]["checkpoint_every"],
    params:
        base=config["base_model"],
        settings=train_settings_json,
        seeds=lambda wc: wc.get("seed") or " ".join(map(str, TRAIN_SEEDS)),
        out=lambda wc, output: " ".join(map(os.path.dirname, output.model)),
        eval_steps=lambda wc: " ".join(map(str, snapshot_steps(wc.recipe))),
    shell:
        "python -m workflow_scripts.biencoder.train --base {params.base:q}"
        " --strategy {wildcards.strategy} --depth {wildcards.depth} --seed {params.seeds}"
        " --settings-json {params.settings:q} --triples {input.triples}"
        " --checkpoint-every {resources.checkpoint_every} --eval-steps {params.eval_steps}"
        " --threads {threads}"
        " --out {params.out} > {log} 2>&1"
