"""Issue #31's data sources against the local HTTP server (conftest's http_server) serving
files in the real layouts (tests/helpers/beir_fixtures.py): the head of a triples file streamed
(max_triples), training pairs from a BEIR train split (beir-train), and BEIR folders read
from a local path."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import zipfile

import pandas as pd
import pytest
import yaml
from beir_fixtures import make_beir_zip, make_triples_gz, md5, triple_lines
from conftest import ROOT, copy_workflow, planned_jobs, snakemake

from workflow_scripts.biencoder.data import beir_train, prepare_data
from workflow_scripts.core import download
from workflow_scripts.study_config import check_config

LINES = 20_000  # the real file has ~500K; the test's is ~5.7 MB gzipped


@pytest.fixture(scope="module")
def triples_gz():
    return make_triples_gz(LINES)


def _sha256(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_max_triples_streams_the_head_and_never_the_whole_file(http_server, triples_gz, tmp_path):
    path = "/msmarco-triplets.jsonl.gz"
    url = http_server.put(path, triples_gz)
    out, dl = tmp_path / "train/ms.parquet", tmp_path / "dl"
    assert prepare_data.prepare_triples("ms", url, dl, out, max_triples=100) == {"triples": 100}
    served = http_server.bytes_served[path]
    print(f"max_triples 100 of {LINES:,} lines: {served:,} bytes served of {len(triples_gz):,}")
    assert served < len(triples_gz) / 10  # streamed and stopped, never the whole file

    first = triple_lines(LINES)[:100]
    df = pd.read_parquet(out)
    assert df.values.tolist() == [json.loads(line) for line in first]
    record = json.loads((dl / "ms.head100.jsonl.record.json").read_text())
    assert record["url"] == url and record["lines"] == 100
    # what `zcat FILE | head -n 100 | sha256sum` prints
    assert record["sha256"] == _sha256("".join(f"{line}\n" for line in first).encode())
    assert record["file_bytes"] == len(triples_gz) and record["bytes_read"] <= served
    card = out.with_suffix(".DATACARD.md").read_text()
    assert url in card and "| max_triples" in card and "| 100 |" in card
    assert record["sha256"] in card and f"{record['bytes_read']:,}" in card

    # The same N and URL again (the parquet deleted): no second request
    out.unlink()
    prepare_data.prepare_triples("ms", url, dl, out, max_triples=100)
    assert http_server.hits[path] == 1 and len(pd.read_parquet(out)) == 100
    # Another N: streamed again, its own record
    prepare_data.prepare_triples("ms", url, dl, out, max_triples=150)
    assert http_server.hits[path] == 2 and len(pd.read_parquet(out)) == 150
    assert json.loads((dl / "ms.head150.jsonl.record.json").read_text())["lines"] == 150


def test_max_triples_beyond_the_file_and_a_changed_file_fail(http_server, tmp_path):
    url = http_server.put("t.jsonl.gz", make_triples_gz(30))
    with pytest.raises(download.DownloadError,
                       match=r"30 lines, fewer than the 50 of config key datasets\.t\.max_triples"):
        prepare_data.prepare_triples("t", url, tmp_path / "dl", tmp_path / "t.parquet",
                                     max_triples=50)
    prepare_data.prepare_triples("t", url, tmp_path / "dl", tmp_path / "t.parquet",
                                 max_triples=20)
    # The file changes under the same URL; the cached head is gone: the record catches it
    http_server.put("t.jsonl.gz", make_triples_gz(30, seed=1))
    (tmp_path / "dl/t.head20.jsonl").unlink()
    with pytest.raises(download.DownloadError, match="delete the record"):
        prepare_data.prepare_triples("t", url, tmp_path / "dl", tmp_path / "t.parquet",
                                     max_triples=20)


def test_beir_zip_has_the_official_layout():
    z = zipfile.ZipFile(io.BytesIO(make_beir_zip("scifact", docs=20, test_queries=3,
                                                 train_queries=4)))
    assert z.namelist() == ["scifact/", "scifact/qrels/", "scifact/corpus.jsonl",
                            "scifact/queries.jsonl", "scifact/qrels/test.tsv",
                            "scifact/qrels/train.tsv"]
    assert z.read("scifact/qrels/train.tsv").startswith(b"query-id\tcorpus-id\tscore\r\n")
    assert set(json.loads(z.read("scifact/corpus.jsonl").splitlines()[0])) == {
        "_id", "title", "text", "metadata"}


def test_beir_train_pairs_from_the_zip(http_server, tmp_path):
    data = make_beir_zip("scifact", docs=60, test_queries=10, train_queries=20,
                         bad_train_rows=True)
    url = http_server.put("scifact.zip", data)
    out = tmp_path / "train/scifact-train.parquet"
    counts = prepare_data.prepare_beir_train("scifact-train", tmp_path / "dl", out, url=url,
                                             md5=md5(data))
    # 20 train queries, every second with a second positive: 30 pairs; 4 bad rows dropped
    assert counts["pairs"] == 30 and counts["train queries"] == 20
    assert counts["qrels/train.tsv rows"] == 34
    assert [counts[label] for label in beir_train.DROPPED.values()] == [1, 0, 1, 1, 0, 1]
    df = pd.read_parquet(out)
    assert list(df.columns) == list(beir_train.PAIR_COLUMNS)
    assert not set(df["query_id"]) & {str(q) for q in range(10)}  # no test query
    card = out.with_suffix(".DATACARD.md").read_text()
    folder = tmp_path / "dl/scifact-train"
    for f in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"):
        assert f"| sha256 read {f} | {_sha256((folder / f).read_bytes())} |" in card
    assert md5(data) in card and url in card and "Split: **train**" in card
    assert "qrels/test.tsv" in card and "SciFact" in card
    with pytest.raises(download.DownloadError, match="checksum mismatch"):
        prepare_data.prepare_beir_train("x", tmp_path / "dl", tmp_path / "x.parquet", url=url,
                                        md5="0" * 32)


def test_beir_sources_read_a_local_folder(http_server, tmp_path):
    data = make_beir_zip("scifact", docs=60, test_queries=10, train_queries=20)
    local = download.extract_zip(io.BytesIO(data), tmp_path / "local",
                                 members_prefix="scifact/")
    url = http_server.put("scifact.zip", data)
    # beir-train: the same pairs as from the zip, the files' sha256 carded
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    prepare_data.prepare_beir_train("s", tmp_path / "dl", a, url=url, md5=md5(data))
    prepare_data.prepare_beir_train("s", tmp_path / "dl", b, path=local)
    pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b))
    card = b.with_suffix(".DATACARD.md").read_text()
    assert f"local folder `{local}`" in card
    digest = _sha256((local / "qrels/train.tsv").read_bytes())
    assert f"| sha256 read qrels/train.tsv | {digest} |" in card
    # beir: copied, validated and carded like a download
    out = tmp_path / "data/beir/s"
    counts = prepare_data.prepare_beir("s", None, None, tmp_path / "dl", out, path=local)
    assert counts["test queries"] == 10 and counts["corpus documents"] == 60
    assert (out / "qrels/test.tsv").read_bytes() == (local / "qrels/test.tsv").read_bytes()
    carded = _sha256((local / "corpus.jsonl").read_bytes())
    assert f"| sha256 read corpus.jsonl | {carded} |" in (out / "DATACARD.md").read_text()
    assert http_server.hits["/scifact.zip"] == 1  # the path reads made no request


PAPER = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
ZIP = {"url": "https://example.org/scifact.zip", "md5": "0" * 32}


@pytest.mark.parametrize("change, message", [
    ({"msmarco-triplets": {"max_triples": 100}},
     "datasets.msmarco-triplets.expect_lines: counts the whole file's lines"),
    ({"nfcorpus": {"path": "beir/nfcorpus"}},
     "datasets.nfcorpus: a beir dataset needs exactly one of url (with md5) and path"),
    ({"nfcorpus": {"url": None, "md5": None}},
     "datasets.nfcorpus: a beir dataset needs exactly one of url (with md5) and path"),
    ({"nfcorpus": {"md5": None}}, "datasets.nfcorpus.md5: a beir url needs the zip's md5"),
    ({"nfcorpus": {"url": None, "path": "beir/nfcorpus"}},
     "datasets.nfcorpus.md5: checks a url's zip; a path's files are recorded by sha256"),
    ({"msmarco-triplets": {"path": "x"}},
     "datasets.msmarco-triplets.path: only a beir or beir-train dataset reads a local folder"),
    ({"st": {"source": "beir-train", "path": "a", **ZIP}},
     "datasets.st: a beir-train dataset needs exactly one of url (with md5) and path"),
])
def test_config_errors_name_the_key(change, message):
    config = copy.deepcopy(PAPER)
    for name, keys in change.items():
        spec = config["datasets"].setdefault(name, {})
        spec.update(keys)
        for k in [k for k, v in keys.items() if v is None]:
            del spec[k]
    with pytest.raises(ValueError, match="config key " + message.replace("(", r"\(")
                       .replace(")", r"\)")):
        check_config(config)


def test_new_sources_pass_the_config_check():
    config = copy.deepcopy(PAPER)
    config["datasets"]["msmarco-triplets"] = {"source": "triples-jsonl-gz", "max_triples": 100,
                                              "url": PAPER["datasets"]["msmarco-triplets"]["url"]}
    config["datasets"]["scifact-train"] = {"source": "beir-train", **ZIP}
    config["datasets"]["nfcorpus"] = {"source": "beir", "path": "beir/nfcorpus"}
    config["train_data"] = "scifact-train"
    check_config(config)


@pytest.mark.workflow
def test_a_local_folders_files_are_inputs(tiny_model, tmp_path):
    """A beir benchmark read from `path`: its job reruns when a file of the folder changes."""
    from tiny_study import tiny_config

    data = make_beir_zip("loc", docs=40, test_queries=12, train_queries=0)
    wd = copy_workflow(tmp_path / "study")
    download.extract_zip(io.BytesIO(data), wd / "beir/loc", members_prefix="loc/")
    config = tiny_config(tiny_model)
    config["datasets"]["tiny-a"] = {"source": "beir", "path": "beir/loc"}
    cfg = wd / "c.yaml"
    cfg.write_text(yaml.safe_dump(config))
    target = "data/beir/tiny-a/DATACARD.md"
    snakemake(wd, "--configfile", str(cfg), "--cores", "1", target)
    assert "| sha256 read qrels/test.tsv |" in (wd / target).read_text()
    assert planned_jobs(snakemake(wd, "--configfile", str(cfg), "-n", target).stdout) == []
    with open(wd / "beir/loc/queries.jsonl", "a") as f:
        f.write('{"_id": "extra", "text": "a query nobody judged"}\n')
    jobs = planned_jobs(snakemake(wd, "--configfile", str(cfg), "-n", target).stdout)
    assert [(rule, reason) for rule, reason, _ in jobs] == [
        ("beir_download", "Updated input files: beir/loc/queries.jsonl")]
