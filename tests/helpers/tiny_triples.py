"""A small training set of distinct (query, positive, negative) triples for tiny trainings."""

from __future__ import annotations

import pandas as pd

WORDS = ["array", "frame", "tensor", "index", "merge", "sparse", "solve", "plot"]


def write_triples(path, n: int = 40):
    """The first `n` triples (of 56) as the training stage reads them: a parquet file."""
    rows = [{"query": f"how to {a} a {b}", "positive": f"{a} the {b} with axis {i}",
             "negative": f"{b} of {a} number {i}"}
            for i, (a, b) in enumerate((a, b) for a in WORDS for b in WORDS if a != b)]
    pd.DataFrame(rows[:n]).to_parquet(path)
    return path
