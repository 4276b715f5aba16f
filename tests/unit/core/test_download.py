"""workflow_scripts.core.download against the local HTTP http_server (conftest's http_server)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import zipfile

import pytest
from local_http import Route

from workflow_scripts.core import download as dl
from workflow_scripts.core.download import DownloadError, UnsafeArchiveError

FAST = {"backoff": 0.001, "timeout": 5}  # keep retries fast


def make_zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def make_gz(lines: list[str]) -> bytes:
    return gzip.compress("".join(line + "\n" for line in lines).encode(), mtime=0)


def md5(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


def sha256(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


BLOB = make_zip({"beir/corpus.jsonl": b'{"_id": "d1", "text": "x"}\n' * 2000})


# ---------------------------------------------------------------------------------------
def test_success_and_skip_when_present(http_server, tmp_path):
    http_server.routes["/a.zip"] = Route(BLOB)
    dest = tmp_path / "sub" / "a.zip"
    assert dl.fetch(http_server.url("/a.zip"), dest, md5=md5(BLOB), **FAST) == dest
    assert dest.read_bytes() == BLOB
    assert not dest.with_name("a.zip.part").exists()
    # present and matching: no second request
    dl.fetch(http_server.url("/a.zip"), dest, sha256=sha256(BLOB), **FAST)
    assert len(http_server.requests) == 1


@pytest.mark.parametrize("tty", [False, True])
def test_progress_output(http_server, tmp_path, capsys, monkeypatch, tty):
    http_server.routes["/a.zip"] = Route(BLOB)
    monkeypatch.setattr(dl.sys.stderr, "isatty", lambda: tty)
    dl.fetch(http_server.url("/a.zip"), tmp_path / "a.zip", **FAST)
    err = capsys.readouterr().err
    assert ("B/s" in err) if tty else ("a.zip: done:" in err)  # tqdm bar vs log lines


def test_checksum_mismatch(http_server, tmp_path):
    http_server.routes["/a.zip"] = Route(BLOB)
    dest, wrong = tmp_path / "a.zip", "0" * 32
    with pytest.raises(DownloadError) as e:
        dl.fetch(http_server.url("/a.zip"), dest, md5=wrong, **FAST)
    msg = str(e.value)
    assert wrong in msg and md5(BLOB) in msg and http_server.url("/a.zip") in msg
    assert not dest.exists() and not dest.with_name("a.zip.part").exists()


def test_truncated_transfer_is_resumed_with_range(http_server, tmp_path):
    http_server.routes["/a.zip"] = Route(BLOB, truncate_first=True)
    dest = tmp_path / "a.zip"
    dl.fetch(http_server.url("/a.zip"), dest, md5=md5(BLOB), chunk_size=4096, **FAST)
    assert http_server.ranges("/a.zip") == [None, f"bytes={len(BLOB) // 2}-"]
    assert dest.read_bytes() == BLOB


def test_server_ignoring_range_restarts_from_zero(http_server, tmp_path):
    http_server.routes["/a.zip"] = Route(BLOB, truncate_first=True, honor_range=False)
    dest = tmp_path / "a.zip"
    dl.fetch(http_server.url("/a.zip"), dest, md5=md5(BLOB), **FAST)
    assert http_server.ranges("/a.zip")[1] == f"bytes={len(BLOB) // 2}-"  # asked, but got 200
    assert dest.read_bytes() == BLOB


def test_complete_part_and_416(http_server, tmp_path):
    http_server.routes["/a.zip"] = Route(BLOB)
    dest = tmp_path / "a.zip"
    dest.with_name("a.zip.part").write_bytes(BLOB)  # left by a run that died before rename
    dl.fetch(http_server.url("/a.zip"), dest, md5=md5(BLOB), **FAST)
    assert http_server.ranges("/a.zip") == [f"bytes={len(BLOB)}-"]
    assert dest.read_bytes() == BLOB


def test_server_error_is_retried(http_server, tmp_path):
    http_server.routes["/a.zip"] = Route(BLOB, fail_first=[503])
    dest = tmp_path / "a.zip"
    dl.fetch(http_server.url("/a.zip"), dest, md5=md5(BLOB), **FAST)
    assert len(http_server.requests) == 2 and dest.read_bytes() == BLOB


def test_retries_are_bounded(http_server, tmp_path):
    http_server.routes["/a.zip"] = Route(BLOB, fail_first=[500] * 10)
    with pytest.raises(DownloadError, match="500") as e:
        dl.fetch(http_server.url("/a.zip"), tmp_path / "a.zip", retries=2, **FAST)
    assert http_server.url("/a.zip") in str(e.value)
    assert len(http_server.requests) == 3


def test_404_fails_at_once(http_server, tmp_path):
    with pytest.raises(DownloadError) as e:
        dl.fetch(http_server.url("/missing.zip"), tmp_path / "m.zip", retries=5, **FAST)
    assert http_server.url("/missing.zip") in str(e.value) and "404" in str(e.value)
    assert len(http_server.requests) == 1
    assert not (tmp_path / "m.zip").exists()


def test_connection_refused_is_retried_then_fails(tmp_path):
    import socket

    with socket.socket() as s:  # a port that nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/a.zip"
    with pytest.raises(DownloadError, match="giving up after 3 attempt") as e:
        dl.fetch(url, tmp_path / "a.zip", retries=2, **FAST)
    assert url in str(e.value)


# ---------------------------------------------------------------------------------------
def test_fetch_recorded(http_server, tmp_path):
    first, changed = make_gz(["a", "b", "c"]), make_gz(["a", "b", "c", "d"])
    http_server.routes["/t.jsonl.gz"] = Route(first)
    url, dest, rec = http_server.url("/t.jsonl.gz"), tmp_path / "t.jsonl.gz", tmp_path / "t.json"
    record = dl.fetch_recorded(url, dest, rec, **FAST)
    assert record == {"url": url, "sha256": sha256(first), "bytes": len(first), "lines": 3}
    assert json.loads(rec.read_text()) == record
    assert list(dl.iter_gzip_lines(dest)) == ["a", "b", "c"]

    # a later download of a changed file fails with both checksums and leaves no file
    dest.unlink()
    http_server.routes["/t.jsonl.gz"] = Route(changed)
    with pytest.raises(DownloadError) as e:
        dl.fetch_recorded(url, dest, rec, **FAST)
    assert sha256(first) in str(e.value) and sha256(changed) in str(e.value)
    assert not dest.exists() and not dest.with_name("t.jsonl.gz.part").exists()


def test_fetch_recorded_checks_expected_lines(http_server, tmp_path):
    http_server.routes["/t.jsonl.gz"] = Route(make_gz(["a", "b"]))
    dest, rec = tmp_path / "t.jsonl.gz", tmp_path / "t.json"
    with pytest.raises(DownloadError, match="expected 3 lines, got 2"):
        dl.fetch_recorded(http_server.url("/t.jsonl.gz"), dest, rec, expected_lines=3, **FAST)
    assert not dest.exists() and not rec.exists()
    dl.fetch_recorded(http_server.url("/t.jsonl.gz"), dest, rec, expected_lines=2, **FAST)
    assert json.loads(rec.read_text())["lines"] == 2


# ---------------------------------------------------------------------------------------
def test_extract_zip(tmp_path):
    z = tmp_path / "n.zip"
    z.write_bytes(make_zip({"nfcorpus/corpus.jsonl": b"c", "nfcorpus/qrels/test.tsv": b"q",
                            "other.txt": b"o"}))
    out = dl.extract_zip(z, tmp_path / "out", members_prefix="nfcorpus/")
    assert (out / "corpus.jsonl").read_bytes() == b"c"
    assert (out / "qrels" / "test.tsv").read_bytes() == b"q"
    assert not (out / "other.txt").exists()
    full = dl.extract_zip(z, tmp_path / "full")
    assert (full / "nfcorpus" / "corpus.jsonl").exists() and (full / "other.txt").exists()


@pytest.mark.parametrize("bad", ["../evil.txt", "a/../../evil.txt", "/abs.txt",
                                 "..\\evil.txt", "C:/evil.txt"])
def test_extract_zip_rejects_traversal(tmp_path, bad):
    z = tmp_path / "bad.zip"
    z.write_bytes(make_zip({"ok.txt": b"ok", bad: b"evil"}))
    (tmp_path / "x").mkdir()
    with pytest.raises(UnsafeArchiveError):
        dl.extract_zip(z, tmp_path / "x" / "out")
    assert not (tmp_path / "x" / "out").exists() and not (tmp_path / "evil.txt").exists()
    assert list((tmp_path / "x").iterdir()) == []  # no temporary directory left behind


def _make_tar(path, members: dict[str, bytes]):
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def test_extract_tar(tmp_path):
    t = tmp_path / "c.tar.gz"
    _make_tar(t, {"cifar-10-batches-bin/data_batch_1.bin": b"\x01\x02"})
    out = dl.extract_tar(t, tmp_path / "out")
    assert (out / "cifar-10-batches-bin" / "data_batch_1.bin").read_bytes() == b"\x01\x02"

    bad = tmp_path / "bad.tar.gz"
    _make_tar(bad, {"ok.bin": b"ok", "../evil.bin": b"evil"})
    with pytest.raises(UnsafeArchiveError):
        dl.extract_tar(bad, tmp_path / "out2")
    assert not (tmp_path / "out2").exists() and not (tmp_path / "evil.bin").exists()


# ---------------------------------------------------------------------------------------
# download_head: the first N lines, streamed (tests/unit/biencoder/test_data_sources.py: bytes
# served)
def test_fetch_head_retries_server_errors_and_broken_transfers(http_server, tmp_path):
    from workflow_scripts.core.download_head import fetch_head

    lines = [json.dumps([f"q{i}", f"p{i}", f"n{i}"]) for i in range(2000)]
    body = make_gz(lines)
    http_server.routes["/t.gz"] = Route(body, truncate_first=True)
    http_server.routes["/u.gz"] = Route(body, fail_first=[503])
    expected = "".join(f"{line}\n" for line in lines[:1500]).encode()
    for path in ("/t.gz", "/u.gz"):
        dest, rec = tmp_path / f"{path[1:]}.jsonl", tmp_path / f"{path[1:]}.json"
        record = fetch_head(http_server.url(path), 1500, dest, rec, **FAST)
        # half the body (gzip ends early) or a 503, then the lines: each try from the start
        assert http_server.ranges(path) == [None, None]
        assert dest.read_bytes() == expected and record["sha256"] == sha256(expected)
        assert json.loads(rec.read_text()) == record and record["file_bytes"] == len(body)


def test_fetch_head_fails_at_once_on_404_and_on_a_file_that_is_not_gzip(http_server, tmp_path):
    from workflow_scripts.core.download_head import fetch_head

    with pytest.raises(DownloadError, match="404"):
        fetch_head(http_server.url("/missing.gz"), 5, tmp_path / "h", tmp_path / "r", **FAST)
    http_server.routes["/plain.gz"] = Route(b'["a", "b", "c"]\n')
    with pytest.raises(DownloadError, match="not a gzip file"):
        fetch_head(http_server.url("/plain.gz"), 1, tmp_path / "h", tmp_path / "r", **FAST)
    assert len(http_server.requests) == 2 and not (tmp_path / "h").exists()
