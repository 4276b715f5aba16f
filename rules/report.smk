# Report: results/RESULTS.md with every number generated; `snakemake --report` adds the
# figures registered in figures.smk. The usage rule sums every job's Snakemake benchmark
# (wall time, peak memory) per rule for the report's cost table; usage and report are
# measured too, but run after that table, so their files stand beside it.

USAGE = biencoder_benchmarks()
if HAS_LADDER:
    USAGE.update(LADDER_BENCHMARKS)
if HAS_CLAIMS:
    USAGE.update(CLAIMS_BENCHMARKS)


rule usage:
    input:
        files=[f for files in USAGE.values() for f in files],
        code=code("core.usage"),
    output:
        "results/usage.parquet",
    log:
        "logs/report/usage.log",
    benchmark:
        bench("results/usage.parquet")
    conda:
        CONDA_ENV
    params:
        rules=" ".join(rule for rule, files in USAGE.items() for _ in files),
    shell:
        "python -m workflow_scripts.core.usage --files {input.files} --rules {params.rules}"
        " --out {output} > {log} 2>&1"


rule report:
    input:
        stats=expand(
            "results/stats/{table}.parquet", table=[*STATS_TABLES, *COMPUTE_TABLES]
        ),
        curves=(
            expand("results/stats/{table}.parquet", table=CURVE_TABLES)
            if CURVE_RECIPES
            else []
        ),
        latency_summary="results/latency/summary.parquet",
        latency_ladder="results/latency/ladder.parquet",
        latency_coherence="results/latency/coherence.json",
        usage="results/usage.parquet",
        cards=[f"data/beir/{b}/DATACARD.md" for b in BENCHMARKS]
        + [f"data/train/{TRAIN_DATA}.DATACARD.md"],
        extra=REPORT_EXTRAS,
        claims="results/claims.md" if HAS_CLAIMS else [],
        figures=[f for name in FIGURES for f in figure_files(name)],
        code=code("biencoder.report.results"),
    output:
        report(
            "results/RESULTS.md",
            caption="../docs/report/results.rst",
            category="Results",
        ),
    log:
        "logs/report/results.log",
    benchmark:
        bench("results/RESULTS.md")
    conda:
        CONDA_ENV
    params:
        claims="--claims results/claims.md" if HAS_CLAIMS else "",
        curves="--curves" if CURVE_RECIPES else "",
    shell:
        "python -m workflow_scripts.biencoder.report.results --stats-dir results/stats"
        " --latency-summary {input.latency_summary} --latency-ladder {input.latency_ladder}"
        " --latency-coherence {input.latency_coherence} --usage {input.usage}"
        " --cards {input.cards} --extra {input.extra} {params.claims} {params.curves}"
        " --compute"
        " --out {output} > {log} 2>&1"
