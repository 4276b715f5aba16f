# Evaluation: one job per (model, benchmark), so new data for one benchmark reruns only that
# benchmark's evaluations. One rule, evaluate_trained, written out; the others vary it along
# two axes (use rule ... with):
# - which model: a trained per-depth model; a train-once model, whose weights do not depend
#   on depth, evaluated at every depth from one forward pass (one file per depth); the
#   untrained truncated base ("step 0": recipe base, seed -1), per depth or, for strategy top
#   (one model cut at different layers), at every depth from one pass.
# - what of it: the final model, or (a recipe with eval_steps) its learning-curve snapshots
#   and its final model, the curve's last point, in one job (one import, the benchmark
#   tokenized once): a file with a `step` column and the final model's own file.
# params.source names the model and params.depths its depth(s); params.out derives from the
# outputs (so it is no rerun trigger). A `use rule … with:` names only the params it changes
# (Snakemake merges them by name).

TRAINED = f"{paths.MODEL_DIR}/model.safetensors"
ONE_PASS_MODEL = paths.MODEL_DIR.replace("{depth}", str(PLAN.max_depth))
ALL_DEPTHS = "--depths " + " ".join(map(str, PLAN.depths))
# A curve recipe's final models are evaluated with their snapshots (evaluate_steps*).
CURVE_RECIPES = regex(PLAN.curve_recipes)
FINAL_ONLY_RECIPES = regex(r for r in PLAN.recipes if r not in PLAN.curve_recipes)
PER_DEPTH = regex(PLAN.strategies)
ONE_PASS = regex(TRAIN_ONCE)


rule evaluate_trained:
    input:
        model=TRAINED,
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        paths.EVAL,
    log:
        "logs/evaluate_trained/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.log",
    wildcard_constraints:
        recipe=FINAL_ONLY_RECIPES,
        strategy=PER_DEPTH,
    conda:
        CONDA_ENV
    resources:
        mem_mb=3000,
        runtime=60,
        gpu=1,
    params:
        source=lambda wc, input: f"--model {os.path.dirname(input.model)}",
        depths=lambda wc: f"--depth {wc.depth}",
        recipe=lambda wc: wc.recipe,
        seed=lambda wc: wc.seed,
        settings=lambda wc: settings_json("Evaluate", benchmark=wc.benchmark),
        out=lambda wc, output: output[0],
    shell:
        run_stage(
            "biencoder.evaluate {params.source} --strategy {wildcards.strategy}"
            " {params.depths} --benchmark-dir data/beir/{wildcards.benchmark} --benchmark"
            " {wildcards.benchmark} --recipe {params.recipe} --seed {params.seed}"
            " --settings-json {params.settings:q} --threads {threads} --out {params.out}",
            preloaded=True,
        )


use rule evaluate_trained as evaluate_train_once with:
    input:
        model=f"{ONE_PASS_MODEL}/model.safetensors",
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        at_depths(paths.EVAL),
    log:
        "logs/evaluate_train_once/{recipe}/{strategy}/seed{seed}/{benchmark}.log",
    wildcard_constraints:
        recipe=FINAL_ONLY_RECIPES,
        strategy=ONE_PASS,
    params:
        source=lambda wc, input: f"--model {os.path.dirname(input.model)}",
        depths=ALL_DEPTHS,
        out=lambda wc, output: spaced(output),


use rule evaluate_trained as evaluate_base with:
    input:
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        paths.BASE_EVAL,
    log:
        "logs/evaluate_base/{strategy}{depth}/{benchmark}.log",
    wildcard_constraints:  # strategy top: evaluate_base_one_pass
        strategy=regex(s for s in PLAN.strategies if s != PER_DEPTH_REFERENCE),
    params:
        source=f"--base {shlex.quote(str(config['base_model']))}",
        depths=lambda wc: f"--depth {wc.depth}",
        recipe="base",
        seed=-1,
        out=lambda wc, output: output[0],


use rule evaluate_base as evaluate_base_one_pass with:
    output:
        at_depths(paths.BASE_EVAL),
    log:
        "logs/evaluate_base_one_pass/{strategy}/{benchmark}.log",
    wildcard_constraints:
        strategy=PER_DEPTH_REFERENCE,
    params:
        depths=ALL_DEPTHS,
        out=lambda wc, output: spaced(output),


use rule evaluate_trained as evaluate_steps with:
    input:
        steps=f"{paths.MODEL_DIR}/steps",
        model=TRAINED,
        summary=f"{paths.MODEL_DIR}/train_summary.json",
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        steps=paths.EVAL_STEPS,
        final=paths.EVAL,
    log:
        "logs/evaluate_steps/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.log",
    wildcard_constraints:
        recipe=CURVE_RECIPES,
        strategy=PER_DEPTH,
    resources:
        mem_mb=3000,
        runtime=120,
        gpu=1,
    params:
        source=snapshots_source,
        out=lambda wc, output: output.steps,


use rule evaluate_steps as evaluate_steps_train_once with:
    input:
        steps=f"{ONE_PASS_MODEL}/steps",
        model=f"{ONE_PASS_MODEL}/model.safetensors",
        summary=f"{ONE_PASS_MODEL}/train_summary.json",
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        steps=at_depths(paths.EVAL_STEPS),
        final=at_depths(paths.EVAL),
    log:
        "logs/evaluate_steps_train_once/{recipe}/{strategy}/seed{seed}/{benchmark}.log",
    wildcard_constraints:
        recipe=CURVE_RECIPES,
        strategy=ONE_PASS,
    params:
        depths=ALL_DEPTHS,
        out=lambda wc, output: spaced(output.steps),
