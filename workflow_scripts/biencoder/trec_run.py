"""TREC run files and qrels: an evaluation's ranking in the form trec_eval, ir_measures, ranx
and PyTerrier read (docs/evaluation.md, "Run files").

A run line is `qid Q0 docno rank score tag`, ranks 1..k in the order the metrics were
computed on: score descending, equal scores by document id descending, as trec_eval sorts
(biencoder/retrieval.py search with id_ranks). Scores are written with the shortest digits
that read back as the same float32 (at most 9 significant), which tells every two float32
values apart and keeps their order, so a tool that re-sorts by score (trec_eval does,
ignoring the rank column) sees the same ties and the same order.
A qrels line is `qid 0 docno rel`. Neither format has room for a comment, so a run's
provenance lies in a sidecar JSON beside it (paths.run_files).

The run file is gzipped (mtime 0 and no name in the header: the same ranking gives the same
bytes) and written atomically.

CLI: python -m workflow_scripts.biencoder.trec_run qrels --qrels data/beir/X/qrels/test.tsv \
        --out data/beir/X/qrels/test.trec
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from workflow_scripts.core import contracts, paths

# depthlab's metric names and ir_measures' (docs/evaluation.md's table says what each counts).
IR_MEASURES = {"ndcg@10": "nDCG@10", "recall@100": "R@100", "map@100": "AP@100",
               "mrr@10": "RR@10"}
RUN_FORMAT = ("TREC run, gzipped: qid Q0 docno rank score tag; per query its top-k, ranks "
              "1..k by score descending, equal scores by docno descending (trec_eval's order)")
# A TREC line splits on whitespace: an id or tag with any cannot be written.
_SPACE = re.compile(r"\s")
# gzip level 1: a run is rewritten with each evaluation, and level 6 buys ~10% for 3x the time.
_GZIP_LEVEL = 1


class Ranking(NamedTuple):
    """search()'s output for one encoding: idx[i] the document indices of query_ids[i] best
    first (-1: none), scores[i] their scores."""
    query_ids: list
    doc_ids: list
    scores: np.ndarray
    idx: np.ndarray


def run_tag(recipe: str, strategy: str, depth: int, seed: int, benchmark: str,
            dim: int | None = None) -> str:
    """The run's name in its sixth column: depthlab, recipe, arm and depth, seed, benchmark
    (and the embedding dimension of a dim<N>/ file), joined by '.'."""
    parts = ["depthlab", recipe, f"{strategy}{depth}", f"seed{seed}", benchmark]
    tag = ".".join([*parts, *([f"dim{dim}"] if dim is not None else [])])
    if _SPACE.search(tag):
        raise ValueError(f"run tag {tag!r}: a TREC run tag holds no whitespace")
    return tag


def _check_ids(ids, what: str, source) -> None:
    bad = next((i for i in ids if not i or _SPACE.search(i)), None)
    if bad is not None:
        raise contracts.DataError(f"{source}: {what} id {bad!r} is empty or holds whitespace, "
                                  "which a TREC run or qrels line cannot carry")


def run_text(ranking: Ranking, tag: str) -> bytes:
    """The run's lines, UTF-8: each query's retrieved documents, ranks 1.. in the ranking's
    order. Built by pyarrow's string kernels, not line by line in Python (5x faster: an
    evaluation job writes one run per depth and dimension), the score as pyarrow casts a
    float32 to text: the shortest digits that read back as the same float32."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = ranking.idx >= 0
    if not keep.any():
        return b""
    rows, cols = np.nonzero(keep)
    lines = pc.binary_join_element_wise(
        pa.array(ranking.query_ids, pa.string()).take(rows), "Q0",
        pa.array(ranking.doc_ids, pa.string()).take(ranking.idx[keep]),
        pa.array(cols + 1).cast(pa.string()),
        pa.array(ranking.scores[keep], pa.float32()).cast(pa.string()), tag + "\n", " ")
    # The joined strings lie end to end in one buffer: that is the file's text.
    offsets = np.frombuffer(lines.buffers()[1], np.int32)[lines.offset:][:len(lines) + 1]
    return memoryview(lines.buffers()[2])[offsets[0]:offsets[-1]].tobytes()


def write_run(path, ranking: Ranking, tag: str) -> str:
    """Write the gzipped run atomically; the sha256 of its text (uncompressed)."""
    _check_ids(ranking.query_ids, "query", path)
    _check_ids(ranking.doc_ids, "document", path)
    data = run_text(ranking, tag)
    with contracts.atomic_path(path) as tmp, open(tmp, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                          compresslevel=_GZIP_LEVEL) as gz:
        gz.write(data)
    return hashlib.sha256(data).hexdigest()


def write_beside(per_query, ranking: Ranking, tag: str, provenance: dict) -> None:
    """A per-query file's run and its sidecar (paths.run_files): the sidecar names the run,
    its tag, the sha256 of its text and the per-query file, and holds the same provenance."""
    run, sidecar = paths.run_files(str(per_query))
    text_sha = write_run(run, ranking, tag)
    contracts.write_json(sidecar, {
        "run": Path(run).name, "tag": tag, "format": RUN_FORMAT,
        "queries": len(ranking.query_ids), "run_text_sha256": text_sha,
        "per_query_file": Path(per_query).name, "provenance": provenance})


def read_run(path) -> dict[str, list[tuple[str, int, float]]]:
    """{qid: [(docno, rank, score), ...]} of a run file, gzipped or not (the tests' reader;
    ir_measures.read_trec_run is the tools')."""
    opener = gzip.open if str(path).endswith(".gz") else open
    out: dict[str, list] = {}
    with opener(path, "rt", encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if len(fields) != 6 or fields[1] != "Q0":
                raise contracts.DataError(f"{path}:{lineno}: not a TREC run line "
                                          "(qid Q0 docno rank score tag)")
            out.setdefault(fields[0], []).append((fields[2], int(fields[3]), float(fields[4])))
    return out


def qrels_text(qrels: dict, source) -> str:
    """trec_eval's 4-column qrels (`qid 0 docno rel`) of BEIR qrels, in their order."""
    _check_ids(qrels, "query", source)
    _check_ids([d for docs in qrels.values() for d in docs], "document", source)
    return "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())


def write_trec_qrels(tsv, out) -> None:
    """A BEIR qrels file (query-id, corpus-id, score with a header) in trec_eval's form."""
    contracts.write_text(out, qrels_text(contracts.load_qrels(tsv), tsv))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="TREC-format files of a benchmark.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("qrels", help="a BEIR qrels .tsv as trec_eval's qrels")
    q.add_argument("--qrels", required=True, type=Path)
    q.add_argument("--out", required=True, type=Path)
    a = ap.parse_args(argv)
    write_trec_qrels(a.qrels, a.out)
    print(f"{a.out}: trec_eval qrels of {a.qrels}")


if __name__ == "__main__":
    main()
