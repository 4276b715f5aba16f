# The depth ladder (docs/ladder.md): train the last k of L residual blocks of a ResMLP with
# BP, FA or DFA; one job per (config, method, k, seed), each writing one parquet atomically,
# so an interrupted ladder resumes where it stopped (batch_seeds: one job per (config,
# method, k) for all seeds). Then stats, identity check, figure and
# the markdown summary that the report rule pastes into results/RESULTS.md.

LADDER = config["ladder"]
LADDER_DATASET = LADDER["dataset"]["name"]
LADDER_DATA = f"data/ladder/{LADDER_DATASET}.npz"
LADDER_ARCHS = {c["name"]: c for c in LADDER["configs"]}
if len(LADDER_ARCHS) != len(LADDER["configs"]):
    config_error("ladder.configs", "config names must be unique")
LADDER_CIFAR_BINS = [
    f"data/ladder/cifar10/cifar-10-batches-bin/{b}.bin"
    for b in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
]
LADDER_BIG = LADDER_DATASET == "cifar10"
LADDER_CODE = CODE(
    "workflow_scripts/contracts.py",
    "workflow_scripts/ladder/__init__.py",
    "workflow_scripts/ladder/data.py",
    "workflow_scripts/ladder/model.py",
    "workflow_scripts/ladder/methods.py",
    "workflow_scripts/ladder/runs.py",
    "workflow_scripts/ladder/train.py",
)
LADDER_STATS_CODE = CODE(
    "workflow_scripts/contracts.py",
    "workflow_scripts/multibootstrap.py",
    "workflow_scripts/ladder/runs.py",
    "workflow_scripts/ladder/stats.py",
)
LADDER_REPORT_CODE = CODE(
    "workflow_scripts/contracts.py", "workflow_scripts/ladder/report.py"
)
_T = LADDER["train"]
LADDER_TRAIN_ARGS = (
    f"--epochs {_T['epochs']} --batch-size {_T['batch_size']} --lr {_T['lr']}"
    f" --weight-decay {_T['weight_decay']} --device {_T['device']}"
)


# One job per run, or with batch_seeds one job per (config, method, k) writing every seed's
# file: a digits run is shorter than importing torch.
if LADDER["batch_seeds"]:
    LADDER_TRAIN_OUT = expand(
        "results/ladder/runs/{{arch}}/{{method}}/k{{k}}/seed{seed}.parquet",
        seed=LADDER["seeds"],
    )
    LADDER_TRAIN_LOG = "logs/ladder/train/{arch}/{method}/k{k}.log"
    LADDER_SEEDS_PER_JOB = len(LADDER["seeds"])
else:
    LADDER_TRAIN_OUT = "results/ladder/runs/{arch}/{method}/k{k}/seed{seed}.parquet"
    LADDER_TRAIN_LOG = "logs/ladder/train/{arch}/{method}/k{k}/seed{seed}.log"
    LADDER_SEEDS_PER_JOB = 1

# Target lists (no functions here: `snakemake --lint` flags functions next to rules).
LADDER_RUNS = [
    f"results/ladder/runs/{a}/{m}/k{k}/seed{s}.parquet"
    for a, c in LADDER_ARCHS.items()
    for m in LADDER["methods"]
    for k in range(c["L"] + 1)
    for s in LADDER["seeds"]
]
LADDER_K0_RUNS = [r for r in LADDER_RUNS if "/k0/" in r]
LADDER_STANDALONE = [
    f"results/ladder/standalone/{a}/{kind}/seed{s}.parquet"
    for a in LADDER_ARCHS
    for kind in ["frozen", "full"]
    for s in LADDER["seeds"]
    if LADDER["crosscheck"]
]
# Only configured names match, so the params lambdas below never see an unknown config.
LADDER_ARCH_RE = "|".join(map(re.escape, LADDER_ARCHS))
LADDER_OUTPUTS = [
    "results/ladder/table.parquet",
    "results/ladder/comparisons.parquet",
    "results/ladder/crosscheck.parquet",
    "results/ladder/identity.json",
    "results/figures/depth_ladder.png",
    "results/ladder/summary.md",
]


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
        CODE("workflow_scripts/download.py", "workflow_scripts/ladder/data.py"),
    output:
        tarball="data/ladder/cifar-10-binary.tar.gz",
        bins=LADDER_CIFAR_BINS,
    log:
        "logs/ladder/download_cifar10.log",
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
        " --url {params.url} --md5 {params.md5} > {log} 2>&1"


rule ladder_prepare:
    input:
        code=LADDER_CODE,
        bins=lambda wc: LADDER_CIFAR_BINS if wc.dataset == "cifar10" else [],
    output:
        "data/ladder/{dataset}.npz",
    log:
        "logs/ladder/prepare_{dataset}.log",
    wildcard_constraints:
        dataset="digits|cifar10",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=4000 if LADDER_BIG else 1000,
    params:
        bin_dir=lambda wc: (
            "--bin-dir data/ladder/cifar10/cifar-10-batches-bin"
            if wc.dataset == "cifar10"
            else ""
        ),
        sizes=" ".join(
            f"--{k.replace('_', '-')} {LADDER['dataset'][k]}"
            for k in ("n_train", "n_test", "split_seed")
            if LADDER["dataset"][k] is not None
        ),
    shell:
        "python -m workflow_scripts.ladder.data prepare --name {wildcards.dataset} {params.bin_dir}"
        " {params.sizes} --out {output} > {log} 2>&1"


rule ladder_train:
    input:
        data=LADDER_DATA,
        code=LADDER_CODE,
    output:
        LADDER_TRAIN_OUT,
    log:
        LADDER_TRAIN_LOG,
    wildcard_constraints:
        arch=LADDER_ARCH_RE,
        method="bp|fa|dfa",
        k="[0-9]+",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=6000 if LADDER_BIG else 1000,
        runtime=(360 if LADDER_BIG else 10) * LADDER_SEEDS_PER_JOB,
        gpu=0,
    params:
        d=lambda wc: LADDER_ARCHS[wc.arch]["d"],
        L=lambda wc: LADDER_ARCHS[wc.arch]["L"],
        seeds=lambda wc: wc.get("seed") or " ".join(map(str, LADDER["seeds"])),
        train=LADDER_TRAIN_ARGS,
    shell:
        "python -m workflow_scripts.ladder.train ladder --data {input.data}"
        " --config {wildcards.arch} --d {params.d} --blocks {params.L}"
        " --method {wildcards.method} --k {wildcards.k} --seeds {params.seeds} {params.train}"
        " --threads {threads} --out {output} > {log} 2>&1"


rule ladder_standalone:
    input:
        data=LADDER_DATA,
        code=LADDER_CODE,
    output:
        expand(
            "results/ladder/standalone/{{arch}}/{{kind}}/seed{seed}.parquet",
            seed=LADDER["seeds"],
        ),
    log:
        "logs/ladder/standalone/{arch}/{kind}.log",
    wildcard_constraints:
        arch=LADDER_ARCH_RE,
        kind="frozen|full",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=6000 if LADDER_BIG else 1000,
        runtime=(360 if LADDER_BIG else 10) * len(LADDER["seeds"]),
        gpu=0,
    params:
        d=lambda wc: LADDER_ARCHS[wc.arch]["d"],
        L=lambda wc: LADDER_ARCHS[wc.arch]["L"],
        seeds=" ".join(map(str, LADDER["seeds"])),
        train=LADDER_TRAIN_ARGS,
    shell:
        "python -m workflow_scripts.ladder.train standalone --data {input.data}"
        " --config {wildcards.arch} --d {params.d} --blocks {params.L} --kind {wildcards.kind}"
        " --seeds {params.seeds} {params.train} --threads {threads} --out {output} > {log} 2>&1"


rule ladder_identity:
    input:
        data=LADDER_DATA,
        runs=LADDER_K0_RUNS,
        code=LADDER_CODE + CODE("workflow_scripts/ladder/identity.py"),
    output:
        "results/ladder/identity.json",
    log:
        "logs/ladder/identity.log",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=4000 if LADDER_BIG else 1000,
        runtime=30,
    params:
        configs=" ".join(
            f"--config {a}:{c['d']}:{c['L']}" for a, c in LADDER_ARCHS.items()
        ),
        seeds=" ".join(map(str, LADDER["seeds"])),
    shell:
        "python -m workflow_scripts.ladder.identity --data {input.data} {params.configs}"
        " --seeds {params.seeds} --runs {input.runs} --threads {threads} --out {output}"
        " > {log} 2>&1"


rule ladder_stats:
    input:
        runs=LADDER_RUNS,
        standalone=LADDER_STANDALONE,
        code=LADDER_STATS_CODE,
    output:
        table="results/ladder/table.parquet",
        comparisons="results/ladder/comparisons.parquet",
        crosscheck="results/ladder/crosscheck.parquet",
    log:
        "logs/ladder/stats.log",
    conda:
        CONDA_ENV
    threads: 2  # the Multi-Bootstrap engine computes two groups of samples at once
    resources:
        mem_mb=2000,
    params:
        nboot=LADDER["stats"]["nboot"],
        ci=LADDER["stats"]["ci"],
        seed=LADDER["stats"]["seed"],
    shell:
        "python -m workflow_scripts.ladder.stats --runs {input.runs} --standalone {input.standalone}"
        " --nboot {params.nboot} --ci {params.ci} --seed {params.seed} --table {output.table}"
        " --comparisons {output.comparisons} --crosscheck {output.crosscheck} > {log} 2>&1"


rule ladder_figure:
    input:
        table="results/ladder/table.parquet",
        code=LADDER_REPORT_CODE,
    output:
        report(
            "results/figures/depth_ladder.png",
            caption="../docs/report/depth_ladder.rst",
            category="Ladder",
        ),
    log:
        "logs/ladder/figure.log",
    conda:
        CONDA_ENV
    threads: 1
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
        code=LADDER_REPORT_CODE,
    output:
        "results/ladder/summary.md",
    log:
        "logs/ladder/summary.log",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=1000,
    shell:
        "python -m workflow_scripts.ladder.report summary --table {input.table}"
        " --comparisons {input.comparisons} --crosscheck {input.crosscheck}"
        " --identity {input.identity} --out {output} > {log} 2>&1"
