# The depth ladder (docs/ladder.md): train the last k of L residual blocks of a ResMLP with
# BP, FA or DFA; one job per (config, method, k, seed), each writing one parquet atomically,
# so an interrupted ladder resumes where it stopped (batch_seeds: one job per (config,
# method, k) for its seeds still to run; batch_methods: one per (config, k, seed) for its
# methods; both: one per (config, k); rules/ladder_batch.smk). Then stats, identity check, figure and the markdown summary
# that the report rule pastes into results/RESULTS.md.
from workflow_scripts.core.batching import (
    group_by_todo,
    job_benchmarks,
    ladder_cli,
    ladder_jobs,
)
from workflow_scripts.ladder import CIFAR_DIR, CIFAR_TEST, CIFAR_TRAIN, KINDS

LADDER = config["ladder"]
LADDER_SEEDS = LADDER["seeds"]
LADDER_DATASET = LADDER["dataset"]["name"]
LADDER_DATA = f"data/ladder/{LADDER_DATASET}.npz"
LADDER_ARCHS = {c["name"]: c for c in LADDER["configs"]}  # names: unique (configcheck)
# Resources by dataset: memory of the jobs that hold the data and of training, and the
# minutes of one training run (a job's runtime is that times its seeds).
LADDER_RES = {
    "digits": {"data_mb": 1000, "train_mb": 1000, "run_min": 10},
    "cifar10": {"data_mb": 4000, "train_mb": 6000, "run_min": 360},
}[LADDER_DATASET]
LADDER_CIFAR = LADDER_DATASET == "cifar10"
LADDER_TARBALL = f"data/ladder/{os.path.basename(LADDER['dataset']['url'])}"
LADDER_BIN_DIR = f"data/ladder/cifar10/{CIFAR_DIR}"
LADDER_BINS = [f"{LADDER_BIN_DIR}/{name}" for name in [*CIFAR_TRAIN, CIFAR_TEST]]

LADDER_RUN = "results/ladder/runs/{arch}/{method}/k{k}/seed{seed}.parquet"
LADDER_STANDALONE_RUN = "results/ladder/standalone/{arch}/{kind}/seed{seed}.parquet"
# Wildcard values: only configured names match, so params never see an unknown config.
LADDER_ARCH_RE = "|".join(map(re.escape, LADDER_ARCHS))
LADDER_METHOD_RE = "|".join(map(re.escape, LADDER["methods"]))
LADDER_KIND_RE = "|".join(KINDS)

# Target lists (no functions here: `snakemake --lint` flags functions next to rules).
LADDER_RUN_KEYS = [
    (a, k, m, s)
    for a, c in LADDER_ARCHS.items()
    for m in LADDER["methods"]
    for k in range(c["L"] + 1)
    for s in LADDER_SEEDS
]
LADDER_RUNS = [
    LADDER_RUN.format(arch=a, method=m, k=k, seed=s) for a, k, m, s in LADDER_RUN_KEYS
]
LADDER_K0_RUNS = [r for r in LADDER_RUNS if "/k0/" in r]
LADDER_STANDALONE = (
    expand(
        LADDER_STANDALONE_RUN, arch=list(LADDER_ARCHS), kind=KINDS, seed=LADDER_SEEDS
    )
    if LADDER["crosscheck"]
    else []
)
# The figure in every figures.formats (the config check fills it in for a ladder-only config).
LADDER_FIGURES = [
    f"results/figures/depth_ladder.{fmt}" for fmt in config["figures"]["formats"]
]
# A digits run is shorter than importing torch: batch_methods and batch_seeds put a (config,
# k)'s runs still to do (output missing) in one ladder_train_batch job, and batch_seeds the
# cross-check's seeds in one ladder_standalone_batch job (core/batching.py); finished runs are
# never in one, and every run keeps its own params, so batching decides nothing but which
# runs share a process. Keys: (config, methods, seeds) -> the k values; (config, seeds) ->
# the kinds.
LADDER_BATCHES, LADDER_STANDALONE_BATCHES = {}, {}
for _a, _k, _m, _s in ladder_jobs(
    [
        (a, k, m, s)
        for a, k, m, s in LADDER_RUN_KEYS
        if not os.path.exists(LADDER_RUN.format(arch=a, method=m, k=k, seed=s))
    ],
    LADDER["batch_methods"],
    LADDER["batch_seeds"],
):
    LADDER_BATCHES.setdefault((_a, tuple(_m), tuple(_s)), []).append(_k)
for _s, _units in group_by_todo(
    {
        (a, kind): [
            s
            for s in LADDER_SEEDS
            if LADDER["crosscheck"]
            and LADDER["batch_seeds"]
            and not os.path.exists(
                LADDER_STANDALONE_RUN.format(arch=a, kind=kind, seed=s)
            )
        ]
        for a in LADDER_ARCHS
        for kind in KINDS
    }
):
    for _a, _kind in _units:
        LADDER_STANDALONE_BATCHES.setdefault((_a, _s), []).append(_kind)
# One command for every ladder training rule: a changed command text reruns what another
# rule made. The run, its config and seeds derive from the outputs (not params).
LADDER_SHELL = (
    "python -m workflow_scripts.ladder.train {params.run} --data {input.data}"
    " --config {params.arch} --d {params.d} --blocks {params.L} --seeds {params.seeds}"
    " --settings-json {params.settings:q} --threads {threads} --out {output} > {log} 2>&1"
)
LADDER_OUTPUTS = [
    "results/ladder/table.parquet",
    "results/ladder/comparisons.parquet",
    "results/ladder/crosscheck.parquet",
    "results/ladder/identity.json",
    *LADDER_FIGURES,
    "results/ladder/summary.md",
]
# Rule -> its jobs' benchmarks, one per job, each named after the job's first output (a
# batched job's: its first run's); the usage rule reads them.
LADDER_BENCHMARKS = {
    "ladder_download_cifar10": [bench(LADDER_TARBALL)] if LADDER_CIFAR else [],
    "ladder_prepare": [bench(LADDER_DATA)],
    "ladder_train": job_benchmarks(
        LADDER_RUNS,
        [
            [LADDER_RUN.format(arch=a, method=m, k=k, seed=s) for m in ms for s in ss]
            for (a, ms, ss), ks in LADDER_BATCHES.items()
            for k in ks
        ],
        {r for r in LADDER_RUNS if not os.path.exists(r)},
        bench,
    ),
    "ladder_standalone": job_benchmarks(
        LADDER_STANDALONE,
        [
            [LADDER_STANDALONE_RUN.format(arch=a, kind=kind, seed=s) for s in ss]
            for (a, ss), kinds in LADDER_STANDALONE_BATCHES.items()
            for kind in kinds
        ],
        {r for r in LADDER_STANDALONE if not os.path.exists(r)},
        bench,
    ),
    "ladder_identity": [bench("results/ladder/identity.json")],
    "ladder_stats": [bench("results/ladder/table.parquet")],
    "ladder_figure": [bench(LADDER_FIGURES[0])],
    "ladder_summary": [bench("results/ladder/summary.md")],
}


localrules:
    ladder,
    ladder_download_cifar10,
    ladder_stats,
    ladder_figure,
    ladder_summary,


rule ladder:
    input:
        LADDER_OUTPUTS,


rule ladder_download_cifar10:
    input:
        code("ladder.data"),
    output:
        tarball=LADDER_TARBALL,
        bins=LADDER_BINS,
    log:
        "logs/ladder/download_cifar10.log",
    benchmark:
        bench(LADDER_TARBALL)
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=1000,
    params:
        url=LADDER["dataset"]["url"],
        md5=LADDER["dataset"]["md5"],
    shell:
        "python -m workflow_scripts.ladder.data download --out-dir data/ladder/cifar10"
        " --url {params.url:q} --md5 {params.md5} > {log} 2>&1"


rule ladder_prepare:
    input:
        code=code("ladder.data"),
        bins=LADDER_BINS if LADDER_CIFAR else [],
    output:
        LADDER_DATA,
    log:
        f"logs/ladder/prepare_{LADDER_DATASET}.log",
    benchmark:
        bench(LADDER_DATA)
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=LADDER_RES["data_mb"],
    params:
        name=LADDER_DATASET,
        bin_dir=f"--bin-dir {LADDER_BIN_DIR}" if LADDER_CIFAR else "",
        settings=settings_json("LadderData"),
    shell:
        "python -m workflow_scripts.ladder.data prepare --name {params.name} {params.bin_dir}"
        " --settings-json {params.settings:q} --out {output} > {log} 2>&1"


# Ladder runs, one per job; ladder_standalone below reuses this rule for the cross-check's
# runs, and the batched rules after it run several in one process.
rule ladder_train:
    input:
        data=LADDER_DATA,
        code=code("ladder.train"),
    output:
        LADDER_RUN,
    log:
        "logs/ladder/train/{arch}/{method}/k{k}/seed{seed}.log",
    benchmark:
        bench(LADDER_RUN)
    wildcard_constraints:
        arch=LADDER_ARCH_RE,
        method=LADDER_METHOD_RE,
        k="[0-9]+",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=LADDER_RES["train_mb"],
        runtime=LADDER_RES["run_min"],
        gpu=0,
    params:
        run=lambda wc, output: ladder_cli(output)["run"],
        arch=lambda wc, output: ladder_cli(output)["arch"],
        seeds=lambda wc, output: ladder_cli(output)["seeds"],
        d=lambda wc: LADDER_ARCHS[wc.arch]["d"],
        L=lambda wc: LADDER_ARCHS[wc.arch]["L"],
        settings=settings_json("LadderTrain"),
    shell:
        LADDER_SHELL


# The cross-check's standalone runs, one per job (batch_seeds: rules/ladder_batch.smk).
use rule ladder_train as ladder_standalone with:
    output:
        LADDER_STANDALONE_RUN,
    log:
        "logs/ladder/standalone/{arch}/{kind}/seed{seed}.log",
    benchmark:
        bench(LADDER_STANDALONE_RUN)
    wildcard_constraints:
        arch=LADDER_ARCH_RE,
        kind=LADDER_KIND_RE,


rule ladder_identity:
    input:
        data=LADDER_DATA,
        runs=LADDER_K0_RUNS,
        code=code("ladder.identity"),
    output:
        "results/ladder/identity.json",
    log:
        "logs/ladder/identity.log",
    benchmark:
        bench("results/ladder/identity.json")
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=LADDER_RES["data_mb"],
        runtime=30,
    params:
        configs=" ".join(
            f"--config {a}:{c['d']}:{c['L']}" for a, c in LADDER_ARCHS.items()
        ),
        seeds=" ".join(map(str, LADDER_SEEDS)),
    shell:
        "python -m workflow_scripts.ladder.identity --data {input.data} {params.configs}"
        " --seeds {params.seeds} --runs {input.runs} --threads {threads} --out {output}"
        " > {log} 2>&1"


rule ladder_stats:
    input:
        runs=LADDER_RUNS,
        standalone=LADDER_STANDALONE,
        code=code("ladder.stats"),
    output:
        table="results/ladder/table.parquet",
        comparisons="results/ladder/comparisons.parquet",
        crosscheck="results/ladder/crosscheck.parquet",
    log:
        "logs/ladder/stats.log",
    benchmark:
        bench("results/ladder/table.parquet")
    conda:
        CONDA_ENV
    threads: 2  # the Multi-Bootstrap engine computes two groups of samples at once
    resources:
        mem_mb=2000,
    params:
        settings=settings_json("LadderStats"),
    shell:
        "python -m workflow_scripts.ladder.stats --runs {input.runs} --standalone {input.standalone}"
        " --settings-json {params.settings:q} --threads {threads} --table {output.table}"
        " --comparisons {output.comparisons} --crosscheck {output.crosscheck} > {log} 2>&1"


rule ladder_figure:
    input:
        table="results/ladder/table.parquet",
        code=code("ladder.report"),
    output:
        [
            report(p, caption="../docs/report/depth_ladder.rst", category="Ladder")
            for p in LADDER_FIGURES
        ],
    log:
        "logs/ladder/figure.log",
    benchmark:
        bench(LADDER_FIGURES[0])
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
    shell:
        "python -m workflow_scripts.ladder.report figure --table {input.table} --out {output}"
        " > {log} 2>&1"


rule ladder_summary:
    input:
        table="results/ladder/table.parquet",
        comparisons="results/ladder/comparisons.parquet",
        crosscheck="results/ladder/crosscheck.parquet",
        identity="results/ladder/identity.json",
        code=code("ladder.report"),
    output:
        "results/ladder/summary.md",
    log:
        "logs/ladder/summary.log",
    benchmark:
        bench("results/ladder/summary.md")
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
    shell:
        "python -m workflow_scripts.ladder.report summary --table {input.table}"
        " --comparisons {input.comparisons} --crosscheck {input.crosscheck}"
        " --identity {input.identity} --out {output} > {log} 2>&1"
