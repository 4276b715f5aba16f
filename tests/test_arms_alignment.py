"""Arms are compared example by example: two arms with different query sets of the same size
stop with an error naming the first id present in one arm only (core/arms.check_aligned)."""

from __future__ import annotations

import pandas as pd
import pytest

from workflow_scripts.core import arms, contracts


def _evals(depth: int, qids: list[str], bench: str = "b1") -> pd.DataFrame:
    return pd.DataFrame([{"recipe": "r", "strategy": "top", "depth": depth, "seed": s,
                          "benchmark": bench, "query_id": q, "ndcg@10": 0.5,
                          "_path": f"d{depth}.parquet"} for s in (1, 2) for q in qids])


def test_same_size_different_queries_are_not_paired_silently():
    df = pd.concat([_evals(1, ["q1", "q2", "q3"]), _evals(2, ["q1", "q2", "q4"])])
    built = arms.build_arms(df, "ndcg@10")
    a, b = built[("r", "top", 1)], built[("r", "top", 2)]
    assert a.query_ids["b1"] == ("q1", "q2", "q3")
    with pytest.raises(contracts.DataError, match=r"r/top1 vs r/top2 on b1: query 'q3' is "
                       r"evaluated for r/top1 only \(2 ids differ\)"):
        arms.design_for(a, b)


def test_aligned_queries_pass():
    df = pd.concat([_evals(1, ["q2", "q1"]), _evals(2, ["q1", "q2"])])
    built = arms.build_arms(df, "ndcg@10")
    assert arms.design_for(built[("r", "top", 1)], built[("r", "top", 2)]) == "paired"
