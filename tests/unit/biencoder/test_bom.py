"""User files saved with a UTF-8 byte-order mark (common on Windows) read as without it."""

from __future__ import annotations

import gzip
import json
import shutil

import pandas as pd

from workflow_scripts.biencoder import evaluate
from workflow_scripts.core import contracts, download

BOM = "\ufeff".encode()


def _with_bom(path):
    path.write_bytes(BOM + path.read_bytes())


def _bench(d):
    corpus = {f"d{i}": {"title": "", "text": f"document number {i} about {w}"}
              for i, w in enumerate(["pandas", "numpy", "torch", "scipy"])}
    queries = {"q1": "about pandas", "q2": "about torch"}
    contracts.write_beir(d, corpus, queries, {"q1": {"d0": 1}, "q2": {"d2": 1}})
    return d


def test_a_benchmark_with_byte_order_marks_evaluates_to_the_same_per_query_file(
        tiny_model, tmp_path):
    plain = _bench(tmp_path / "plain")
    marked = tmp_path / "bom"
    shutil.copytree(plain, marked)
    for rel in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        _with_bom(marked / rel)
        assert (marked / rel).read_bytes().startswith(BOM)
    files = {}
    for name, bench in (("plain", plain), ("bom", marked)):
        files[name] = tmp_path / f"{name}.parquet"
        evaluate.main(["--base", str(tiny_model), "--depth", "2", "--strategy", "top",
                       "--benchmark-dir", str(bench), "--benchmark", "b", "--recipe", "base",
                       "--seed", "-1", "--settings-json", json.dumps({"max_seq_length": 16}),
                       "--out", str(files[name])])
    plain, bom = (pd.read_parquet(files[name]) for name in ("plain", "bom"))
    pd.testing.assert_frame_equal(plain, bom)
    assert len(bom) == 2
    # The same record, but for the data's: its files' bytes (and folder) are what differ
    prov = {name: df.attrs["provenance"] for name, df in (("plain", plain), ("bom", bom))}
    data = {name: p.pop("data") for name, p in prov.items()}
    assert prov["plain"] == prov["bom"]
    assert data["plain"]["sha256"] != data["bom"]["sha256"]


def test_gzipped_triples_with_a_byte_order_mark_read_as_without(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    with gzip.open(path, "wb") as f:
        f.write(BOM + b'["q", "p", "n"]\n')
    assert list(download.iter_gzip_lines(path)) == ['["q", "p", "n"]']
