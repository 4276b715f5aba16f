# Latency: all depths in one process per run; each run is its own job. A run takes every
# core (threads=all_cores()) so that no other job of this workflow runs beside it; torch
# itself uses latency.threads of them (default 1: see config/README.md).
# latency_summary fits every run's relative ladder (drift-free), checks it for physical
# coherence and writes the canonical ladder (median over the coherent runs) that the Pareto
# figure, the report and the latency claims use.


rule latency_run:
    input:
        code=code("biencoder.latency.profile"),
    output:
        PATHS.LATENCY_RUN,
    log:
        PATHS.log("latency_run/run{r}"),
    conda:
        CONDA_ENV
    threads: all_cores()
    resources:
        mem_mb=4000,
        runtime=30,
        gpu=1,
    params:
        base=config["base_model"],
        depths=" ".join(map(str, PLAN.depths)),
        strategy=PLAN.strategies[0],
        settings=settings_json("LatencyProfile"),
        torch_threads=lambda wc, threads: (
            threads
            if config["latency"]["threads"] == "all"
            else config["latency"]["threads"]
        ),
    shell:
        run_stage(
            "biencoder.latency.profile --base {params.base:q} --strategy {params.strategy}"
            " --depths {params.depths} --run {wildcards.r} --threads {params.torch_threads}"
            " --settings-json {params.settings:q} --out {output}",
        )


rule latency_summary:
    input:
        runs=PLAN.latency_runs(),
        code=code("biencoder.latency.summary"),
    output:
        summary=PATHS.LATENCY_SUMMARY,
        coherence=PATHS.LATENCY_COHERENCE,
        ladder=PATHS.LATENCY_LADDER,
    log:
        PATHS.log("latency_summary"),
    localrule: True
    conda:
        CONDA_ENV
    params:
        settings=settings_json("LatencySummary"),
    shell:
        run_stage(
            "biencoder.latency.summary --runs {input.runs} --settings-json"
            " {params.settings:q} --out {output.summary} --coherence {output.coherence}"
            " --ladder {output.ladder}",
        )
