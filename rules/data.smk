# Data: the embedded default generates its benchmarks and triples from docstrings of
# installed libraries (workflow_scripts/docstrings.py); nothing is downloaded.


rule docstring_benchmark:
    input:
        CODE("workflow_scripts/docstrings.py", "workflow_scripts/contracts.py"),
    output:
        corpus="data/beir/{benchmark}/corpus.jsonl",
        queries="data/beir/{benchmark}/queries.jsonl",
        qrels="data/beir/{benchmark}/qrels/test.tsv",
        card="data/beir/{benchmark}/DATACARD.md",
    log:
        "logs/data/{benchmark}.log",
    wildcard_constraints:
        benchmark=dataset_names("docstrings"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=2000,
    params:
        packages=lambda wc: " ".join(DATASETS[wc.benchmark]["packages"]),
        max_queries=lambda wc: DATASETS[wc.benchmark]["max_queries"],
        max_docs=lambda wc: DATASETS[wc.benchmark]["max_docs"],
        seed=lambda wc: DATASETS[wc.benchmark]["seed"],
        min_queries=config["eval"]["min_queries"],
        exclude=" ".join(DATASETS[TRAIN_DATA].get("packages", [])),
    shell:
        "python -m workflow_scripts.docstrings beir --packages {params.packages}"
        " --max-queries {params.max_queries} --max-docs {params.max_docs}"
        " --min-queries {params.min_queries} --seed {params.seed}"
        " --exclude-packages {params.exclude}"
        " --out data/beir/{wildcards.benchmark} > {log} 2>&1"


rule docstring_triples:
    input:
        CODE("workflow_scripts/docstrings.py", "workflow_scripts/contracts.py"),
    output:
        triples="data/train/{train_data}.parquet",
        card="data/train/{train_data}.DATACARD.md",
    log:
        "logs/data/{train_data}.log",
    wildcard_constraints:
        train_data=dataset_names("docstrings"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=2000,
    params:
        packages=lambda wc: " ".join(DATASETS[wc.train_data]["packages"]),
        max_triples=lambda wc: DATASETS[wc.train_data]["max_triples"],
        seed=lambda wc: DATASETS[wc.train_data]["seed"],
    shell:
        "python -m workflow_scripts.docstrings train --packages {params.packages}"
        " --max-triples {params.max_triples} --seed {params.seed}"
        " --out {output.triples} > {log} 2>&1"


# Real data (paper configs): local rules, since compute nodes may have no internet.
rule beir_download:
    input:
        CODE("workflow_scripts/prepare_data.py", "workflow_scripts/download.py"),
    output:
        corpus="data/beir/{benchmark}/corpus.jsonl",
        queries="data/beir/{benchmark}/queries.jsonl",
        qrels="data/beir/{benchmark}/qrels/test.tsv",
        card="data/beir/{benchmark}/DATACARD.md",
    log:
        "logs/data/{benchmark}.log",
    wildcard_constraints:
        benchmark=dataset_names("beir"),
    conda:
        CONDA_ENV
    params:
        url=lambda wc: DATASETS[wc.benchmark]["url"],
        md5=lambda wc: DATASETS[wc.benchmark]["md5"],
    shell:
        "python -m workflow_scripts.prepare_data beir --name {wildcards.benchmark}"
        " --url {params.url:q} --md5 {params.md5} --download-dir data/downloads"
        " --out data/beir/{wildcards.benchmark} > {log} 2>&1"


rule triples_download:
    input:
        CODE("workflow_scripts/prepare_data.py", "workflow_scripts/download.py"),
    output:
        triples="data/train/{train_data}.parquet",
        card="data/train/{train_data}.DATACARD.md",
    log:
        "logs/data/{train_data}.log",
    wildcard_constraints:
        train_data=dataset_names("triples-jsonl-gz"),
    conda:
        CONDA_ENV
    params:
        url=lambda wc: DATASETS[wc.train_data]["url"],
        lines=lambda wc: (
            f"--expect-lines {DATASETS[wc.train_data]['expect_lines']}"
            if "expect_lines" in DATASETS[wc.train_data]
            else ""
        ),
    shell:
        "python -m workflow_scripts.prepare_data triples --name {wildcards.train_data}"
        " --url {params.url:q} --download-dir data/downloads"
        " {params.lines} --out {output.triples} > {log} 2>&1"
