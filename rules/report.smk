# Report: results/RESULTS.md with every number generated; `snakemake --report` adds the
# figures registered in figures.smk. The usage rule sums every job's record (core/launch.py:
# wall time, CPU time, peak memory) per rule for the report's cost table; usage and report
# are measured too, but run after that table, so their records stand beside it.


rule usage:
    input:
        planned=[p for p in PLAN.measured() if p != paths.RESULTS],
        code=code("core.usage"),
    output:
        paths.USAGE,
    log:
        "logs/usage.log",
    localrule: True
    conda:
        CONDA_ENV
    shell:
        run_stage(
            "core.usage --planned {input.planned} --out {output}",
        )


rule report:
    input:
        stats=PLAN.stats_tables(),
        latency_summary=paths.LATENCY_SUMMARY,
        latency_ladder=paths.LATENCY_LADDER,
        latency_coherence=paths.LATENCY_COHERENCE,
        usage=paths.USAGE,
        cards=PLAN.data_cards(),
        extra=[paths.LADDER_SUMMARY] if PLAN.has_ladder else [],
        claims=paths.CLAIMS_MD if PLAN.has_claims else [],
        figures=[f for name in PLAN.figures() for f in PLAN.figure_files(name)],
        code=code("biencoder.report.results"),
    output:
        report(paths.RESULTS, caption="../docs/report/results.rst", category="Results"),
    log:
        "logs/report.log",
    localrule: True
    conda:
        CONDA_ENV
    params:
        claims=f"--claims {paths.CLAIMS_MD}" if PLAN.has_claims else "",
        curves="--curves" if PLAN.curve_recipes else "",
    shell:
        run_stage(
            "biencoder.report.results --stats-dir results/stats --latency-summary"
            " {input.latency_summary} --latency-ladder {input.latency_ladder}"
            " --latency-coherence {input.latency_coherence} --usage {input.usage} --cards"
            " {input.cards} --extra {input.extra} {params.claims} {params.curves} --compute"
            " --out {output}",
        )
