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
        "results/latency/run{r}.parquet",
    log:
        "logs/latency/run{r}.log",
    benchmark:
        bench("results/latency/run{r}.parquet")
    conda:
        CONDA_ENV
    threads: all_cores()
    resources:
        mem_mb=4000,
        runtime=30,
        gpu=1,
    params:
        base=config["base_model"],
        depths=" ".join(map(str, DEPTHS)),
        strategy=STRATEGIES[0],
        settings=settings_json("LatencyProfile"),
        torch_threads=lambda wc, threads: (
            threads
            if config["latency"]["threads"] == "all"
            else config["latency"]["threads"]
        ),
    shell:
        "python -m workflow_scripts.biencoder.latency.profile --base {params.base:q}"
        " --strategy {params.strategy} --depths {params.depths} --run {wildcards.r}"
        " --threads {params.torch_threads} --settings-json {params.settings:q}"
        " --out {output} > {log} 2>&1"


rule latency_summary:
    input:
        runs=latency_runs(),
        code=code("biencoder.latency.summary"),
    output:
        summary="results/latency/summary.parquet",
        coherence="results/latency/coherence.json",
        ladder="results/latency/ladder.parquet",
    log:
        "logs/latency/summary.log",
    benchmark:
        bench("results/latency/summary.parquet")
    conda:
        CONDA_ENV
    params:
        settings=settings_json("LatencySummary"),
    shell:
        "python -m workflow_scripts.biencoder.latency.summary --runs {input.runs}"
        " --settings-json {params.settings:q} --out {output.summary}"
        " --coherence {output.coherence} --ladder {output.ladder} > {log} 2>&1"
