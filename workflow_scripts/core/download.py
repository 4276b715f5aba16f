"""Downloads and archive extraction for the data rules (local Snakemake rules).

A download streams into `DEST.part`, which survives a failed attempt and is continued with
`Range: bytes=N-`; it is checksum-verified and only then renamed to DEST, so DEST is either
absent or complete. Server errors (5xx, 429) and broken connections are retried with bounded
exponential backoff; other 4xx fail at once. Standard library only (tqdm for a TTY);
`contracts` (which imports pandas) is imported lazily where it is used. The sources
(URLs, checksums) live in the configs: config/paper.yaml, config/ladder.schema.yaml.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import os
import re
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath

MAX_BACKOFF = 60.0  # seconds; caps both exponential backoff and Retry-After
USER_AGENT = "depthlab-download/0.1"


class DownloadError(RuntimeError):
    """A download failed for good; the message names the URL."""


class UnsafeArchiveError(ValueError):
    """An archive member would land outside the destination (absolute path or `..`)."""


class Transient(Exception):
    """A failure worth another attempt (5xx, 429, broken or truncated transfer)."""

    def __init__(self, msg: str, retry_after: float | None = None):
        super().__init__(msg)
        self.retry_after = retry_after


# ---------------------------------------------------------------------------------------
# fetch
# ---------------------------------------------------------------------------------------
def fetch(url: str, dest, *, md5: str | None = None, sha256: str | None = None,
          retries: int = 5, backoff: float = 0.5, timeout: float = 60,
          chunk_size: int = 1 << 20) -> Path:
    """Download `url` to `dest` and return `dest`.

    Skips the download when `dest` exists and matches the checksum (or exists and no
    checksum is given). `retries` is the number of retries after the first attempt; the
    wait before retry k is min(backoff * 2**(k-1), 60 s).
    """
    dest = Path(dest)
    expected = {k: v.lower() for k, v in (("md5", md5), ("sha256", sha256)) if v}
    if dest.exists():
        if not expected:
            return dest
        actual = file_digests(dest, expected)
        if actual == expected:
            return dest
        _say(f"{dest} exists but does not match its checksum; downloading again")
        dest.unlink()  # so that a failed re-download leaves no stale file behind

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    with_retries(url, lambda: _attempt(url, part, timeout, chunk_size), retries, backoff)

    if expected:
        actual = file_digests(part, expected)
        if actual != expected:
            part.unlink()  # a resumed part with bad bytes must not be resumed again
            diff = "; ".join(f"expected {k} {expected[k]}, got {actual[k]}"
                             for k in expected if actual[k] != expected[k])
            raise DownloadError(f"{url}: checksum mismatch for {dest}: {diff}")
    os.replace(part, dest)
    return dest


def with_retries(url: str, attempt, retries: int, backoff: float):
    """`attempt()`, tried again after a transient failure (`retries` times at most, waiting
    min(backoff * 2**(k-1), 60 s) before retry k, longer if the server says Retry-After)."""
    for k in range(retries + 1):
        try:
            return attempt()
        except Transient as e:
            if k == retries:
                raise DownloadError(f"{url}: giving up after {retries + 1} attempt(s): {e}") \
                    from None
            delay = min(backoff * 2 ** k, MAX_BACKOFF)
            if e.retry_after is not None:
                delay = max(delay, min(e.retry_after, MAX_BACKOFF))
            _say(f"{url}: {e}; retry {k + 1}/{retries} in {delay:.2f} s")
            time.sleep(delay)


def _attempt(url: str, part: Path, timeout: float, chunk_size: int) -> None:
    """One HTTP request that extends (or restarts) `part`; returns when it is complete."""
    offset = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if offset:
        req.add_header("Range", f"bytes={offset}-")
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        with e:
            status, headers = e.code, e.headers
        if status == 416:
            # Nothing left after `offset`: the part is either complete or longer than the
            # (possibly changed) remote file.
            total = _content_range_total(headers.get("Content-Range"))
            if offset and total == offset:
                return
            part.unlink(missing_ok=True)
            raise Transient(f"HTTP 416 for a range from byte {offset}; restarting") from None
        if status == 429 or status >= 500:
            raise Transient(f"HTTP {status}", _retry_after(headers)) from None
        raise DownloadError(f"{url}: HTTP {status} {e.reason}") from None
    except (urllib.error.URLError, http.client.HTTPException, ConnectionError,
            TimeoutError) as e:
        raise Transient(f"connection failed: {e}") from None

    with resp:
        length = resp.headers.get("Content-Length")
        length = int(length) if length is not None else None
        if resp.status == 206:
            start, total = _content_range(resp.headers.get("Content-Range"))
            if start != offset:
                part.unlink(missing_ok=True)
                raise Transient(f"server resumed at byte {start}, not {offset}; restarting")
            if total is None and length is not None:
                total = offset + length
        else:
            # 200 on a Range request: the server ignores Range, so the body starts at zero.
            if offset:
                _say(f"{url}: server ignored Range; restarting from zero")
            offset, total = 0, length

        progress = _Progress(part.name.removesuffix(".part"), total, offset)
        try:
            with open(part, "ab" if offset else "wb") as f:
                size = offset
                while chunk := resp.read(chunk_size):
                    f.write(chunk)
                    size += len(chunk)
                    progress.update(len(chunk))
                f.flush()
                os.fsync(f.fileno())
        except (http.client.HTTPException, ConnectionError, TimeoutError) as e:
            raise Transient(f"transfer broke at byte {part.stat().st_size}: {e!r}") from None
        finally:
            progress.close()

    # http.client returns EOF (not an error) when the peer closes early: compare sizes.
    if total is not None and size < total:
        raise Transient(f"transfer truncated at byte {size} of {total}")
    if total is not None and size > total:
        part.unlink()
        raise Transient(f"got {size} bytes, more than the announced {total}; restarting")


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(start, total) of `bytes start-end/total`; total None when `*`."""
    m = re.fullmatch(r"\s*bytes\s+(\d+)-\d+/(\d+|\*)\s*", value or "")
    if not m:
        return None, None
    return int(m[1]), (None if m[2] == "*" else int(m[2]))


def _content_range_total(value: str | None) -> int | None:
    m = re.fullmatch(r"\s*bytes\s+\*/(\d+)\s*", value or "")
    return int(m[1]) if m else None


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:  # an HTTP date: fall back to our own backoff
        return None


def file_digests(path, algorithms) -> dict[str, str]:
    """{algorithm: hexdigest} of a file, reading it once."""
    hashes = {a: hashlib.new(a) for a in algorithms}
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            for h in hashes.values():
                h.update(block)
    return {a: h.hexdigest() for a, h in hashes.items()}


# ---------------------------------------------------------------------------------------
# Progress: a tqdm bar on a terminal, plain lines (every 10 s) in a Snakemake log.
# ---------------------------------------------------------------------------------------
def _say(msg: str) -> None:
    print(f"[download] {msg}", file=sys.stderr, flush=True)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


class _Progress:
    INTERVAL = 10.0

    def __init__(self, name: str, total: int | None, initial: int):
        self.name, self.total, self.done = name, total, initial
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, desc=name, unit="B",
                            unit_scale=True, unit_divisor=1024, leave=False)
        else:
            self.last = time.monotonic()
            self._log("resuming at" if initial else "starting at")

    def _log(self, what: str) -> None:
        of = f" of {_mib(self.total)}" if self.total else ""
        _say(f"{self.name}: {what} {_mib(self.done)}{of}")

    def update(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif time.monotonic() - self.last >= self.INTERVAL:
            self.last = time.monotonic()
            self._log("at")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        else:
            self._log("done:" if self.total and self.done >= self.total else "stopped at")


# ---------------------------------------------------------------------------------------
# Record on first download, check after (for files without a published checksum)
# ---------------------------------------------------------------------------------------
def fetch_recorded(url: str, dest, record_path, *, count_lines: bool = True,
                   expected_lines: int | None = None, **fetch_kwargs) -> dict:
    """Download `url` to `dest`, pinned by a JSON record {url, sha256, bytes, lines}.

    Without a record, the downloaded file is measured and the record written. With one,
    the file must have the recorded sha256 (else DownloadError with both values; the file
    is removed). `expected_lines` (config key datasets.NAME.expect_lines) is checked
    before recording.
    Lines of a `.gz` file are counted decompressed. `fetch_kwargs` go to fetch().
    Returns the record.
    """
    dest, record_path = Path(dest), Path(record_path)
    if record_path.exists():
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if expected_lines is not None and record.get("lines") not in (None, expected_lines):
            raise DownloadError(f"{url}: record {record_path} says {record['lines']} lines, "
                                f"expected {expected_lines}")
        try:
            fetch(url, dest, sha256=record["sha256"], **fetch_kwargs)
        except DownloadError as e:
            raise DownloadError(f"{e} (expected value from {record_path}; delete the record "
                                "to accept a new file)") from None
        return record

    fetch(url, dest, **fetch_kwargs)
    record = {"url": url, "sha256": file_digests(dest, ["sha256"])["sha256"],
              "bytes": dest.stat().st_size, "lines": None}
    if count_lines or expected_lines is not None:
        record["lines"] = count_file_lines(dest)
    if expected_lines is not None and record["lines"] != expected_lines:
        dest.unlink()
        raise DownloadError(f"{url}: expected {expected_lines} lines, got {record['lines']} "
                            f"in {dest} (file removed)")
    from workflow_scripts.core.contracts import write_json

    write_json(record_path, record)
    return record


def count_file_lines(path) -> int:
    path = Path(path)
    if path.suffix == ".gz":
        return sum(1 for _ in iter_gzip_lines(path))
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def iter_gzip_lines(path) -> Iterator[str]:
    """Lines of a gzipped UTF-8 text file (a leading byte-order mark dropped), without their
    line ending."""
    with gzip.open(path, "rt", encoding="utf-8-sig", newline="") as f:
        for line in f:
            yield line.rstrip("\r\n")


# ---------------------------------------------------------------------------------------
# Extraction: all members are checked before anything is written; the result appears at
# dest_dir only when complete (contracts.atomic_dir), replacing any earlier one.
# ---------------------------------------------------------------------------------------
def _safe_parts(name: str, archive) -> tuple[str, ...]:
    """Path parts of a member name; rejects absolute paths and `..` (both separators)."""
    posix = name.replace("\\", "/")
    if posix.startswith("/") or PureWindowsPath(name).drive:
        raise UnsafeArchiveError(f"{archive}: absolute member path {name!r}")
    parts = PurePosixPath(posix).parts
    if ".." in parts:
        raise UnsafeArchiveError(f"{archive}: member path {name!r} leaves the destination")
    return parts


def extract_zip(zip_path, dest_dir, *, members_prefix: str | None = None) -> Path:
    """Extract `zip_path` into `dest_dir`, returning it.

    With `members_prefix` (e.g. "nfcorpus/"), only members under it are extracted and the
    prefix is stripped, so nfcorpus/corpus.jsonl lands at dest_dir/corpus.jsonl.
    """
    from workflow_scripts.core.contracts import atomic_dir

    dest_dir = Path(dest_dir)
    prefix = PurePosixPath(members_prefix.replace("\\", "/")).parts if members_prefix else ()
    with zipfile.ZipFile(zip_path) as zf:
        plan = []
        for info in zf.infolist():
            parts = _safe_parts(info.filename, zip_path)
            if parts[:len(prefix)] != prefix or len(parts) == len(prefix):
                continue
            plan.append((info, parts[len(prefix):]))
        if prefix and not plan:
            raise UnsafeArchiveError(f"{zip_path}: no members under {members_prefix!r}")
        with atomic_dir(dest_dir) as tmp:
            for info, parts in plan:
                target = tmp.joinpath(*parts)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
    return dest_dir


def extract_tar(tar_path, dest_dir) -> Path:
    """Extract `tar_path` (any compression) into `dest_dir`, returning it.

    Names are checked like zip members; tarfile's "data" filter also refuses links out of
    the destination, device files and unsafe modes.
    """
    from workflow_scripts.core.contracts import atomic_dir

    dest_dir = Path(dest_dir)
    with tarfile.open(tar_path) as tf:
        for member in tf.getmembers():
            _safe_parts(member.name, tar_path)
        with atomic_dir(dest_dir) as tmp:
            try:
                tf.extractall(tmp, filter="data")
            except tarfile.FilterError as e:
                raise UnsafeArchiveError(f"{tar_path}: {e}") from None
    return dest_dir
