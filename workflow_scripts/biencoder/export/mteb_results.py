"""MTEB-shaped results: one TaskResult JSON per evaluated model and benchmark, as `mteb`
writes them (mteb 2.26's mteb/results/task_result.py: dataset_revision, task_name,
mteb_version, scores {split: [{hf_subset, languages, main_score, metrics...}]},
evaluation_time), so that mteb's tooling reads depthlab's numbers beside leaderboard models.

- scores: the test split, subset "default", main_score = NDCG@10 as MTEB's retrieval tasks
  have it, and the four metrics depthlab computes under MTEB's names (ndcg_at_10,
  recall_at_100, map_at_100, mrr_at_10: trec_eval's definitions, as MTEB's), each the mean
  over the benchmark's test queries. languages: eng-Latn (every benchmark the workflow reads
  is English).
- task_name: MTEB's name of a BEIR set (SciFact, NFCorpus, FiQA2018, ...); a generated
  benchmark keeps its own name (no MTEB task).
- dataset_revision: what was evaluated on, the sha256 of the benchmark's files
  (results.data_revision), not MTEB's Hub revision: a BEIR zip is not MTEB's parquet.
- mteb_version: null (mteb did not compute them; the field takes null) and
  evaluation_time: null (one job times several depths and benchmarks together).
- depthlab: what made the numbers (study, recipe, arm, depth, seed, benchmark, queries, the
  per-query file, the evaluated weights' sha256); MTEB's model ignores keys it lacks.

Files: one folder per evaluated arm and seed, results/<study>/export/mteb/<model>/ (written
whole or not at all), holding no_revision_available/<task>.json: MTEB's results layout
(core/paths.py EXPORT_MTEB: the model depthlab/<study>-<recipe>-<arm><depth>-seed<seed>
with "/" as "__"; the revision folder MTEB's name for none).

CLI: python -m workflow_scripts.biencoder.export.mteb_results --study S \
        --evals EVAL.parquet ... --weights MODEL/model.safetensors \
        --benchmarks-json '{"b": {"source": "beir", "dir": "data/beir/b"}}' --out FOLDER
"""

from __future__ import annotations

import argparse
import json

from workflow_scripts.biencoder.export import results
from workflow_scripts.core import contracts

LANGUAGES = ["eng-Latn"]
NO_REVISION = "no_revision_available"  # MTEB's revision folder for a model without one


def task_result(row: dict, *, task: str, revision: str, study: str, weights_sha256: str) -> dict:
    """One TaskResult document of a summarised per-query file (results.summarise's row)."""
    scores = {name: row[metric] for metric, name in results.MTEB_METRICS.items()}
    return {
        "dataset_revision": revision,
        "task_name": task,
        "mteb_version": None,
        "scores": {"test": [{"hf_subset": "default", "languages": LANGUAGES,
                             "main_score": row[results.MAIN_METRIC], **scores}]},
        "evaluation_time": None,
        "kg_co2_emissions": None,
        "depthlab": {"study": study, **{k: row[k] for k in contracts.RUN_KEYS},
                     "queries": row["queries"], "per_query_file": row["file"],
                     "weights_sha256": weights_sha256},
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="MTEB-shaped result files of one evaluated arm.")
    ap.add_argument("--study", required=True)
    ap.add_argument("--evals", nargs="+", required=True, help="its per-query files")
    ap.add_argument("--weights", required=True, help="the model.safetensors evaluated (for a "
                                                     "cut arm: the model cut)")
    ap.add_argument("--benchmarks-json", required=True)
    ap.add_argument("--out", required=True, help="the arm's folder (MTEB's <model> folder)")
    a = ap.parse_args(argv)
    info = results.benchmark_info(a.benchmarks_json)
    weights = results.file_sha256(a.weights)
    docs = []
    for row in results.summarise(a.evals):
        spec = info.get(row["benchmark"])
        if spec is None:
            ap.error(f"{row['file']}: benchmark {row['benchmark']!r} is not in --benchmarks-json")
        docs.append(task_result(row, task=results.task_name(row["benchmark"], spec["source"]),
                                revision=results.data_revision(spec["dir"]), study=a.study,
                                weights_sha256=weights))
    results.remove_leftovers(a.out)
    with contracts.atomic_dir(a.out) as tmp:
        (tmp / NO_REVISION).mkdir()
        for doc in docs:
            (tmp / NO_REVISION / f"{doc['task_name']}.json").write_text(
                json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for doc in docs:
        print(f"{a.out}/{NO_REVISION}/{doc['task_name']}.json: main_score "
              f"{doc['scores']['test'][0]['main_score']:.4f}")


if __name__ == "__main__":
    main()
