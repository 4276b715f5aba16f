"""Metrics follow trec_eval semantics (pytrec_eval), every query is kept, search is exact."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from workflow_scripts.biencoder import evaluate, retrieval


def test_ndcg_recall_map_by_hand():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 2}, "q3": {"z": 1}}
    run = {"q1": {"x": 0.9, "a": 0.8, "y": 0.1},  # hit at rank 2
           "q2": {"c": 0.7, "b": 0.6},  # ideal order
           "q3": {"x": 0.5}}  # relevant never retrieved
    df = retrieval.per_query_metrics(qrels, run).set_index("query_id")
    assert df.loc["q1", "ndcg@10"] == pytest.approx(1 / math.log2(3))
    assert df.loc["q1", "mrr@10"] == pytest.approx(0.5)
    assert df.loc["q1", "map@100"] == pytest.approx(0.5)
    assert df.loc["q2", "ndcg@10"] == pytest.approx(1.0)
    assert df.loc["q2", "recall@100"] == pytest.approx(1.0)
    assert df.loc["q3"].drop("query_id", errors="ignore").eq(0).all()
    assert list(df.index) == ["q1", "q2", "q3"]


def test_query_missing_from_run_scores_zero():
    df = retrieval.per_query_metrics({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": {"a": 1.0}})
    assert df.set_index("query_id").loc["q2"].eq(0).all()


def test_mrr_at_10_ignores_hits_below_rank_10():
    docs = {f"d{i:02d}": 1.0 - i / 100 for i in range(12)}
    df = retrieval.per_query_metrics({"q": {"d10": 1}}, {"q": docs})  # hit at rank 11
    assert df["mrr@10"].iloc[0] == 0.0
    df = retrieval.per_query_metrics({"q": {"d09": 1}}, {"q": docs})  # rank 10
    assert df["mrr@10"].iloc[0] == pytest.approx(0.1)


def test_ties_are_broken_by_trec_eval_rule():
    # Equal scores: trec_eval orders by document id (descending), so "b" ranks before "a".
    df = retrieval.per_query_metrics({"q": {"a": 1}}, {"q": {"a": 0.5, "b": 0.5}})
    assert df["mrr@10"].iloc[0] == pytest.approx(0.5)


def test_search_is_exact_top_k():
    rng = np.random.default_rng(0)
    q, d = rng.normal(size=(7, 16)), rng.normal(size=(50, 16))
    scores, idx = retrieval.search(q, d, top_k=5, chunk=3)
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    dn = d / np.linalg.norm(d, axis=1, keepdims=True)
    full = qn @ dn.T
    expected = np.argsort(-full, axis=1)[:, :5]
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(full, expected, 1), rtol=1e-5)


def test_doc_texts_join_title_like_beir():
    assert retrieval.doc_texts({"a": {"title": "T", "text": "x"}, "b": {"title": "", "text": "y"}}
                              ) == ["T x", "y"]


@pytest.mark.workflow
def test_snapshot_evaluations_equal_the_normal_path(tiny_model, tmp_path):
    """A training with eval_steps: one process evaluating all its snapshots and the final
    model (tokenized once, weights swapped) writes, per step, exactly the per-query rows the
    normal path writes for that snapshot's folder, and the final model's file exactly as the
    normal path writes it."""
    import json

    import pandas as pd

    from workflow_scripts.biencoder import train
    from workflow_scripts.biencoder.data import docstrings
    from workflow_scripts.core import contracts
    from workflow_scripts.core.settings import Train

    pairs = docstrings.collect_pairs("pandas")
    docstrings.build_triples(pairs[:120], max_triples=60, seed=0).to_parquet(tmp_path / "t.pq")
    contracts.write_beir(tmp_path / "bench", *docstrings.build_beir(
        pairs[120:], max_queries=30, max_docs=60, seed=0))
    settings = {"batch_size": 4, "steps": 4, "lr": 1e-3, "max_seq_length": 16}
    model = tmp_path / "model"
    train.train(base=str(tiny_model), strategy="top", depth=2, seed=1,
                settings=Train.from_json(json.dumps(settings)), triples=tmp_path / "t.pq",
                out_dir=model, eval_steps=[1, 3, 4])
    common = ["--strategy", "top", "--depth", "2", "--benchmark-dir", str(tmp_path / "bench"),
              "--benchmark", "b", "--recipe", "r", "--seed", "1", "--settings-json",
              json.dumps({"max_seq_length": 16, "batch_size": 8})]
    evaluate.main(["--snapshots", str(model / "steps"), "--steps", "1", "3",
                   "--final", str(model), "--final-out", str(tmp_path / "final.parquet"),
                   "--out", str(tmp_path / "steps.parquet"), *common])
    curve = pd.read_parquet(tmp_path / "steps.parquet")
    assert sorted(curve.step.unique()) == [1, 3]
    for step, folder, merged in ((1, model / "steps" / "step1", None),
                                 (3, model / "steps" / "step3", None),
                                 (4, model, pd.read_parquet(tmp_path / "final.parquet"))):
        out = tmp_path / f"normal{step}.parquet"
        evaluate.main(["--model", str(folder), "--out", str(out), *common])
        if merged is None:
            merged = curve[curve.step == step].drop(columns="step").reset_index(drop=True)
        pd.testing.assert_frame_equal(merged, pd.read_parquet(out), check_exact=True)
    assert curve.groupby("step")["ndcg@10"].mean().nunique() == 2  # the weights differ
    # The final model's file has its run and records the weights and base it came from;
    # the snapshots' file has no run and names each snapshot's weights.
    from workflow_scripts.biencoder.eval_origin import sha256
    from workflow_scripts.core import paths

    final = pd.read_parquet(tmp_path / "final.parquet").attrs["provenance"]
    summary = json.loads((model / "train_summary.json").read_text())
    assert final["weights"]["sha256"] == sha256(model / "model.safetensors")
    assert final["base_model"] == summary["base_model"] and final["base_model"]["sha256"]
    assert all(Path(f).exists() for f in paths.run_files(str(tmp_path / "final.parquet")))
    steps = pd.read_parquet(tmp_path / "steps.parquet").attrs["provenance"]["weights"]
    assert steps == {str(n): {"file": str(model / "steps" / f"step{n}" / "model.safetensors"),
                              "sha256": sha256(model / "steps" / f"step{n}"
                                               / "model.safetensors")} for n in (1, 3)}
    assert not any(Path(f).exists() for f in paths.run_files(str(tmp_path / "steps.parquet")))
    with pytest.raises(SystemExit, match="no snapshot at .*step2"):
        evaluate.main(["--snapshots", str(model / "steps"), "--steps", "2",
                       "--out", str(tmp_path / "x.parquet"), *common])
