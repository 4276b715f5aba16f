"""The embedded data generator: parsing, de-duplication, determinism, zero-shot split."""

from __future__ import annotations

from workflow_scripts.biencoder.data import docstrings as ds

BODY = " ".join(f"word{i}" for i in range(40))


def test_split_takes_summary_and_prose_body():
    doc = f"mean(a, axis=None)\n\nCompute the arithmetic mean of values.\n\n{BODY}\n\n" \
          "Examples\n--------\n>>> mean([1, 2])\n1.5\n"
    summary, body = ds.split_docstring("x", doc)
    assert summary == "Compute the arithmetic mean of values."
    assert body == BODY and "Examples" not in body


def test_split_rejects_short_or_leaky_pairs():
    assert ds.split_docstring("x", "Too short.\n\n" + BODY) is None  # summary < 4 words
    assert ds.split_docstring("x", "A summary of four words.\n\nshort body") is None
    leaky = "Sort the index values.\n\n" + "sort the index values. " + BODY
    assert ds.split_docstring("x", leaky) is None


def test_dedupe_keeps_first_of_each_summary_and_body():
    pairs = [ds.Pair("a.f", "Same summary here now", "body one " * 20),
             ds.Pair("b.f", "same summary, here now!", "body two " * 20),
             ds.Pair("c.f", "Another summary for this", "body one " * 20),
             ds.Pair("d.f", "A third different summary", "body three " * 20)]
    assert [p.object_id for p in ds.dedupe(pairs)] == ["a.f", "d.f"]


def test_benchmark_is_deterministic_and_well_formed():
    pairs = ds.collect_pairs("pandas")
    assert len(pairs) >= 300
    a = ds.build_beir(pairs, max_queries=50, max_docs=80, seed=3)
    b = ds.build_beir(ds.collect_pairs("pandas"), max_queries=50, max_docs=80, seed=3)
    assert a == b
    corpus, queries, qrels = a
    assert len(queries) == 50 and len(corpus) == 80
    assert all(len(rel) == 1 and next(iter(rel)) in corpus for rel in qrels.values())


def test_triples_have_hard_negatives_from_the_same_library():
    pairs = ds.collect_pairs("numpy")[:200]
    df = ds.build_triples(pairs, max_triples=100, seed=0)
    assert len(df) == 100
    assert (df.negative != df.positive).all()
    bodies = {p.body for p in pairs}
    assert df.negative.isin(bodies).all()


def test_benchmark_excludes_text_of_the_training_libraries():
    raw = ds.collect_pairs("pandas")
    train = {ds._norm(t) for lib in ("numpy", "scipy") for p in ds.collect_pairs(lib)
             for t in (p.summary, p.body)}
    # pandas copies some of numpy's docs (e.g. searchsorted)
    assert any(ds._norm(t) in train for p in raw for t in (p.summary, p.body))
    kept = ds.exclude_texts_of(raw, ["numpy", "scipy"])
    assert not any(ds._norm(t) in train for p in kept for t in (p.summary, p.body))
    assert len(kept) >= len(raw) - 10
