"""Claims at the edges: the default metric of a bi-encoder claim is stats.metric (as for
onset claims), so that one claim set cannot mix metrics silently."""

from __future__ import annotations

from workflow_scripts.claims import spec


def _grid(stats_metric: str | None) -> spec.Grid:
    conf = {"recipes": {"r1": {"seeds": [1, 2, 3]}}, "depths": [1, 2], "strategies": ["top"],
            "benchmarks": ["b1"]}
    if stats_metric:
        conf["stats"] = {"metric": stats_metric}
    return spec.grid_from_config(conf)


def test_biencoder_claim_without_metric_uses_stats_metric():
    claim = [{"id": "d", "statement": "s", "a": {"recipe": "r1", "depth": 1},
              "b": {"recipe": "r1", "depth": 2}, "test": "greater"}]
    (c,) = spec.parse(claim, _grid("recall@100"))
    assert [m.metric for m in c.members] == ["recall@100"]
    (c,) = spec.parse(claim, _grid(None))  # no stats.metric: the grid's first metric
    assert [m.metric for m in c.members] == ["ndcg@10"]
    (c,) = spec.parse([{**claim[0], "metric": "mrr@10"}], _grid("recall@100"))
    assert [m.metric for m in c.members] == ["mrr@10"]
