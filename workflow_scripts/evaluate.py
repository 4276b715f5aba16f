"""Evaluation stage: zero-shot retrieval on one BEIR-format benchmark, metrics per query.

Encode queries and documents in fp32 (bf16 creates score ties, and trec_eval breaks ties by
document id, so NDCG would change), exact cosine search by one matrix product and top-k,
then trec_eval semantics through pytrec_eval. Every test query gets a row, also those
scoring 0.

CLI: python -m workflow_scripts.evaluate (--model DIR | --base SPEC --strategy S --depth N) \
        --benchmark-dir data/beir/X --benchmark X --recipe R --seed S --out FILE.parquet
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from workflow_scripts import contracts

# trec_eval measures behind the contract's metric names.
TREC_MEASURES = {"ndcg_cut.10": "ndcg@10", "recall.100": "recall@100",
                 "map_cut.100": "map@100", "recip_rank": "mrr@10"}


def doc_texts(corpus: dict) -> list[str]:
    # Title and text joined as BEIR's DenseRetrievalExactSearch does.
    return [(d.get("title", "") + " " + d["text"]).strip() for d in corpus.values()]


def search(query_emb: np.ndarray, doc_emb: np.ndarray, top_k: int, chunk: int = 1024):
    """Top-k (scores, indices) of cosine similarity; embeddings are L2-normalised here so
    the dot product is the cosine. Chunked over queries to bound memory."""
    import torch

    q = torch.nn.functional.normalize(torch.as_tensor(query_emb, dtype=torch.float32), dim=1)
    d = torch.nn.functional.normalize(torch.as_tensor(doc_emb, dtype=torch.float32), dim=1)
    k = min(top_k, d.shape[0])
    scores, idx = [], []
    for s in range(0, q.shape[0], chunk):
        sv, si = torch.topk(q[s:s + chunk] @ d.T, k, dim=1)
        scores.append(sv)
        idx.append(si)
    return torch.cat(scores).numpy(), torch.cat(idx).numpy()


def per_query_metrics(qrels: dict, run: dict) -> pd.DataFrame:
    """One row per judged query with the contract's metrics (trec_eval semantics)."""
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES))
    res = evaluator.evaluate(run)
    rows = []
    for qid in qrels:  # queries absent from the run score 0, as in trec_eval -c
        r = res.get(qid, {})
        row = {"query_id": qid}
        for measure, name in TREC_MEASURES.items():
            row[name] = float(r.get(measure.replace(".", "_"), 0.0))
        # MRR@10 from trec_eval's reciprocal rank: a first hit below rank 10 counts 0.
        if row["mrr@10"] < 0.1 - 1e-12:
            row["mrr@10"] = 0.0
        rows.append(row)
    return pd.DataFrame(rows, columns=["query_id", *contracts.METRICS])


def build_run(query_ids, doc_ids, scores, idx) -> dict[str, dict[str, float]]:
    doc_ids = np.asarray(doc_ids, dtype=object)
    return {qid: dict(zip(doc_ids[idx[i]].tolist(), scores[i].astype(float).tolist(),
                          strict=True))
            for i, qid in enumerate(query_ids)}


def evaluate_model(encoder, benchmark_dir, *, top_k: int = 100,
                   batch_size: int = 64) -> tuple[pd.DataFrame, dict]:
    """Per-query metrics of `encoder` (anything with encode(texts, batch_size=...) returning
    an array, e.g. workflow_scripts.encoder's) on a BEIR folder, and timings."""
    corpus, queries, qrels = contracts.load_beir(benchmark_dir)
    t0 = time.perf_counter()
    q_emb = encoder.encode(list(queries.values()), batch_size=batch_size,
                           show_progress_bar=True)
    d_emb = encoder.encode(doc_texts(corpus), batch_size=batch_size, show_progress_bar=True)
    t1 = time.perf_counter()
    scores, idx = search(q_emb, d_emb, top_k)
    run = build_run(list(queries), list(corpus), scores, idx)
    df = per_query_metrics({q: qrels[q] for q in queries}, run)
    t2 = time.perf_counter()
    timing = {"encode_seconds": t1 - t0, "search_metrics_seconds": t2 - t1,
              "queries": len(queries), "documents": len(corpus)}
    return df, timing


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Zero-shot retrieval evaluation, per query.")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a trained sentence-transformers folder")
    src.add_argument("--base", help="an untrained base model spec (with --depth)")
    ap.add_argument("--strategy", default="top")
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--benchmark-dir", required=True)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--recipe", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--top-k", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-seq-length", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)

    from workflow_scripts.encoder import load_encoder
    from workflow_scripts.models import set_threads

    set_threads(a.threads)
    encoder = (load_encoder(a.model, max_seq_length=a.max_seq_length) if a.model
               else load_encoder(a.base, depth=a.depth, strategy=a.strategy,
                                 max_seq_length=a.max_seq_length))
    df, timing = evaluate_model(encoder, a.benchmark_dir, top_k=a.top_k,
                                batch_size=a.batch_size)
    for key, value in (("recipe", a.recipe), ("strategy", a.strategy), ("depth", a.depth),
                       ("seed", a.seed), ("benchmark", a.benchmark)):
        df[key] = value
    contracts.write_parquet(a.out, df)
    print(f"{a.out}: {len(df)} queries, NDCG@10 {df['ndcg@10'].mean():.4f}; "
          f"encode {timing['encode_seconds']:.1f} s, search+metrics "
          f"{timing['search_metrics_seconds']:.2f} s")


if __name__ == "__main__":
    main()
