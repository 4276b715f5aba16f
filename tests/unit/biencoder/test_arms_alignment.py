"""Comparisons of two arms: they are compared example by example, so two arms with different
query sets of the same size stop with an error naming the first id present in one arm only
(core/arms.check_aligned); and the p beside a two-sided CI is two-sided (biencoder/stats)."""

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
        arms.check_aligned(a, b)


def test_aligned_queries_pass():
    df = pd.concat([_evals(1, ["q2", "q1"]), _evals(2, ["q1", "q2"])])
    built = arms.build_arms(df, "ndcg@10")
    arms.check_aligned(built[("r", "top", 1)], built[("r", "top", 2)])


def test_trained_vs_base_p_is_two_sided_like_its_ci():
    """The p beside a two-sided CI is two-sided: an effect whose 95% CI includes 0 never gets
    p < 0.05 (a one-sided p of 0.045 used to sit next to such a CI)."""
    import numpy as np

    from workflow_scripts.biencoder import stats

    rng = np.random.default_rng(4)
    base = arms.Arm("base", "top", 1, (-1,), {"b1": rng.normal(0.5, 0.2, (1, 200))})
    trained = arms.Arm("r", "top", 1, (1, 2, 3), {"b1": base.scores["b1"] + 0.02
                       + rng.normal(0, 0.01, (3, 1)) + rng.normal(0, 0.05, (3, 200))})
    from workflow_scripts.core.settings import Stats

    s = Stats.from_json('{"nboot": 200, "seed": 0}')
    for row in stats.compare_arms("trained_vs_base", base, trained, s):
        assert row["alternative"] == "two-sided"
        assert (row["p_value"] < 0.05) == (row["ci_low"] > 0 or row["ci_high"] < 0)
