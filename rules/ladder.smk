# The depth ladder (docs/ladder.md): train the last k of L residual blocks of a ResMLP with
# BP, FA or DFA; one job per (config, method, k, seed), each writing one parquet atomically,
# so an interrupted ladder resumes where it stopped (batch_seeds: one job per (config,
# method, k) for all seeds; batch_methods: one per (config, k, seed) for all methods; both:
# one per (config, k)). Then stats, identity check, figure and the markdown summary
# that the report rule pastes into results/RESULTS.md.
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
# A digits run is shorter than importing torch: batch_methods and batch_seeds put a (config,
# k)'s methods and seeds in one job (files in method-major order: the CLI's --out order).
_BATCH = {"method": LADDER["batch_methods"], "seed": LADDER["batch_seeds"]}
LADDER_TRAIN_OUT = [LADDER_RUN]
if _BATCH["method"]:
    LADDER_TRAIN_OUT = expand(LADDER_RUN, method=LADDER["methods"], allow_missing=True)
if _BATCH["seed"]:
    LADDER_TRAIN_OUT = [
        f
        for o in LADDER_TRAIN_OUT
        for f in expand(o, seed=LADDER_SEEDS, allow_missing=True)
    ]
_LOG = ["logs", "ladder", "train", "{arch}", "{method}", "k{k}", "seed{seed}"]
_LOG = [p for p in _LOG if not (p == "{method}" and _BATCH["method"])]
_LOG = [p for p in _LOG if not (p == "seed{seed}" and _BATCH["seed"])]
LADDER_TRAIN_LOG = os.path.join(*_LOG) + ".log"
LADDER_STANDALONE_OUT = expand(
    LADDER_STANDALONE_RUN, seed=LADDER_SEEDS, allow_missing=True
)
# Wildcard values: only configured names match, so params never see an unknown config.
LADDER_ARCH_RE = "|".join(map(re.escape, LADDER_ARCHS))
LADDER_METHOD_RE = "|".join(map(re.escape, LADDER["methods"]))
LADDER_KIND_RE = "|".join(KINDS)

# Target lists (no functions here: `snakemake --lint` flags functions next to rules).
LADDER_RUNS = [
    LADDER_RUN.format(arch=a, method=m, k=k, seed=s)
    for a, c in LADDER_ARCHS.items()
    for m in LADDER["methods"]
    for k in range(c["L"] + 1)
    for s in LADDER_SEEDS
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
LADDER_OUTPUTS = [
    "results/ladder/table.parquet",
    "results/ladder/comparisons.parquet",
    "results/ladder/crosscheck.parquet",
    "results/ladder/identity.json",
    *LADDER_FIGURES,
    "results/ladder/summary.md",
]
# Rule -> its jobs' benchmarks, one per job, each named after the job's first output (for a
# job that runs several methods or seeds, the first one's file); the usage rule reads them.
_FIRST_SEED = f"seed{LADDER_SEEDS[0]}.parquet"
LADDER_BENCHMARKS = {
    "ladder_download_cifar10": [bench(LADDER_TARBALL)] if LADDER_CIFAR else [],
    "ladder_prepare": [bench(LADDER_DATA)],
    "ladder_train": [
        bench(LADDER_RUN.format(arch=a, method=m, k=k, seed=s))
        for a, c in LADDER_ARCHS.items()
        for m in (LADDER["methods"][:1] if _BATCH["method"] else LADDER["methods"])
        for k in range(c["L"] + 1)
        for s in (LADDER_SEEDS[:1] if _BATCH["seed"] else LADDER_SEEDS)
    ],
    "ladder_standalone": [
        bench(s) for s in LADDER_STANDALONE if os.path.basename(s) == _FIRST_SEED
    ],
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


# Ladder runs; ladder_standalone below reuses this rule for the cross-check's runs.
rule ladder_train:
    input:
        data=LADDER_DATA,
        code=code("ladder.train"),
    output:
        LADDER_TRAIN_OUT,
    log:
        LADDER_TRAIN_LOG,
    benchmark:
        bench(LADDER_TRAIN_OUT[0])
    wildcard_constraints:
        arch=LADDER_ARCH_RE,
        method=LADDER_METHOD_RE,
        k="[0-9]+",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=LADDER_RES["train_mb"],
        runtime=LADDER_RES["run_min"] * len(LADDER_TRAIN_OUT),
        gpu=0,
    params:
        run=lambda wc: (
            f"ladder --method {wc.get('method') or ' '.join(LADDER['methods'])} --k {wc.k}"
        ),
        d=lambda wc: LADDER_ARCHS[wc.arch]["d"],
        L=lambda wc: LADDER_ARCHS[wc.arch]["L"],
        seeds=lambda wc: wc.get("seed") or " ".join(map(str, LADDER_SEEDS)),
        settings=settings_json("LadderTrain"),
    shell:
        "python -m workflow_scripts.ladder.train {params.run} --data {input.data}"
        " --config {wildcards.arch} --d {params.d} --blocks {params.L} --seeds {params.seeds}"
        " --settings-json {params.settings:q} --threads {threads} --out {output} > {log} 2>&1"


# The cross-check's standalone runs: one job per (config, kind) runs every seed.
use rule ladder_train as ladder_standalone with:
    output:
        LADDER_STANDALONE_OUT,
    log:
        "logs/ladder/standalone/{arch}/{kind}.log",
    benchmark:
        bench(LADDER_STANDALONE_OUT[0])
    wildcard_constraints:
        arch=LADDER_ARCH_RE,
        kind=LADDER_KIND_RE,
    resources:
        mem_mb=LADDER_RES["train_mb"],
        runtime=LADDER_RES["run_min"] * len(LADDER_STANDALONE_OUT),
        gpu=0,
    params:
        run=lambda wc: f"standalone --kind {wc.kind}",
        seeds=" ".join(map(str, LADDER_SEEDS)),


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
