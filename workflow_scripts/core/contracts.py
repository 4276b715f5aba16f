"""Data contracts shared by every stage: atomic writes, BEIR-format I/O, parquet schemas.

Stages import this module and nothing of each other's internals. It imports only the
standard library, numpy and pandas, so that cheap stages (stats, figures) stay cheap.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from workflow_scripts.core.files import (  # noqa: F401 (re-exported: the stages' names)
    CorruptFile,
    DataError,
    DiskFull,
    atomic_dir,
    atomic_path,
    parquet_errors,
    read_parquet,
    remove_dir,
    remove_orphans,
)

if TYPE_CHECKING:  # pandas costs ~0.4 s to import; jobs that never write parquet skip it
    import pandas as pd

METRICS = ("ndcg@10", "recall@100", "map@100", "mrr@10")
RUN_KEYS = ("recipe", "strategy", "depth", "seed", "benchmark")
# Every call of a profiling run's rounds: `position` after switching to the depth, `timed`
# (position >= discard_calls: the calls the ladder uses), `start_s` on the run's clock.
LATENCY_COLUMNS = (
    "run", "depth", "round", "position", "timed", "start_s", "batch_size", "seq_len",
    "device", "seconds", "event_seconds",
)
# Labels the stats tables use: the untrained truncated base as a recipe (seed -1 in its
# evaluation files), and the stratified aggregate of the benchmarks as a benchmark.
BASE = "base"
ALL = "all"
# Train-once arms (a recipe's `train_once`): one training at the deepest configured depth on
# the base's bottom layers, every depth evaluated by truncating it. Their per-depth
# counterpart, and the untrained base they start from, is strategy `top` (the same layers).
TRAIN_ONCE = ("adaptive", "matryoshka2d")
PER_DEPTH_REFERENCE = "top"
# Fine-tuned-then-truncated arms (a recipe's `truncated`, on by default), by the per-depth
# strategy they cut: that strategy's deepest model (the grid's full fine-tuned model) cut to
# each shallower configured depth by the strategy's rule, as the untrained base is cut; no
# training of their own. At the deepest depth such an arm is the per-depth model itself, so
# it has no row there. `freeze` keeps every layer: it has none.
TRUNCATED = {"top": "truncated", "bottom": "truncatedbottom",
             "alternate": "truncatedalternate"}


def truncated_cut(strategy: str) -> str | None:
    """The per-depth strategy a fine-tuned-then-truncated arm cuts (None for any other)."""
    return next((cut for cut, arm in TRUNCATED.items() if arm == strategy), None)


def arm_rank(strategy: str) -> int:
    """Where an arm stands among a recipe's (figures, tables): per-depth strategies first,
    then the fine-tuned-then-truncated arms, then the train-once arms."""
    return 2 if strategy in TRAIN_ONCE else int(truncated_cut(strategy) is not None)


def base_strategy(strategy: str) -> str:
    """The strategy of the untrained base an arm starts from: `top` for a train-once arm
    (its weights at depth d are the base's bottom d layers), the cut strategy for a
    fine-tuned-then-truncated arm, the arm's own otherwise."""
    if strategy in TRAIN_ONCE:
        return PER_DEPTH_REFERENCE
    return truncated_cut(strategy) or strategy


# Columns each results/<study>/stats/<table>.parquet holds at least (stats stage writes them; the
# figures and the report read them through read_stats).
# `interval` is the interval method (stats/intervals.py); mb_* the Multi-Bootstrap's beside it.
_INTERVAL = ("estimate", "ci_low", "ci_high", "p_value", "interval", "design", "resample", "ci",
             "mb_ci_low", "mb_ci_high", "mb_p_value", "nboot")
STATS_TABLES = {
    "ci": ("metric", "recipe", "strategy", "depth", "benchmark", "n_seeds", "n_queries",
           "seed_std", *_INTERVAL),
    "seeds": ("metric", "recipe", "strategy", "depth", "benchmark", "seed", "mean"),
    "comparisons": ("metric", "kind", "a", "b", "recipe_a", "recipe_b", "strategy",
                    "strategy_b", "depth_a", "depth_b", "benchmark", *_INTERVAL,
                    "alternative", "threshold"),
    "variance": ("metric", "recipe", "strategy", "depth", "benchmark", "var_joint",
                 "var_seeds", "var_examples", "share_seeds", "share_examples",
                 "share_interaction"),
    # seeds_for_delta: planned against the arm's comparison partner that needs the most seeds
    # (delta_versus, its label; "" where none has 2 seeds), arm_example_sd that pair's arm x
    # query interaction sd (biencoder/stats.py seeds_needed_table).
    "seeds_needed": ("metric", "recipe", "strategy", "depth", "benchmark", "interval", "n_seeds",
                     "target_half_width", "target_delta", "half_width_now",
                     "seeds_for_half_width", "seeds_for_delta", "delta_versus",
                     "arm_example_sd"),
    "agreement": ("metric", "recipe", "strategy", "depth", "benchmark", "seed_a", "seed_b",
                  "top1_agreement", "spearman"),
}
# results/<study>/stats/curves*.parquet: the learning curves (biencoder/curves.py); `step` 0 is the
# untrained base, the last step the final model; an onset of NaN is "no onset", +inf an
# interval bound beyond the grid (no onset in that share of the samples).
CURVE_TABLES = {
    "curves": ("metric", "recipe", "strategy", "depth", "benchmark", "step", "point",
               "n_seeds", "n_queries", "seed_std", *_INTERVAL),
    "curves_change": ("metric", "recipe", "strategy", "depth", "benchmark", "step_a", "step_b",
                      *_INTERVAL, "alternative", "threshold"),
    "curves_onset": ("metric", "recipe", "strategy", "depth", "benchmark", "epsilon",
                     "best_step", "onset_step", "detected_step", "onset_ci_low",
                     "onset_ci_high", "p_onset", "interval", "resample", "ci", "nboot"),
    "curves_onset_dist": ("metric", "recipe", "strategy", "depth", "benchmark", "onset_step",
                          "share"),
}
# results/<study>/stats/compute.parquet (biencoder/compute.py): each trained arm's training cost per
# (recipe, strategy, depth), from the trainings' train_summary.json. `layer_steps` = optimizer
# steps x layers trained, of one training; a train-once arm's one training (trained_depth,
# the deepest) serves `depths_served` depths; `arm_*`: the whole arm, every depth and seed.
COMPUTE_TABLES = {
    "compute": ("recipe", "strategy", "depth", "train_once", "trained_depth", "seeds",
                "steps", "layers_trained", "layer_steps", "train_seconds_mean",
                "train_seconds_sum", "depths_served", "arm_trainings", "arm_layer_steps",
                "arm_train_seconds"),
}
# results/<study>/stats/dims.parquet (biencoder/dims_stats.py): the ci table's rows at each
# configured embedding dimension (eval.dims), `dim` the dimensions kept.
DIMS_TABLE = "dims"
DIMS_TABLES = {DIMS_TABLE: ("dim", *STATS_TABLES["ci"])}
# results/<study>/usage.parquet: Snakemake's benchmark of every job, summed per rule.
USAGE_COLUMNS = ("rule", "jobs", "seconds_total", "seconds_max", "max_rss_mb", "cpu_seconds")


# ---------------------------------------------------------------------------------------
# Atomic writes: a reader (or a rerun after a crash) never sees a half-written file
# (core/files.py: the writes, their leftovers after a kill, a full disk named as such).
# ---------------------------------------------------------------------------------------
def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_figure(fig, outs, dpi: int = 150) -> None:
    """Save a matplotlib figure atomically to every path (format from the suffix), then close
    it. No dates in a PDF or SVG and a fixed SVG id salt, so a rerun writes the same bytes."""
    import matplotlib
    import matplotlib.pyplot as plt

    for out in [outs] if isinstance(outs, str | os.PathLike) else outs:
        fmt = Path(out).suffix.lstrip(".").lower()
        with atomic_path(out) as tmp, matplotlib.rc_context({"svg.hashsalt": "depthlab"}):
            fig.savefig(tmp, dpi=dpi, format=fmt,
                        metadata={"pdf": {"CreationDate": None}, "svg": {"Date": None}}.get(fmt))
    plt.close(fig)


def write_json(path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def write_parquet(path, df: pd.DataFrame) -> None:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def write_jsonl(path, rows) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------------
# BEIR format: corpus.jsonl ({_id, title, text}), queries.jsonl ({_id, text}),
# qrels/test.tsv (query-id, corpus-id, score with a header line).
# Our own reader instead of beir.datasets.data_loader: importing beir costs 12-14 s per
# job on 2 cores. tests/unit/core/test_contracts.py checks that both read the same data.
# ---------------------------------------------------------------------------------------
def read_jsonl(path, required: tuple[str, ...]) -> list[dict]:
    rows = []
    # utf-8-sig: a leading byte-order mark (files saved on Windows) is dropped, not refused.
    with open(path, encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object")
            missing = [k for k in required if k not in row]
            if missing:
                raise DataError(f"{path}:{lineno}: missing key(s) {', '.join(missing)}")
            rows.append(row)
    return rows


def load_corpus(path) -> dict[str, dict[str, str]]:
    corpus: dict[str, dict[str, str]] = {}
    for row in read_jsonl(path, ("_id", "text")):
        doc_id = str(row["_id"])
        if doc_id in corpus:
            raise DataError(f"{path}: duplicate document id {doc_id!r}")
        corpus[doc_id] = {"title": str(row.get("title") or ""), "text": str(row["text"])}
    return corpus


def load_queries(path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for row in read_jsonl(path, ("_id", "text")):
        qid = str(row["_id"])
        if qid in queries:
            raise DataError(f"{path}: duplicate query id {qid!r}")
        queries[qid] = str(row["text"])
    return queries


def load_qrels(path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8-sig", newline="") as f:  # a leading BOM is dropped
        reader = csv.reader(f, delimiter="\t")
        header = next(reader, None)
        if header is None:
            raise DataError(f"{path}: empty qrels file")
        for lineno, row in enumerate(reader, 2):
            if not row:
                continue
            if len(row) != 3:
                raise DataError(f"{path}:{lineno}: expected 3 tab-separated fields, got {len(row)}")
            qid, did, score = row
            try:
                qrels.setdefault(qid, {})[did] = int(score)
            except ValueError:
                raise DataError(f"{path}:{lineno}: score {score!r} is not an integer") from None
    return qrels


def load_beir(folder, split: str = "test"):
    """(corpus, queries, qrels) of a BEIR folder, keeping only queries that have qrels,
    as beir's GenericDataLoader does; checks that every judged document exists."""
    folder = Path(folder)
    corpus = load_corpus(folder / "corpus.jsonl")
    queries = load_queries(folder / "queries.jsonl")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    qrels = load_qrels(qrels_path)
    missing_q = sorted(set(qrels) - set(queries))
    if missing_q:
        raise DataError(f"{qrels_path}: query id {missing_q[0]!r} is not in queries.jsonl")
    for qid, docs in qrels.items():
        for did in docs:
            if did not in corpus:
                raise DataError(f"{qrels_path}: document id {did!r} (query {qid!r}) "
                                "is not in corpus.jsonl")
    queries = {qid: text for qid, text in queries.items() if qid in qrels}
    if not queries:  # else every evaluation writes 0 rows and the benchmark drops silently
        raise DataError(f"{qrels_path}: no {split} query has a judged document, so "
                        f"benchmark {folder.name!r} has nothing to evaluate")
    return corpus, queries, qrels


def write_beir(folder, corpus: dict, queries: dict, qrels: dict, split: str = "test") -> None:
    folder = Path(folder)
    write_jsonl(folder / "corpus.jsonl",
                ({"_id": d, "title": v.get("title", ""), "text": v["text"]}
                 for d, v in corpus.items()))
    write_jsonl(folder / "queries.jsonl", ({"_id": q, "text": t} for q, t in queries.items()))
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{s}" for q, docs in qrels.items() for d, s in docs.items()]
    write_text(folder / "qrels" / f"{split}.tsv", "\n".join(lines) + "\n")


# ---------------------------------------------------------------------------------------
# Parquet contracts
# ---------------------------------------------------------------------------------------
def check_columns(df: pd.DataFrame, required, path) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}")


def read_eval(path) -> pd.DataFrame:
    """A per-query evaluation parquet (docs/architecture.md, data contracts); every metric
    finite."""
    import numpy as np
    import pandas as pd

    df = read_parquet(path)
    check_columns(df, ("query_id", *METRICS, *RUN_KEYS), path)
    for col in METRICS:
        bad = np.flatnonzero(~np.isfinite(pd.to_numeric(df[col], errors="coerce").to_numpy(float)))
        if len(bad):
            raise DataError(f"{path}: column {col!r} holds {len(bad)} non-finite value(s) "
                            f"(NaN or inf), first at row(s) {', '.join(map(str, bad[:5]))} "
                            "(0-based)")
    return df


def read_stats(stats_dir, name: str) -> pd.DataFrame:
    """One stats table, checked against its declared columns (an empty table may have none:
    e.g. no variance rows when every arm has one seed)."""

    path = Path(stats_dir) / f"{name}.parquet"
    df = read_parquet(path)
    if len(df):
        check_columns(df, {**STATS_TABLES, **CURVE_TABLES, **COMPUTE_TABLES, **DIMS_TABLES}[name],
                      path)
    return df


def read_usage(path) -> pd.DataFrame:
    """results/<study>/usage.parquet (core/usage.py), checked against USAGE_COLUMNS."""

    df = read_parquet(path)
    check_columns(df, USAGE_COLUMNS, path)
    return df


def snapshot_steps(eval_steps, steps: int) -> list[int]:
    """The learning curve's steps that get a snapshot (checkpoints/.../steps/step<N>): all
    but the last step, whose point is the final model itself."""
    return [int(n) for n in eval_steps if int(n) < steps]


def order_recipes(recipes, budget_order) -> list[str]:
    """Trained recipes (the base left out) in budget order, smallest first; recipes the
    order does not name go last, by name."""
    order = list(budget_order)
    found = {r for r in recipes if r != BASE}
    return sorted(found, key=lambda r: (order.index(r) if r in order else len(order), r))


def ci_label(level: float) -> str:
    """'95%' for 0.95, '99.5%' for 0.995: the CI level as the figures and the report say it."""
    return f"{100 * float(level):.10g}%"


def ci_level(table: pd.DataFrame) -> str:
    """The CI level a stats table records in its `ci` column (the configured stats.ci), as
    '95%'; levels joined by ' / ' should a table hold several."""
    return " / ".join(ci_label(x) for x in sorted(table["ci"].dropna().unique()))


# How the report and the figures name the interval methods of stats/intervals.py.
INTERVAL_NAMES = {"calibrated": "calibrated", "multibootstrap": "Multi-Bootstrap"}
WHY_THEY_DIFFER = (
    "The two differ because the calibrated interval treats the seeds as a small sample of all "
    "seeds (its seed part rests on seeds − 1 degrees of freedom) and counts the seed × example "
    "noise once, while the Multi-Bootstrap resamples the few seeds as if they were all there "
    "is (too narrow when seeds dominate) and counts that noise twice (too wide when they do "
    "not); docs/methods.md has the coverage tables.")


def interval_name(table: pd.DataFrame) -> str:
    """The interval method a stats table records in its `interval` column, as the report
    names it ('calibrated', 'Multi-Bootstrap'); joined by ' / ' should a table hold several."""
    return " / ".join(INTERVAL_NAMES.get(m, m) for m in sorted(table["interval"].unique()))


def ci_caption(table: pd.DataFrame) -> str:
    """'95% calibrated CI': the level and the method of a stats table's intervals."""
    return f"{ci_level(table)} {interval_name(table)} CI"


def shows_reference(table: pd.DataFrame) -> bool:
    """Whether the table's Multi-Bootstrap columns (mb_*) differ from its main interval."""
    return bool((table["interval"] != "multibootstrap").any())


def read_latency(path) -> pd.DataFrame:

    df = read_parquet(path)
    check_columns(df, LATENCY_COLUMNS, path)
    return df
