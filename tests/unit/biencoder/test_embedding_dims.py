"""Evaluation at smaller embedding dimensions (eval.dims): a cut of the same embeddings,
L2-normalised, as sentence-transformers' truncate_dim gives them, and each dimension's
per-query file equal to scoring embeddings cut by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.biencoder import evaluate
from workflow_scripts.biencoder.embedding_dims import truncate_normalise
from workflow_scripts.biencoder.retrieval import doc_texts, evaluate_embeddings
from workflow_scripts.core import contracts

WORDS = ["mean of values", "sort the index", "merge two frames", "read a csv file",
         "drop missing rows", "group by a key", "pivot a table", "plot a histogram"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench")
    corpus = {f"d{i}": {"text": f"{w} in a data frame"} for i, w in enumerate(WORDS)}
    queries = {f"q{i}": w for i, w in enumerate(WORDS[:4])}
    qrels = {f"q{i}": {f"d{i}": 1, f"d{i + 4}": 1} for i in range(4)}
    contracts.write_beir(folder, corpus, queries, qrels)
    return folder


def test_a_cut_is_the_first_coordinates_normalised():
    emb = np.random.default_rng(0).normal(size=(5, 12)).astype(np.float32)
    got = truncate_normalise(emb, 4)
    assert got.shape == (5, 4)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, rtol=1e-6)
    np.testing.assert_allclose(got * np.linalg.norm(emb[:, :4], axis=1, keepdims=True),
                               emb[:, :4], rtol=1e-6)
    # Normalising before the cut (a pipeline with Normalize) changes nothing.
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    np.testing.assert_allclose(truncate_normalise(unit, 4), got, rtol=1e-6)
    for dim in (0, 12, 13):
        with pytest.raises(ValueError, match="dimension"):
            truncate_normalise(emb, dim)


def test_each_dimension_scores_the_same_embeddings_cut():
    """score(): the full dimension as evaluate_embeddings gives it, and each dimension as
    evaluate_embeddings gives the embeddings cut by hand."""
    rng = np.random.default_rng(1)
    q, d = rng.normal(size=(6, 16)), rng.normal(size=(40, 16))
    qids, dids = [f"q{i}" for i in range(6)], [f"d{i}" for i in range(40)]
    qrels = {qid: {f"d{3 * i}": 1, f"d{3 * i + 1}": 2} for i, qid in enumerate(qids)}
    frames = evaluate.score(q, d, qids, dids, qrels, 2, [4, 8])
    assert set(frames) == {2, (2, 4), (2, 8)}
    pd.testing.assert_frame_equal(frames[2], evaluate_embeddings(q, d, qids, dids, qrels))
    for dim in (4, 8):
        by_hand = evaluate_embeddings(q[:, :dim], d[:, :dim], qids, dids, qrels)
        pd.testing.assert_frame_equal(frames[(2, dim)], by_hand)
    assert not frames[(2, 4)].equals(frames[2])  # a cut that changes nothing tests nothing


@pytest.mark.workflow  # imports sentence-transformers: seconds
def test_the_cut_is_sentence_transformers_truncate_dim(tiny_model):
    """On the tiny model: the lean encoder's embeddings cut and normalised equal
    SentenceTransformer.encode(truncate_dim=d, normalize_embeddings=True)."""
    from sentence_transformers import SentenceTransformer

    from workflow_scripts.biencoder.model.encoder import load_encoder

    texts = WORDS
    full = load_encoder(str(tiny_model), max_seq_length=16).encode(texts, batch_size=4)
    st = SentenceTransformer(str(tiny_model), device="cpu")
    st.max_seq_length = 16
    for dim in (8, 16):
        ref = st.encode(texts, batch_size=4, truncate_dim=dim, normalize_embeddings=True)
        np.testing.assert_allclose(truncate_normalise(full, dim), ref, atol=1e-5)


@pytest.mark.workflow  # loads a model: seconds, not the fast suite's milliseconds
def test_a_dimension_file_is_the_evaluation_of_embeddings_cut_by_hand(bench, tiny_model,
                                                                      tmp_path):
    """--dims: one encoding, a file per depth and dimension saying its dimension, equal to
    scoring the model's embeddings cut by hand; the full-dimension files unchanged."""
    from workflow_scripts.biencoder.model.encoder import load_encoder

    outs = [str(tmp_path / f"full{d}.parquet") for d in (1, 3)]
    dim_outs = [str(tmp_path / f"d{d}m{m}.parquet") for d in (1, 3) for m in (8, 16)]
    args = ["--base", str(tiny_model), "--strategy", "top", "--depths", "1", "3",
            "--benchmark-dir", str(bench), "--benchmark", "b", "--recipe", "base",
            "--seed", "-1", "--settings-json",
            json.dumps({"max_seq_length": 16, "batch_size": 4})]
    evaluate.main([*args, "--out", *outs, "--dims", "8", "16", "--dim-out", *dim_outs])
    plain = [str(tmp_path / f"plain{d}.parquet") for d in (1, 3)]
    evaluate.main([*args, "--out", *plain])
    for full, ref in zip(outs, plain, strict=True):
        pd.testing.assert_frame_equal(contracts.read_eval(full), contracts.read_eval(ref))
    corpus, queries, qrels = contracts.load_beir(bench)
    for i, (depth, dim) in enumerate((d, m) for d in (1, 3) for m in (8, 16)):
        enc = load_encoder(str(tiny_model), depth=depth, max_seq_length=16)
        q = enc.encode(list(queries.values()), batch_size=4)
        d = enc.encode(doc_texts(corpus), batch_size=4)
        by_hand = evaluate_embeddings(q[:, :dim], d[:, :dim], list(queries), list(corpus),
                                      qrels)
        got = contracts.read_eval(dim_outs[i])
        assert set(got["dim"]) == {dim} and set(got["depth"]) == {depth}
        assert got.attrs["provenance"]["dim"] == dim
        pd.testing.assert_frame_equal(got[by_hand.columns], by_hand)
