"""Training pairs from a BEIR folder's train split: (query, positive document) for every
judged row of qrels/train.tsv, trained with in-batch negatives (MNRL over pairs: the other
documents of the batch are the negatives; no negative is invented).

Rows that make no pair are dropped and counted by reason: a score of 0 or less (judged not
relevant), a query or document id missing from queries.jsonl or corpus.jsonl, an empty
text, a repeated (query, document) row, and a query of the test split (qrels/test.tsv,
by id or by text): a benchmark of the same corpus evaluates on those, so training on them
would leak.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pandas as pd

from workflow_scripts.core import contracts

PAIR_COLUMNS = ("query", "positive", "query_id", "doc_id")
DROPPED = {
    "score": "dropped: score 0 or less (not relevant)",
    "query": "dropped: query id not in queries.jsonl",
    "doc": "dropped: document id not in corpus.jsonl",
    "test": "dropped: query of the test split (qrels/test.tsv, by id or text)",
    "empty": "dropped: empty query or document text",
    "duplicate": "dropped: repeated (query, document) row",
}


def doc_text(doc: dict) -> str:
    """A document as the encoder reads it: title and text, as evaluation does
    (biencoder/retrieval.py) and BEIR's dense retrieval."""
    return (doc.get("title", "") + " " + doc["text"]).strip()


def _qrels_rows(path: Path):
    """(line number, query id, document id, score) of each row after the header line."""
    with open(path, encoding="utf-8-sig", newline="") as f:  # CRLF as BEIR ships it
        reader = csv.reader(f, delimiter="\t")
        if next(reader, None) is None:
            raise contracts.DataError(f"{path}: empty qrels file")
        for lineno, row in enumerate(reader, 2):
            if not row:
                continue
            if len(row) != 3:
                raise contracts.DataError(
                    f"{path}:{lineno}: expected 3 tab-separated fields, got {len(row)}")
            try:
                yield lineno, row[0], row[1], int(row[2])
            except ValueError:
                raise contracts.DataError(
                    f"{path}:{lineno}: score {row[2]!r} is not an integer") from None


def input_files(folder) -> list[Path]:
    """The files train_pairs reads: qrels/test.tsv only where the folder has it."""
    folder = Path(folder)
    files = [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "train.tsv"]
    test = folder / "qrels" / "test.tsv"
    return files + ([test] if test.exists() else [])


def train_pairs(folder) -> tuple[pd.DataFrame, dict]:
    """(pairs, counts) of a BEIR folder's train split; the pairs in qrels order."""
    folder = Path(folder)
    corpus = contracts.load_corpus(folder / "corpus.jsonl")
    queries = contracts.load_queries(folder / "queries.jsonl")
    test_path = folder / "qrels" / "test.tsv"
    test_ids = set(contracts.load_qrels(test_path)) if test_path.exists() else set()
    test_texts = {queries[q].strip().lower() for q in test_ids if q in queries}
    rows, seen, dropped, total = [], set(), Counter(), 0
    for _, qid, did, score in _qrels_rows(folder / "qrels" / "train.tsv"):
        total += 1
        why = ("score" if score <= 0 else "query" if qid not in queries
               else "doc" if did not in corpus
               else "test" if qid in test_ids or queries[qid].strip().lower() in test_texts
               else "empty" if not (queries[qid].strip() and doc_text(corpus[did]))
               else "duplicate" if (qid, did) in seen else None)
        if why:
            dropped[why] += 1
            continue
        seen.add((qid, did))
        rows.append((queries[qid], doc_text(corpus[did]), qid, did))
    if not rows:
        raise contracts.DataError(f"{folder / 'qrels' / 'train.tsv'}: no row makes a "
                                  f"training pair ({total} rows: {dict(dropped)})")
    df = pd.DataFrame(rows, columns=list(PAIR_COLUMNS))
    counts = {"pairs": len(df), "train queries": df["query_id"].nunique(),
              "positive documents": df["doc_id"].nunique(), "corpus documents": len(corpus),
              "qrels/train.tsv rows": total,
              **{label: dropped[k] for k, label in DROPPED.items()}}
    return df, counts
