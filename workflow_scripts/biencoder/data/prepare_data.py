"""Real datasets: BEIR benchmarks and training pairs (a BEIR zip + its published md5, or a
local folder in BEIR's layout) and training triples (jsonl.gz lines
`["anchor", "positive", "negative"]`). Downloads go through workflow_scripts.core.download:
atomic, checksummed, resumed with HTTP Range, retried on server errors. A whole triples file
is pinned by its sha256 and line count (recorded on the first download, checked after);
with --max-triples N only its first N lines are streamed (core/download_head.py). Every
data card says where the data came from and the checksums of what was read.

CLI: python -m workflow_scripts.biencoder.data.prepare_data beir --name nfcorpus \
        (--url URL --md5 X | --path DIR) --download-dir data/downloads --out data/beir/nfcorpus
     python -m workflow_scripts.biencoder.data.prepare_data beir-train --name scifact-train \
        (--url URL --md5 X | --path DIR) --download-dir data/downloads \
        --out data/train/scifact-train.parquet
     python -m workflow_scripts.biencoder.data.prepare_data triples --url URL \
        (--expect-lines N | --max-triples N) --download-dir data/downloads \
        --out data/train/msmarco-triplets.parquet
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd

from workflow_scripts.biencoder.data import beir_train
from workflow_scripts.core import contracts, download
from workflow_scripts.core.download_head import fetch_head

BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")


def prepare_beir(name: str, url: str | None, md5: str | None, download_dir, out_dir, *,
                 path=None, min_queries: int = 1) -> dict:
    """Download and unpack one BEIR benchmark (or copy it from the local folder `path`);
    validate it (at least `min_queries` test queries with a judged document); write its
    data card. A benchmark that fails validation is removed again, so that no later job
    reads it."""
    if path is None:
        zip_path = download.fetch(url, Path(download_dir) / f"{name}.zip", md5=md5)
        download.extract_zip(zip_path, out_dir, members_prefix=f"{name}/")
        origin, checks = f"Downloaded from <{url}>.", {"md5": md5}
    else:
        with contracts.atomic_dir(out_dir) as tmp:
            for f in BEIR_FILES:
                (tmp / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(path) / f, tmp / f)
        origin, checks = _local_origin(path, [Path(path) / f for f in BEIR_FILES])
    return finish_beir(name, out_dir, origin, checks, min_queries)


def finish_beir(name: str, out_dir, origin: str, checks: dict, min_queries: int) -> dict:
    """Validate a BEIR folder just written (every source's: zip, local folder, Hub) and
    write its data card; a folder that fails is removed again, so that no later job reads
    it. Returns its counts."""
    try:
        corpus, queries, qrels = contracts.load_beir(out_dir)  # file:line on bad data
        if len(queries) < min_queries:
            raise contracts.DataError(
                f"{out_dir}: {len(queries)} test queries with a judged document, fewer than "
                f"config key eval.min_queries ({min_queries})")
    except contracts.DataError:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    # Empty texts are kept and encoded as given, as BEIR does (the encoder sees an empty
    # string, so such a query retrieves by the model's bias alone); counted and said here.
    empty = {"empty test query texts (kept)": sum(not t.strip() for t in queries.values()),
             "empty documents (kept)": sum(not (d.get("title", "") + d.get("text", "")).strip()
                                           for d in corpus.values())}
    for what, n in empty.items():
        if n:
            print(f"warning: {name}: {n} {what}", file=sys.stderr)
    counts = {"corpus documents": len(corpus), "test queries": len(queries),
              "judgments": sum(len(v) for v in qrels.values()), **empty}
    # The files as evaluated: an edit after this leaves a trace (a checksum that differs).
    checks.update(_sha256s(out_dir, [Path(out_dir) / f for f in BEIR_FILES], "written"))
    contracts.write_text(Path(out_dir) / "DATACARD.md", _card(name, origin, checks, counts))
    return counts


def prepare_beir_train(name: str, download_dir, out, *, url: str | None = None,
                       md5: str | None = None, path=None) -> dict:
    """Training pairs from a BEIR zip's (or local folder's) train split
    (biencoder/data/beir_train.py), into the training parquet and its data card."""
    if path is None:
        # The official zips hold one folder named as the zip (scifact.zip: scifact/).
        top = Path(urlparse(url).path).stem
        zip_path = download.fetch(url, Path(download_dir) / f"{name}.zip", md5=md5)
        path = download.extract_zip(zip_path, Path(download_dir) / name,
                                    members_prefix=f"{top}/")
        origin, checks = f"Downloaded from <{url}>.", {"md5 (zip)": md5}
        checks.update(_sha256s(path, beir_train.input_files(path)))
    else:
        origin, checks = _local_origin(path, beir_train.input_files(path))
    pairs, counts = beir_train.train_pairs(path)
    contracts.write_parquet(out, pairs)
    note = ["", "Split: **train** (qrels/train.tsv): (query, positive document) pairs, "
            "trained with in-batch negatives (no negative column). A benchmark of the same "
            "corpus evaluates on its **test** split (config/laptop.yaml: SciFact's "
            "qrels/test.tsv), so the pairs leave out every query of qrels/test.tsv, by id and "
            "by text; the corpus is shared."]
    contracts.write_text(Path(out).with_suffix(".DATACARD.md"),
                         _card(name, origin, checks, counts, note))
    return counts


def _local_origin(path, files) -> tuple[str, dict]:
    """A local folder's card lines: where, and the sha256 of each file read."""
    return f"Read from the local folder `{path}`.", _sha256s(path, files)


def _sha256s(folder, files, what="read") -> dict:
    """{"sha256 <what> <file>": its sha256}: `what` tells the files read from the files
    written (a local folder's are both, by the same names)."""
    return {f"sha256 {what} {Path(f).relative_to(folder).as_posix()}":
            download.file_digests(f, ["sha256"])["sha256"] for f in files}


def _triples(lines, source) -> pd.DataFrame:
    rows = []
    for lineno, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise contracts.DataError(f"{source}:{lineno}: not valid JSON ({e.msg})") from None
        if isinstance(row, dict):  # also accept {"query", "positive", "negative"} objects
            row = [row.get("query"), row.get("positive"), row.get("negative")]
        if (not isinstance(row, list) or len(row) != 3
                or not all(isinstance(t, str) and t.strip() for t in row)):
            raise contracts.DataError(
                f"{source}:{lineno}: expected [anchor, positive, negative] non-empty strings")
        rows.append(row)
    return pd.DataFrame(rows, columns=["query", "positive", "negative"])


def triples_from_jsonl_gz(path) -> pd.DataFrame:
    return _triples(download.iter_gzip_lines(path), path)


def triples_from_jsonl(path) -> pd.DataFrame:
    with open(path, encoding="utf-8-sig", newline="") as f:
        return _triples((line.rstrip("\r\n") for line in f), path)


def prepare_triples(name: str, url: str, download_dir, out, expect_lines=None,
                    max_triples=None) -> dict:
    """The whole file (pinned by its recorded sha256 and line count), or with `max_triples`
    only its first N lines, streamed (the file is never downloaded whole; config check:
    not both)."""
    if max_triples is not None:
        head = Path(download_dir) / f"{name}.head{max_triples}.jsonl"
        record = fetch_head(url, max_triples, head, head.with_suffix(".jsonl.record.json"),
                            key=f"config key datasets.{name}.max_triples")
        df = triples_from_jsonl(head)
        checks = {"max_triples (the file's first N lines; the rest never downloaded)":
                  max_triples,
                  "sha256 of those lines (decompressed, line endings included)":
                  record["sha256"],
                  "compressed bytes read": f"{record['bytes_read']:,}",
                  "whole file's bytes (Content-Length)": (
                      f"{record['file_bytes']:,}" if record["file_bytes"] else "not given")}
    else:
        gz = Path(download_dir) / Path(url).name
        record = download.fetch_recorded(url, gz, gz.with_suffix(gz.suffix + ".record.json"),
                                         expected_lines=expect_lines)
        df = triples_from_jsonl_gz(gz)
        checks = {"sha256 (recorded on first download)": record["sha256"],
                  "lines": record.get("lines")}
    contracts.write_parquet(out, df)
    counts = {"triples": len(df)}
    contracts.write_text(Path(out).with_suffix(".DATACARD.md"),
                         _card(name, f"Downloaded from <{url}>.", checks, counts))
    return counts


def _card(name, origin: str, checks: dict, counts: dict, notes=()) -> str:
    lines = [f"# Data card: {name}", "", origin, "", "| check | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in checks.items()]
    lines += ["", "| count | value |", "|---|---|"]
    lines += [f"| {k} | {v:,} |" for k, v in counts.items()]
    return "\n".join([*lines, *notes]) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Download and prepare a real dataset.")
    sub = ap.add_subparsers(dest="kind", required=True)
    b = sub.add_parser("beir")
    b.add_argument("--min-queries", type=int, default=1,
                   help="fewest test queries with a judged document (eval.min_queries)")
    bt = sub.add_parser("beir-train")
    for p in (b, bt):
        where = p.add_mutually_exclusive_group(required=True)
        where.add_argument("--url", help="a BEIR zip (with --md5)")
        where.add_argument("--path", help="a local folder in BEIR's layout")
        p.add_argument("--md5")
    t = sub.add_parser("triples")
    t.add_argument("--url", required=True)
    lines = t.add_mutually_exclusive_group()
    lines.add_argument("--expect-lines", type=int)
    lines.add_argument("--max-triples", type=int)
    for p in (b, bt, t):
        p.add_argument("--name", required=True)
        p.add_argument("--download-dir", required=True)
        p.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.kind != "triples" and bool(a.url) != bool(a.md5):
        ap.error("--md5 goes with --url (and only with it)")
    if a.kind == "beir":
        counts = prepare_beir(a.name, a.url, a.md5, a.download_dir, a.out, path=a.path,
                              min_queries=a.min_queries)
    elif a.kind == "beir-train":
        counts = prepare_beir_train(a.name, a.download_dir, a.out, url=a.url, md5=a.md5,
                                    path=a.path)
    else:
        counts = prepare_triples(a.name, a.url, a.download_dir, a.out, a.expect_lines,
                                 a.max_triples)
    print(f"{a.out}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
