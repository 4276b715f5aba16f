"""Claims at the edges: the default metric of a bi-encoder claim is stats.metric (as for
onset claims), so that one claim set cannot mix metrics silently."""

from __future__ import annotations

import numpy as np
import pytest

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


def _family_with(monkeypatch, p_support, p_refute) -> tuple[str, list]:
    """A claim of two members (adjacent depths) whose one-sided p-values are given."""
    import dataclasses

    from workflow_scripts.claims import decide
    from workflow_scripts.claims.data import Data
    from workflow_scripts.core.settings import Claims

    values = iter(zip(p_support, p_refute, strict=True))

    def member(m, data, options):
        sup, ref = next(values)
        return {"estimate": 0.01, "p_support": sup, "p_refute": ref, "design": "paired"}

    monkeypatch.setattr(decide, "decide_member", member)
    conf_grid = spec.grid_from_config({"recipes": {"r1": {"seeds": [1, 2, 3]}},
                                       "depths": [1, 2, 3], "strategies": ["top"],
                                       "benchmarks": ["b1"]})
    claims = spec.parse([{"id": "f", "statement": "s", "adjacent": {"recipe": "r1",
                          "depth": "all"}, "test": "greater"}], conf_grid)
    options = decide.Options(dataclasses.replace(Claims.from_config({}), nboot=100))
    table = decide.decide(claims, Data(biencoder={}), options)
    return table.iloc[0]["verdict"], table[table.row == "member"]


def test_support_side_of_a_conjunction_takes_no_holm(monkeypatch):
    """Every member supported at alpha = 0.025 on its own: the conjunction is supported (Holm
    would have made the p-values 0.04 and the claim inconclusive)."""
    verdict, members = _family_with(monkeypatch, (0.02, 0.02), (0.9, 0.9))
    assert verdict == "supported"
    assert members.p_support_holm.tolist() == members.p_support.tolist() == [0.02, 0.02]


def test_refute_side_keeps_holm(monkeypatch):
    """Two members each refuted alone at 0.02: after Holm (0.04 > 0.025) neither is, so the
    claim is inconclusive, not refuted."""
    verdict, members = _family_with(monkeypatch, (0.9, 0.9), (0.02, 0.02))
    assert verdict == "inconclusive"
    assert members.p_refute_holm.tolist() == [0.04, 0.04]


def test_an_equivalence_is_refuted_by_the_folded_test_not_the_nearer_side():
    """|delta| > epsilon is a union of two sides: its p is the near side's at its margin plus
    the far side's at the other (decide.refute_equivalence_p), so at epsilon = 0 it is the
    two-sided p (the nearer side's alone is half of it: up to 2 alpha where epsilon is small
    against the se, validation/equivalence_refute.py) and far beyond the se it is the near
    side's."""
    from workflow_scripts.claims.decide import refute_equivalence_p
    from workflow_scripts.stats import calibrated as cal

    rng = np.random.default_rng(3)
    ex = rng.normal(0, 0.2, 400)
    a = ex + rng.normal(0, 0.1, (5, 400))
    b = ex + 0.01 + rng.normal(0, 0.1, (5, 400))

    def p(alternative, threshold):
        return cal.compare(a, b, design="paired", threshold=threshold,
                           alternative=alternative).p_value

    r = cal.compare(a, b, design="paired")
    assert r.estimate > 0
    two_sided = 2 * min(p("greater", 0.0), p("less", 0.0))
    assert refute_equivalence_p(p("greater", 0.0), p("greater", -0.0)) == pytest.approx(
        two_sided)
    for eps in (0.1 * r.se, r.se, 5 * r.se):
        near, far = p("greater", eps), p("greater", -eps)
        folded = refute_equivalence_p(near, far)
        assert folded >= min(p("greater", eps), p("less", -eps)) and folded >= near
        assert folded - near == pytest.approx(far) and far < near
    assert far < 0.01 * near  # 5 se: the far side adds next to nothing
