"""The contract of one training run's output: a parquet with one row per test example
(example_id, label, pred, correct + the run keys config, method, k, seed, kind) and the
run's summary (accuracy, epochs, seconds, ...) as JSON in the parquet metadata."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workflow_scripts.core.contracts import DataError, atomic_path, parquet_errors

COLUMNS = ("example_id", "label", "pred", "correct", "config", "method", "k", "seed", "kind")
META_KEY = b"depthlab.ladder"


def write_run(path, *, labels, preds, keys: dict, meta: dict) -> None:
    labels, preds = np.asarray(labels), np.asarray(preds)
    n = len(labels)
    cols = {
        "example_id": pa.array(np.arange(n, dtype=np.int32)),
        "label": pa.array(labels.astype(np.int16)),
        "pred": pa.array(preds.astype(np.int16)),
        "correct": pa.array(labels == preds),
        "config": pa.array([keys["config"]] * n, pa.string()),
        "method": pa.array([keys["method"]] * n, pa.string()),
        "k": pa.array(np.full(n, keys["k"], np.int16)),
        "seed": pa.array(np.full(n, keys["seed"], np.int64)),
        "kind": pa.array([keys["kind"]] * n, pa.string()),
    }
    table = pa.table(cols).replace_schema_metadata(
        {META_KEY: json.dumps({**keys, **meta}, sort_keys=True)})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_run(path):
    """(DataFrame of the rows, dict of the metadata)."""
    with parquet_errors(path):
        table = pq.read_table(path)
    meta = (table.schema.metadata or {}).get(META_KEY)
    missing = [c for c in COLUMNS if c not in table.column_names]
    if meta is None or missing:
        raise DataError(f"{path}: not a ladder run file (missing "
                        f"{', '.join(missing) or 'metadata'})")
    return table.to_pandas(), json.loads(meta)


def collect(paths) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-example rows of all runs, one row per run with its metadata)."""
    rows, metas = [], []
    for path in paths:
        df, meta = read_run(path)
        rows.append(df)
        metas.append({**meta, "path": str(path)})
    return pd.concat(rows, ignore_index=True), pd.DataFrame(metas)


def scores(rows: pd.DataFrame) -> tuple[np.ndarray, list[int]]:
    """[seeds, examples] 0/1 correctness and the seed ids, seeds ascending."""
    wide = rows.pivot(index="seed", columns="example_id", values="correct").sort_index()
    if wide.isna().any().any():
        raise DataError("runs of one group do not cover the same test examples")
    return wide.to_numpy(dtype=float), [int(s) for s in wide.index]
