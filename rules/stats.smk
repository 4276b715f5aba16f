# Statistics: Multi-Bootstrap over seeds x queries for every interval the report shows.

STATS = config["stats"]
STATS_TABLES = ["ci", "seeds", "comparisons", "variance", "seeds_needed", "agreement"]


rule stats:
    input:
        evals=trained_eval_files() + base_eval_files(),
        code=CODE("workflow_scripts/stats.py", "workflow_scripts/multibootstrap.py"),
    output:
        expand("results/stats/{table}.parquet", table=STATS_TABLES),
    log:
        "logs/stats/stats.log",
    conda:
        CONDA_ENV
    threads: 2  # the Multi-Bootstrap engine computes two groups of samples at once
    resources:
        mem_mb=4000,
    params:
        args=(
            f"--metric {STATS['metric']} --nboot {STATS['nboot']} --ci {STATS['ci']}"
            f" --seed {STATS['seed']} --epsilon {STATS['equivalence_epsilon']}"
            f" --half-width {STATS['target_half_width']} --delta {STATS['detect_delta']}"
            f" --budget-order {' '.join(BUDGET_ORDER)}"
        ),
    shell:
        "python -m workflow_scripts.stats --evals {input.evals} --out-dir results/stats"
        " {params.args} > {log} 2>&1"
