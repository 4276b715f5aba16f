"""Real-data preparation (paper configs) against a local HTTP server serving files the test
makes: a BEIR zip checked by md5, and MS MARCO-style triples recorded and checked."""

from __future__ import annotations

import gzip
import hashlib
import json
import zipfile

import pytest

from workflow_scripts.biencoder.data import prepare_data
from workflow_scripts.core import contracts, download


def _beir_zip(path, name, empty=()):
    """A mini BEIR zip; ids in `empty` (e.g. q1, d2) get empty text."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/corpus.jsonl", "".join(
            json.dumps({"_id": f"d{i}", "title": "",
                        "text": "" if f"d{i}" in empty else f"doc {i}"}) + "\n"
            for i in range(5)))
        z.writestr(f"{name}/queries.jsonl", "".join(
            json.dumps({"_id": f"q{i}", "text": "" if f"q{i}" in empty else f"query {i}"})
            + "\n" for i in range(3)))
        z.writestr(f"{name}/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td3\t2\n")
        z.writestr(f"{name}/qrels/train.tsv", "query-id\tcorpus-id\tscore\nq2\td1\t1\n")
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_beir_zip_is_verified_unpacked_and_carded(http_server, tmp_path):
    root, url = http_server.root, http_server.base
    md5 = _beir_zip(root / "mini.zip", "mini")
    out = tmp_path / "data/beir/mini"
    counts = prepare_data.prepare_beir("mini", f"{url}/mini.zip", md5, tmp_path / "dl", out)
    assert counts == {"corpus documents": 5, "test queries": 2, "judgments": 2,
                      "empty test query texts (kept)": 0, "empty documents (kept)": 0}
    corpus, queries, qrels = contracts.load_beir(out)
    assert qrels == {"q0": {"d0": 1}, "q1": {"d3": 2}}
    assert md5 in (out / "DATACARD.md").read_text()


def test_empty_texts_are_kept_counted_and_carded(http_server, tmp_path, capsys):
    """Issue #17: empty query text used to be kept and scored without a word."""
    root, url = http_server.root, http_server.base
    md5 = _beir_zip(root / "mini.zip", "mini", empty=("q1", "d2"))
    out = tmp_path / "data/beir/mini"
    counts = prepare_data.prepare_beir("mini", f"{url}/mini.zip", md5, tmp_path / "dl", out)
    assert counts["empty test query texts (kept)"] == 1
    assert counts["empty documents (kept)"] == 1
    assert "warning: mini: 1 empty test query texts (kept)" in capsys.readouterr().err
    assert "empty test query texts (kept)" in (out / "DATACARD.md").read_text()


def test_beir_md5_mismatch_fails_and_leaves_nothing(http_server, tmp_path):
    root, url = http_server.root, http_server.base
    md5 = _beir_zip(root / "mini.zip", "mini")
    bad = "0" * 32
    with pytest.raises(download.DownloadError, match=md5):
        prepare_data.prepare_beir("mini", f"{url}/mini.zip", bad, tmp_path / "dl",
                                  tmp_path / "out")
    assert not (tmp_path / "out").exists() and not list((tmp_path / "dl").glob("mini.zip*"))


def test_triples_record_first_download_and_check_lines(http_server, tmp_path):
    root, url = http_server.root, http_server.base
    lines = [json.dumps([f"q{i}", f"pos {i}", f"neg {i}"]) for i in range(4)]
    (root / "tri.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    out = tmp_path / "train/tri.parquet"
    assert prepare_data.prepare_triples("tri", f"{url}/tri.jsonl.gz", tmp_path / "dl", out,
                                        expect_lines=4) == {"triples": 4}
    record = json.loads((tmp_path / "dl/tri.jsonl.gz.record.json").read_text())
    assert record["lines"] == 4 and len(record["sha256"]) == 64
    assert "sha256" in out.with_suffix(".DATACARD.md").read_text()
    with pytest.raises(download.DownloadError, match="lines"):
        prepare_data.prepare_triples("tri", f"{url}/tri.jsonl.gz", tmp_path / "dl2",
                                     tmp_path / "x.parquet", expect_lines=5)


def test_bad_triple_line_is_named(tmp_path):
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(gzip.compress(b'["a", "b", "c"]\n["only", "two"]\n'))
    with pytest.raises(contracts.DataError, match=r"t\.jsonl\.gz:2: expected \[anchor"):
        prepare_data.triples_from_jsonl_gz(p)


def test_beir_with_too_few_judged_queries_fails_naming_the_key(http_server, tmp_path):
    """Issue #17: eval.min_queries used to be checked for generated benchmarks only."""
    root, url = http_server.root, http_server.base
    md5 = _beir_zip(root / "mini.zip", "mini")  # 2 judged test queries
    out = tmp_path / "data/beir/mini"
    with pytest.raises(contracts.DataError,
                       match=r"mini: 2 test queries .* eval.min_queries \(3\)"):
        prepare_data.prepare_beir("mini", f"{url}/mini.zip", md5, tmp_path / "dl", out,
                                  min_queries=3)
    assert not out.exists()  # nothing left for a later job to read
