"""Test data in the real files' exact layouts (test scaffolding, not a stage); conftest's
`http_server` serves it.

- make_beir_zip: a zip like the official BEIR ones (public.ukp.informatik.tu-darmstadt.de
  .../BEIR/datasets/scifact.zip): one top folder named after the dataset, with directory
  entries; corpus.jsonl lines {"_id", "title", "text", "metadata"}; queries.jsonl lines
  {"_id", "text", "metadata"}; qrels/test.tsv and qrels/train.tsv with the header line
  "query-id\\tcorpus-id\\tscore" and CRLF line endings.
- hub_files: the same benchmark as a Hub dataset repository's files, as MTEB's retrieval
  datasets (mteb/scifact) hold it: parquet per config (corpus: _id, title, text; queries:
  _id, text; default: query-id, corpus-id, score) and the card's YAML `configs:` naming
  them by glob; or (nano=True) as sentence-transformers/NanoBEIR-en: configs corpus,
  queries and qrels (query-id, corpus-id, no score), each with one split per subset.
- make_triples_gz: MS MARCO triples as sentence-transformers' embedding-training-data ships
  them (msmarco-triplets.jsonl.gz): one JSON list ["query", "positive", "negative"] a line,
  gzipped; random words, so that gzip cannot shrink a large file to nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import zipfile

import pandas as pd

WORDS = [f"{a}{b}{c}" for a in ("ka", "lo", "mi", "nu", "pe", "ri", "su", "ta", "vo", "ze")
         for b in ("b", "d", "g", "l", "m", "n", "r", "s", "t", "v")
         for c in ("a", "e", "i", "o", "u", "an", "el", "is", "on", "us")]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, k=n))


def make_beir_zip(name: str, *, docs: int, test_queries: int, train_queries: int,
                  seed: int = 0, bad_train_rows: bool = False) -> bytes:
    """A BEIR zip: document i is about query i's words (so retrieval has signal), queries
    0..test_queries-1 are judged in test.tsv, the next train_queries in train.tsv (two
    documents each: every second query has a second positive). `bad_train_rows` adds rows
    that make no pair: a score 0, an unknown document, a repeated row, a test query."""
    rng = random.Random(seed)
    n_q = test_queries + train_queries
    topics = [_text(rng, 4) for _ in range(n_q)]
    corpus = [{"_id": str(1000 + i), "title": _text(rng, 3),
               "text": f"{topics[i % n_q]} {_text(rng, 20)}", "metadata": {}}
              for i in range(docs)]
    queries = [{"_id": str(i), "text": f"{topics[i]} {_text(rng, 3)}?", "metadata": {}}
               for i in range(n_q)]
    test = [(str(q), str(1000 + q), 1) for q in range(test_queries)]
    train = [(str(q), str(1000 + q + k * n_q), 1) for q in range(test_queries, n_q)
             for k in range(1 + (q % 2)) if q + k * n_q < docs]
    if bad_train_rows:
        q = str(test_queries)
        train += [(q, "1001", 0), (q, "no-such-doc", 1), train[0], ("0", "1000", 1)]

    def jsonl(rows):
        return "".join(json.dumps(r) + "\n" for r in rows).encode()

    def qrels(rows):
        return "".join(f"{a}\t{b}\t{c}\r\n"
                       for a, b, c in [("query-id", "corpus-id", "score"), *rows]).encode()

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for folder in (f"{name}/", f"{name}/qrels/"):
            z.writestr(zipfile.ZipInfo(folder, (2021, 1, 1, 0, 0, 0)), b"")
        for member, data in ((f"{name}/corpus.jsonl", jsonl(corpus)),
                             (f"{name}/queries.jsonl", jsonl(queries)),
                             (f"{name}/qrels/test.tsv", qrels(test)),
                             (f"{name}/qrels/train.tsv", qrels(train))):
            z.writestr(zipfile.ZipInfo(member, (2021, 1, 1, 0, 0, 0)), data,
                       zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def triple_lines(n: int, seed: int = 0) -> list[str]:
    """MS MARCO-style lines: a short query, a positive and a negative passage (drawn from a
    pool of passages far larger than gzip's 32 KiB window, so they still do not compress)."""
    rng = random.Random(seed)
    pool = [_text(rng, 60) for _ in range(min(n, 3000) + 1)]
    return [json.dumps([_text(rng, 6), rng.choice(pool), rng.choice(pool)]) for _ in range(n)]


def make_triples_gz(n: int, seed: int = 0) -> bytes:
    return gzip.compress("".join(line + "\n" for line in triple_lines(n, seed)).encode(),
                         compresslevel=1, mtime=0)


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def beir_members(zip_bytes: bytes, name: str) -> dict[str, bytes]:
    """{corpus.jsonl, queries.jsonl, qrels/test.tsv, ...: bytes} of a BEIR zip."""
    with zipfile.ZipFile(io.BytesIO(zip_bytes)) as z:
        return {n.removeprefix(f"{name}/"): z.read(n) for n in z.namelist()
                if not n.endswith("/")}


def _parquet(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buf, index=False)
    return buf.getvalue()


def hub_files(zip_bytes: bytes, name: str, *, nano: str | None = None) -> dict[str, bytes]:
    """The BEIR zip's test split as a Hub dataset repository's files (MTEB's layout, or
    NanoBEIR-en's with `nano` the split name, e.g. NanoSciFact)."""
    m = beir_members(zip_bytes, name)
    corpus = [json.loads(line) for line in m["corpus.jsonl"].decode().splitlines()]
    queries = [json.loads(line) for line in m["queries.jsonl"].decode().splitlines()]
    qrels = [line.split("\t") for line in m["qrels/test.tsv"].decode().splitlines()[1:]]
    corpus = [{"_id": d["_id"], "title": d["title"], "text": d["text"]} for d in corpus]
    queries = [{"_id": q["_id"], "text": q["text"]} for q in queries]
    if nano:
        judged = [{"query-id": q, "corpus-id": d} for q, d, _ in qrels]
        card = "\n".join(["---", "configs:"] + [
            f"- config_name: {c}\n  data_files:\n  - split: {nano}\n    path: {c}/{nano}-*"
            for c in ("corpus", "queries", "qrels")] + ["---", f"# {name}", ""])
        return {"README.md": card.encode(),
                f"corpus/{nano}-00000-of-00001.parquet": _parquet(corpus),
                f"queries/{nano}-00000-of-00001.parquet": _parquet(queries),
                f"qrels/{nano}-00000-of-00001.parquet": _parquet(judged)}
    judged = [{"query-id": q, "corpus-id": d, "score": int(s)} for q, d, s in qrels]
    card = "\n".join([
        "---", "configs:",
        "- config_name: corpus", "  data_files:", "  - split: corpus",
        "    path: corpus/corpus-*",
        "- config_name: default", "  data_files:", "  - split: test", "    path: data/test-*",
        "- config_name: queries", "  data_files:", "  - split: queries",
        "    path: queries/queries-*", "---", f"# {name}", ""])
    return {"README.md": card.encode(),
            "corpus/corpus-00000-of-00001.parquet": _parquet(corpus),
            "queries/queries-00000-of-00001.parquet": _parquet(queries),
            "data/test-00000-of-00001.parquet": _parquet(judged)}
