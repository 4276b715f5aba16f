# Figures: one rule and one target per figure, registered for `snakemake --report` with its
# caption (docs/report/<name>.rst). figure_depth_vs_budget is written out; the others differ
# in the tables they read and the figure's name. `use rule … with:` resets `localrule` to
# False (Snakemake 9.27: RuleInfo's default is False, not None), so each says it again.

FIG_STATS = [paths.STATS_TABLE.format(table=t) for t in ("ci", "seeds", "comparisons")]
FIG_ARGS = f"--stats-dir results/stats --budget-order {' '.join(PLAN.budget_order)}"


rule figure_depth_vs_budget:
    input:
        stats=FIG_STATS,
        code=code("biencoder.report.figures"),
    output:
        figure_outputs("depth_vs_budget"),
    log:
        "logs/figure_depth_vs_budget.log",
    localrule: True
    conda:
        CONDA_ENV
    params:
        name="depth_vs_budget",
        args=FIG_ARGS,
    shell:
        run_stage(
            "biencoder.report.figures {params.name} {params.args} --out {output}",
        )


use rule figure_depth_vs_budget as figure_seed_variance with:
    output:
        figure_outputs("seed_variance"),
    log:
        "logs/figure_seed_variance.log",
    localrule: True
    params:
        name="seed_variance",
        args=FIG_ARGS,


use rule figure_depth_vs_budget as figure_per_benchmark_change with:
    output:
        figure_outputs("per_benchmark_change"),
    log:
        "logs/figure_per_benchmark_change.log",
    localrule: True
    params:
        name="per_benchmark_change",
        args=f"{FIG_ARGS} --pair {' '.join(PLAN.budget_pair)}",


use rule figure_depth_vs_budget as figure_pareto with:
    input:
        stats=FIG_STATS,
        latency=paths.LATENCY_LADDER,
        latency_summary=paths.LATENCY_SUMMARY,
        code=code("biencoder.report.figures"),
    output:
        figure_outputs("pareto"),
    log:
        "logs/figure_pareto.log",
    localrule: True
    params:
        name="pareto",
        args=(
            f"{FIG_ARGS} --latency {paths.LATENCY_LADDER}"
            f" --latency-summary {paths.LATENCY_SUMMARY}"
        ),


use rule figure_depth_vs_budget as figure_learning_curves with:
    input:
        stats=[paths.STATS_TABLE.format(table=t) for t in ("curves", "curves_onset")],
        code=code("biencoder.report.figures"),
    output:
        figure_outputs("learning_curves"),
    log:
        "logs/figure_learning_curves.log",
    localrule: True
    params:
        name="learning_curves",
        args=FIG_ARGS,


use rule figure_depth_vs_budget as figure_quality_vs_compute with:
    input:
        stats=[paths.STATS_TABLE.format(table=t) for t in ("ci", "compute")],
        code=code("biencoder.report.figures"),
    output:
        figure_outputs("quality_vs_compute"),
    log:
        "logs/figure_quality_vs_compute.log",
    localrule: True
    params:
        name="quality_vs_compute",
        args=FIG_ARGS,
