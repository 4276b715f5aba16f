"""The stats table (biencoder/stats.py) and claims.md (claims/decide.py) give the same
estimate and interval for the same comparison: both choose the design and pool a one-seed
arm's borrowed seed terms by stats/design.py, so a study with a trained one-seed arm (the
paper's experiments A and E) cannot show two intervals for one comparison."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from workflow_scripts.biencoder import stats
from workflow_scripts.claims import decide
from workflow_scripts.claims.data import Data
from workflow_scripts.claims.spec import Member
from workflow_scripts.core.arms import Arm
from workflow_scripts.core.contracts import BASE
from workflow_scripts.core.settings import Claims, Stats

BENCH = ("b1", "b2")
METRIC = "ndcg@10"


def _study(rng) -> dict:
    """Three recipes at depths 1 and 2, one of them trained at a single seed, beside the
    untrained base; the same queries everywhere."""
    effects = {b: rng.normal(0, 0.2, 120) for b in BENCH}
    seeds = {"r_short": (1, 2, 3), "r_long": (1, 2, 3, 4), "r_one": (9,), BASE: (-1,)}
    arms = {}
    for k, (recipe, ids) in enumerate(seeds.items()):
        for depth in (1, 2):
            scores = {b: (0.3 + 0.01 * k + 0.02 * depth + effects[b][None, :]
                          + rng.normal(0, 0.01, (len(ids), 1))
                          + rng.normal(0, 0.05, (len(ids), 120))) for b in BENCH}
            arms[(recipe, "top", depth)] = Arm(recipe, "top", depth, ids, scores)
    return arms


def test_every_comparison_has_one_interval_in_the_stats_table_and_the_claims():
    arms = _study(np.random.default_rng(3))
    s = Stats.from_json('{"nboot": 100, "seed": 0}')
    options = decide.Options(dataclasses.replace(Claims.from_config({}), nboot=100,
                                                 ci=s.ci))
    data = Data(biencoder={(METRIC, 0): arms})
    pairs = stats.comparison_pairs(arms, ["r_short", "r_long", "r_one"])
    rows = stats.comparison_rows(arms, pairs, s)
    borrowed = 0
    for kind, ka, kb in pairs:
        mine = [r for r in rows if (r["a"], r["b"]) == (arms[ka].label, arms[kb].label)]
        widest = mine[0]["resample"]
        for row in (r for r in mine if r["resample"] == widest):
            m = Member("x", 0, "biencoder", "difference", "greater", ka, kb,
                       benchmark=row["benchmark"], metric=METRIC, threshold=0.0)
            claim = decide.decide_member(m, data, options)
            where = (kind, ka, kb, row["benchmark"])
            assert claim["design"] == row["design"], where
            assert claim["resample"] == row["resample"], where
            assert (claim["estimate"], claim["ci_low"], claim["ci_high"]) == pytest.approx(
                (row["estimate"], row["ci_low"], row["ci_high"]), rel=1e-12, abs=1e-15), where
            borrowed += "borrowed" in row.get("seed_noise", "")
    assert borrowed >= 8  # r_one against r_short and r_long, each depth, benchmark and "all"


def test_the_seed_plans_use_one_statistic_whatever_the_interval_method():
    """With stats.interval: multibootstrap the stats table planned with normal quantiles and
    the claims with the calibrated t: one study, two seed counts. Both now plan with the
    calibrated t (intervals.seeds_needed and seeds_to_settle)."""
    from workflow_scripts.stats import intervals

    rng = np.random.default_rng(3)
    x = 0.5 + rng.normal(0, 0.02, (3, 1)) + rng.normal(0, 0.1, (3, 200))
    y = x + 0.01 + rng.normal(0, 0.02, (3, 1))
    targets = {"half_width": 0.01, "delta": 0.02, "versus": y, "ci": 0.95}
    assert (intervals.seeds_needed(x, method="multibootstrap", **targets)
            == intervals.seeds_needed(x, method="calibrated", **targets))
