"""RESULTS.md's "Layers × embedding dimensions": every arm's mean metric at each depth, at its
full dimension (ci.parquet) and at each configured smaller one (dims.parquet), each with its
interval, on the mean of benchmarks where there are several."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.biencoder.report.markdown import interval, md_table
from workflow_scripts.core import contracts
from workflow_scripts.core.contracts import ALL


def dims_section(ci: pd.DataFrame, dims: pd.DataFrame) -> str:
    metric = dims["metric"].iloc[0]
    bench = ALL if ALL in set(dims.benchmark) else dims.benchmark.iloc[0]
    where = "the unweighted mean of benchmarks" if bench == ALL else bench
    full = ci[ci.benchmark == bench].assign(dim="full")
    rows = pd.concat([dims[dims.benchmark == bench].assign(dim=lambda d: d["dim"].astype(str)),
                      full], ignore_index=True)
    rows = rows.assign(cell=[interval(r.estimate, r.ci_low, r.ci_high)
                             for r in rows.itertuples()])
    wide = rows.pivot_table(index=["recipe", "strategy", "depth"], columns="dim",
                            values="cell", aggfunc="first")
    sizes = sorted((c for c in wide.columns if c != "full"), key=int)
    wide = wide[[*sizes, "full"]]
    wide.columns = [f"{c} dims" if c != "full" else "full dimension" for c in wide.columns]
    return (f"## {metric} by layers and embedding dimension\n\n"
            f"Each arm at each depth on {where}, at the embedding dimensions of eval.dims "
            "(the first coordinates of the same embeddings, L2-normalised, as "
            "sentence-transformers' truncate_dim, then cosine) and at its full dimension, "
            f"each with its {contracts.ci_caption(dims)} over seeds × queries (queries only "
            "for one-seed arms).\n\n" + md_table(wide.reset_index()) + "\n")
