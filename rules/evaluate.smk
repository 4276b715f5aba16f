# Evaluation: one job per (model, benchmark), so new data for one benchmark reruns only
# that benchmark's evaluations. The untrained truncated base ("step 0") is evaluated too, and
# a learning curve's snapshots: for a recipe with eval_steps, one job per (model, benchmark)
# evaluates its snapshots and its final model, the curve's last point (one import, the
# benchmark tokenized once): a file with a `step` column and the final model's own file.
# A model whose weights do not depend on depth (the untrained base of strategy top, a
# train-once model) is evaluated at every depth by one job per benchmark: one forward pass
# at the deepest depth, each depth pooled from its hidden state, one file per depth.

PER_DEPTH_STRATEGIES = regex(STRATEGIES)
ONE_PASS_DEPTHS = " ".join(map(str, DEPTHS))
# A curve recipe's final models are evaluated with their snapshots (evaluate_steps*).
CURVE_RECIPE_NAMES = regex(CURVE_RECIPES)
FINAL_ONLY_RECIPES = regex(r for r in RECIPES if r not in CURVE_RECIPES)


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
    wildcard_constraints:
        recipe=FINAL_ONLY_RECIPES,
        strategy=PER_DEPTH_STRATEGIES,
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


rule evaluate_train_once:
    input:
        model=f"checkpoints/{{recipe}}/{{strategy}}{MAX_DEPTH}/seed{{seed}}/model.safetensors",
        data=lambda wc: benchmark_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        expand(
            "results/eval/{{recipe}}/{{strategy}}{depth}/seed{{seed}}/{{benchmark}}.parquet",
            depth=DEPTHS,
        ),
    log:
        "logs/evaluate/{recipe}/{strategy}/seed{seed}/{benchmark}.log",
    benchmark:
        bench(
            f"results/eval/{{recipe}}/{{strategy}}{DEPTHS[0]}/seed{{seed}}/{{benchmark}}.parquet"
        )
    wildcard_constraints:
        recipe=FINAL_ONLY_RECIPES,
        strategy=regex(TRAIN_ONCE),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=1,
    params:
        model=lambda wc, input: os.path.dirname(input.model),
        depths=ONE_PASS_DEPTHS,
        settings=lambda wc: settings_json("Evaluate", benchmark=wc.benchmark),
    shell:
        "python -m workflow_scripts.biencoder.evaluate --model {params.model}"
        " --strategy {wildcards.strategy} --depths {params.depths}"
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
    wildcard_constraints:  # strategy top: evaluate_base_one_pass
        strategy=regex(s for s in STRATEGIES if s != PER_DEPTH_REFERENCE),
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


rule evaluate_base_one_pass:
    input:
        data=lambda wc: benchmark_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        expand(
            "results/eval/base/{strategy}{depth}/{{benchmark}}.parquet",
            strategy=PER_DEPTH_REFERENCE,
            depth=DEPTHS,
        ),
    log:
        f"logs/evaluate/base/{PER_DEPTH_REFERENCE}/{{benchmark}}.log",
    benchmark:
        bench(
            f"results/eval/base/{PER_DEPTH_REFERENCE}{DEPTHS[0]}/{{benchmark}}.parquet"
        )
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=1,
    params:
        base=config["base_model"],
        strategy=PER_DEPTH_REFERENCE,
        depths=ONE_PASS_DEPTHS,
        settings=lambda wc: settings_json("Evaluate", benchmark=wc.benchmark),
    shell:
        "python -m workflow_scripts.biencoder.evaluate --base {params.base:q}"
        " --strategy {params.strategy} --depths {params.depths}"
        " --benchmark-dir data/beir/{wildcards.benchmark} --benchmark {wildcards.benchmark}"
        " --recipe base --seed -1 --settings-json {params.settings:q} --threads {threads}"
        " --out {output} > {log} 2>&1"


rule evaluate_steps:
    input:
        steps="checkpoints/{recipe}/{strategy}{depth}/seed{seed}/steps",
        model="checkpoints/{recipe}/{strategy}{depth}/seed{seed}/model.safetensors",
        summary="checkpoints/{recipe}/{strategy}{depth}/seed{seed}/train_summary.json",
        data=lambda wc: benchmark_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        steps="results/eval/{recipe}/{strategy}{depth}/seed{seed}/steps/{benchmark}.parquet",
        final="results/eval/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.parquet",
    log:
        "logs/evaluate/{recipe}/{strategy}{depth}/seed{seed}/steps/{benchmark}.log",
    benchmark:
        bench(
            "results/eval/{recipe}/{strategy}{depth}/seed{seed}/steps/{benchmark}.parquet"
        )
    wildcard_constraints:
        recipe=CURVE_RECIPE_NAMES,
        strategy=PER_DEPTH_STRATEGIES,
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=120,
        gpu=1,
    params:
        steps=lambda wc: " ".join(map(str, snapshot_steps(wc.recipe))),
        model=lambda wc, input: os.path.dirname(input.model),
        settings=lambda wc: settings_json("Evaluate", benchmark=wc.benchmark),
    shell:
        "python -m workflow_scripts.biencoder.evaluate --snapshots {input.steps}"
        " --steps {params.steps} --final {params.model} --final-out {output.final}"
        " --strategy {wildcards.strategy} --depth {wildcards.depth}"
        " --benchmark-dir data/beir/{wildcards.benchmark} --benchmark {wildcards.benchmark}"
        " --recipe {wildcards.recipe} --seed {wildcards.seed}"
        " --settings-json {params.settings:q} --threads {threads} --out {output.steps}"
        " > {log} 2>&1"


rule evaluate_steps_train_once:
    input:
        steps=f"checkpoints/{{recipe}}/{{strategy}}{MAX_DEPTH}/seed{{seed}}/steps",
        model=f"checkpoints/{{recipe}}/{{strategy}}{MAX_DEPTH}/seed{{seed}}/model.safetensors",
        summary=f"checkpoints/{{recipe}}/{{strategy}}{MAX_DEPTH}/seed{{seed}}/train_summary.json",
        data=lambda wc: benchmark_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        steps=expand(
            "results/eval/{{recipe}}/{{strategy}}{depth}/seed{{seed}}/steps/{{benchmark}}.parquet",
            depth=DEPTHS,
        ),
        final=expand(
            "results/eval/{{recipe}}/{{strategy}}{depth}/seed{{seed}}/{{benchmark}}.parquet",
            depth=DEPTHS,
        ),
    log:
        "logs/evaluate/{recipe}/{strategy}/seed{seed}/steps/{benchmark}.log",
    benchmark:
        bench(
            f"results/eval/{{recipe}}/{{strategy}}{DEPTHS[0]}/seed{{seed}}/steps/{{benchmark}}.parquet"
        )
    wildcard_constraints:
        recipe=CURVE_RECIPE_NAMES,
        strategy=regex(TRAIN_ONCE),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=120,
        gpu=1,
    params:
        steps=lambda wc: " ".join(map(str, snapshot_steps(wc.recipe))),
        model=lambda wc, input: os.path.dirname(input.model),
        depths=ONE_PASS_DEPTHS,
        settings=lambda wc: settings_json("Evaluate", benchmark=wc.benchmark),
    shell:
        "python -m workflow_scripts.biencoder.evaluate --snapshots {input.steps}"
        " --steps {params.steps} --final {params.model} --final-out {output.final}"
        " --strategy {wildcards.strategy} --depths {params.depths}"
        " --benchmark-dir data/beir/{wildcards.benchmark} --benchmark {wildcards.benchmark}"
        " --recipe {wildcards.recipe} --seed {wildcards.seed}"
        " --settings-json {params.settings:q} --threads {threads} --out {output.steps}"
        " > {log} 2>&1"
