"""One notation per concept across RESULTS.md, the claims section and the ladder's summary
(core/notation.py): numbers with the precision that shows them, "no onset", "unreachable",
and each claim's deciding interval named in its own column."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
from test_claims_render import claim
from test_report_figures import write_tables

from workflow_scripts.biencoder.report import results as report
from workflow_scripts.claims import render
from workflow_scripts.core import contracts, notation

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(("x", "digits", "text"), [
    (0.00016, 3, "1.6e-04"), (-0.00004, 4, "-4.0e-05"), (0.0006, 3, "0.001"),
    (0.0, 3, "0.000"), (0.25, 4, "0.2500"), (NAN, 4, "–"), (None, 4, "–"), (INF, 2, "∞"),
    (-INF, 2, "−∞"), (0.59, 1, "0.6"), (12.345, 1, "12.3")])
def test_a_number_never_reads_zero_unless_it_is(x, digits, text):
    assert notation.num(x, digits) == text


def test_special_values_read_the_same_everywhere():
    assert [notation.step(x) for x in (40.0, NAN, INF, None)] == ["40", *["no onset"] * 3]
    assert notation.onset_interval(NAN, 6.0, INF) == "no onset [6, no onset]"
    assert [notation.seeds(x) for x in (3, 4.0, None, NAN)] == ["3", "4", *["unreachable"] * 2]
    assert notation.interval(0.1, NAN, NAN) == "0.1000"
    assert notation.cell(True) == "yes" and notation.cell(7) == "7"


@pytest.mark.parametrize(("share", "text"), [
    (0.0, "0%"), (1.0, "100%"), (0.5, "50%"), (0.003, "0.3%"), (0.0004, "0.04%"),
    (0.00001, "<0.01%"), (0.99999, ">99.99%"), (0.996, "99.6%"), (NAN, "–")])
def test_a_percentage_never_reads_0_or_100_unless_it_is(share, text):
    """An onset row printed 'decline in 0% of 2000 samples' beside p 0.0030 (5 samples)."""
    assert notation.percent(share) == text


def _small_variance_tables(folder) -> None:
    write_tables(folder, 0.95)
    keys = {"metric": "ndcg@10", "strategy": "top", "benchmark": contracts.ALL}
    var = pd.DataFrame([{**keys, "recipe": r, "depth": d, "var_joint": v, "var_seeds": v / 10,
                         "var_examples": v, "share_seeds": 0.0004, "share_examples": 0.99,
                         "share_interaction": 0.0096}
                        for r, d, v in (("short", 1, 0.00016), ("long", 2, 0.0006))])
    plan = pd.DataFrame([{**keys, "recipe": "short", "depth": 1, "interval": "calibrated",
                          "n_seeds": 3, "target_half_width": 0.01, "target_delta": 0.01,
                          "half_width_now": 0.04, "seeds_for_half_width": hw,
                          "seeds_for_delta": 29, "delta_versus": versus, "arm_example_sd": 0.02,
                          "ci": 0.95} for hw, versus in ((None, "long/top2"), (12, ""))])
    contracts.write_parquet(folder / "variance.parquet", var)
    contracts.write_parquet(folder / "seeds_needed.parquet", plan)


def test_results_print_no_zero_for_a_nonzero_value_and_say_unreachable(tmp_path):
    _small_variance_tables(tmp_path)
    md = report.build(tmp_path)
    section = md.split("## Where the uncertainty comes from", 1)[1].split("## ", 1)[0]
    assert "| short | top | 1 | all | 0.00016 | 4.0e-04 | 0.990 | 0.010 |" in section
    assert "| long | top | 2 | all | 0.00060 |" in section
    plan = md.split("## Seeds needed", 1)[1].split("## ", 1)[0]
    assert "`unreachable`: no number of seeds gets there" in plan
    assert "| 0.0400 | unreachable | 29 | long/top2 |" in plan
    assert "| 0.0400 | 12 | – |  |" in plan  # no comparison partner: no delta plan
    # No cell anywhere reads as zero (0.000, -0.0000, ...): these tables hold no exact zero.
    cells = [c.strip() for line in md.splitlines() if line.startswith("|")
             for c in re.split(r"[|\[\],]", line)]
    assert not [c for c in cells if re.fullmatch(r"-?0\.0+", c)]


def test_claims_name_each_deciding_interval_and_write_no_onset_as_the_curves_do():
    rows = [*claim("gain", "Training helps", estimate=0.03, ci_low=0.01, ci_high=0.05,
                   test="greater", threshold=0.0, verdict="supported", p_support_holm=0.001,
                   p_refute_holm=0.99),
            *claim("fast", "L2 is faster", estimate=0.8, ci_low=0.7, ci_high=0.9, test="less",
                   threshold=0.85, verdict="inconclusive", interval="bootstrap", ci=0.9),
            *claim("flat", "No decline", estimate=NAN, ci_low=INF, ci_high=INF,
                   test="no_decline", verdict="supported", interval="multibootstrap"),
            *claim("linear", "Latency is linear", test="coherent", verdict="refuted",
                   interval="")]
    md = render.markdown(pd.DataFrame(rows))
    assert "| estimate [CI] | CI | threshold |" in md
    assert "| 0.0300 [0.0100, 0.0500] | 95% calibrated | > 0.0000 |" in md
    assert "| 0.8000 [0.7000, 0.9000] | 90% bootstrap | < 0.8500 |" in md
    assert "| no onset [no onset, no onset] | 95% Multi-Bootstrap | no onset |" in md
    assert "| – | – | coherence checks |" in md
    # The rules name no list of methods: each claim's is in its row.
    assert "bootstrap / calibrated" not in md and "column `CI`" in md


def test_the_ladder_summary_writes_accuracy_as_a_fraction():
    from workflow_scripts.ladder import report as ladder_report

    table = pd.DataFrame({"config": "c", "method": "bp", "k": [0, 1], "mean": [0.904, 0.93],
                          "std": [0.01, 0.0004], "ci_low": [0.88, 0.91],
                          "ci_high": [0.92, 0.95], "mb_ci_low": [0.89, 0.92],
                          "mb_ci_high": [0.91, 0.94], "train_accuracy": 1.0, "n_seeds": 3,
                          "interval": "calibrated", "ci": 0.95, "nboot": 200, "blocks": 1})
    comps = pd.DataFrame({"config": "c", "method": "bp", "contrast": ["k=1 vs k=0"],
                          "full": [True], "estimate": [0.026], "ci_low": [0.01],
                          "ci_high": [0.04], "p_value": [0.00002], "mb_ci_low": [0.012],
                          "mb_ci_high": [0.038], "interval": "calibrated", "ci": 0.95})
    md = ladder_report.summary(table, comps, pd.DataFrame(), {})
    assert "| c | BP | 0 | 0.9040 ± 0.0100 | [0.8800, 0.9200] |" in md
    assert "| c | BP | 1 | 0.9300 ± 0.0004 |" in md
    assert "| 0.0260 | [0.0100, 0.0400] | 2.0e-05 |" in md
    assert "%" not in md.replace("95% calibrated", "") and "points" not in md
