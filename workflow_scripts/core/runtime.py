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
