"""Benchmark: retrieval's time and peak memory against corpus size, the in-memory search
(before: every document embedding held, one score matrix per query chunk over the whole
corpus) against the streamed one (after: retrieval.RunningTopK, DOC_CHUNK documents at a
time), side by side, one process per size and method so each peak is its own.

Two parts:
  search  random document embeddings of a realistic dimension (384, MiniLM's), drawn
          DOC_CHUNK rows at a time from one seed per chunk, so both methods see the same
          corpus: before concatenates them (the encoder's one array) and searches once;
          after scores each chunk as it is drawn. Timed: the search only (drawing apart).
  encode  a tiny random-init BERT (2 layers, hidden 32, the MiniLM tokenizer; tests/helpers)
          on synthetic texts, through evaluate.py's own paths: before encodes the corpus into
          one array and searches it (the code before the streaming), after encodes and scores
          it chunk by chunk (evaluate.encoded_chunks + score_chunks). Timed: encode + search.
300 queries, top 100, trec_eval's tie order (id_ranks), one thread. Peak memory is the
child's ru_maxrss, which includes the interpreter, torch and the document ids (the same in
both); "held" is the peak minus the RSS after imports and before the corpus. Each child
prints a digest of its ranking: before and after must agree.

    .venv/bin/python bench/streamed_retrieval.py [--sizes 10000 100000 1000000]
        [--encode-sizes 10000 100000] [--dim 384] [--queries 300]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from workflow_scripts.biencoder import retrieval  # noqa: E402
from workflow_scripts.biencoder.retrieval import _CHUNK_SCORES, DOC_CHUNK, _cut_ties  # noqa: E402

TOP_K = 100


def in_memory_search(query_emb, doc_emb, top_k: int, chunk: int = 1024, *, tie_rank=None,
                     exclude=None):
    """retrieval.search as it was before the streaming, verbatim: the reference the streamed
    search must equal (tests/unit/biencoder/test_streamed_search.py) and the bench's before."""
    import torch

    q = torch.nn.functional.normalize(torch.as_tensor(query_emb, dtype=torch.float32), dim=1)
    d = torch.nn.functional.normalize(torch.as_tensor(doc_emb, dtype=torch.float32), dim=1)
    n_q, n = q.shape[0], d.shape[0]
    k = min(top_k, n)
    tie_rank = (-np.arange(n, dtype=np.int64) if tie_rank is None
                else np.asarray(tie_rank, dtype=np.int64))
    exclude = None if exclude is None else np.asarray(exclude, dtype=np.int64)
    chunk = max(1, min(chunk, _CHUNK_SCORES // max(n, 1)))
    scores = np.empty((n_q, k), dtype=np.float32)
    idx = np.empty((n_q, k), dtype=np.int64)
    for s in range(0, n_q, chunk):
        e = min(s + chunk, n_q)
        sim = q[s:e] @ d.T
        if exclude is not None:
            rows = np.flatnonzero(exclude[s:e] >= 0)
            sim[torch.as_tensor(rows), torch.as_tensor(exclude[s:e][rows])] = -torch.inf
        sim = sim.numpy()
        if k < n:
            top = np.argpartition(sim, n - k, axis=1)[:, n - k:]
            kth = np.take_along_axis(sim, top[:, :1], 1)
            for r in np.flatnonzero((sim >= kth).sum(1) > k):
                top[r] = _cut_ties(sim[r], kth[r, 0], k, tie_rank)
        else:
            top = np.broadcast_to(np.arange(n), (e - s, n))
        vals = np.take_along_axis(sim, top, 1)
        order = np.lexsort((-tie_rank[top], -vals), axis=1)
        scores[s:e] = np.take_along_axis(vals, order, 1)
        idx[s:e] = np.take_along_axis(top, order, 1)
    idx[np.isneginf(scores)] = -1
    return scores, idx


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _doc_block(i: int, rows: int, dim: int) -> np.ndarray:
    return np.random.default_rng([1, i]).standard_normal((rows, dim), dtype=np.float32)


def child_search(method: str, n: int, dim: int, n_q: int) -> dict:
    import torch

    torch.set_num_threads(1)
    q = np.random.default_rng(0).standard_normal((n_q, dim), dtype=np.float32)
    tie = retrieval.id_ranks([f"d{i}" for i in range(n)])
    base = _current_rss_mb()
    blocks = [(i, min(DOC_CHUNK, n - s)) for i, s in enumerate(range(0, n, DOC_CHUNK))]
    if method == "before":
        d = np.concatenate([_doc_block(i, r, dim) for i, r in blocks])
        t0 = time.perf_counter()
        scores, idx = in_memory_search(q, d, TOP_K, tie_rank=tie)
        seconds = time.perf_counter() - t0
    else:
        top, seconds = retrieval.RunningTopK(q, TOP_K, tie_rank=tie), 0.0
        for i, r in blocks:
            block = _doc_block(i, r, dim)
            t0 = time.perf_counter()
            top.add(block)
            seconds += time.perf_counter() - t0
        scores, idx = top.result()
    return {"seconds": seconds, "base_mb": base, "peak_mb": _rss_mb(),
            "digest": hashlib.sha256(idx.tobytes()).hexdigest()[:12]}


WORDS = ["index", "frame", "series", "merge", "sort", "value", "column", "row", "table", "plot",
         "read", "write", "group", "key", "mean", "sum", "array", "matrix", "vector", "model",
         "layer", "token", "batch", "query", "document", "score"]


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, 14, n)
    picks = rng.integers(0, len(WORDS), lengths.sum())
    out, s = [], 0
    for n_words in lengths:
        out.append(" ".join(WORDS[j] for j in picks[s:s + n_words]))
        s += n_words
    return out


def child_encode(method: str, n: int, n_q: int, model: str) -> dict:
    import torch

    from workflow_scripts.biencoder import evaluate
    from workflow_scripts.biencoder.model.encoder import load_encoder

    torch.set_num_threads(1)
    enc = load_encoder(model, max_seq_length=32, device="cpu")
    q_texts, d_texts = _texts(n_q, 0), _texts(n, 1)
    qids, dids = [f"q{i}" for i in range(n_q)], [f"d{i}" for i in range(n)]
    qrels = {q: {f"d{i}": 1} for i, q in enumerate(qids)}
    base = _current_rss_mb()
    t0 = time.perf_counter()
    q = enc.encode(q_texts, batch_size=64)
    if method == "before":
        d = enc.encode(d_texts, batch_size=64)
        _, idx = in_memory_search(q, d, TOP_K, tie_rank=retrieval.id_ranks(dids))
    else:
        clock = {"encode": 0.0}
        top = retrieval.RunningTopK(q, TOP_K, tie_rank=retrieval.id_ranks(dids))
        for chunk in evaluate.encoded_chunks(
                lambda t: {None: enc.encode(t, batch_size=64)}, d_texts, clock):
            top.add(chunk[None])
        _, idx = top.result()
    del qrels
    return {"seconds": time.perf_counter() - t0, "base_mb": base, "peak_mb": _rss_mb(),
            "digest": hashlib.sha256(idx.tobytes()).hexdigest()[:12]}


def tiny_model() -> str:
    """The bench's tiny BERT, built once under data/bench/ (tests/helpers' recipe)."""
    out = ROOT / "data" / "bench" / "tiny-bert-2x32"
    if not (out / "config.json").exists():
        sys.path.insert(0, str(ROOT / "tests" / "helpers"))
        from tiny_models import make_tiny_model

        make_tiny_model(out, layers=2, hidden=32, heads=2, intermediate=64, seed=0)
    return str(out)


def run_child(*args) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *map(str, args)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(part: str, sizes, runs) -> None:
    print(f"\n{part}: seconds and peak RSS (MB; held = peak minus RSS before the corpus)")
    print(f"{'documents':>10} | {'before s':>8} {'peak':>7} {'held':>7} | "
          f"{'after s':>8} {'peak':>7} {'held':>7} | same ranking")
    for n in sizes:
        b, a = runs[(n, "before")], runs[(n, "after")]
        print(f"{n:>10,} | {b['seconds']:8.2f} {b['peak_mb']:7.0f} "
              f"{b['peak_mb'] - b['base_mb']:7.0f} | {a['seconds']:8.2f} {a['peak_mb']:7.0f} "
              f"{a['peak_mb'] - a['base_mb']:7.0f} | {b['digest'] == a['digest']}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", type=int, default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--encode-sizes", nargs="*", type=int, default=[10_000, 100_000])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        part, method, n = a.child[0], a.child[1], int(a.child[2])
        res = (child_search(method, n, a.dim, a.queries) if part == "search"
               else child_encode(method, n, a.queries, a.child[3]))
        print(json.dumps(res))
        return
    print(f"streamed retrieval: {a.queries} queries, top {TOP_K}, DOC_CHUNK {DOC_CHUNK}, "
          f"1 thread, {os.cpu_count()} cores")
    runs = {(n, m): run_child("search", m, n, "--dim", a.dim, "--queries", a.queries)
            for n in a.sizes for m in ("before", "after")}
    table(f"search (random {a.dim}-dim embeddings)", a.sizes, runs)
    if a.encode_sizes:
        model = tiny_model()
        runs = {(n, m): run_child("encode", m, n, model, "--queries", a.queries)
                for n in a.encode_sizes for m in ("before", "after")}
        table("encode + search (tiny BERT, 2 layers, hidden 32)", a.encode_sizes, runs)


if __name__ == "__main__":
    main()
