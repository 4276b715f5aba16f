# Training: one job per (recipe, strategy, depth, seed).


rule train:
    input:
        triples=f"data/train/{TRAIN_DATA}.parquet",
        code=CODE("workflow_scripts/train.py", "workflow_scripts/models.py"),
    output:
        model="checkpoints/{recipe}/{strategy}{depth}/seed{seed}/model.safetensors",
    log:
        "logs/train/{recipe}/{strategy}{depth}/seed{seed}.log",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
        gpu=1,
    params:
        base=config["base_model"],
        recipe_json=lambda wc: json.dumps(RECIPES[wc.recipe], sort_keys=True),
        max_seq=MAX_SEQ,
        out=lambda wc, output: os.path.dirname(output.model),
    shell:
        "python -m workflow_scripts.train --base {params.base:q} --strategy {wildcards.strategy}"
        " --depth {wildcards.depth} --seed {wildcards.seed} --recipe-json {params.recipe_json:q}"
        " --triples {input.triples} --max-seq-length {params.max_seq} --threads {threads}"
        " --out {params.out} > {log} 2>&1"
