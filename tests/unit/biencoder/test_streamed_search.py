"""Retrieval streamed over document chunks equals one search over the whole corpus: the
same documents, order and scores, bit for bit, with trec_eval's tie order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.streamed_retrieval import in_memory_search
from workflow_scripts.biencoder import retrieval


def _ties_data(seed=0, n_q=23, n_d=301, dim=64):
    """±1 vectors of 64 coordinates: normalised, each coordinate is ±1/8 exactly, so every
    cosine is a multiple of 1/64 computed without rounding whatever the matrix shapes, and
    scores tie often (129 possible values); some documents repeated outright."""
    rng = np.random.default_rng(seed)
    q = rng.choice([-1.0, 1.0], size=(n_q, dim)).astype(np.float32)
    d = rng.choice([-1.0, 1.0], size=(n_d, dim)).astype(np.float32)
    d[rng.integers(0, n_d, 40)] = d[rng.integers(0, n_d, 40)]
    d[:5] = q[:5]  # a query's own vector: a row tied at the top
    ids = [f"d{v}" for v in rng.permutation(n_d)]  # id order unrelated to position
    return q, d, ids


@pytest.mark.parametrize("top_k", [1, 10, 100, 400])
def test_streamed_equals_in_memory_bit_for_bit(top_k):
    """Across chunk sizes (two documents, uneven, the corpus, beyond it), with and without
    trec_eval's tie order, with an excluded document in a first, middle and last chunk."""
    q, d, ids = _ties_data()
    tie = retrieval.id_ranks(ids)
    exclude = np.full(len(q), -1)
    exclude[[0, 3, 9]] = [0, 150, 300]
    for kw in ({}, {"tie_rank": tie}, {"tie_rank": tie, "exclude": exclude}):
        ref = in_memory_search(q, d, top_k, chunk=5, **kw)
        for doc_chunk in (2, 7, 100, 301, 10_000) if top_k == 10 else (7, 100, 10_000):
            got = retrieval.search(q, d, top_k, chunk=5, doc_chunk=doc_chunk, **kw)
            for r, g in zip(ref, got, strict=True):
                assert r.dtype == g.dtype and r.shape == g.shape
                np.testing.assert_array_equal(r, g)
    if top_k > 1:
        assert (np.diff(ref[0], axis=1) == 0).any(), "no ties: the tie order went untested"


def test_ties_follow_trec_eval_order_across_chunks():
    """Documents tied at the cut, in different chunks: the highest ids (trec_eval's
    descending order) are kept and ranked first."""
    q = np.ones((1, 4), np.float32)
    d = np.ones((9, 4), np.float32)  # every document scores 1
    ids = ["a", "i", "c", "g", "e", "b", "h", "d", "f"]
    _, idx = retrieval.search(q, d, 4, tie_rank=retrieval.id_ranks(ids), doc_chunk=2)
    assert [ids[j] for j in idx[0]] == ["i", "h", "g", "f"]


def test_running_top_k_takes_chunks_as_they_come():
    """RunningTopK fed uneven chunks (an encoder's output) equals search()."""
    q, d, ids = _ties_data(seed=1)
    top = retrieval.RunningTopK(q, 50, tie_rank=retrieval.id_ranks(ids))
    for s, e in ((0, 3), (3, 3), (3, 120), (120, 301)):
        top.add(d[s:e])
    for r, g in zip(in_memory_search(q, d, 50, tie_rank=retrieval.id_ranks(ids)),
                    top.result(), strict=True):
        np.testing.assert_array_equal(r, g)


def test_real_valued_scores_rank_the_same():
    """Gaussian embeddings: the same ranking; a score may differ from the in-memory
    product's in its last bit (BLAS rounds by matrix shape), never more."""
    rng = np.random.default_rng(2)
    q, d = rng.normal(size=(40, 32)), rng.normal(size=(2000, 32))
    ref = in_memory_search(q, d, 100)
    got = retrieval.search(q, d, 100, doc_chunk=333)
    np.testing.assert_array_equal(ref[1], got[1])
    np.testing.assert_allclose(ref[0], got[0], rtol=2e-7, atol=0)


def test_one_chunk_corpus_is_the_in_memory_product():
    """A corpus within DOC_CHUNK goes through one product, as before the streaming."""
    rng = np.random.default_rng(3)
    q, d = rng.normal(size=(30, 48)), rng.normal(size=(1500, 48))
    for r, g in zip(in_memory_search(q, d, 100), retrieval.search(q, d, 100), strict=True):
        np.testing.assert_array_equal(r, g)


class _TextEncoder:
    """Each text's embedding from its own words (independent of the batch), the largest list
    it was asked to encode kept."""

    def __init__(self):
        self.largest = 0

    def encode(self, texts, batch_size=64, **_):
        self.largest = max(self.largest, len(texts))
        return np.stack([np.random.default_rng(list(t.encode())).normal(size=12)
                         for t in texts]).astype(np.float32)


def test_the_evaluation_encodes_and_scores_chunk_by_chunk(tmp_path, monkeypatch):
    """evaluate_encoder hands the encoder DOC_CHUNK documents at a time and gives every
    dimension's metrics equal to scoring the whole corpus's embeddings at once."""
    from workflow_scripts.biencoder import evaluate
    from workflow_scripts.core import contracts

    corpus = {f"d{i:03d}": {"text": f"doc {i % 37} of {i % 11}"} for i in range(120)}
    queries = {f"q{i}": f"doc {i} of {i % 11}" for i in range(9)}
    qrels = {q: {f"d{3 * i:03d}": 1, f"d{3 * i + 40:03d}": 2} for i, q in enumerate(queries)}
    contracts.write_beir(tmp_path, corpus, queries, qrels)
    enc = _TextEncoder()
    whole = evaluate.score(enc.encode(list(queries.values())),
                           enc.encode(retrieval.doc_texts(corpus)), list(queries), list(corpus),
                           qrels, 3, [4])
    monkeypatch.setattr(evaluate, "DOC_CHUNK", 25)
    enc = _TextEncoder()
    frames, timing = evaluate.evaluate_encoder(enc, tmp_path, 3, [4])
    assert enc.largest == 25 and timing["documents"] == 120
    assert set(frames) == {3, (3, 4)}
    for key, df in whole.items():
        pd.testing.assert_frame_equal(frames[key], df)
