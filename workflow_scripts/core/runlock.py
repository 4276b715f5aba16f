"""One running Snakemake per study folder, refused before the second builds its DAG.

Snakemake takes its own lock (.snakemake/locks) only after building the DAG; a second run
of the same study started with the first meanwhile reads the files the first's jobs remove
and replace, and stops on whatever it meets (`Unable to obtain modification time of file
...`). The Snakefile calls take() at parse time instead: an flock on
.snakemake/depthlab-run/<study>.lock, held until the process ends (the kernel releases it
however it ends: no stale lock). Studies of different names write different folders
(core/paths.py), so they may run side by side; Snakemake's own lock still refuses a second
run whose jobs would write the shared data/ files another run is writing. Dry
runs and the commands that only read (--list, --dag, --summary, ...) do not take it, nor do
the Snakemake processes a cluster job runs (they parse the Snakefile again), nor --nolock.
Standard library only (imported at parse time).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCKS = Path(".snakemake") / "depthlab-run"
# Options after which Snakemake runs no job (or takes no lock of its own).
READ_ONLY = {"--dry-run", "--dryrun", "--nolock", "--unlock", "--list", "--list-rules",
             "--list-target-rules", "--lt", "--dag", "--rulegraph", "--filegraph", "--d3dag",
             "--summary", "--detailed-summary", "--lint", "--list-changes", "--lc",
             "--list-input-changes", "--li", "--list-params-changes", "--lp",
             "--list-code-changes", "--list-untracked", "--lu", "--print-compilation",
             "--containerize", "--report", "--help", "--version", "--cleanup-metadata",
             "--cm", "--generate-unit-tests", "--show-failed-logs", "--export-cwl"}
_held: dict[str, int] = {}  # lock file -> open descriptor, for the life of the process


class RunLocked(ValueError):
    """Another Snakemake runs the workflow in this folder."""


def runs_jobs(argv) -> bool:
    """Whether a Snakemake command line (sys.argv) runs jobs: not a dry run (-n, also in a
    cluster of short flags such as -np) nor a read-only command."""
    for arg in argv[1:]:
        name = arg.split("=", 1)[0]
        if name in READ_ONLY or arg == "-n" or (
                arg.startswith("-") and not arg.startswith("--") and arg[1:].isalpha()
                and "n" in arg[1:]):
            return False
    return True


def take(argv, study: str, folder=".") -> None:
    """Hold the study's run lock for this process, or raise RunLocked saying what to do."""
    path = (Path(folder) / LOCKS / f"{study}.lock").absolute()
    if not runs_jobs(argv) or str(path) in _held:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise RunLocked(
            f"another Snakemake is running study {study} in {Path(folder).absolute()} "
            f"({other}): wait for it to finish (or stop it), then start this one again; two "
            "runs of one study would remove and rewrite each other's files. A dry run (-n), "
            "or a study of another name, is allowed meanwhile.") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
    _held[str(path)] = fd
