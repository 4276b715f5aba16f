"""Run files and trec_eval qrels: every evaluation writes its ranking as a TREC run that
ir_measures re-scores to the per-query file's numbers, with the data and weights it was made
from on record (biencoder/trec_run.py, biencoder/eval_origin.py, docs/evaluation.md)."""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from crash_injection import Crash

sys.path.insert(0, str(ROOT / "bench"))
from rescore_runs import TREC_RR, rescore  # noqa: E402

from workflow_scripts.biencoder import eval_origin, evaluate, retrieval, trec_run
from workflow_scripts.core import contracts, paths

WORDS = ["array", "frame", "tensor", "index", "merge", "sparse", "solve", "plot", "join",
         "sort", "group", "pivot"]


def tied_in_top10(run_path) -> set[str]:
    """The queries whose top 10 hold two equal scores."""
    run = trec_run.read_run(run_path)
    return {q for q, docs in run.items() if len({s for _, _, s in docs[:10]}) < 10}


def graded_benchmark(folder, *, docs=150, queries=24, seed=0):
    """A BEIR folder with grades 0-2, several judged documents a query, a judged document
    missing from every top 100, and duplicate documents (equal scores: ties, some in the
    top 10 and at the cut)."""
    rng = random.Random(seed)
    corpus = {}
    for i in range(docs):
        text = " ".join(rng.choices(WORDS, k=8))
        corpus[f"d{i:03d}"] = {"title": "", "text": text}
        if i % 10 == 0:  # its twin: the same text under another id
            corpus[f"e{i:03d}"] = {"title": "", "text": text}
    qs = {f"q{j}": " ".join(rng.choices(WORDS, k=3)) for j in range(queries)}
    ids = list(corpus)
    qrels = {q: {d: rng.choice([0, 1, 1, 2]) for d in rng.sample(ids, 4)} for q in qs}
    qrels["q0"].update({"d000": 2, "e000": 1})  # twins, both judged
    contracts.write_beir(folder, corpus, qs, qrels)
    return folder


def _evaluate(tmp_path, model, bench, *extra, name="b"):
    out = [str(tmp_path / "out" / f"d{d}" / f"{name}.parquet") for d in (1, 3)]
    dims = [str(tmp_path / "out" / f"d{d}" / "dim16" / f"{name}.parquet") for d in (1, 3)]
    evaluate.main(["--base", str(model), "--strategy", "top", "--depths", "1", "3",
                   "--benchmark-dir", str(bench), "--benchmark", name, "--recipe", "base",
                   "--seed", "-1", "--settings-json", json.dumps({"max_seq_length": 16}),
                   "--out", *out, "--dims", "16", "--dim-out", *dims, *extra])
    return out + dims


# ---- the run and qrels formats -----------------------------------------------------------
def test_run_lines_rank_from_1_in_the_rankings_order_and_keep_float32_apart():
    a = np.float32(0.5)
    b = np.nextafter(a, np.float32(0))  # the next float32 below: must stay below
    ranking = trec_run.Ranking(["q1", "q2"], ["x", "y", "z"],
                               np.array([[a, b, b], [a, -np.inf, -np.inf]], np.float32),
                               np.array([[1, 2, 0], [2, -1, -1]]))
    lines = [ln.split() for ln in trec_run.run_text(ranking, "t").decode().splitlines()]
    assert [(q, d, int(r)) for q, _, d, r, _, _ in lines] == [
        ("q1", "y", 1), ("q1", "z", 2), ("q1", "x", 3), ("q2", "z", 1)]
    assert {ln[1] for ln in lines} == {"Q0"} and {ln[5] for ln in lines} == {"t"}
    assert float(lines[0][4]) > float(lines[1][4]) == float(lines[2][4])
    assert np.float32(float(lines[1][4])) == b
    nothing = ranking._replace(idx=np.full((2, 3), -1))  # every document excluded
    assert trec_run.run_text(nothing, "t") == b""


def test_run_tag_names_recipe_arm_depth_seed_benchmark_and_dimension():
    assert trec_run.run_tag("short", "top", 2, 42, "scifact") == \
        "depthlab.short.top2.seed42.scifact"
    assert trec_run.run_tag("base", "top", 2, -1, "x", 64).endswith(".seed-1.x.dim64")
    with pytest.raises(ValueError, match="whitespace"):
        trec_run.run_tag("a b", "top", 1, 1, "x")


def test_run_and_qrels_refuse_ids_with_whitespace(tmp_path):
    ranking = trec_run.Ranking(["q 1"], ["x"], np.ones((1, 1), np.float32),
                               np.zeros((1, 1), int))
    with pytest.raises(contracts.DataError, match=r"run\.gz: query id 'q 1'"):
        trec_run.write_run(tmp_path / "run.gz", ranking, "t")
    assert not (tmp_path / "run.gz").exists()
    with pytest.raises(contracts.DataError, match=r"test\.tsv: document id 'd 1'"):
        trec_run.qrels_text({"q": {"d 1": 1}}, "test.tsv")


def test_trec_qrels_cli_writes_the_4_column_form(tmp_path):
    contracts.write_beir(tmp_path, {"d1": {"text": "a"}, "d2": {"text": "b"}},
                         {"q1": "a"}, {"q1": {"d1": 2, "d2": 0}})
    out = tmp_path / "qrels" / "test.trec"
    trec_run.main(["qrels", "--qrels", str(tmp_path / "qrels" / "test.tsv"), "--out", str(out)])
    assert out.read_text() == "q1 0 d1 2\nq1 0 d2 0\n"
    assert [(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(
        str(out))] == [("q1", "d1", 2), ("q1", "d2", 0)]
    bad = tmp_path / "bad.tsv"
    bad.write_text("query-id\tcorpus-id\tscore\nq1\td1\n")
    with pytest.raises(contracts.DataError, match=r"bad\.tsv:2: expected 3"):
        trec_run.main(["qrels", "--qrels", str(bad), "--out", str(tmp_path / "bad.trec")])
    assert not (tmp_path / "bad.trec").exists()


def test_a_run_killed_mid_write_leaves_no_file_and_a_cut_one_is_named(tmp_path, monkeypatch):
    ranking = trec_run.Ranking(["q"], ["x"], np.ones((1, 1), np.float32), np.zeros((1, 1), int))
    path = tmp_path / "r.run.gz"

    def killed(self, data):
        raise Crash("killed mid-write")

    monkeypatch.setattr(gzip.GzipFile, "write", killed)
    with pytest.raises(Crash):
        trec_run.write_run(path, ranking, "t")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []  # neither the run nor a temporary
    trec_run.write_run(path, ranking, "t")
    path.write_bytes(path.read_bytes()[:-9])  # the gzip trailer cut off
    with pytest.raises(EOFError):
        trec_run.read_run(path)
    (tmp_path / "bad.run").write_text("q Q0 x 1\n")
    with pytest.raises(contracts.DataError, match=r"bad\.run:1: not a TREC run line"):
        trec_run.read_run(tmp_path / "bad.run")


def test_runs_of_tied_rankings_rescore_to_the_metrics(tmp_path):
    """Embeddings with many equal scores (ties in the top 10 and at the cut at 100): the
    run file, re-scored by ir_measures, gives the metrics computed on it; RR@10 (MS MARCO's
    implementation, ties by docno ascending) only where no tie is in the top 10, trec_eval's
    recip_rank cut at 10 everywhere."""
    rng = np.random.default_rng(0)
    d_emb = rng.integers(0, 3, (300, 4)).astype(np.float32)  # few distinct vectors: ties
    q_emb = rng.integers(0, 3, (40, 4)).astype(np.float32) + 0.1
    doc_ids = [f"d{i:03d}" for i in range(300)]
    qids = [f"q{j}" for j in range(40)]
    qrels = {q: {doc_ids[k]: int(rng.integers(0, 3)) for k in rng.choice(300, 30)}
             for q in qids}
    df, scores, idx = retrieval.rank_and_score(q_emb, d_emb, qids, doc_ids, qrels)
    trec_run.write_run(tmp_path / "r.run.gz", trec_run.Ranking(qids, doc_ids, scores, idx), "t")
    contracts.write_text(tmp_path / "q.trec", trec_run.qrels_text(qrels, "q"))
    again = rescore(tmp_path / "q.trec", tmp_path / "r.run.gz").loc[qids]
    for metric in ("ndcg@10", "recall@100", "map@100"):
        np.testing.assert_allclose(again[metric], df[metric], rtol=0, atol=1e-12)
    np.testing.assert_allclose(again[TREC_RR], df["mrr@10"], rtol=0, atol=1e-12)
    tied = tied_in_top10(tmp_path / "r.run.gz")
    assert len(tied) > 20  # the case the tie order decides is there
    untied = [i for i, q in enumerate(qids) if q not in tied]
    np.testing.assert_allclose(again["mrr@10"].iloc[untied], df["mrr@10"].iloc[untied],
                               rtol=0, atol=1e-12)


# ---- a real evaluation: runs, sidecars, provenance ----------------------------------------
@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, tiny_model):
    tmp = tmp_path_factory.mktemp("runs")
    bench = graded_benchmark(tmp / "bench")
    trec_run.write_trec_qrels(bench / "qrels" / "test.tsv", bench / "qrels" / "test.trec")
    return tmp, bench, _evaluate(tmp, tiny_model, bench)


def test_every_file_has_its_run_that_rescores_to_its_numbers(evaluated):
    _, bench, files = evaluated
    for f in files:
        df = pd.read_parquet(f).set_index("query_id")
        run, sidecar = paths.run_files(f)
        again = rescore(bench / "qrels" / "test.trec", run).loc[df.index]
        for metric in ("ndcg@10", "recall@100", "map@100"):
            assert np.array_equal(again[metric], df[metric]), (f, metric)
        assert np.array_equal(again[TREC_RR], df["mrr@10"]), f
        untied = ~again.index.isin(tied_in_top10(run))
        assert np.array_equal(again.loc[untied, "mrr@10"], df.loc[untied, "mrr@10"]), f
        card = json.loads(Path(sidecar).read_text())
        assert card["provenance"] == pd.read_parquet(f).attrs["provenance"]
        assert card["queries"] == len(df) and card["per_query_file"].endswith(".parquet")
        with gzip.open(run, "rt") as lines:
            tags = {line.split()[5] for line in lines}
        assert tags == {card["tag"]}
        depth = df["depth"].iloc[0]
        dim = ".dim16" if "dim" in df else ""
        assert card["tag"] == f"depthlab.base.top{depth}.seed-1.b{dim}"


def test_provenance_names_the_data_and_weights_evaluated(evaluated, tiny_model):
    _, bench, files = evaluated
    prov = pd.read_parquet(files[0]).attrs["provenance"]
    assert prov["data"]["sha256"] == {f: eval_origin.sha256(bench / f)
                                      for f in paths.BEIR_FILES}
    assert prov["weights"] == {"file": str(tiny_model / "model.safetensors"),
                               "sha256": eval_origin.sha256(tiny_model / "model.safetensors")}
    assert prov["base_model"]["spec"] == str(tiny_model) and prov["base_model"]["sha256"]


def test_an_edited_benchmark_file_changes_the_rebuilt_results_record(evaluated, tiny_model,
                                                                    tmp_path):
    _, bench, files = evaluated
    edited = graded_benchmark(tmp_path / "bench")
    corpus = (edited / "corpus.jsonl").read_text().replace("array", "arrays", 1)
    (edited / "corpus.jsonl").write_text(corpus)
    again = _evaluate(tmp_path, tiny_model, edited)
    old, new = (pd.read_parquet(f[0]).attrs["provenance"] for f in (files, again))
    assert old["data"]["sha256"]["corpus.jsonl"] != new["data"]["sha256"]["corpus.jsonl"]
    assert old["data"]["sha256"]["queries.jsonl"] == new["data"]["sha256"]["queries.jsonl"]
    sidecar = json.loads(Path(paths.run_files(again[0])[1]).read_text())
    assert sidecar["provenance"]["data"] == new["data"]


def test_the_docs_map_each_metric_to_its_ir_measures_name():
    text = (ROOT / "docs/evaluation.md").read_text()
    for ours, theirs in trec_run.IR_MEASURES.items():
        assert f"| `{ours}` | `{theirs}` |" in text
