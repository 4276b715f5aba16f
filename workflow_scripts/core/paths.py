"""Where every artifact of a study lies: the path templates of docs/architecture.md's
data-contracts table, in one place. Rules, the study plan, the claims and the report format
these; nothing else spells a path. Standard library only (the Snakefile imports it).

Each study (config key `study`) owns three folders: results/<study>/, checkpoints/<study>/
and logs/<study>/, so studies of different names live side by side in one working folder and
never write each other's files. The data (data/) is shared, keyed by dataset name. The
templates below are relative to those folders; `Study(name)` holds them placed in one
study's folders (what the rules and the plan use), and the claims CLI reads any results
folder with the relative ones.
"""

from __future__ import annotations

import re
from pathlib import Path

# The roots, relative to the workflow's working directory.
RESULTS_ROOT = "results"
CHECKPOINTS_ROOT = "checkpoints"
LOGS_ROOT = "logs"
# A study's name is a folder name under each root (config/schema.yaml holds the same pattern).
STUDY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")



def elsewhere_note(workdir, clone, directory_given: bool) -> str | None:
    """The line a run says where it writes when `-s clone/Snakefile` runs it from another
    folder that holds no study yet (it starts a fresh one there, not the clone's); None
    where the folder is the clone, holds a study, or was named with --directory (chosen, not
    stumbled into)."""
    workdir, clone = Path(workdir).resolve(), Path(clone).resolve()
    if workdir == clone or directory_given or any(
            (workdir / root).exists() for root in (RESULTS_ROOT, CHECKPOINTS_ROOT, LOGS_ROOT)):
        return None
    return (f"depthlab: {RESULTS_ROOT}/, {CHECKPOINTS_ROOT}/ and {LOGS_ROOT}/ go under "
            f"{workdir} (not the clone {clone}, whose Snakefile runs); to continue the "
            f"clone's study, pass --directory {clone}")


# ---- shared by every study (relative to the working directory) ------------------------------
# Data (docs/evaluation.md): BEIR-format benchmarks and the training triples.
BEIR_DIR = "data/beir/{benchmark}"
BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")
DATACARD = "DATACARD.md"
# Each benchmark's test qrels in trec_eval's 4-column form (biencoder/trec_run.py), beside
# BEIR's qrels/test.tsv.
TREC_QRELS = "data/beir/{benchmark}/qrels/test.trec"
TRAIN_DATA = "data/train/{train_data}.parquet"
TRAIN_CARD = "data/train/{train_data}.DATACARD.md"
DOWNLOADS = "data/downloads"
# The depth-utility ladder's data (docs/ladder.md) and CIFAR-10's download.
LADDER_DATA = "data/ladder/{dataset}.npz"
LADDER_CIFAR_DIR = "data/ladder/cifar10"

# ---- relative to a study's checkpoints folder ------------------------------------------------
MODEL_DIR = "{recipe}/{strategy}{depth}/seed{seed}"
MODEL_FILES = ("model.safetensors", "steps", "train_summary.json")

# ---- relative to a study's results folder ----------------------------------------------------
# Per-query evaluations of the bi-encoder models.
EVAL = "eval/{recipe}/{strategy}{depth}/seed{seed}/{benchmark}.parquet"
EVAL_STEPS = "eval/{recipe}/{strategy}{depth}/seed{seed}/steps/{benchmark}.parquet"
BASE_EVAL = "eval/base/{strategy}{depth}/{benchmark}.parquet"
# The same evaluations at a smaller embedding dimension (eval.dims): a folder dim<N> beside
# each full-dimension file, so no reader of those sees them.
EVAL_DIM = "eval/{recipe}/{strategy}{depth}/seed{seed}/dim{dim}/{benchmark}.parquet"
BASE_EVAL_DIM = "eval/base/{strategy}{depth}/dim{dim}/{benchmark}.parquet"
# Beside each per-query file but the snapshots' (steps/): its ranking as a gzipped TREC run
# and that run's provenance (a sidecar: the TREC format has no room for a header), named
# after it: X.parquet -> X.run.gz, X.run.json (run_files).
RUN_SUFFIXES = (".run.gz", ".run.json")
# Latency, statistics, figures, report.
LATENCY_RUN = "latency/run{r}.parquet"
LATENCY_SUMMARY = "latency/summary.parquet"
LATENCY_COHERENCE = "latency/coherence.json"
LATENCY_LADDER = "latency/ladder.parquet"
STATS_DIR = "stats"
STATS_TABLE = "stats/{table}.parquet"
FIGURE = "figures/{name}.{fmt}"
USAGE = "usage.parquet"
RESULTS = "RESULTS.md"
REPORT_HTML = "report.html"  # `snakemake --report`'s file, by convention
# The depth-utility ladder (docs/ladder.md).
LADDER_RUN = "ladder/runs/{arch}/{method}/k{k}/seed{seed}.parquet"
LADDER_STANDALONE = "ladder/standalone/{arch}/{kind}/seed{seed}.parquet"
LADDER_TABLES = ("table", "comparisons", "crosscheck")
LADDER_TABLE = "ladder/{table}.parquet"
LADDER_IDENTITY = "ladder/identity.json"
LADDER_SUMMARY = "ladder/summary.md"
# Exports (rules/export.smk): a trained model's folder with its card completed by the
# study's evaluation, and each evaluated arm's MTEB-shaped results (MTEB's layout:
# <model>/<revision>/<task>.json; the model name holds the study's).
EXPORT_MODEL = "export/models/{recipe}/{strategy}{depth}/seed{seed}"
EXPORT_MTEB = "export/mteb/depthlab__{study}-{recipe}-{strategy}{depth}-seed{seed}"
# Claims and seeds on demand (docs/claims.md, docs/adaptive_seeds.md).
CLAIMS_TABLE = "claims.parquet"
CLAIMS_MD = "claims.md"
CLAIMS_REGISTRY = "claims_registration.json"  # claims/registration.py
LOOK = "looks/look{k}.json"
LOOKS_TABLE = "claims_looks.parquet"
# Every job's log is logs/<study>/<rule>.log or logs/<study>/<rule>/...; its measured cost
# (core/launch.py writes it, core/usage.py reads them all) lies at the same place under the
# study's results folder's benchmarks/.
RECORDS = "benchmarks"


def check_study(name: str) -> str:
    """`name` if it names a study folder; ValueError otherwise."""
    if not isinstance(name, str) or not STUDY_NAME.fullmatch(name):
        raise ValueError(f"study name {name!r} is not a folder name: letters, digits, "
                         "'_', '.', '-', starting with a letter or digit")
    return name


class Study:
    """The artifact paths of one study: each template above, placed in the study's folder.
    Attributes have the templates' names (Study("default").EVAL is
    results/default/eval/...)."""

    def __init__(self, name: str):
        self.name = check_study(name)
        self.results = f"{RESULTS_ROOT}/{name}"
        self.checkpoints = f"{CHECKPOINTS_ROOT}/{name}"
        self.logs = f"{LOGS_ROOT}/{name}"
        self.records = self.result(RECORDS)
        self.MODEL_DIR = f"{self.checkpoints}/{MODEL_DIR}"
        self.EVAL = self.result(EVAL)
        self.EVAL_STEPS = self.result(EVAL_STEPS)
        self.BASE_EVAL = self.result(BASE_EVAL)
        self.EVAL_DIM = self.result(EVAL_DIM)
        self.BASE_EVAL_DIM = self.result(BASE_EVAL_DIM)
        self.LATENCY_RUN = self.result(LATENCY_RUN)
        self.LATENCY_SUMMARY = self.result(LATENCY_SUMMARY)
        self.LATENCY_COHERENCE = self.result(LATENCY_COHERENCE)
        self.LATENCY_LADDER = self.result(LATENCY_LADDER)
        self.STATS_DIR = self.result(STATS_DIR)
        self.STATS_TABLE = self.result(STATS_TABLE)
        self.FIGURE = self.result(FIGURE)
        self.USAGE = self.result(USAGE)
        self.RESULTS = self.result(RESULTS)
        self.REPORT_HTML = self.result(REPORT_HTML)
        self.LADDER_RUN = self.result(LADDER_RUN)
        self.LADDER_STANDALONE = self.result(LADDER_STANDALONE)
        self.LADDER_TABLE = self.result(LADDER_TABLE)
        self.LADDER_IDENTITY = self.result(LADDER_IDENTITY)
        self.LADDER_SUMMARY = self.result(LADDER_SUMMARY)
        self.CLAIMS_TABLE = self.result(CLAIMS_TABLE)
        self.CLAIMS_MD = self.result(CLAIMS_MD)
        self.CLAIMS_REGISTRY = self.result(CLAIMS_REGISTRY)
        self.LOOK = self.result(LOOK)
        self.LOOKS_TABLE = self.result(LOOKS_TABLE)
        self.EXPORT_MODEL = self.result(EXPORT_MODEL)
        self.EXPORT_MTEB = self.result(EXPORT_MTEB.replace("{study}", name))

    def result(self, path: str) -> str:
        """A path relative to a results folder, in this study's."""
        return f"{self.results}/{path}"

    def log(self, name: str) -> str:
        """The log of a job named `name`: <rule> or <rule>/<its wildcards' folders>."""
        return f"{self.logs}/{name}.log"


def record_of(log: str) -> str:
    """The record of the job whose log is `log` (logs/<study>/...): the same name under
    that study's records folder."""
    study, *rest = Path(log).relative_to(LOGS_ROOT).parts
    return f"{Study(study).records}/{Path(*rest)}.json"


def rule_of(record: Path) -> str:
    """The rule of a record (a path relative to a study's records folder): its log's first
    name."""
    return record.parts[0].removesuffix(".json").removesuffix(".log")


def run_files(per_query: str) -> list[str]:
    """The run file and its sidecar of a per-query file (a path or a template)."""
    stem = per_query.removesuffix(".parquet")
    return [stem + suffix for suffix in RUN_SUFFIXES]


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
