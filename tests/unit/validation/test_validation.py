"""validation/: the one command that regenerates every statistics table the docs quote
(validation/run.py), run here at a tiny scale so that the command and the docs' marked
blocks cannot rot; and the generative model's variance parts."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT

from validation import model, montecarlo, run, statistic


def test_every_marked_block_names_a_table_and_every_table_has_a_block():
    marked = [name for names in run.doc_blocks(ROOT / "docs").values() for name in names]
    assert sorted(set(marked)) == sorted(marked), "a table is marked twice in docs/"
    assert set(marked) <= set(run.TABLES), f"unknown tables: {set(marked) - set(run.TABLES)}"
    quoted = {"coverage-grid", "coverage-3-seeds", "coverage-edges"}
    assert quoted <= set(marked), f"docs/methods.md lacks the blocks {quoted - set(marked)}"


def test_replace_blocks_rewrites_only_the_named_blocks():
    text = ("a\n<!-- validation: x -->\nold x\n<!-- /validation -->\nb\n"
            "<!-- validation: y -->\nold y\n<!-- /validation -->\n")
    out = run.replace_blocks(text, {"x": "new x\n"})
    assert out == text.replace("old x\n", "new x\n")
    assert run.blocks_in(out) == ["x", "y"]


def test_scale_multiplies_the_trial_counts_with_a_floor():
    table = run.TABLES["coverage-3-seeds"]
    assert "--cal-trials 2000" in table.command(1.0)
    assert f"--cal-trials {run.MIN_TRIALS}" in table.command(1e-6)


@pytest.mark.workflow
def test_the_command_regenerates_the_marked_tables_at_a_tiny_scale(tmp_path, capsys):
    doc = tmp_path / "methods.md"
    doc.write_text("x\n<!-- validation: coverage-3-seeds -->\nSTALE\n<!-- /validation -->\n"
                   "<!-- validation: equivalence-refute -->\nSTALE\n<!-- /validation -->\n")
    run.main(["coverage-3-seeds", "equivalence-refute", "--scale", "0.001", "--write",
              "--docs", str(tmp_path)])
    text = doc.read_text()
    assert "STALE" not in text
    assert "calibrated: coverage over 92 cells" in text
    assert "python -m validation.equivalence_refute --studies 20" in text
    assert "scale 0.001 of the docs' trial counts" in text
    assert "<!-- validation: coverage-3-seeds -->" in capsys.readouterr().out


def test_the_model_draws_its_variance_parts():
    """A paired difference with shares (seed, example, noise) of V = 1: the estimate's
    variance over studies is 1, and each mean square estimates its part."""
    rng = model.rng_for("test", "shares")
    shares, s, q = (0.5, 0.3, 0.2), 4, 50
    sd = model.share_sds(shares, s, q)
    d = model.difference(rng, 4000, s, q, seed_sd=sd[0], interaction_sd=sd[1], noise_sd=sd[2])
    m, x, r = statistic.mean_squares(d)
    assert np.var(d.mean(axis=(1, 2))) == pytest.approx(1.0, rel=0.08)
    assert np.mean(m) == pytest.approx(shares[0] + shares[2], rel=0.08)  # seed + its noise
    assert np.mean(r) == pytest.approx(shares[2], rel=0.05)


def test_the_vectorised_statistic_is_compare_s():
    rng = model.rng_for("test", "compare")
    d = model.difference(rng, 10, 3, 40, seed_sd=0.02, interaction_sd=0.05, noise_sd=0.05,
                         delta=0.01)
    statistic.check(d, statistic.paired(d), studies=10)


def test_wilson_interval():
    lo, hi = montecarlo.wilson(5, 100)
    assert lo < 0.05 < hi and lo > 0.02 and hi < 0.12
    assert montecarlo.wilson(0, 50)[0] == pytest.approx(0.0, abs=1e-12)
