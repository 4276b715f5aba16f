"""The fine-tuned-then-truncated arm's evaluation (biencoder/evaluate.py --strategy truncated*):
a trained model cut by its strategy's rule gives the per-query rows the same cut of the same
weights gives as an untrained base, and its files name the model and the cut."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from workflow_scripts.biencoder import evaluate
from workflow_scripts.core import contracts

IDENTITY = ["recipe", "strategy", "seed"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench")
    words = ["mean of values", "sort the index", "merge two frames", "read a csv file",
             "drop missing rows", "group by a key", "pivot a table", "plot a histogram"]
    corpus = {f"d{i}": {"text": f"{w} in a data frame"} for i, w in enumerate(words)}
    queries = {f"q{i}": w for i, w in enumerate(words[:4])}
    contracts.write_beir(folder, corpus, queries, {f"q{i}": {f"d{i}": 1} for i in range(4)})
    return folder


@pytest.fixture(scope="module")
def fine_tuned(tiny_model, tmp_path_factory):
    """The tiny 3-layer model standing for a per-depth model trained at depth 3: its
    train_summary.json says so."""
    import shutil

    folder = tmp_path_factory.mktemp("ft") / "top3"
    shutil.copytree(tiny_model, folder)
    (folder / "train_summary.json").write_text(json.dumps(
        {"strategy": "top", "depth": 3, "seed": 7, "steps": 1}))
    return folder


def _run(bench, tmp_path, name, *args):
    outs = [str(tmp_path / f"{name}{i}.parquet") for i in range(len(args[-1]) - 1)]
    evaluate.main([*args[:-1], *args[-1], "--benchmark-dir", str(bench), "--benchmark", "b",
                   "--settings-json", json.dumps({"max_seq_length": 16, "batch_size": 4}),
                   "--out", *outs])
    return [contracts.read_eval(o) for o in outs]


@pytest.mark.workflow  # loads models: seconds, not the fast suite's milliseconds
@pytest.mark.parametrize(("arm", "cut", "kept"), [("truncated", "top", [0]),
                                                  ("truncatedbottom", "bottom", [2])])
def test_the_cut_of_a_trained_model_is_the_strategys(bench, fine_tuned, tmp_path, arm, cut,
                                                     kept):
    """Cut to depth 1 (top: the bottom layer, one pass; bottom: the top layer), the model's
    rows are those of the same weights cut as a base by that strategy; the provenance names
    the model, its training and the layers kept."""
    [got] = _run(bench, tmp_path, arm, "--model", str(fine_tuned), "--strategy", arm,
                 "--recipe", "r", "--seed", "7",
                 ["--depths", "1"] if cut == "top" else ["--depth", "1"])
    [ref] = _run(bench, tmp_path, "ref", "--base", str(fine_tuned), "--strategy", cut,
                 "--recipe", "base", "--seed", "-1", ["--depth", "1"])
    assert set(got.strategy) == {arm} and set(got.depth) == {1}
    pd.testing.assert_frame_equal(got.drop(columns=IDENTITY), ref.drop(columns=IDENTITY))
    made = got.attrs["provenance"]["truncated_from"]
    assert made == {"model": str(fine_tuned), "summary": str(fine_tuned / "train_summary.json"),
                    "trained_strategy": "top", "trained_depth": 3, "seed": 7, "cut": cut,
                    "depth": 1, "kept_layers": kept}


@pytest.mark.workflow
def test_a_truncated_arm_needs_a_trained_model_and_top_for_one_pass(bench, fine_tuned,
                                                                    tmp_path):
    with pytest.raises(SystemExit):
        _run(bench, tmp_path, "x", "--base", str(fine_tuned), "--strategy", "truncated",
             "--recipe", "r", "--seed", "1", ["--depth", "1"])
    with pytest.raises(SystemExit):
        _run(bench, tmp_path, "x", "--model", str(fine_tuned), "--strategy",
             "truncatedbottom", "--recipe", "r", "--seed", "1", ["--depths", "1", "2"])
