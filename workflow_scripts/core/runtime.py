"""Process set-up every torch stage shares."""

from __future__ import annotations

import contextlib
import os


def set_threads(threads: int) -> None:
    """Set torch's thread counts before any torch work: two jobs with torch's default
    threads oversubscribe a small machine, so each job uses the threads its rule declares."""
    import torch

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch.set_num_threads(max(1, int(threads)))
    with contextlib.suppress(RuntimeError):  # already set in this process (tests)
        torch.set_num_interop_threads(1)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask: what SLURM or taskset gave it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
