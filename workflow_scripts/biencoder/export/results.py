"""What the exports read: an arm's per-query files summarised per benchmark, the identity of
the benchmark data and of the weights evaluated, and the names MTEB gives BEIR's sets."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from workflow_scripts.core import contracts, paths
from workflow_scripts.core.download import file_digests

# depthlab's metric names and MTEB's (= ir_measures' measures as MTEB spells them: the
# same trec_eval definitions, docs/evaluation.md).
MTEB_METRICS = {"ndcg@10": "ndcg_at_10", "recall@100": "recall_at_100",
                "map@100": "map_at_100", "mrr@10": "mrr_at_10"}
MAIN_METRIC = "ndcg@10"
# BEIR's sets (the folder names of BEIR's zips) and their MTEB task names; a benchmark of
# another name (the generated ones) keeps its own.
MTEB_TASKS = {"arguana": "ArguAna", "climate-fever": "ClimateFEVER",
              "dbpedia-entity": "DBPedia", "fever": "FEVER", "fiqa": "FiQA2018",
              "hotpotqa": "HotpotQA", "msmarco": "MSMARCO", "nfcorpus": "NFCorpus", "nq": "NQ",
              "quora": "QuoraRetrieval", "scidocs": "SCIDOCS", "scifact": "SciFact",
              "trec-covid": "TRECCOVID", "webis-touche2020": "Touche2020"}


def task_name(benchmark: str, source: str) -> str:
    """The MTEB task a benchmark is, for a BEIR set under its BEIR name; else its own name."""
    return MTEB_TASKS.get(benchmark, benchmark) if source == "beir" else benchmark


def file_sha256(path) -> str:
    return file_digests(path, ("sha256",))["sha256"]


def data_revision(folder) -> str:
    """The benchmark files evaluated on (BEIR's corpus, queries, test qrels), as one
    sha256 over their names and sha256s."""
    h = hashlib.sha256()
    for name in paths.BEIR_FILES:
        h.update(name.encode() + b"\0" + file_sha256(Path(folder) / name).encode())
    return f"sha256:{h.hexdigest()}"


def summarise(eval_files) -> list[dict]:
    """One row per per-query file: its run keys (recipe, strategy, depth, seed, benchmark),
    the number of queries and each metric's mean, in the files' order."""
    rows = []
    for path in eval_files:
        df = contracts.read_eval(path)
        keys = {k: df[k].iloc[0] for k in contracts.RUN_KEYS}
        for k, v in keys.items():
            if (df[k] != v).any():
                raise contracts.DataError(f"{path}: column {k!r} holds more than one value")
        rows.append({**{k: (int(v) if k in ("depth", "seed") else str(v))
                        for k, v in keys.items()},
                     "queries": len(df), "file": str(path),
                     **{m: float(df[m].mean()) for m in contracts.METRICS}})
    return rows


def benchmark_info(text: str) -> dict:
    """--benchmarks-json: {benchmark: {"source": .., "dir": ..}} (the plan's)."""
    info = json.loads(text)
    for name, spec in info.items():
        if not {"source", "dir"} <= set(spec):
            raise ValueError(f"--benchmarks-json: {name!r} needs source and dir, got {spec}")
    return info


def remove_leftovers(out) -> None:
    """What killed writes of `out` left beside it (an export's output folder)."""
    for p in contracts.remove_orphans(out):
        print(f"removed {p}, left by a killed write")
