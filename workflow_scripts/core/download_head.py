"""The first N lines of a gzipped text file over HTTP, without downloading the whole file.

The response is decompressed as it arrives and the connection closed after line N, so a
500K-line file costs the bytes of its first N lines (plus one read buffer). The lines are
written, decompressed, to DEST (atomically) and pinned by a JSON record {url, lines,
sha256 of those lines as decompressed, line endings included: what `zcat FILE | head -n N
| sha256sum` prints, bytes read from the response, the file's size if the server said}.
With a record for the same URL and line count, DEST with the recorded sha256 is used as it
is (no request); a missing DEST is streamed again and must match the record.
Server errors (5xx, 429) and broken transfers are retried with bounded exponential backoff,
each attempt from the start (a head is small); other 4xx fail at once.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import io
import json
import urllib.error
import urllib.request
import zlib
from pathlib import Path

from workflow_scripts.core.download import (
    USER_AGENT,
    DownloadError,
    Transient,
    _retry_after,
    file_digests,
    with_retries,
)


class _CountingReader(io.RawIOBase):
    """Reads from an HTTP response, counting the bytes it took."""

    def __init__(self, resp):
        self.resp, self.bytes_read = resp, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        n = self.resp.readinto(buf)
        self.bytes_read += n
        return n


def fetch_head(url: str, n_lines: int, dest, record_path, *, key: str = "lines",
               retries: int = 5, backoff: float = 0.5, timeout: float = 60) -> dict:
    """The first `n_lines` lines of the gzipped file at `url`, decompressed, in `dest`;
    returns the record. `key` names the setting in the error of a file with fewer lines."""
    dest, record_path = Path(dest), Path(record_path)
    record = None
    if record_path.exists():
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if (record.get("url"), record.get("lines")) != (url, n_lines):
            record = None  # another source: a new record
        elif dest.exists() and file_digests(dest, ["sha256"])["sha256"] == record["sha256"]:
            return record
    got = with_retries(url, lambda: _stream_head(url, n_lines, dest, timeout), retries,
                       backoff)
    if got["lines"] < n_lines:
        dest.unlink()
        raise DownloadError(f"{url}: the file has {got['lines']} lines, fewer than the "
                            f"{n_lines} of {key}")
    if record is not None and got["sha256"] != record["sha256"]:
        dest.unlink()
        raise DownloadError(f"{url}: the first {n_lines} lines have sha256 {got['sha256']}, "
                            f"not the {record['sha256']} recorded in {record_path} (delete "
                            "the record to accept the changed file)")
    from workflow_scripts.core.contracts import write_json

    record = {"url": url, **got}
    write_json(record_path, record)
    return record


def _stream_head(url: str, n_lines: int, dest: Path, timeout: float) -> dict:
    """One attempt: stream, decompress, write the first `n_lines` lines, close."""
    from workflow_scripts.core.contracts import atomic_path

    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        with e:
            if e.code == 429 or e.code >= 500:
                raise Transient(f"HTTP {e.code}", _retry_after(e.headers)) from None
            raise DownloadError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, http.client.HTTPException, ConnectionError,
            TimeoutError) as e:
        raise Transient(f"connection failed: {e}") from None
    sha, lines = hashlib.sha256(), 0
    with resp:
        size = resp.headers.get("Content-Length")
        counted = _CountingReader(resp)
        try:
            with (gzip.GzipFile(fileobj=counted) as gz,
                  atomic_path(dest) as tmp, open(tmp, "wb") as out):
                while lines < n_lines and (line := gz.readline()):
                    out.write(line)
                    sha.update(line)
                    lines += 1
        except (gzip.BadGzipFile, zlib.error) as e:
            raise DownloadError(f"{url}: not a gzip file ({e})") from None
        except (EOFError, http.client.HTTPException, ConnectionError, TimeoutError) as e:
            raise Transient(f"transfer broke after {counted.bytes_read} bytes: {e!r}") from None
    return {"lines": lines, "sha256": sha.hexdigest(), "bytes_read": counted.bytes_read,
            "file_bytes": int(size) if size is not None else None}
