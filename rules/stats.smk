# Statistics over seeds x queries for every interval the report shows: the calibrated method
# by default (stats.interval), the Multi-Bootstrap's interval beside each. Then the learning
# curves (recipes with eval_steps: per step the interval, best -> last, the onset) and each
# trained arm's training cost (steps x layers trained, measured seconds) from its trainings'
# summaries (a train-once arm's one training serves every depth; a fine-tuned-then-truncated
# arm is costed by the deepest per-depth trainings it cuts).


rule stats:
    input:
        evals=PLAN.trained_eval_files() + PLAN.base_eval_files(),
        code=code("biencoder.stats"),
    output:
        [PATHS.STATS_TABLE.format(table=t) for t in STATS_TABLES],
    log:
        PATHS.log("stats"),
    localrule: True
    conda:
        CONDA_ENV
    threads: 2  # the Multi-Bootstrap engine (the reference) computes samples on these threads
    resources:
        mem_mb=4000,
    params:
        settings=settings_json("Stats"),
        budget_order=" ".join(PLAN.budget_order),
        expect=PLAN.expected_grid(),
    shell:
        run_stage(
            f"biencoder.stats --evals {{input.evals}} --out-dir {PATHS.STATS_DIR}"
            " --settings-json"
            " {params.settings:q} --budget-order {params.budget_order} --expect-json"
            " {params.expect:q} --threads {threads}",
        )


rule curves:
    input:
        evals=PLAN.curve_input_files(),
        code=code("biencoder.curves"),
    output:
        [PATHS.STATS_TABLE.format(table=t) for t in CURVE_TABLES],
    log:
        PATHS.log("curves"),
    localrule: True
    conda:
        CONDA_ENV
    threads: 2
    resources:
        mem_mb=4000,
    params:
        settings=settings_json("Curves"),
        grid=PLAN.curve_grid(),
    shell:
        run_stage(
            "biencoder.curves --evals {input.evals} --settings-json {params.settings:q}"
            f" --grid-json {{params.grid:q}} --out-dir {PATHS.STATS_DIR}"
            " --threads {threads}",
        )


rule compute:
    input:
        summaries=PLAN.summaries(),
        code=code("biencoder.compute"),
    output:
        PATHS.STATS_TABLE.format(table="compute"),
    log:
        PATHS.log("compute"),
    localrule: True
    conda:
        CONDA_ENV
    params:
        models=json.dumps([list(m) for m in PLAN.models()]),
        depths=" ".join(map(str, PLAN.depths)),
        truncated=json.dumps(PLAN.truncated_recipe_arms()),
    shell:
        run_stage(
            "biencoder.compute --summaries {input.summaries} --models-json"
            " {params.models:q} --depths {params.depths} --truncated-json"
            " {params.truncated:q} --out {output}",
        )


# The layer x dimension table (eval.dims): each arm's interval at every configured embedding
# dimension, from the evaluations' dimension files.
if PLAN.dims:

    rule stats_dims:
        input:
            evals=PLAN.dim_eval_files(),
            code=code("biencoder.dims_stats"),
        output:
            PATHS.STATS_TABLE.format(table=DIMS_TABLE),
        log:
            PATHS.log("stats_dims"),
        localrule: True
        conda:
            CONDA_ENV
        threads: 2
        resources:
            mem_mb=4000,
        params:
            settings=settings_json("DimsStats"),
            expect=PLAN.dims_expected_grid(),
        shell:
            run_stage(
                "biencoder.dims_stats --evals {input.evals} --out {output}"
                " --settings-json {params.settings:q} --expect-json {params.expect:q}"
                " --threads {threads}",
            )
