# Evaluation: one job per (model, benchmark), so new data for one benchmark reruns only
# that benchmark's evaluations. The untrained truncated base ("step 0") is evaluated too.

EVAL_CODE = CODE(
    "workflow_scripts/evaluate.py",
    "workflow_scripts/encoder.py",
    "workflow_scripts/contracts.py",
)


rule evaluate_trained:
    input:
        model="checkpoints/{recipe}/{strategy}{depth}/seed{seed}/model.safetensors",
        data=lambda wc: benchmark_files(wc.benchmark),
        code=EVAL_CODE,
    output:
        "results/eval/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.parquet",
    log:
        "logs/evaluate/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.log",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=1,
    params:
        model=lambda wc, input: os.path.dirname(input.model),
        args=lambda wc: eval_args(wc.benchmark),
    shell:
        "python -m workflow_scripts.evaluate --model {params.model} {params.args}"
        " --strategy {wildcards.strategy} --depth {wildcards.depth}"
        " --benchmark-dir data/beir/{wildcards.benchmark} --benchmark {wildcards.benchmark}"
        " --recipe {wildcards.recipe} --seed {wildcards.seed} --threads {threads}"
        " --out {output} > {log} 2>&1"


rule evaluate_base:
    input:
        data=lambda wc: benchmark_files(wc.benchmark),
        code=EVAL_CODE,
    output:
        "results/eval/base/{strategy}{depth}/{benchmark}.parquet",
    log:
        "logs/evaluate/base/{strategy}{depth}/{benchmark}.log",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=1,
    params:
        base=config["base_model"],
        args=lambda wc: eval_args(wc.benchmark),
    shell:
        "python -m workflow_scripts.evaluate --base {params.base:q} {params.args}"
        " --strategy {wildcards.strategy} --depth {wildcards.depth}"
        " --benchmark-dir data/beir/{wildcards.benchmark} --benchmark {wildcards.benchmark}"
        " --recipe base --seed -1 --threads {threads} --out {output} > {log} 2>&1"
