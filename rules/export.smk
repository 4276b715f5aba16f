# Exports (`snakemake export`, not part of `all`): what others load, made from a finished
# study without retraining or re-evaluating anything. Per trained model, its folder with
# sentence-transformers' model card completed by the study's evaluation of its weights
# (biencoder/export/model_card.py: the files hard-linked, the card rewritten); per evaluated
# arm and seed, one MTEB-shaped result file per benchmark (biencoder/export/mteb_results.py).
# The file lists are the plan's (export_files, model_evaluations).


rule export:
    input:
        PLAN.export_files(),
    localrule: True


rule export_model:
    input:
        model=TRAINED,
        summary=f"{PATHS.MODEL_DIR}/train_summary.json",
        evals=lambda wc: PLAN.model_evaluations(
            wc.recipe, wc.strategy, wc.depth, wc.seed
        ),
        data=[f for b in PLAN.benchmarks for f in paths.beir_files(b)],
        code=code("biencoder.export.model_card"),
    output:
        directory(PATHS.EXPORT_MODEL),
    log:
        PATHS.log("export_model/{recipe}/{strategy}{depth}/seed{seed}"),
    localrule: True
    conda:
        CONDA_ENV
    params:
        model=lambda wc, input: os.path.dirname(input.model),
        benchmarks=PLAN.export_benchmarks(),
    shell:
        run_stage(
            "biencoder.export.model_card --model {params.model} --study"
            f" {PATHS.name} --evals {{input.evals}} --benchmarks-json"
            " {params.benchmarks:q} --out {output}"
        )


rule export_mteb:
    input:
        evals=lambda wc: [
            PATHS.EVAL.format(
                recipe=wc.recipe,
                strategy=wc.strategy,
                depth=wc.depth,
                seed=wc.seed,
                benchmark=b,
            )
            for b in PLAN.benchmarks
        ],
        weights=lambda wc: PLAN.model_file(wc.recipe, wc.strategy, wc.depth, wc.seed),
        data=[f for b in PLAN.benchmarks for f in paths.beir_files(b)],
        code=code("biencoder.export.mteb_results"),
    output:
        directory(PATHS.EXPORT_MTEB),
    log:
        PATHS.log("export_mteb/{recipe}/{strategy}{depth}/seed{seed}"),
    localrule: True
    conda:
        CONDA_ENV
    params:
        benchmarks=PLAN.export_benchmarks(),
    shell:
        run_stage(
            f"biencoder.export.mteb_results --study {PATHS.name} --evals {{input.evals}}"
            " --weights {input.weights} --benchmarks-json {params.benchmarks:q} --out"
            " {output}"
        )
