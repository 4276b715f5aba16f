# Statistics over seeds x queries for every interval the report shows: the calibrated method
# by default (stats.interval), the Multi-Bootstrap's interval beside each.


rule stats:
    input:
        evals=trained_eval_files() + base_eval_files(),
        code=code("biencoder.stats"),
    output:
        expand("results/stats/{table}.parquet", table=STATS_TABLES),
    log:
        "logs/stats/stats.log",
    benchmark:
        bench("results/stats/ci.parquet")
    conda:
        CONDA_ENV
    threads: 2  # the Multi-Bootstrap engine (the reference) computes samples on these threads
    resources:
        mem_mb=4000,
    params:
        settings=settings_json("Stats"),
        budget_order=" ".join(BUDGET_ORDER),
        expect=expected_grid(),
    shell:
        "python -m workflow_scripts.biencoder.stats --evals {input.evals} --out-dir results/stats"
        " --settings-json {params.settings:q} --budget-order {params.budget_order}"
        " --expect-json {params.expect:q}"
        " --threads {threads} > {log} 2>&1"


# Learning curves (recipes with eval_steps): per step the interval, best -> last, the onset.


rule curves:
    input:
        evals=curve_input_files(),
        code=code("biencoder.curves"),
    output:
        expand("results/stats/{table}.parquet", table=CURVE_TABLES),
    log:
        "logs/stats/curves.log",
    benchmark:
        bench("results/stats/curves.parquet")
    conda:
        CONDA_ENV
    threads: 2
    resources:
        mem_mb=4000,
    params:
        settings=settings_json("Curves"),
        grid=curve_grid(),
    shell:
        "python -m workflow_scripts.biencoder.curves --evals {input.evals}"
        " --settings-json {params.settings:q} --grid-json {params.grid:q}"
        " --out-dir results/stats --threads {threads} > {log} 2>&1"


# Compute: each trained arm's training cost (steps x layers trained, measured seconds) from
# its trainings' summaries; a train-once arm's one training serves every depth.


rule compute:
    input:
        summaries=[f"checkpoints/{m}/train_summary.json" for m in trained_models()],
        code=code("biencoder.compute"),
    output:
        "results/stats/compute.parquet",
    log:
        "logs/stats/compute.log",
    benchmark:
        bench("results/stats/compute.parquet")
    conda:
        CONDA_ENV
    params:
        models=json.dumps(trained_model_keys()),
        depths=" ".join(map(str, DEPTHS)),
    shell:
        "python -m workflow_scripts.biencoder.compute --summaries {input.summaries}"
        " --models-json {params.models:q} --depths {params.depths} --out {output}"
        " > {log} 2>&1"
