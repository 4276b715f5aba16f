"""Where every artifact of a study lies: the path templates of docs/architecture.md's
data-contracts table, in one place. Rules, the study plan, the claims and the report format
these; nothing else spells a path. Standard library only (the Snakefile imports it).

Templates are relative to the workflow's working directory; `under(results, path)` moves a
results/ path to another results folder (the claims CLI reads any folder).
"""

from __future__ import annotations

from pathlib import Path

# Data (docs/evaluation.md): BEIR-format benchmarks and the training triples.
BEIR_DIR = "data/beir/{benchmark}"
BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")
DATACARD = "DATACARD.md"
TRAIN_DATA = "data/train/{train_data}.parquet"
TRAIN_CARD = "data/train/{train_data}.DATACARD.md"

# Bi-encoder models and their per-query evaluations.
MODEL_DIR = "checkpoints/{recipe}/{strategy}{depth}/seed{seed}"
MODEL_FILES = ("model.safetensors", "steps", "train_summary.json")
EVAL = "results/eval/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.parquet"
EVAL_STEPS = "results/eval/{recipe}/{strategy}{depth}/seed{seed}/steps/{benchmark}.parquet"
BASE_EVAL = "results/eval/base/{strategy}{depth}/{benchmark}.parquet"

# Latency, statistics, figures, report.
LATENCY_RUN = "results/latency/run{r}.parquet"
LATENCY_SUMMARY = "results/latency/summary.parquet"
LATENCY_COHERENCE = "results/latency/coherence.json"
LATENCY_LADDER = "results/latency/ladder.parquet"
STATS_TABLE = "results/stats/{table}.parquet"
FIGURE = "results/figures/{name}.{fmt}"
USAGE = "results/usage.parquet"
RESULTS = "results/RESULTS.md"

# The depth-utility ladder (docs/ladder.md).
LADDER_DATA = "data/ladder/{dataset}.npz"
LADDER_RUN = "results/ladder/runs/{arch}/{method}/k{k}/seed{seed}.parquet"
LADDER_STANDALONE = "results/ladder/standalone/{arch}/{kind}/seed{seed}.parquet"
LADDER_TABLES = ("table", "comparisons", "crosscheck")
LADDER_TABLE = "results/ladder/{table}.parquet"
LADDER_IDENTITY = "results/ladder/identity.json"
LADDER_SUMMARY = "results/ladder/summary.md"

# Claims and seeds on demand (docs/claims.md, docs/adaptive_seeds.md).
CLAIMS_TABLE = "results/claims.parquet"
CLAIMS_MD = "results/claims.md"
CLAIMS_REGISTRY = "results/claims_registration.json"  # claims/registration.py
LOOK = "results/looks/look{k}.json"
LOOKS_TABLE = "results/claims_looks.parquet"

# Every job's log is logs/<rule>.log or logs/<rule>/...; its measured cost (core/launch.py
# writes it, core/usage.py reads them all) lies at the same place under results/benchmarks.
LOGS = "logs"
RECORDS = "results/benchmarks"


def record_of(log: str) -> str:
    """The record of the job whose log is `log`."""
    return f"{RECORDS}/{Path(log).relative_to(LOGS)}.json"


def rule_of(record: Path) -> str:
    """The rule of a record (a path relative to RECORDS): its log's first name."""
    return record.parts[0].removesuffix(".json").removesuffix(".log")


def under(results, path: str) -> Path:
    """A results/ path moved under another results folder."""
    rel = Path(path).relative_to("results")
    return Path(results) / rel


def beir_files(benchmark: str) -> list[str]:
    d = BEIR_DIR.format(benchmark=benchmark)
    return [f"{d}/{f}" for f in BEIR_FILES]


def local_beir_train_files(folder: str) -> list[str]:
    """What a beir-train job reads from a local BEIR folder (a user's input, not an output):
    corpus, queries and train qrels, and the test qrels where the folder has them (their
    queries are kept out of the training pairs)."""
    files = [f"{folder}/{f}" for f in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv")]
    test = f"{folder}/qrels/test.tsv"
    return files + ([test] if Path(test).exists() else [])
