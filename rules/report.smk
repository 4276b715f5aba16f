# Report: results/RESULTS.md with every number generated; `snakemake --report` adds the
# figures registered in figures.smk.


rule report:
    input:
        stats=expand("results/stats/{table}.parquet", table=STATS_TABLES),
        latency="results/latency/summary.parquet",
        cards=[f"data/beir/{b}/DATACARD.md" for b in BENCHMARKS]
        + [f"data/train/{TRAIN_DATA}.DATACARD.md"],
        extra=REPORT_EXTRAS,
        figures=[f for name in FIGURES for f in figure_files(name)],
        code=CODE("workflow_scripts/report.py"),
    output:
        report(
            "results/RESULTS.md",
            caption="../docs/report/results.rst",
            category="Results",
        ),
    log:
        "logs/report/results.log",
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.report --stats-dir results/stats --latency {input.latency}"
        " --cards {input.cards} --extra {input.extra} --out {output} > {log} 2>&1"
