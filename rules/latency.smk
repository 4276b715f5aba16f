# Latency: all depths in one process per run; each run is its own job. A run takes every
# core (threads=workflow.cores) so that no other job of this workflow runs beside it.

LAT = config["latency"]


rule latency_run:
    input:
        code=CODE("workflow_scripts/latency.py", "workflow_scripts/models.py"),
    output:
        "results/latency/run{r}.parquet",
    log:
        "logs/latency/run{r}.log",
    conda:
        CONDA_ENV
    threads: workflow.cores
    resources:
        mem_mb=4000,
        runtime=30,
        gpu=1,
    params:
        base=config["base_model"],
        depths=" ".join(map(str, DEPTHS)),
        strategy=STRATEGIES[0],
        args=(
            f"--batch-size {LAT['batch_size']} --seq-len {LAT['seq_len']}"
            f" --warmup-calls {LAT['warmup_calls']} --rounds {LAT['rounds']}"
            f" --calls-per-round {LAT['calls_per_round']}"
        ),
    shell:
        "python -m workflow_scripts.latency profile --base {params.base:q} --strategy {params.strategy}"
        " --depths {params.depths} --run {wildcards.r} {params.args} --threads {threads}"
        " --out {output} > {log} 2>&1"


rule latency_summary:
    input:
        runs=latency_runs(),
        code=CODE("workflow_scripts/latency.py"),
    output:
        "results/latency/summary.parquet",
    log:
        "logs/latency/summary.log",
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.latency summary --runs {input.runs} --out {output}"
        " > {log} 2>&1"
