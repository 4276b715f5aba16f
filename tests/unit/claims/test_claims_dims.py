"""Claims that name an embedding dimension (`dim`, one of eval.dims): parsed and checked
against the grid, read from that dimension's per-query files, decided on them (the full
dimension's files untouched), and recorded in the claim's analysis."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic_scores import write_eval
from test_claims import FAST

from workflow_scripts.claims import analysis, decide, layout, spec
from workflow_scripts.claims.data import load
from workflow_scripts.core import contracts, paths

BENCH = ("b1", "b2")
SEEDS = (1, 2, 3)


def config(dims=(64,)) -> dict:
    return {"recipes": {"r": {"seeds": list(SEEDS)}}, "depths": [1, 2], "strategies": ["top"],
            "benchmarks": list(BENCH), "eval": {"dims": list(dims)}}


def parse(claim: dict, dims=(64,)) -> spec.Claim:
    return spec.parse([{"id": "x", "statement": "s", **claim}],
                      spec.grid_from_config(config(dims)))[0]


DEEPER = {"a": {"recipe": "r", "depth": 1}, "b": {"recipe": "r", "depth": 2}, "test": "greater"}


def test_a_part_names_the_dimension_both_arms_are_scored_at():
    claim = parse({**DEEPER, "dim": 64})
    (m,) = claim.members
    assert (m.a, m.b, m.dim) == (("r", "top", 1), ("r", "top", 2), 64)
    assert m.label == "r/top2 − r/top1 [all, 64 dims]"
    assert parse(DEEPER).members[0].dim == 0  # the full dimension by default
    # A dimension the config does not evaluate: an edit of eval.dims could give it.
    other = parse({**DEEPER, "dim": 32})
    assert not other.members and "eval.dims: 64" in other.not_applicable


@pytest.mark.parametrize("claim, message", [
    ({**DEEPER, "dim": 0}, "dim: 0 is not an embedding dimension"),
    ({**DEEPER, "dim": "64"}, "dim: '64' is not an embedding dimension"),
    ({"estimate": "latency_ratio", "a": {"depth": 1}, "b": {"depth": 2}, "test": "less",
      "dim": 64}, "dim: only the bi-encoder's evaluations"),
])
def test_a_dimension_no_edit_could_give_is_an_error(claim, message):
    with pytest.raises(spec.ClaimError, match=message):
        parse(claim)


def write_study(results, means: dict, dims_means: dict, rng) -> None:
    """Per-query files of r/top1, r/top2 at the full dimension (`means`: depth -> mean) and
    at 64 dimensions (`dims_means`), with a `dim` column as the evaluation writes it."""
    qids = [f"q{i}" for i in range(200)]
    for bench in BENCH:
        effects = rng.normal(0, 0.15, len(qids))
        for depth in (1, 2):
            for seed in SEEDS:
                noise = rng.normal(0, 0.05, len(qids)) + rng.normal(0, 0.003)
                full = results / paths.EVAL.format(recipe="r", strategy="top", depth=depth,
                                                   seed=seed, benchmark=bench)
                write_eval(full, "r", depth, seed, bench, means[depth] + effects + noise, qids)
                cut = results / paths.EVAL_DIM.format(recipe="r", strategy="top", depth=depth,
                                                      seed=seed, benchmark=bench, dim=64)
                write_eval(cut, "r", depth, seed, bench, dims_means[depth] + effects + noise,
                           qids)
                df = contracts.read_eval(cut).assign(dim=64)
                df.to_parquet(cut)


def test_a_dimension_claim_is_decided_on_that_dimensions_files(tmp_path):
    """Two layers beat one by 0.1 at the full dimension and by nothing at 64: the same
    claim is supported at the full dimension and not at 64; each reads its own files."""
    results = tmp_path / "results"
    write_study(results, {1: 0.3, 2: 0.4}, {1: 0.3, 2: 0.3}, np.random.default_rng(3))
    g = spec.grid_from_config(config())
    claims = spec.parse([{"id": "full", "statement": "s", **DEEPER},
                         {"id": "d64", "statement": "s", **DEEPER, "dim": 64}], g)
    full, d64 = (set(layout.input_files(results, g, [c])) for c in claims)
    assert all("/dim64/" in str(f) for f in d64) and not any("/dim" in str(f) for f in full)
    assert len(d64) == len(full) == 2 * len(SEEDS) * len(BENCH)
    table = decide.decide(claims, load(results, g, claims), FAST).set_index("claim")
    heads = table[table.row == "claim"]
    assert heads.loc["full", "verdict"] == "supported"
    assert heads.loc["d64", "verdict"] != "supported"
    rows = table[table.row == "member"]
    assert abs(rows.loc["full", "estimate"] - 0.1) < 0.01
    assert abs(rows.loc["d64", "estimate"]) < 0.01
    # A missing dimension file makes the dimension's claim not-applicable, naming it.
    gone = sorted(d64)[0]
    gone.unlink()
    table = decide.decide(claims, load(results, g, claims), FAST).set_index("claim")
    heads = table[table.row == "claim"]
    assert heads.loc["d64", "verdict"] == "not-applicable"
    assert str(gone) in table[table.row == "member"].loc["d64", "note"]
    assert heads.loc["full", "verdict"] == "supported"


def test_the_dimension_is_part_of_the_registered_analysis():
    g = spec.grid_from_config(config(dims=(64, 128)))
    full, d64 = spec.parse([{"id": "full", "statement": "s", **DEEPER},
                            {"id": "d64", "statement": "s", **DEEPER, "dim": 64}], g)
    assert "eval.dims" not in analysis.analysis(full, g)  # unchanged where none is named
    assert analysis.analysis(d64, g)["eval.dims"] == [64]
