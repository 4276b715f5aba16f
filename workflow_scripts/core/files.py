"""Files on disk: atomic writes, the leftovers of a killed one, and errors that name the file.

A write goes to a temporary name next to its target (`.NAME.XXXXXXXX.tmp`, as tempfile
makes it) and is renamed into place only when whole, so a reader or a rerun never sees half
a file. A process killed mid-write (SIGKILL, a node failure, a time limit) leaves that
temporary behind: remove_orphans(target) removes the ones of that target, and only those.

A full disk surfaces from many writers in words that hide it (torch's zip writer says
"unexpected pos 5376 vs 5268", pyarrow and safetensors name no file): disk_full_errors turns
each into a DiskFull naming the path and "no space left on device". Standard library only
(contracts re-exports these names; the Snakefile imports contracts at parse time).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

# What the writers say when the disk is full: OSError's strerror, safetensors' Rust IoError,
# and torch's zip writer (which says nothing about space: disk_full_errors checks the disk).
_NO_SPACE = re.compile(r"no space left on device|StorageFull|os error 28|errno 28", re.I)
_TORCH_WRITER = re.compile(r"inline_container\.cc|PytorchStreamWriter failed|unexpected pos")
# A write's temporary name: tempfile's 8 random characters between the target's name and .tmp.
_TMP = r"\.{name}\.[a-z0-9_]{{8}}\.tmp"
LOW_SPACE = 64 * 2**20  # bytes free under which a failed torch write is taken for a full disk


class DataError(ValueError):
    """Bad input data; the message names the file and, where known, the line."""


class DiskFull(OSError):
    """The disk is full; the message names the path being written."""


class CorruptFile(DataError):
    """A file that does not read as what it should be (truncated, or not that format)."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def free_bytes(path) -> int | None:
    """Bytes free on the filesystem of `path` (of its nearest existing parent)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def is_disk_full(e: BaseException, path) -> bool:
    """Whether exception `e`, raised writing `path`, is a full disk."""
    if isinstance(e, DiskFull):
        return False  # already said
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(e)
    if _NO_SPACE.search(text):
        return True
    free = free_bytes(path)
    return bool(_TORCH_WRITER.search(text)) and free is not None and free < LOW_SPACE


@contextlib.contextmanager
def disk_full_errors(path) -> Iterator[None]:
    """Re-raise a full disk met inside the block as DiskFull naming `path` (what the block
    writes: a file or a folder) and the space left; any other error passes unchanged."""
    try:
        yield
    except Exception as e:
        if not is_disk_full(e, path):
            raise
        free = free_bytes(path)
        left = f"{free / 2**20:.1f} MiB free" if free is not None else "free space unknown"
        raise DiskFull(errno.ENOSPC, f"no space left on device writing {path} ({left} there;"
                       f" {e.__class__.__name__}: {str(e)[:200]}): free space and rerun, the "
                       "job resumes", str(path)) from e


def remove_orphans(path) -> list[Path]:
    """Remove the temporaries that killed atomic writes of `path` left next to it (its own
    name pattern only, files or folders); the ones removed."""
    path = Path(path)
    if not path.parent.is_dir():
        return []
    pattern = re.compile(_TMP.format(name=re.escape(path.name)) + r"\Z")
    gone = []
    for p in path.parent.iterdir():
        if pattern.match(p.name):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            gone.append(p)
    return gone


def remove_dir(path) -> None:
    """Remove a folder so that a kill midway leaves it whole or gone: renamed first to a
    temporary name of its own (remove_orphans(path) removes what a kill leaves of it)."""
    path = Path(path)
    if not path.exists():
        return
    trash = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    os.replace(path, trash)  # over the empty folder mkdtemp made
    shutil.rmtree(trash, ignore_errors=True)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it over `path` only on success."""
    path = Path(path)
    with disk_full_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(tmp)
        try:
            yield tmp
            if tmp.exists():  # mkstemp makes 0600 files; give the final file the usual mode
                os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to `path`; swap it into place only on success."""
    path = Path(path)
    with disk_full_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        try:
            yield tmp
            os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700 folders
            if path.exists():
                shutil.rmtree(path)
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)


def link_or_copy(src, dst) -> None:
    """A hard link (no copy of a model's weights), or a copy on another filesystem."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@contextlib.contextmanager
def parquet_errors(path) -> Iterator[None]:
    """A file read inside the block that does not parse as parquet (truncated by a crash or
    a full disk, or overwritten) raises CorruptFile naming it and the remedy; a missing or
    unreadable file passes unchanged."""
    import pyarrow as pa

    try:
        yield
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as e:
        if isinstance(e, FileNotFoundError | PermissionError | IsADirectoryError | DiskFull):
            raise
        raise CorruptFile(f"{path}: corrupt or truncated parquet file ({str(e)[:120]}): "
                          "delete it and rerun (the job that makes it runs again)") from e


def read_parquet(path, **kw):
    """pandas.read_parquet, with parquet_errors' message for a corrupt file."""
    import pandas as pd

    with parquet_errors(path):
        return pd.read_parquet(path, **kw)
