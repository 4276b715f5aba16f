# Evaluation: one job per (model, benchmark), so new data for one benchmark reruns only that
# benchmark's evaluations. One rule, evaluate_trained, written out; the others vary it along
# two axes (use rule ... with):
# - which model: a trained per-depth model; a train-once model, whose weights do not depend
#   on depth, evaluated at every depth from one forward pass (one file per depth); the
#   untrained truncated base ("step 0": recipe base, seed -1), per depth or, for strategy top
#   (one model cut at different layers), at every depth from one pass; the
#   fine-tuned-then-truncated arm, a recipe's deepest per-depth model (no training of its
#   own: the plan's truncation_source) cut to each shallower depth by its strategy's rule,
#   per depth or, for strategy top, at every shallower depth from one pass.
# - what of it: the final model, or (a recipe with eval_steps) its learning-curve snapshots
#   and its final model, the curve's last point, in one job (one import, the benchmark
#   tokenized once): a file with a `step` column and the final model's own file.
# params.source names the model and params.depths its depth(s); params.out derives from the
# outputs (so it is no rerun trigger), as does params.dims: every job also writes its files at
# the configured embedding dimensions (eval.dims; outputs `dims`, the plan's dim_files), cuts
# of the embeddings it scores at the full dimension. Beside each of these files (not the
# snapshots'), the job writes its ranking as a TREC run and the run's sidecar (outputs `runs`,
# PLAN.runs_of; biencoder/trec_run.py). A `use rule … with:` names only the params it changes
# (Snakemake merges them by name).

# Which rule evaluates which arm (its wildcard constraints) is the study plan's registry
# (study_plan.EVALUATIONS), as is the list of evaluation jobs it plans.
TRAINED = f"{PATHS.MODEL_DIR}/model.safetensors"
ONE_PASS_MODEL = PATHS.MODEL_DIR.replace("{depth}", str(PLAN.max_depth))
ALL_DEPTHS = "--depths " + " ".join(map(str, PLAN.depths))
SHALLOWER = PLAN.depths[:-1]


rule evaluate_trained:
    input:
        model=TRAINED,
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        evals=PATHS.EVAL,
        dims=PLAN.dim_files(PATHS.EVAL_DIM),
        runs=PLAN.runs_of([PATHS.EVAL, *PLAN.dim_files(PATHS.EVAL_DIM)]),
    log:
        PATHS.log("evaluate_trained/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}"),
    wildcard_constraints:
        **PLAN.evaluation_constraints("evaluate_trained"),
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
        out=lambda wc, output: spaced(output.evals),
        dims=lambda wc, output: dim_args(output.dims),
    shell:
        run_stage(
            "biencoder.evaluate {params.source} --strategy {wildcards.strategy}"
            " {params.depths} --benchmark-dir data/beir/{wildcards.benchmark} --benchmark"
            " {wildcards.benchmark} --recipe {params.recipe} --seed {params.seed}"
            " --settings-json {params.settings:q} --threads {threads} --out {params.out}"
            " {params.dims}",
            preloaded=True,
        )


use rule evaluate_trained as evaluate_train_once with:
    input:
        model=f"{ONE_PASS_MODEL}/model.safetensors",
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        evals=at_depths(PATHS.EVAL),
        dims=PLAN.dim_files(PATHS.EVAL_DIM, PLAN.depths),
        runs=PLAN.runs_of(
            at_depths(PATHS.EVAL) + PLAN.dim_files(PATHS.EVAL_DIM, PLAN.depths)
        ),
    log:
        PATHS.log("evaluate_train_once/{recipe}/{strategy}/seed{seed}/{benchmark}"),
    wildcard_constraints:
        **PLAN.evaluation_constraints("evaluate_train_once"),
    params:
        source=lambda wc, input: f"--model {os.path.dirname(input.model)}",
        depths=ALL_DEPTHS,


use rule evaluate_trained as evaluate_base with:
    input:
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        evals=PATHS.BASE_EVAL,
        dims=PLAN.dim_files(PATHS.BASE_EVAL_DIM),
        runs=PLAN.runs_of([PATHS.BASE_EVAL, *PLAN.dim_files(PATHS.BASE_EVAL_DIM)]),
    log:
        PATHS.log("evaluate_base/{strategy}{depth}/{benchmark}"),
    wildcard_constraints:
        **PLAN.evaluation_constraints("evaluate_base"),
    params:
        source=f"--base {shlex.quote(str(config['base_model']))}",
        depths=lambda wc: f"--depth {wc.depth}",
        recipe="base",
        seed=-1,


use rule evaluate_base as evaluate_base_one_pass with:
    output:
        evals=at_depths(PATHS.BASE_EVAL),
        dims=PLAN.dim_files(PATHS.BASE_EVAL_DIM, PLAN.depths),
        runs=PLAN.runs_of(
            at_depths(PATHS.BASE_EVAL)
            + PLAN.dim_files(PATHS.BASE_EVAL_DIM, PLAN.depths)
        ),
    log:
        PATHS.log("evaluate_base_one_pass/{strategy}/{benchmark}"),
    wildcard_constraints:
        **PLAN.evaluation_constraints("evaluate_base_one_pass"),
    params:
        depths=ALL_DEPTHS,


use rule evaluate_trained as evaluate_steps with:
    input:
        steps=f"{PATHS.MODEL_DIR}/steps",
        model=TRAINED,
        summary=f"{PATHS.MODEL_DIR}/train_summary.json",
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        steps=PATHS.EVAL_STEPS,
        final=PATHS.EVAL,
        dims=PLAN.dim_files(PATHS.EVAL_DIM),
        runs=PLAN.runs_of([PATHS.EVAL, *PLAN.dim_files(PATHS.EVAL_DIM)]),
    log:
        PATHS.log("evaluate_steps/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}"),
    wildcard_constraints:
        **PLAN.evaluation_constraints("evaluate_steps"),
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
        steps=at_depths(PATHS.EVAL_STEPS),
        final=at_depths(PATHS.EVAL),
        dims=PLAN.dim_files(PATHS.EVAL_DIM, PLAN.depths),
        runs=PLAN.runs_of(
            at_depths(PATHS.EVAL) + PLAN.dim_files(PATHS.EVAL_DIM, PLAN.depths)
        ),
    log:
        PATHS.log(
            "evaluate_steps_train_once/{recipe}/{strategy}/seed{seed}/{benchmark}"
        ),
    wildcard_constraints:
        **PLAN.evaluation_constraints("evaluate_steps_train_once"),
    params:
        depths=ALL_DEPTHS,
        out=lambda wc, output: spaced(output.steps),


use rule evaluate_trained as evaluate_truncated with:
    input:
        model=lambda wc: PLAN.truncation_source(wc.recipe, wc.strategy, wc.seed),
        data=lambda wc: paths.beir_files(wc.benchmark),
        code=code("biencoder.evaluate"),
    output:
        evals=PATHS.EVAL,
        dims=PLAN.dim_files(PATHS.EVAL_DIM),
        runs=PLAN.runs_of([PATHS.EVAL, *PLAN.dim_files(PATHS.EVAL_DIM)]),
    log:
        PATHS.log(
            "evaluate_truncated/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}"
        ),
    wildcard_constraints:
        **PLAN.evaluation_constraints("evaluate_truncated"),


# A one-depth study has no shallower depth to cut to.
if SHALLOWER:

    use rule evaluate_truncated as evaluate_truncated_one_pass with:
        output:
            evals=at_depths(PATHS.EVAL, SHALLOWER),
            dims=PLAN.dim_files(PATHS.EVAL_DIM, SHALLOWER),
            runs=PLAN.runs_of(
                at_depths(PATHS.EVAL, SHALLOWER)
                + PLAN.dim_files(PATHS.EVAL_DIM, SHALLOWER)
            ),
        log:
            PATHS.log(
                "evaluate_truncated_one_pass/{recipe}/{strategy}/seed{seed}/{benchmark}"
            ),
        wildcard_constraints:
            **PLAN.evaluation_constraints("evaluate_truncated_one_pass"),
        params:
            depths="--depths " + " ".join(map(str, SHALLOWER)),
