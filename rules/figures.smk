# Figures: one rule and one target per figure, registered for `snakemake --report`.

FIG_INPUTS = {
    "stats": expand(
        "results/stats/{table}.parquet", table=["ci", "seeds", "comparisons"]
    ),
    "code": code("biencoder.report.figures"),
}
FIG_ARGS = f"--stats-dir results/stats --budget-order {' '.join(BUDGET_ORDER)}"


rule figure_depth_vs_budget:
    input:
        **FIG_INPUTS,
    output:
        figure_outputs("depth_vs_budget"),
    log:
        "logs/figures/depth_vs_budget.log",
    benchmark:
        bench(figure_files("depth_vs_budget")[0])
    conda:
        CONDA_ENV
    params:
        args=FIG_ARGS,
    shell:
        "python -m workflow_scripts.biencoder.report.figures depth_vs_budget {params.args} --out {output}"
        " > {log} 2>&1"


rule figure_per_benchmark_degradation:
    input:
        **FIG_INPUTS,
    output:
        figure_outputs("per_benchmark_degradation"),
    log:
        "logs/figures/per_benchmark_degradation.log",
    benchmark:
        bench(figure_files("per_benchmark_degradation")[0])
    conda:
        CONDA_ENV
    params:
        args=FIG_ARGS,
        pair=" ".join(BUDGET_PAIR),
    shell:
        "python -m workflow_scripts.biencoder.report.figures per_benchmark_degradation {params.args}"
        " --pair {params.pair} --out {output} > {log} 2>&1"


rule figure_seed_variance:
    input:
        **FIG_INPUTS,
    output:
        figure_outputs("seed_variance"),
    log:
        "logs/figures/seed_variance.log",
    benchmark:
        bench(figure_files("seed_variance")[0])
    conda:
        CONDA_ENV
    params:
        args=FIG_ARGS,
    shell:
        "python -m workflow_scripts.biencoder.report.figures seed_variance {params.args} --out {output}"
        " > {log} 2>&1"


rule figure_pareto:
    input:
        **FIG_INPUTS,
        latency="results/latency/ladder.parquet",
    output:
        figure_outputs("pareto"),
    log:
        "logs/figures/pareto.log",
    benchmark:
        bench(figure_files("pareto")[0])
    conda:
        CONDA_ENV
    params:
        args=FIG_ARGS,
    shell:
        "python -m workflow_scripts.biencoder.report.figures pareto {params.args} --latency {input.latency}"
        " --out {output} > {log} 2>&1"


rule figure_learning_curves:
    input:
        stats=expand("results/stats/{table}.parquet", table=["curves", "curves_onset"]),
        code=code("biencoder.report.figures"),
    output:
        figure_outputs("learning_curves"),
    log:
        "logs/figures/learning_curves.log",
    benchmark:
        bench(figure_files("learning_curves")[0])
    conda:
        CONDA_ENV
    params:
        args=FIG_ARGS,
    shell:
        "python -m workflow_scripts.biencoder.report.figures learning_curves {params.args}"
        " --out {output} > {log} 2>&1"


rule figure_quality_vs_compute:
    input:
        stats=expand("results/stats/{table}.parquet", table=["ci", "compute"]),
        code=code("biencoder.report.figures"),
    output:
        figure_outputs("quality_vs_compute"),
    log:
        "logs/figures/quality_vs_compute.log",
    benchmark:
        bench(figure_files("quality_vs_compute")[0])
    conda:
        CONDA_ENV
    params:
        args=FIG_ARGS,
    shell:
        "python -m workflow_scripts.biencoder.report.figures quality_vs_compute {params.args}"
        " --out {output} > {log} 2>&1"
