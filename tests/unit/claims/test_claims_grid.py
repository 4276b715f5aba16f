"""Claims follow the grid (claims/grid.py, docs/claims.md): a claim naming what an edited
grid lacks is not-applicable with a warning naming the claim and the value; a value no edit
of the grid could give stays an error."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import ROOT

from workflow_scripts.claims import decide, grid, spec
from workflow_scripts.claims.data import Data
from workflow_scripts.core.settings import Claims
from workflow_scripts.study_config import base_layers, check_config

DEFAULT = yaml.safe_load((ROOT / "config/config.yaml").read_text())


def edited(**keys) -> dict:
    cfg = copy.deepcopy(DEFAULT)
    cfg.update(keys)
    return cfg


def parsed(cfg: dict) -> dict[str, spec.Claim]:
    """The config checked (as the Snakefile does), then its claims parsed as the claims rule
    parses them."""
    check_config(cfg)
    return {c.id: c for c in spec.parse(cfg["claims"], spec.grid_from_config(cfg))}


def test_fewer_depths_make_the_claims_naming_depth_3_not_applicable():
    claims = parsed(edited(depths=[1, 2]))
    na = {cid: c.not_applicable for cid, c in claims.items() if c.not_applicable}
    assert set(na) == {"published-magnitudes", "latency-linear"}
    assert na["published-magnitudes"].startswith(
        "all_of[0].a.depth: 3 is not in this config, which has 1, 2")
    assert na["latency-linear"] == "all_of[1].a.depth: 3 is not in this config, which has 1, 2"
    assert not claims["published-magnitudes"].members  # no inputs for the claims rule
    # the others follow the grid: `all` means depths 1 and 2
    assert [m.label for m in claims["depth-invariant-short"].members] == [
        "short/top2 − short/top1 [all]"]
    table = decide.decide([claims["latency-linear"]], Data(),
                          decide.Options(Claims.from_config({})))
    assert table.iloc[0]["verdict"] == "not-applicable"
    assert "depth: 3 is not in this config" in table.iloc[0]["note"]


def test_one_depth_leaves_sets_and_contrasts_of_depths_not_applicable():
    claims = parsed(edited(depths=[2]))
    na = {cid: c.not_applicable for cid, c in claims.items() if c.not_applicable}
    assert "pairs: names 1 arm(s); a set needs 2 or more" in na["depth-invariant-short"]
    assert "among: no arm besides the candidate" in na["middle-most-robust"]
    assert na["deepest-beats-shallowest"] == (
        "a and b name the same arm in this config (long/top2)")
    assert "long-degrades" not in na and "per-depth-beats-train-once" not in na


def test_a_second_strategy_means_top_where_a_claim_leaves_strategy_out():
    claims = parsed(edited(strategies=["top", "bottom"]))
    assert not any(c.not_applicable for c in claims.values())
    assert [m.label for m in claims["depth-invariant-short"].members] == [
        "short/top2 − short/top1 [all]", "short/top3 − short/top1 [all]",
        "short/top3 − short/top2 [all]"]
    assert {m.b[1] for m in claims["per-depth-beats-train-once"].members} == {"top"}


def test_a_strategy_named_but_dropped_is_not_applicable():
    cfg = edited()
    cfg["recipes"]["short"].pop("train_once")
    claims = parsed(cfg)
    assert claims["per-depth-beats-train-once"].not_applicable == (
        "a.strategy: 'adaptive' is not in this config, which has top, truncated")


@pytest.mark.parametrize(("claim", "change", "message"), [
    # a typo in a recipe, ladder config or strategy name: no edit of the grid gives it
    ("long-degrades", {"b": {"recipe": "lnog"}}, "b.recipe: 'lnog' is not in this config"),
    ("fa-no-depth-utility", {"a": {"config": "d64L3", "method": "fa", "k": 0}},
     "a.config: 'd64L3' is not in this config"),
    ("per-depth-beats-train-once", {"a": {"recipe": "short", "strategy": "adaptve"}},
     "a.strategy: 'adaptve' is not in this config"),
    # a depth beyond the base model's 6 layers, a rung beyond L, a benchmark not a dataset
    ("long-degrades", {"a": {"recipe": "short", "depth": 7}},
     "a.depth: 7 is beyond the base model's 6 layers; a claim's depths are 1 to 6"),
    ("long-degrades", {"for_each": {"depth": [2, 9]}},
     "for_each.depth: 9 is beyond the base model's 6 layers"),
    ("fa-no-depth-utility", {"b": {"config": "d64L2", "method": "fa", "k": 3}},
     "b.k: 3 is not"),
    ("degradation-concentrated", {"benchmark": "fiqa"}, "benchmark: 'fiqa' is not"),
])
def test_a_value_no_grid_could_have_stays_an_error(claim, change, message):
    cfg = edited(depths=[1, 2])  # the grid edit alone passes (above)
    i = [c["id"] for c in cfg["claims"]].index(claim)
    cfg["claims"][i].update(change)
    with pytest.raises(ValueError, match="invalid configuration") as e:
        check_config(cfg)
    assert f"claims[{i}] (id {claim}).{message}" in str(e.value)


def test_a_typo_beside_a_grid_gap_is_still_named():
    """The part misses depth 3 (a gap), then names a recipe no config has (an error)."""
    cfg = edited(depths=[1, 2])
    cfg["claims"].append({"id": "both", "statement": "s", "a": {"recipe": "short", "depth": 3},
                          "b": {"recipe": "shrot", "depth": 3}, "test": "greater"})
    with pytest.raises(ValueError, match=r"\(id both\)\.b\.recipe: 'shrot' is not in this "
                                                 "config nor in any edit of its grid"):
        check_config(cfg)


def test_benchmarks_and_ladder_methods_follow_the_grid():
    cfg = edited(benchmarks=["pandas-docs", "torch-docs"])
    cfg["ladder"]["methods"] = ["bp", "fa"]
    claims = parsed(cfg)
    assert claims["degradation-concentrated"].not_applicable.startswith(
        "benchmark: 'sklearn-docs' is not all, each or a benchmark of this config")
    assert claims["dfa-frozen-max"].not_applicable.startswith(
        "a.method: 'dfa' is not in this config, which has bp, fa")
    assert not claims["fa-no-depth-utility"].not_applicable


def test_the_registries_of_the_possible_grid():
    assert tuple(
        yaml.safe_load((ROOT / "config/schema.yaml").read_text())
        ["properties"]["strategies"]["items"]["enum"]) == grid.PER_DEPTH_STRATEGIES
    from workflow_scripts.biencoder.model.truncation import STRATEGIES
    assert grid.PER_DEPTH_STRATEGIES == STRATEGIES
    assert base_layers(DEFAULT) == 6
    g = spec.grid_from_config(edited(depths=[1, 2]))
    wider = grid.possible(g, named_depths=[3])  # layers unknown: up to the largest named
    assert sorted({a["depth"] for a in wider.biencoder}) == [1, 2, 3]
    assert {a["strategy"] for a in wider.biencoder if a["recipe"] == "base"} == set(
        grid.PER_DEPTH_STRATEGIES)  # the base has no train-once arm
    assert spec.Grid.from_dict(g.to_dict()) == g


@pytest.mark.workflow
def test_an_edited_grid_plans_with_warnings_naming_claim_and_value(tmp_path):
    from conftest import snakemake

    cfg = edited(depths=[1, 2], strategies=["top", "bottom"])
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(path))
    err = proc.stdout + proc.stderr
    assert ("warning: claim published-magnitudes is not-applicable: all_of[0].a.depth: 3 is "
            "not in this config, which has 1, 2") in err
    assert "warning: claim latency-linear is not-applicable: all_of[1].a.depth: 3" in err
    assert "warning: claim depth-invariant-short" not in err
    assert "claims" in err and not (tmp_path / "results").exists()
