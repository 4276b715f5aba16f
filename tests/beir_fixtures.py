"""Test data in the real files' exact layouts, and a local HTTP server that counts what it
serves (test scaffolding, not a stage).

- make_beir_zip: a zip like the official BEIR ones (public.ukp.informatik.tu-darmstadt.de
  .../BEIR/datasets/scifact.zip): one top folder named after the dataset, with directory
  entries; corpus.jsonl lines {"_id", "title", "text", "metadata"}; queries.jsonl lines
  {"_id", "text", "metadata"}; qrels/test.tsv and qrels/train.tsv with the header line
  "query-id\\tcorpus-id\\tscore" and CRLF line endings.
- make_triples_gz: MS MARCO triples as sentence-transformers' embedding-training-data ships
  them (msmarco-triplets.jsonl.gz): one JSON list ["query", "positive", "negative"] a line,
  gzipped; random words, so that gzip cannot shrink a large file to nothing.
- FileServer: serves a folder on 127.0.0.1 and counts the bytes each path sent (a small
  send buffer, so that a client that stops reading stops the count soon after).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import io
import json
import random
import socket
import threading
import zipfile
from collections import Counter
from pathlib import Path

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


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    CHUNK = 16 << 10

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # A small send buffer: the count stops near what the client read before closing.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 << 10)

    def copyfile(self, source, outputfile):
        counts = self.server.owner.bytes_served
        try:
            while chunk := source.read(self.CHUNK):
                outputfile.write(chunk)
                outputfile.flush()
                counts[self.path] += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client closed the connection: it read what it needed


class FileServer:
    """Serves `root` on 127.0.0.1 (a context manager): url(name), bytes_served[path],
    requests[path]."""

    def __init__(self, root):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.bytes_served: Counter = Counter()
        self.requests: Counter = Counter()
        owner = self

        class Handler(_CountingHandler):
            def do_GET(self):
                owner.requests[self.path] += 1
                super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=str(self.root)))
        self.httpd.owner = self

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"

    def put(self, name: str, data: bytes) -> str:
        """Serve `data` as /name; returns its URL."""
        (self.root / name).write_bytes(data)
        return self.url(name)

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
