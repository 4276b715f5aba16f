"""Exact retrieval and per-query metrics with trec_eval's semantics, for one benchmark.

Encode queries and documents in fp32 (bf16 creates score ties, and trec_eval breaks ties by
document id, so NDCG would change), exact cosine search by one matrix product and top-k,
then trec_eval's metrics. Every test query gets a row, also those scoring 0.

Equal to BEIR (beir 2.2.0, EvaluateRetrieval + DenseRetrievalExactSearch, cos_sim): on the
same embeddings, per-query NDCG@10, Recall@100 and MAP@100 are those BEIR computes and its
5-decimal aggregates match (tests/unit/biencoder/test_beir_equivalence.py, bench/evaluate.py,
docs/evaluation.md). Deliberate choices:

- Metrics follow trec_eval (what pytrec_eval, and so BEIR, computes): ndcg_cut.10,
  recall.100, map_cut.100, and MRR@10 = trec_eval's recip_rank with a first hit below rank
  10 counted 0. They are computed here with numpy from the ranked top-k (the same
  formulas; checked against pytrec_eval in the tests) because pytrec_eval's dict-of-dicts
  input alone cost more than the search. Qrels with negative grades (whose trec_eval
  gain handling we do not reproduce) go through pytrec_eval itself.
- Ties: trec_eval orders equal scores by document id, descending (strcmp). The top-k cut
  does the same, so the run holds exactly the k documents that lead trec_eval's order of
  the whole corpus: cutting at 100 gives the metrics BEIR gets from its top 1,000.
- k: every metric stops at rank 100 or earlier, so `top_k` must be at least 100; larger
  values change nothing.
- Identical ids: BEIR's dense exact search always drops a retrieved document whose id
  equals the query id (for ArguAna and Quora, where a query is also a corpus entry). The
  workflow does not by default: its generated benchmarks use distinct ids ("q-..",
  "d-.."), and a coincidental shared id must not hide a document. The dataset setting
  `ignore_identical_ids` does what BEIR does, for data that needs it; without it a warning
  counts such queries.
- MRR: BEIR's own MRR@k (custom_metrics.mrr) sorts by score only, so tied scores keep its
  heap's order; it equals ours except when a relevant document ties another within the
  top 10.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from workflow_scripts.core import contracts

# trec_eval measures behind the contract's metric names.
TREC_MEASURES = {"ndcg_cut.10": "ndcg@10", "recall.100": "recall@100",
                 "map_cut.100": "map@100", "recip_rank": "mrr@10"}
NDCG_CUT, RECALL_CUT, MAP_CUT, MRR_CUT = 10, 100, 100, 10
MIN_TOP_K = max(NDCG_CUT, RECALL_CUT, MAP_CUT, MRR_CUT)
# Upper bound on one chunk's score matrix (float32 entries): 128 MB, plus 256 MB of
# argpartition indices.
_CHUNK_SCORES = 32 * 2**20
# Documents scored (and, by the evaluation, encoded) at a time: what bounds retrieval's
# memory. Every benchmark the configs name (FiQA's 57,638 documents the largest) is one
# chunk, scored by exactly one in-memory product as before.
DOC_CHUNK = 2**16


def doc_texts(corpus: dict) -> list[str]:
    # Title and text joined as BEIR's DenseRetrievalExactSearch does.
    return [(d.get("title", "") + " " + d["text"]).strip() for d in corpus.values()]


def id_ranks(ids) -> np.ndarray:
    """Each id's position in byte order (trec_eval compares document ids with strcmp;
    Python's str order is the same as UTF-8 byte order)."""
    ids = list(ids)
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    return ranks


def search(query_emb: np.ndarray, doc_emb: np.ndarray, top_k: int, chunk: int = 1024, *,
           tie_rank=None, exclude=None, doc_chunk: int = DOC_CHUNK):
    """Exact top-k (scores, indices) by cosine similarity, best first.

    Embeddings are L2-normalised here, so the dot product is the cosine (the same torch
    operations as BEIR's cos_sim, hence the same float32 scores). Equal scores are ordered
    by `tie_rank`, highest first (pass id_ranks(doc_ids) for trec_eval's order); without
    it the lower index comes first. That order also decides which of the documents tied at
    the cut are kept. `exclude[i]` is a document index query i must not retrieve (-1: none);
    a row left with fewer than k documents is padded with index -1 and score -inf.
    The documents are read `doc_chunk` rows at a time (RunningTopK: `doc_emb` may be a
    memory map), the queries `chunk` at a time, so one score matrix stays under 128 MB."""
    top = RunningTopK(query_emb, top_k, tie_rank=tie_rank, exclude=exclude, chunk=chunk)
    for s in range(0, len(doc_emb), doc_chunk):
        top.add(doc_emb[s:s + doc_chunk])
    return top.result()


class RunningTopK:
    """The exact top-k of every query over documents given chunk by chunk, in corpus order:
    search() without holding the corpus's embeddings. Each chunk's k best are merged with
    the k best so far; the order (score descending, then tie_rank descending) is a total
    order, so the k best of the union are the k best of the two lists, the same documents
    in the same order as one search over the whole corpus. The scores are the float32
    products of the same normalised vectors; BLAS may round a product's last bit
    differently for another matrix shape, so a corpus of more than one chunk can differ from
    one in-memory product in the last bit of a score (a corpus of one chunk uses exactly the
    in-memory code's products)."""

    def __init__(self, query_emb, top_k: int, *, tie_rank=None, exclude=None,
                 chunk: int = 1024):
        import torch

        self.torch = torch
        self.q = torch.nn.functional.normalize(
            torch.as_tensor(np.asarray(query_emb), dtype=torch.float32), dim=1)
        self.top_k, self.chunk, self.n = int(top_k), int(chunk), 0
        self.tie_rank = None if tie_rank is None else np.asarray(tie_rank, dtype=np.int64)
        self.exclude = None if exclude is None else np.asarray(exclude, dtype=np.int64)
        n_q = self.q.shape[0]
        self.scores = np.empty((n_q, 0), dtype=np.float32)
        self.idx = np.empty((n_q, 0), dtype=np.int64)
        self.ties = np.empty((n_q, 0), dtype=np.int64)

    def add(self, doc_emb) -> None:
        """Score the next `len(doc_emb)` documents (indices continue from the last chunk)."""
        torch = self.torch
        d = torch.nn.functional.normalize(
            torch.as_tensor(np.asarray(doc_emb), dtype=torch.float32), dim=1)
        start, m = self.n, d.shape[0]
        self.n += m
        if m == 0:
            return
        ties = (-np.arange(start, start + m, dtype=np.int64) if self.tie_rank is None
                else self.tie_rank[start:start + m])
        k = min(self.top_k, m)
        n_q = self.q.shape[0]
        chunk = max(1, min(self.chunk, _CHUNK_SCORES // m))
        keep = min(self.top_k, self.n)
        scores = np.empty((n_q, keep), dtype=np.float32)
        idx = np.empty((n_q, keep), dtype=np.int64)
        tie_out = np.empty((n_q, keep), dtype=np.int64)
        for s in range(0, n_q, chunk):
            e = min(s + chunk, n_q)
            sim = self.q[s:e] @ d.T
            if self.exclude is not None:
                ex = self.exclude[s:e] - start
                rows = np.flatnonzero((ex >= 0) & (ex < m))
                sim[torch.as_tensor(rows), torch.as_tensor(ex[rows])] = -torch.inf
            sim = sim.numpy()
            top = _top_columns(sim, k, ties)
            vals = np.concatenate([self.scores[s:e], np.take_along_axis(sim, top, 1)], 1)
            cand = np.concatenate([self.idx[s:e], top + start], 1)
            cand_ties = np.concatenate([self.ties[s:e], ties[top]], 1)
            order = np.lexsort((-cand_ties, -vals), axis=1)[:, :keep]
            scores[s:e] = np.take_along_axis(vals, order, 1)
            idx[s:e] = np.take_along_axis(cand, order, 1)
            tie_out[s:e] = np.take_along_axis(cand_ties, order, 1)
        self.scores, self.idx, self.ties = scores, idx, tie_out

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(scores, indices) as search() returns them: min(top_k, documents) columns."""
        idx = self.idx.copy()
        idx[np.isneginf(self.scores)] = -1
        return self.scores.copy(), idx


def _top_columns(sim: np.ndarray, k: int, tie_rank: np.ndarray) -> np.ndarray:
    """Each row's k best columns (in no order): by score, and at a tie straddling the cut,
    the tied ones with the highest tie_rank."""
    n = sim.shape[1]
    if k >= n:
        return np.broadcast_to(np.arange(n), sim.shape)
    # argpartition: a third of torch.topk's time here. A row where more than k documents
    # score at least the k-th score has a tie straddling the cut.
    top = np.argpartition(sim, n - k, axis=1)[:, n - k:]
    kth = np.take_along_axis(sim, top[:, :1], 1)
    for r in np.flatnonzero((sim >= kth).sum(1) > k):
        top[r] = _cut_ties(sim[r], kth[r, 0], k, tie_rank)
    return top


def _cut_ties(row: np.ndarray, kth: float, k: int, tie_rank: np.ndarray) -> np.ndarray:
    """The k best of one row when several documents share the k-th score: all above it,
    then the tied ones with the highest tie_rank."""
    above = np.flatnonzero(row > kth)
    tied = np.flatnonzero(row == kth)
    tied = tied[np.argsort(-tie_rank[tied], kind="stable")[:k - len(above)]]
    return np.concatenate([above, tied])


def per_query_metrics(qrels: dict, run: dict) -> pd.DataFrame:
    """One row per judged query with the contract's metrics, by pytrec_eval itself (the
    reference; evaluate_embeddings uses ranked_metrics, which equals it)."""
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
        if row["mrr@10"] < 1 / MRR_CUT - 1e-12:
            row["mrr@10"] = 0.0
        rows.append(row)
    return pd.DataFrame(rows, columns=["query_id", *contracts.METRICS])


def build_run(query_ids, doc_ids, scores, idx) -> dict[str, dict[str, float]]:
    doc_ids = np.asarray(doc_ids, dtype=object)
    return {qid: {doc_ids[j]: float(v) for j, v in zip(idx[i].tolist(), scores[i].tolist(),
                                                        strict=True) if j >= 0}
            for i, qid in enumerate(query_ids)}


def ranked_metrics(query_ids, doc_ids, qrels: dict, idx: np.ndarray) -> pd.DataFrame:
    """The contract's metrics, trec_eval semantics, from rankings already in trec_eval's
    order (search() with tie_rank=id_ranks(doc_ids)): idx[i] = document indices of
    query_ids[i], best first, -1 = none. One row per query of `query_ids`, in that order;
    each must have qrels (grades >= 0). Vectorised: no per-query Python work."""
    n_q, n_d = len(query_ids), len(doc_ids)
    col = {d: j for j, d in enumerate(doc_ids)}
    q_rows, d_cols, grades = [], [], []
    for i, qid in enumerate(query_ids):
        for did, g in qrels[qid].items():
            q_rows.append(i)
            d_cols.append(col.get(did, -1))  # judged but not in the corpus: counts in
            grades.append(g)                 # the ideal DCG and recall base, never retrieved
    q_rows = np.asarray(q_rows, dtype=np.int64)
    d_cols = np.asarray(d_cols, dtype=np.int64)
    grades = np.asarray(grades, dtype=np.float64)

    # Grade of each retrieved document: look its (query, document) key up in the qrels.
    known = d_cols >= 0
    keys = q_rows[known] * n_d + d_cols[known]
    order = np.argsort(keys)
    keys, key_grades = keys[order], grades[known][order]
    ret = np.arange(n_q, dtype=np.int64)[:, None] * n_d + idx
    pos = np.minimum(np.searchsorted(keys, ret), max(len(keys) - 1, 0))
    hit = (idx >= 0) & (keys[pos] == ret) if len(keys) else np.zeros(idx.shape, bool)
    gain = np.where(hit, key_grades[pos] if len(keys) else 0.0, 0.0)
    rel = gain >= 1  # trec_eval's relevance level 1

    n_rel = np.bincount(q_rows, weights=grades >= 1, minlength=n_q)
    with np.errstate(divide="ignore", invalid="ignore"):
        # NDCG@10: gain = grade, discount log2(rank + 1); ideal from all judged grades.
        disc = 1.0 / np.log2(np.arange(2, NDCG_CUT + 2))
        dcg = (gain[:, :NDCG_CUT] * disc[:gain[:, :NDCG_CUT].shape[1]]).sum(1)
        ideal_order = np.lexsort((-grades, q_rows))
        ig, iq = grades[ideal_order], q_rows[ideal_order]
        first = np.searchsorted(iq, iq)  # start of each query's group
        rank = np.arange(len(iq)) - first
        keep = (rank < NDCG_CUT) & (ig > 0)
        idcg = np.bincount(iq[keep], weights=ig[keep] / np.log2(rank[keep] + 2),
                           minlength=n_q)
        ndcg = np.where(idcg > 0, dcg / idcg, 0.0)
        recall = np.where(n_rel > 0, rel[:, :RECALL_CUT].sum(1) / n_rel, 0.0)
        r = rel[:, :MAP_CUT]
        prec = np.cumsum(r, axis=1) / np.arange(1, r.shape[1] + 1)
        ap = np.where(n_rel > 0, (prec * r).sum(1) / n_rel, 0.0)
        r = rel[:, :MRR_CUT]
        mrr = np.where(r.any(1), 1.0 / (r.argmax(1) + 1), 0.0)
    return pd.DataFrame({"query_id": list(query_ids), "ndcg@10": ndcg, "recall@100": recall,
                         "map@100": ap, "mrr@10": mrr},
                        columns=["query_id", *contracts.METRICS])


def identical_ids(query_ids, doc_ids) -> np.ndarray:
    """For each query, the index of the document with the same id, or -1."""
    col = {d: j for j, d in enumerate(doc_ids)}
    return np.fromiter((col.get(q, -1) for q in query_ids), dtype=np.int64,
                       count=len(query_ids))


def evaluate_embeddings(query_emb, doc_emb, query_ids, doc_ids, qrels: dict, *,
                        top_k: int = 100, ignore_identical_ids: bool = False) -> pd.DataFrame:
    """Per-query metrics of given embeddings: one row per query of `query_ids` (each must
    have qrels), in that order. See the module docstring for ties, k and identical ids."""
    return rank_and_score(query_emb, doc_emb, query_ids, doc_ids, qrels, top_k=top_k,
                          ignore_identical_ids=ignore_identical_ids)[0]


def rank_and_score(query_emb, doc_emb, query_ids, doc_ids, qrels: dict, *, top_k: int = 100,
                   ignore_identical_ids: bool = False):
    """evaluate_embeddings' metrics and the ranking they were computed on: (frame, scores,
    idx), search()'s top-k in trec_eval's order (what a run file holds)."""
    chunks = ({None: doc_emb[s:s + DOC_CHUNK]} for s in range(0, len(doc_emb), DOC_CHUNK))
    return evaluate_streamed({None: query_emb}, chunks, query_ids, doc_ids, qrels,
                             top_k=top_k, ignore_identical_ids=ignore_identical_ids)[None]


def evaluate_streamed(query_embs: dict, doc_chunks, query_ids, doc_ids, qrels: dict, *,
                      top_k: int = 100, ignore_identical_ids: bool = False) -> dict:
    """rank_and_score() of several encodings of one benchmark at once, its documents given
    in chunks: `query_embs` {key: query embeddings}, `doc_chunks` an iterable of {key: the
    next documents' embeddings}, in corpus order (`doc_ids`' order), so that an encoder can
    hand each chunk over as it encodes it. Returns {key: (per-query metrics, scores, idx)}."""
    if top_k < MIN_TOP_K:
        raise ValueError(f"top_k {top_k}: must be at least {MIN_TOP_K}, the deepest "
                         "metric cut (recall@100, map@100)")
    query_ids, doc_ids = list(query_ids), list(doc_ids)
    for emb in query_embs.values():
        _check_finite("query", emb)
    same = identical_ids(query_ids, doc_ids)
    if not ignore_identical_ids and (same >= 0).any():
        print(f"warning: {(same >= 0).sum()} of {len(query_ids)} query ids are also "
              "document ids; BEIR's exact search drops such a document from its query's "
              "results (ignore_identical_ids: true does the same), this run keeps it",
              file=sys.stderr)
    tie_rank = id_ranks(doc_ids)
    tops = {key: RunningTopK(q, top_k, tie_rank=tie_rank,
                             exclude=same if ignore_identical_ids else None)
            for key, q in query_embs.items()}
    for chunk in doc_chunks:
        for key, emb in chunk.items():
            _check_finite("document", emb)
            tops[key].add(emb)
    out = {}
    for key, top in tops.items():
        if top.n != len(doc_ids):
            raise ValueError(f"{top.n} document embeddings for {len(doc_ids)} documents")
        scores, idx = top.result()
        out[key] = (metrics_of_ranking(query_ids, doc_ids, qrels, scores, idx), scores, idx)
    return out


def _check_finite(name: str, emb) -> None:
    if not np.isfinite(np.asarray(emb)).all():
        raise ValueError(f"{name} embeddings contain NaN or inf")


def metrics_of_ranking(query_ids, doc_ids, qrels: dict, scores, idx) -> pd.DataFrame:
    """The contract's metrics of a search() ranking in trec_eval's order."""
    if any(g < 0 for qid in query_ids for g in qrels[qid].values()):
        # trec_eval's gain handling of negative grades is left to trec_eval itself.
        return per_query_metrics({q: qrels[q] for q in query_ids},
                                 build_run(query_ids, doc_ids, scores, idx))
    return ranked_metrics(query_ids, doc_ids, qrels, idx)
