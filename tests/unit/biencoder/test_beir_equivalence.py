"""The workflow's evaluation equals BEIR's (beir 2.2.0: EvaluateRetrieval with
DenseRetrievalExactSearch, cos_sim) on the same model and data: per-query NDCG@10,
Recall@100 and MAP@100 to 1e-6, 5-decimal aggregates (and MRR@10) exactly; ties and the
top-k cut follow trec_eval; identical query/document ids as documented in
docs/evaluation.md."""

from __future__ import annotations

import numpy as np
import pytest

from workflow_scripts.biencoder import evaluate, retrieval
from workflow_scripts.biencoder.data import docstrings
from workflow_scripts.core import contracts

PER_QUERY = {"ndcg@10": "ndcg_cut_10", "recall@100": "recall_100", "map@100": "map_cut_100"}
AGGREGATE = {"ndcg@10": "NDCG@10", "recall@100": "Recall@100", "map@100": "MAP@100"}
BATCH = 16


class BeirModel:
    """The workflow's encoder behind the model interface DenseRetrievalExactSearch calls,
    joining title and text as beir's SentenceBERT does (extract_corpus_sentences)."""

    def __init__(self, encoder):
        self.encoder = encoder

    def encode_queries(self, queries, batch_size, **kw):
        return self.encoder.encode(list(queries), batch_size=batch_size)

    def encode_corpus(self, corpus, batch_size, **kw):
        return self.encoder.encode([(d["title"] + " " + d["text"]).strip() for d in corpus],
                                   batch_size=batch_size)


def beir_pipeline(encoder, folder, monkeypatch, *, ignore_identical_ids=True):
    """BEIR's own pipeline with its default k_values (top 1,000): per-query trec_eval
    values exactly as EvaluateRetrieval.evaluate computed them, its aggregates, MRR@10."""
    pytest.importorskip("beir")
    import pytrec_eval
    from beir.datasets.data_loader import GenericDataLoader
    from beir.retrieval.evaluation import EvaluateRetrieval
    from beir.retrieval.search.dense import DenseRetrievalExactSearch as DRES

    captured = {}

    class Capture(pytrec_eval.RelevanceEvaluator):
        def evaluate(self, run):
            captured.update(super().evaluate(run))
            return captured

    corpus, queries, qrels = GenericDataLoader(data_folder=str(folder)).load(split="test")
    retriever = EvaluateRetrieval(DRES(BeirModel(encoder), batch_size=BATCH,
                                       show_progress_bar=False), score_function="cos_sim")
    results = retriever.retrieve(corpus, queries)
    with monkeypatch.context() as m:
        m.setattr(pytrec_eval, "RelevanceEvaluator", Capture)
        ndcg, _map, recall, _p = retriever.evaluate(qrels, results, retriever.k_values,
                                                    ignore_identical_ids=ignore_identical_ids)
    mrr = retriever.evaluate_custom(qrels, results, [10], "mrr")
    return captured, {**ndcg, **_map, **recall, **mrr}, results


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory):
    """60 queries, 200 documents of pandas docstrings (the embedded generator)."""
    pairs = docstrings.collect_pairs("pandas")
    corpus, queries, qrels = docstrings.build_beir(pairs, max_queries=60, max_docs=200, seed=0)
    folder = tmp_path_factory.mktemp("beir") / "pandas"
    contracts.write_beir(folder, corpus, queries, qrels)
    return folder


@pytest.fixture(scope="module")
def encoder(tiny_model):
    """The tiny model in the lean encoder, on one thread (tiny matrices on two threads of
    a busy machine wait on each other: 10 ms per op) while this module runs."""
    import torch

    from workflow_scripts.biencoder.model.encoder import BertEncoder

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield BertEncoder(tiny_model, max_seq_length=64)
    torch.set_num_threads(threads)


def assert_equal_to_beir(df, per_query, aggregates):
    assert set(df["query_id"]) == set(per_query)
    df = df.set_index("query_id")
    for ours, theirs in PER_QUERY.items():
        beir = np.array([per_query[q][theirs] for q in df.index])
        np.testing.assert_allclose(df[ours].to_numpy(), beir, rtol=0, atol=1e-6,
                                   err_msg=ours)
    for ours, theirs in {**AGGREGATE, "mrr@10": "MRR@10"}.items():
        assert round(df[ours].mean(), 5) == aggregates[theirs], ours


def test_per_query_metrics_equal_beir(bench_dir, encoder, monkeypatch):
    df, _ = evaluate.evaluate_model(encoder, bench_dir, top_k=100, batch_size=BATCH)
    per_query, aggregates, results = beir_pipeline(encoder, bench_dir, monkeypatch)
    # BEIR ranked all 200 documents (top 1,000); the workflow cut at 100: same metrics.
    assert {len(r) for r in results.values()} == {200}
    assert len(df) == 60
    assert_equal_to_beir(df, per_query, aggregates)
    # Not vacuous: the random model finds some relevant documents, not all at rank 1.
    assert (df["recall@100"] > 0).sum() >= 10
    assert 0 < df["map@100"].mean() < 1


@pytest.fixture(scope="module")
def self_dir(bench_dir, tmp_path_factory):
    """Quora/ArguAna-like: each query's own text is also a document with the query's id."""
    corpus, queries, qrels = contracts.load_beir(bench_dir)
    corpus = {**corpus, **{q: {"title": "", "text": t} for q, t in queries.items()}}
    folder = tmp_path_factory.mktemp("beir") / "self"
    contracts.write_beir(folder, corpus, queries, qrels)
    return folder


def test_identical_ids_dropped_only_when_asked(self_dir, encoder, monkeypatch, capsys):
    per_query, aggregates, _ = beir_pipeline(encoder, self_dir, monkeypatch)
    dropped, _ = evaluate.evaluate_model(encoder, self_dir, batch_size=BATCH,
                                         ignore_identical_ids=True)
    assert_equal_to_beir(dropped, per_query, aggregates)
    assert "query ids are also document ids" not in capsys.readouterr().err

    kept, _ = evaluate.evaluate_model(encoder, self_dir, batch_size=BATCH)
    assert "60 of 60 query ids are also document ids" in capsys.readouterr().err
    # The query's own text ranks first and pushes its relevant document down.
    assert (kept["ndcg@10"] < dropped["ndcg@10"] - 1e-6).sum() >= 5
    assert (kept["mrr@10"] <= 0.5).all()


def test_beir_dense_search_drops_identical_ids_regardless_of_evaluate_flag(
        self_dir, encoder, monkeypatch):
    """Why the option exists: in beir 2.2.0 DenseRetrievalExactSearch.search itself skips
    a document whose id is the query's, so ignore_identical_ids=False changes nothing."""
    _, on, results = beir_pipeline(encoder, self_dir, monkeypatch)
    assert not any(q in docs for q, docs in results.items())
    _, off, _ = beir_pipeline(encoder, self_dir, monkeypatch, ignore_identical_ids=False)
    assert on == off


def test_ties_at_the_cut_follow_trec_eval():
    # One-hot documents: every document on the same axis scores exactly the same.
    rng = np.random.default_rng(0)
    axes = np.array([0, 1, 1, 1, 1, 2, 2, 3, 1, 1, 0, 2])
    docs = np.eye(4)[axes]
    doc_ids = [f"d{i}" for i in rng.permutation(100)[:len(axes)]]
    queries = np.array([[0.1, 0.9, 0.3, 0.2], [0.5, 0.2, 0.5, 0.1]])
    for qi, q in enumerate(queries):
        # trec_eval's order: score descending, then document id descending.
        full = sorted(range(len(doc_ids)), key=lambda j: (q[axes[j]], doc_ids[j]),
                      reverse=True)
        for k in (1, 3, 5, 12):
            _, idx = retrieval.search(q[None], docs, k, tie_rank=retrieval.id_ranks(doc_ids))
            assert idx[0].tolist() == full[:k], (qi, k)


@pytest.mark.parametrize("trial", range(12))
def test_ranked_metrics_equal_pytrec_eval_on_the_whole_ranking(trial):
    """Graded qrels, zero grades, judged documents missing from the corpus, many exact ties
    (also across the cut at 10 and at 100): the workflow's top 100 gives what pytrec_eval
    gives on the full ranking."""
    rng = np.random.default_rng(trial)
    n_q, n_d = 25, int(rng.integers(5, 400))
    q, d = rng.normal(size=(n_q, 6)), np.round(rng.normal(size=(n_d, 6)))
    if trial % 3 == 0:
        d[rng.integers(n_d, size=n_d // 2)] = d[0]
    doc_ids = [f"d{x}" for x in rng.permutation(10 * n_d)[:n_d]]
    query_ids = [f"q{i}" for i in range(n_q)]
    qrels = {}
    for qid in query_ids:
        picks = rng.integers(n_d, size=int(rng.integers(1, 15)))
        qrels[qid] = {doc_ids[j]: int(rng.integers(0, 4)) for j in picks}
        if rng.random() < 0.2:
            qrels[qid]["not-in-corpus"] = 2
    df = retrieval.evaluate_embeddings(q, d, query_ids, doc_ids, qrels, top_k=100)
    scores, idx = retrieval.search(q, d, n_d)  # everything, in no particular tie order
    ref = retrieval.per_query_metrics(qrels, retrieval.build_run(query_ids, doc_ids, scores, idx))
    assert df["query_id"].tolist() == ref["query_id"].tolist()
    np.testing.assert_allclose(df.drop(columns="query_id").to_numpy(),
                               ref.drop(columns="query_id").to_numpy(), rtol=0, atol=1e-12)


def test_top_k_below_the_metric_cuts_is_refused():
    with pytest.raises(ValueError, match="at least 100"):
        retrieval.evaluate_embeddings(np.ones((1, 2)), np.ones((3, 2)), ["q"], ["a", "b", "c"],
                                     {"q": {"a": 1}}, top_k=10)
