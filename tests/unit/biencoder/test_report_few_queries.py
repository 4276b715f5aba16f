"""RESULTS.md's intervals carry the caveat of a benchmark with few test queries (NanoBEIR's
50), and only then."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.biencoder.report.results import ALL, few_queries_note


def _ci(queries: dict[str, int]) -> pd.DataFrame:
    rows = [{"benchmark": b, "n_queries": n} for b, n in queries.items()]
    return pd.DataFrame([*rows, {"benchmark": ALL, "n_queries": sum(queries.values())}])


def test_few_queries_are_named_under_the_intervals():
    note = few_queries_note(_ci({"nanoscifact": 50, "nanonfcorpus": 50, "scifact": 300}))
    assert "nanonfcorpus (50 queries), nanoscifact (50 queries)" in note
    assert "scifact (300" not in note and "2.4 times as wide" in note
    assert few_queries_note(_ci({"scifact": 300, "nfcorpus": 323})) == ""
