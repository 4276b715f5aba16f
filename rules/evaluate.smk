# Evaluation: one job per (model, benchmark), so new data for one benchmark reruns only
# that benchmark's evaluations. The untrained truncated base ("step 0") is evaluated too, and
# a learning curve's snapshots: one job per (model, benchmark) for all of them (one import,
# the benchmark tokenized once), one file with a `step` column.


rule evaluate_trained:
    input:
        model="checkpoints/{recipe}/{strategy}{depth}/seed{seed}/model.safetensors",
        data=lambda wc: benchmark_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        "results/eval/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.parquet",
    log:
        "logs/evaluate/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.log",
    benchmark:
        bench("results/eval/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.parquet")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=1,
    params:
        model=lambda wc, input: os.path.dirname(input.model),
        settings=lambda wc: settings_json("Evaluate", benchmark=wc.benchmark),
    shell:
        "python -m workflow_scripts.biencoder.evaluate --model {params.model}"
        " --strategy {wildcards.strategy} --depth {wildcards.depth}"
        " --benchmark-dir data/beir/{wildcards.benchmark} --benchmark {wildcards.benchmark}"
        " --recipe {wildcards.recipe} --seed {wildcards.seed}"
        " --settings-json {params.settings:q} --threads {threads} --out {output} > {log} 2>&1"


rule evaluate_base:
    input:
        data=lambda wc: benchmark_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        "results/eval/base/{strategy}{depth}/{benchmark}.parquet",
    log:
        "logs/evaluate/base/{strategy}{depth}/{benchmark}.log",
    benchmark:
        bench("results/eval/base/{strategy}{depth}/{benchmark}.parquet")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=1,
    params:
        base=config["base_model"],
        settings=lambda wc: settings_json("Evaluate", benchmark=wc.benchmark),
    shell:
        "python -m workflow_scripts.biencoder.evaluate --base {params.base:q}"
        " --strategy {wildcards.strategy} --depth {wildcards.depth}"
        " --benchmark-dir data/beir/{wildcards.benchmark} --benchmark {wildcards.benchmark}"
        " --recipe base --seed -1 --settings-json {params.settings:q} --threads {threads}"
        " --out {output} > {log} 2>&1"


rule evaluate_steps:
    input:
        steps="checkpoints/{recipe}/{strategy}{depth}/seed{seed}/steps",
        data=lambda wc: benchmark_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        "results/eval/{recipe}/{strategy}{depth}/seed{seed}/steps/{benchmark}.parquet",
    log:
        "logs/evaluate/{recipe}/{strategy}{depth}/seed{seed}/steps/{benchmark}.log",
    benchmark:
        bench(
            "results/eval/{recipe}/{strategy}{depth}/seed{seed}/steps/{benchmark}.parquet"
        )
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=120,
        gpu=1,
    params:
        steps=lambda wc: " ".join(map(str, snapshot_steps(wc.recipe))),
        settings=lambda wc: settings_json("Evaluate", benchmark=wc.benchmark),
    shell:
        "python -m workflow_scripts.biencoder.evaluate --snapshots {input.steps}"
        " --steps {params.steps} --strategy {wildcards.strategy} --depth {wildcards.depth}"
        " --benchmark-dir data/beir/{wildcards.benchmark} --benchmark {wildcards.benchmark}"
        " --recipe {wildcards.recipe} --seed {wildcards.seed}"
        " --settings-json {params.settings:q} --threads {threads} --out {output} > {log} 2>&1"
