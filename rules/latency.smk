# Latency: all depths in one process per run; each run is its own job. A run takes every
# core (threads=all_cores()) so that no other job of this workflow runs beside it; torch
# itself uses latency.threads of them (default 1: see config/README.md).
# latency_summary checks every run's ladder for physical coherence and writes the
# canonical ladder (median over the coherent runs) that the Pareto figure and the report use.

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
    threads: all_cores()
    resources:
        mem_mb=4000,
        runtime=30,
        gpu=1,
    params:
        base=config["base_model"],
        depths=" ".join(map(str, DEPTHS)),
        strategy=STRATEGIES[0],
        torch_threads=lambda wc, threads: (
            threads if LAT["threads"] == "all" else LAT["threads"]
        ),
        args=(
            f"--batch-size {LAT['batch_size']} --seq-len {LAT['seq_len']}"
            f" --warmup-calls {LAT['warmup_calls']}"
            f" --warmup-max-calls {LAT['warmup_max_calls']}"
            f" --warmup-window {LAT['warmup_window']}"
            f" --warmup-tol {LAT['warmup_tolerance']}"
            f" --rounds {LAT['rounds']} --calls-per-round {LAT['calls_per_round']}"
            f" --discard-calls {LAT['discard_calls']} --encode-calls {LAT['encode_calls']}"
            f" --dtype {LAT['dtype']} --seed {LAT['seed']}"
        ),
    shell:
        "python -m workflow_scripts.latency profile --base {params.base:q} --strategy {params.strategy}"
        " --depths {params.depths} --run {wildcards.r} {params.args} --threads {params.torch_threads}"
        " --out {output} > {log} 2>&1"


rule latency_summary:
    input:
        runs=latency_runs(),
        code=CODE("workflow_scripts/latency.py", "workflow_scripts/coherence.py"),
    output:
        summary="results/latency/summary.parquet",
        coherence="results/latency/coherence.json",
        ladder="results/latency/ladder.parquet",
    log:
        "logs/latency/summary.log",
    conda:
        CONDA_ENV
    params:
        args=f"--nboot {LAT['nboot']} --ci {LAT['ci']} --seed {LAT['seed']}",
    shell:
        "python -m workflow_scripts.latency summary --runs {input.runs} {params.args}"
        " --out {output.summary} --coherence {output.coherence} --ladder {output.ladder}"
        " > {log} 2>&1"
