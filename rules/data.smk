# Data: the embedded default generates its benchmarks and triples from docstrings of
# installed libraries (workflow_scripts/biencoder/data/docstrings.py); nothing is downloaded.
# The paper configs download the real datasets (biencoder/data/prepare_data.py).


rule docstring_benchmark:
    input:
        code("biencoder.data.docstrings"),
    output:
        corpus="data/beir/{benchmark}/corpus.jsonl",
        queries="data/beir/{benchmark}/queries.jsonl",
        qrels="data/beir/{benchmark}/qrels/test.tsv",
        card="data/beir/{benchmark}/DATACARD.md",
    log:
        "logs/data/{benchmark}.log",
    benchmark:
        bench("data/beir/{benchmark}/corpus.jsonl")
    wildcard_constraints:
        benchmark=dataset_names("docstrings"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=2000,
    params:
        settings=lambda wc: settings_json("DocstringBenchmark", benchmark=wc.benchmark),
        # Texts of the training packages are kept out of every benchmark.
        exclude=" ".join(DATASETS[TRAIN_DATA].get("packages", [])),
    shell:
        "python -m workflow_scripts.biencoder.data.docstrings beir --settings-json {params.settings:q}"
        " --exclude-packages {params.exclude} --out data/beir/{wildcards.benchmark}"
        " > {log} 2>&1"


rule docstring_triples:
    input:
        code("biencoder.data.docstrings"),
    output:
        triples="data/train/{train_data}.parquet",
        card="data/train/{train_data}.DATACARD.md",
    log:
        "logs/data/{train_data}.log",
    benchmark:
        bench("data/train/{train_data}.parquet")
    wildcard_constraints:
        train_data=dataset_names("docstrings"),
    # The training jobs wait for this: the start of the longest chain (rules/train.smk).
    priority: 1
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=2000,
    params:
        settings=lambda wc: settings_json("DocstringTriples", train_data=wc.train_data),
    shell:
        "python -m workflow_scripts.biencoder.data.docstrings train --settings-json {params.settings:q}"
        " --out {output.triples} > {log} 2>&1"


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
        corpus="data/beir/{benchmark}/corpus.jsonl",
        queries="data/beir/{benchmark}/queries.jsonl",
        qrels="data/beir/{benchmark}/qrels/test.tsv",
        card="data/beir/{benchmark}/DATACARD.md",
    log:
        "logs/data/{benchmark}.log",
    benchmark:
        bench("data/beir/{benchmark}/corpus.jsonl")
    wildcard_constraints:
        benchmark=dataset_names("beir"),
    conda:
        CONDA_ENV
    params:
        location=lambda wc: beir_location(wc.benchmark),
        min_queries=config["eval"]["min_queries"],
    shell:
        "python -m workflow_scripts.biencoder.data.prepare_data beir --name {wildcards.benchmark}"
        " {params.location} --min-queries {params.min_queries}"
        " --download-dir data/downloads"
        " --out data/beir/{wildcards.benchmark} > {log} 2>&1"


rule beir_train:
    input:
        code("biencoder.data.prepare_data"),
        local=lambda wc: beir_train_files(wc.train_data),
    output:
        pairs="data/train/{train_data}.parquet",
        card="data/train/{train_data}.DATACARD.md",
    log:
        "logs/data/{train_data}.log",
    benchmark:
        bench("data/train/{train_data}.parquet")
    wildcard_constraints:
        train_data=dataset_names("beir-train"),
    priority: 1
    conda:
        CONDA_ENV
    params:
        location=lambda wc: beir_location(wc.train_data),
    shell:
        "python -m workflow_scripts.biencoder.data.prepare_data beir-train"
        " --name {wildcards.train_data} {params.location} --download-dir data/downloads"
        " --out {output.pairs} > {log} 2>&1"


rule triples_download:
    input:
        code("biencoder.data.prepare_data"),
    output:
        triples="data/train/{train_data}.parquet",
        card="data/train/{train_data}.DATACARD.md",
    log:
        "logs/data/{train_data}.log",
    benchmark:
        bench("data/train/{train_data}.parquet")
    wildcard_constraints:
        train_data=dataset_names("triples-jsonl-gz"),
    priority: 1
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
        "python -m workflow_scripts.biencoder.data.prepare_data triples --name {wildcards.train_data}"
        " --url {params.url:q} --download-dir data/downloads"
        " {params.lines} --out {output.triples} > {log} 2>&1"
