"""Real datasets for the paper configs: BEIR benchmarks (zip + published md5) and training
triples (jsonl.gz lines `["anchor", "positive", "negative"]`, sha256 and line count recorded
on the first download and checked after). Downloads go through workflow_scripts.core.download:
atomic, checksummed, resumed with HTTP Range, retried on server errors.

CLI: python -m workflow_scripts.biencoder.data.prepare_data beir --name nfcorpus --url URL --md5 X \
        --download-dir data/downloads --out data/beir/nfcorpus
     python -m workflow_scripts.biencoder.data.prepare_data triples --url URL --expect-lines N \
        --download-dir data/downloads --out data/train/msmarco-triplets.parquet
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pandas as pd

from workflow_scripts.core import contracts, download


def prepare_beir(name: str, url: str, md5: str, download_dir, out_dir, *,
                 min_queries: int = 1) -> dict:
    """Download and unpack one BEIR benchmark; validate it (at least `min_queries` test
    queries with a judged document); write its data card. A benchmark that fails validation
    is removed again, so that no later job reads it."""
    zip_path = download.fetch(url, Path(download_dir) / f"{name}.zip", md5=md5)
    download.extract_zip(zip_path, out_dir, members_prefix=f"{name}/")
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
    contracts.write_text(Path(out_dir) / "DATACARD.md", _card(name, url, {"md5": md5}, counts))
    return counts


def triples_from_jsonl_gz(path) -> pd.DataFrame:
    rows = []
    for lineno, line in enumerate(download.iter_gzip_lines(path), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise contracts.DataError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
        if isinstance(row, dict):  # also accept {"query", "positive", "negative"} objects
            row = [row.get("query"), row.get("positive"), row.get("negative")]
        if (not isinstance(row, list) or len(row) != 3
                or not all(isinstance(t, str) and t.strip() for t in row)):
            raise contracts.DataError(
                f"{path}:{lineno}: expected [anchor, positive, negative] non-empty strings")
        rows.append(row)
    return pd.DataFrame(rows, columns=["query", "positive", "negative"])


def prepare_triples(name: str, url: str, download_dir, out, expect_lines=None) -> dict:
    gz = Path(download_dir) / Path(url).name
    record = download.fetch_recorded(url, gz, gz.with_suffix(gz.suffix + ".record.json"),
                                     expected_lines=expect_lines)
    df = triples_from_jsonl_gz(gz)
    contracts.write_parquet(out, df)
    counts = {"triples": len(df)}
    card = _card(name, url, {"sha256 (recorded on first download)": record["sha256"],
                             "lines": record.get("lines")}, counts)
    contracts.write_text(Path(out).with_suffix(".DATACARD.md"), card)
    return counts


def _card(name, url, checks: dict, counts: dict) -> str:
    lines = [f"# Data card: {name}", "", f"Downloaded from <{url}>.", "",
             "| check | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in checks.items()]
    lines += ["", "| count | value |", "|---|---|"]
    lines += [f"| {k} | {v:,} |" for k, v in counts.items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Download and prepare a real dataset.")
    sub = ap.add_subparsers(dest="kind", required=True)
    b = sub.add_parser("beir")
    b.add_argument("--md5", required=True)
    b.add_argument("--min-queries", type=int, default=1,
                   help="fewest test queries with a judged document (eval.min_queries)")
    t = sub.add_parser("triples")
    t.add_argument("--expect-lines", type=int)
    for p in (b, t):
        p.add_argument("--name", required=True)
        p.add_argument("--url", required=True)
        p.add_argument("--download-dir", required=True)
        p.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.kind == "beir":
        counts = prepare_beir(a.name, a.url, a.md5, a.download_dir, a.out,
                              min_queries=a.min_queries)
    else:
        counts = prepare_triples(a.name, a.url, a.download_dir, a.out, a.expect_lines)
    print(f"{a.out}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
