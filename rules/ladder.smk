# The depth ladder (docs/ladder.md): train the last k of L residual blocks of a ResMLP with
# BP, FA or DFA; one job per (config, method, k, seed), each writing one parquet atomically,
# so an interrupted ladder resumes where it stopped. A digits run is shorter than importing
# torch: the runs of a local run share one preloaded interpreter (rules/common.smk). Then
# stats, identity check, figure and the markdown summary that the report pastes into
# the study's RESULTS.md.
from workflow_scripts.ladder import CIFAR_DIR, CIFAR_TEST, CIFAR_TRAIN, KINDS

LADDER = config["ladder"]
LADDER_DATASET = LADDER["dataset"]["name"]
# Resources by dataset: memory of the jobs that hold the data and of training, and the
# minutes of one training run.
LADDER_RES = {
    "digits": {"data_mb": 1000, "train_mb": 1000, "run_min": 10},
    "cifar10": {"data_mb": 4000, "train_mb": 6000, "run_min": 360},
}[LADDER_DATASET]
LADDER_CIFAR = LADDER_DATASET == "cifar10"
LADDER_TARBALL = (
    f"{os.path.dirname(paths.LADDER_DATA)}/{os.path.basename(LADDER['dataset']['url'])}"
)
LADDER_BIN_DIR = f"{paths.LADDER_CIFAR_DIR}/{CIFAR_DIR}"
LADDER_BINS = [f"{LADDER_BIN_DIR}/{name}" for name in [*CIFAR_TRAIN, CIFAR_TEST]]


rule ladder:
    input:
        PLAN.ladder_outputs(),
    localrule: True


rule ladder_download_cifar10:
    input:
        code("ladder.data"),
    output:
        tarball=LADDER_TARBALL,
        bins=LADDER_BINS,
    log:
        PATHS.log("ladder_download_cifar10"),
    localrule: True
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
    params:
        url=LADDER["dataset"]["url"],
        md5=LADDER["dataset"]["md5"],
    shell:
        run_stage(
            f"ladder.data download --out-dir {paths.LADDER_CIFAR_DIR} --url {{params.url:q}}"
            " --md5 {params.md5}",
        )


rule ladder_prepare:
    input:
        code=code("ladder.data"),
        bins=LADDER_BINS if LADDER_CIFAR else [],
    output:
        PLAN.ladder_data,
    log:
        PATHS.log(f"ladder_prepare/{LADDER_DATASET}"),
    conda:
        CONDA_ENV
    resources:
        mem_mb=LADDER_RES["data_mb"],
    params:
        name=LADDER_DATASET,
        bin_dir=f"--bin-dir {LADDER_BIN_DIR}" if LADDER_CIFAR else "",
        settings=settings_json("LadderData"),
    shell:
        run_stage(
            "ladder.data prepare --name {params.name} {params.bin_dir} --settings-json"
            " {params.settings:q} --out {output}",
        )


# One ladder run per job; ladder_standalone reuses it for the cross-check's runs.
rule ladder_train:
    input:
        data=PLAN.ladder_data,
        code=code("ladder.train"),
    output:
        PATHS.LADDER_RUN,
    log:
        PATHS.log("ladder_train/{arch}/{method}/k{k}/seed{seed}"),
    wildcard_constraints:
        arch=regex(PLAN.ladder_archs),
        method=regex(LADDER["methods"]),
    conda:
        CONDA_ENV
    resources:
        mem_mb=LADDER_RES["train_mb"],
        runtime=LADDER_RES["run_min"],
        gpu=0,
    params:
        run=lambda wc: f"ladder --method {wc.method} --k {wc.k}",
        d=lambda wc: PLAN.ladder_archs[wc.arch]["d"],
        L=lambda wc: PLAN.ladder_archs[wc.arch]["L"],
        settings=settings_json("LadderTrain"),
    shell:
        run_stage(
            "ladder.train {params.run} --data {input.data} --config {wildcards.arch} --d"
            " {params.d} --blocks {params.L} --seeds {wildcards.seed} --settings-json"
            " {params.settings:q} --threads {threads} --out {output}",
            preloaded=True,
        )


use rule ladder_train as ladder_standalone with:
    output:
        PATHS.LADDER_STANDALONE,
    log:
        PATHS.log("ladder_standalone/{arch}/{kind}/seed{seed}"),
    wildcard_constraints:
        arch=regex(PLAN.ladder_archs),
        kind=regex(KINDS),
    params:
        run=lambda wc: f"standalone --kind {wc.kind}",


rule ladder_identity:
    input:
        data=PLAN.ladder_data,
        runs=PLAN.ladder_runs(k=0),
        code=code("ladder.identity"),
    output:
        PATHS.LADDER_IDENTITY,
    log:
        PATHS.log("ladder_identity"),
    conda:
        CONDA_ENV
    resources:
        mem_mb=LADDER_RES["data_mb"],
        runtime=30,
    params:
        configs=" ".join(
            f"--config {a}:{c['d']}:{c['L']}" for a, c in PLAN.ladder_archs.items()
        ),
        seeds=" ".join(map(str, LADDER["seeds"])),
    shell:
        run_stage(
            "ladder.identity --data {input.data} {params.configs} --seeds {params.seeds}"
            " --runs {input.runs} --threads {threads} --out {output}",
            preloaded=True,
        )


rule ladder_stats:
    input:
        runs=PLAN.ladder_runs(),
        standalone=PLAN.ladder_standalone(),
        code=code("ladder.stats"),
    output:
        **{t: PATHS.LADDER_TABLE.format(table=t) for t in paths.LADDER_TABLES},
    log:
        PATHS.log("ladder_stats"),
    localrule: True
    conda:
        CONDA_ENV
    threads: 2  # the Multi-Bootstrap engine computes two groups of samples at once
    resources:
        mem_mb=2000,
    params:
        settings=settings_json("LadderStats"),
    shell:
        run_stage(
            "ladder.stats --runs {input.runs} --standalone {input.standalone}"
            " --settings-json {params.settings:q} --threads {threads} --table"
            " {output.table} --comparisons {output.comparisons} --crosscheck"
            " {output.crosscheck}",
        )


rule ladder_figure:
    input:
        table=PATHS.LADDER_TABLE.format(table="table"),
        code=code("ladder.report"),
    output:
        [
            report(p, caption="../docs/report/depth_ladder.rst", category="Ladder")
            for p in PLAN.ladder_figures()
        ],
    log:
        PATHS.log("ladder_figure"),
    localrule: True
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
    shell:
        run_stage(
            "ladder.report figure --table {input.table} --out {output}",
        )


rule ladder_summary:
    input:
        **{t: PATHS.LADDER_TABLE.format(table=t) for t in paths.LADDER_TABLES},
        identity=PATHS.LADDER_IDENTITY,
        code=code("ladder.report"),
    output:
        PATHS.LADDER_SUMMARY,
    log:
        PATHS.log("ladder_summary"),
    localrule: True
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
    shell:
        run_stage(
            "ladder.report summary --table {input.table} --comparisons {input.comparisons}"
            " --crosscheck {input.crosscheck} --identity {input.identity} --out {output}",
        )
