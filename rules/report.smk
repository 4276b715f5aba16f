# Report: results/<study>/RESULTS.md with every number generated; `snakemake --report` adds the
# figures registered in figures.smk. The usage rule sums every job's record (core/launch.py:
# wall time, CPU time, peak memory) per rule for the report's cost table; usage and report
# are measured too, but run after that table, so their records stand beside it.


rule usage:
    input:
        planned=[p for p in PLAN.measured() if p != PATHS.RESULTS],
        code=code("core.usage"),
    output:
        PATHS.USAGE,
    log:
        PATHS.log("usage"),
    localrule: True
    conda:
        CONDA_ENV
    shell:
        run_stage(
            f"core.usage --records {PATHS.records} --planned {{input.planned}} --out {{output}}",
        )


rule report:
    input:
        stats=PLAN.stats_tables(),
        latency_summary=PATHS.LATENCY_SUMMARY,
        latency_ladder=PATHS.LATENCY_LADDER,
        latency_coherence=PATHS.LATENCY_COHERENCE,
        usage=PATHS.USAGE,
        cards=PLAN.data_cards(),
        extra=[PATHS.LADDER_SUMMARY] if PLAN.has_ladder else [],
        claims=PATHS.CLAIMS_MD if PLAN.has_claims else [],
        figures=[f for name in PLAN.figures() for f in PLAN.figure_files(name)],
        code=code("biencoder.report.results"),
    output:
        report(PATHS.RESULTS, caption="../docs/report/results.rst", category="Results"),
    log:
        PATHS.log("report"),
    localrule: True
    conda:
        CONDA_ENV
    params:
        claims=f"--claims {PATHS.CLAIMS_MD}" if PLAN.has_claims else "",
        curves="--curves" if PLAN.curve_recipes else "",
        dims="--dims" if PLAN.dims else "",
    shell:
        run_stage(
            f"biencoder.report.results --stats-dir {PATHS.STATS_DIR} --latency-summary"
            " {input.latency_summary} --latency-ladder {input.latency_ladder}"
            " --latency-coherence {input.latency_coherence} --usage {input.usage} --cards"
            " {input.cards} --extra {input.extra} {params.claims} {params.curves}"
            " {params.dims} --compute --out {output}",
        )
