# Data: the embedded default generates its benchmarks and triples from docstrings of
# installed libraries (workflow_scripts/biencoder/data/docstrings.py); nothing is downloaded.
# The paper configs download the real datasets (biencoder/data/prepare_data.py). Data is
# shared by every study (data/, keyed by dataset name: core/paths.py).

# A benchmark's files (its folder, with the wildcard as the shell command names it).
BEIR_OUTPUTS = dict(
    zip(("corpus", "queries", "qrels"), paths.beir_files("{benchmark}")),
    card=f"{paths.BEIR_DIR}/{paths.DATACARD}",
)
BEIR_OUT = paths.BEIR_DIR.format(benchmark="{wildcards.benchmark}")


rule docstring_benchmark:
    input:
        code("biencoder.data.docstrings"),
    output:
        **BEIR_OUTPUTS,
    log:
        PATHS.log("docstring_benchmark/{benchmark}"),
    wildcard_constraints:
        benchmark=regex(PLAN.datasets_of("docstrings")),
    localrule: True
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
    params:
        settings=lambda wc: settings_json("DocstringBenchmark", benchmark=wc.benchmark),
        # Texts of the training packages are kept out of every benchmark.
        exclude=" ".join(DATASETS[PLAN.train_data].get("packages", [])),
    shell:
        run_stage(
            "biencoder.data.docstrings beir --settings-json {params.settings:q}"
            f" --exclude-packages {{params.exclude}} --out {BEIR_OUT}",
        )


rule docstring_triples:
    input:
        code("biencoder.data.docstrings"),
    output:
        triples=paths.TRAIN_DATA,
        card=paths.TRAIN_CARD,
    log:
        PATHS.log("docstring_triples/{train_data}"),
    wildcard_constraints:
        train_data=regex(PLAN.datasets_of("docstrings")),
    # The training jobs wait for this: the start of the longest chain (rules/train.smk).
    priority: 1
    localrule: True
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
    params:
        settings=lambda wc: settings_json("DocstringTriples", train_data=wc.train_data),
    shell:
        run_stage(
            "biencoder.data.docstrings train --settings-json {params.settings:q} --out"
            " {output.triples}",
        )


# Real data (paper and laptop configs): local rules, since compute nodes may have no
# internet; a BEIR dataset can instead be read from a local folder (`path`), whose files
# are then inputs (an edited file reruns the job).
rule beir_download:
    input:
        code("biencoder.data.prepare_data"),
        local=lambda wc: local_files(
            wc.benchmark, ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"]
        ),
    output:
        **BEIR_OUTPUTS,
    log:
        PATHS.log("beir_download/{benchmark}"),
    wildcard_constraints:
        benchmark=regex(PLAN.datasets_of("beir")),
    localrule: True
    conda:
        CONDA_ENV
    params:
        location=lambda wc: beir_location(wc.benchmark),
        min_queries=config["eval"]["min_queries"],
    shell:
        run_stage(
            "biencoder.data.prepare_data beir --name {wildcards.benchmark}"
            " {params.location} --min-queries {params.min_queries} --download-dir"
            f" {paths.DOWNLOADS} --out {BEIR_OUT}",
        )


# A benchmark from a Hugging Face Hub dataset repository at a pinned commit (MTEB's
# layout; biencoder/data/hub.py): local too, and offline once the files are in the cache
# under data/downloads/hub (HF_ENDPOINT and HF_HUB_OFFLINE are honoured).
rule hub_download:
    input:
        code("biencoder.data.hub"),
    output:
        **BEIR_OUTPUTS,
    log:
        PATHS.log("hub_download/{benchmark}"),
    wildcard_constraints:
        benchmark=regex(PLAN.datasets_of("hub")),
    localrule: True
    conda:
        CONDA_ENV
    params:
        repo=lambda wc: DATASETS[wc.benchmark]["repo"],
        revision=lambda wc: DATASETS[wc.benchmark]["revision"],
        split=lambda wc: DATASETS[wc.benchmark].get("split", "test"),
        min_queries=config["eval"]["min_queries"],
    shell:
        run_stage(
            "biencoder.data.hub --name {wildcards.benchmark} --repo {params.repo:q}"
            " --revision {params.revision} --split {params.split:q} --min-queries"
            f" {{params.min_queries}} --download-dir {paths.DOWNLOADS}/hub --out {BEIR_OUT}",
        )


rule beir_train:
    input:
        code("biencoder.data.prepare_data"),
        local=lambda wc: (
            paths.local_beir_train_files(DATASETS[wc.train_data]["path"])
            if "path" in DATASETS[wc.train_data]
            else []
        ),
    output:
        pairs=paths.TRAIN_DATA,
        card=paths.TRAIN_CARD,
    log:
        PATHS.log("beir_train/{train_data}"),
    wildcard_constraints:
        train_data=regex(PLAN.datasets_of("beir-train")),
    priority: 1
    localrule: True
    conda:
        CONDA_ENV
    params:
        location=lambda wc: beir_location(wc.train_data),
    shell:
        run_stage(
            "biencoder.data.prepare_data beir-train --name {wildcards.train_data}"
            f" {{params.location}} --download-dir {paths.DOWNLOADS} --out {{output.pairs}}",
        )


rule triples_download:
    input:
        code("biencoder.data.prepare_data"),
    output:
        triples=paths.TRAIN_DATA,
        card=paths.TRAIN_CARD,
    log:
        PATHS.log("triples_download/{train_data}"),
    wildcard_constraints:
        train_data=regex(PLAN.datasets_of("triples-jsonl-gz")),
    priority: 1
    localrule: True
    conda:
        CONDA_ENV
    params:
        url=lambda wc: DATASETS[wc.train_data]["url"],
        # --max-triples N streams the file's first N lines only (changing N reruns this).
        lines=lambda wc: " ".join(
            f"--{key.replace('_', '-')} {DATASETS[wc.train_data][key]}"
            for key in ("expect_lines", "max_triples")
            if key in DATASETS[wc.train_data]
        ),
    shell:
        run_stage(
            "biencoder.data.prepare_data triples --name {wildcards.train_data} --url"
            f" {{params.url:q}} --download-dir {paths.DOWNLOADS} {{params.lines}} --out"
            " {output.triples}",
        )


# Each benchmark's test qrels in trec_eval's 4-column form, for the run files
# (biencoder/trec_run.py), whatever source wrote the benchmark.
rule trec_qrels:
    input:
        qrels=f"{paths.BEIR_DIR}/qrels/test.tsv",
        code=code("biencoder.trec_run"),
    output:
        paths.TREC_QRELS,
    log:
        PATHS.log("trec_qrels/{benchmark}"),
    localrule: True
    conda:
        CONDA_ENV
    shell:
        run_stage("biencoder.trec_run qrels --qrels {input.qrels} --out {output}")
