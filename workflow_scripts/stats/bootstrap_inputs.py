"""Input checks of the Multi-Bootstrap API (multibootstrap.py): every bad input is a
ValueError that says what is wrong, and the checked inputs become the engine's arms.
numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields

import numpy as np

from workflow_scripts.stats.bootstrap_engine import Arm

AXES = ("seeds", "examples")
DESIGNS = ("paired", "unpaired", "single-baseline")
ALTERNATIVES = ("greater", "less", "two-sided")
METHODS = ("percentile", "bca")
MIN_NBOOT = 100


def _check_finite(x: np.ndarray, name: str) -> None:
    bad = ~np.isfinite(x)
    if bad.any():
        kind = "NaN" if np.isnan(x).any() else "infinite values"
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name} contains {kind}: {int(bad.sum())} of {x.size} scores (first at index "
            f"{first}); drop or impute them before bootstrapping"
        )


def as_block(x, name: str, baseline: bool = False) -> np.ndarray:
    """One benchmark's scores -> float [seeds, examples], runs averaged within each seed."""
    x = np.asarray(x, dtype=np.float64)
    if baseline:  # one seed: [examples], [1, examples] or its runs as [1, runs, examples]
        if x.ndim == 2 and x.shape[0] > 1:  # k seeds, or k runs of one seed? Say which.
            raise ValueError(f"{name}: the single-baseline arm is one model, but shape "
                             f"{x.shape} reads as {x.shape[0]} seeds; give [examples] or "
                             f"[1, examples], or its runs as [1, runs, examples]")
        if x.ndim == 3 and x.shape[0] == 1:
            x = x[0]
        if x.ndim == 1:
            x = x[None]
        if x.ndim != 2:
            raise ValueError(f"{name}: the single-baseline arm is one seed, expected [examples], "
                             f"[1, examples] or [1, runs, examples]; got shape {x.shape}")
    elif x.ndim not in (2, 3):
        raise ValueError(f"{name}: expected [seeds, examples] or [seeds, runs, examples]; "
                         f"got shape {x.shape}")
    if x.size == 0:
        raise ValueError(f"{name} is empty (shape {x.shape})")
    _check_finite(x, name)
    if baseline:
        return x.mean(axis=0, keepdims=True)
    return x.mean(axis=1) if x.ndim == 3 else x


def arm_blocks(x, name: str, baseline: bool = False) -> tuple[tuple | None, list[np.ndarray]]:
    """Array or mapping benchmark -> array; returns (sorted keys or None, blocks)."""
    if not isinstance(x, Mapping):
        return None, [as_block(x, name, baseline)]
    if not x:
        raise ValueError(f"{name} is an empty benchmark mapping")
    keys = tuple(sorted(x, key=str))
    blocks = [as_block(x[k], f"{name}[{k!r}]", baseline) for k in keys]
    if len({blk.shape[0] for blk in blocks}) > 1:
        counts = ", ".join(f"{k!r}: {blk.shape[0]}" for k, blk in zip(keys, blocks, strict=True))
        raise ValueError(f"{name}: benchmarks must share the seed axis; seed counts are {counts}")
    return keys, blocks


def flat_row(result, skip: str) -> dict:
    """A result dataclass as a flat row without field `skip`; tuples are joined with "," so
    parquet gets strings (both interval methods' to_dict)."""
    row = {}
    for f in fields(result):
        if f.name != skip:
            value = getattr(result, f.name)
            row[f.name] = ",".join(value) if isinstance(value, tuple) else value
    return row


def _is_int(x, low: int) -> bool:
    return not isinstance(x, bool) and isinstance(x, int | np.integer) and x >= low


def check_args(nboot, ci, seed, resample, method, threads) -> tuple[str, ...]:
    if not _is_int(nboot, MIN_NBOOT):
        raise ValueError(f"nboot must be an integer >= {MIN_NBOOT}; got {nboot!r}")
    check_open_unit("ci", ci)
    if not _is_int(seed, 0):
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    if threads is not None and not _is_int(threads, 1):
        raise ValueError(f"threads must be a positive integer or None; got {threads!r}")
    return check_resample(resample)


def check_resample(resample) -> tuple[str, ...]:
    """The axes to resample (or vary), in AXES order."""
    axes = (resample,) if isinstance(resample, str) else tuple(resample)
    if not axes or len(set(axes)) != len(axes) or any(a not in AXES for a in axes):
        raise ValueError(f"resample must name one or both of {AXES} without repeats; "
                         f"got {resample!r}")
    return tuple(a for a in AXES if a in axes)


def check_open_unit(name: str, value) -> None:
    try:
        ok = 0 < float(value) < 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{name} must be a number in (0, 1); got {value!r}")


def check_plan_targets(half_width, delta, *, power, alpha, ci) -> None:
    """The seed planners' targets (multibootstrap and seed_planning `seeds_needed`)."""
    if half_width is None and delta is None:
        raise ValueError("give half_width and/or delta")
    if half_width is not None and not (math.isfinite(half_width) and half_width > 0):
        raise ValueError(f"half_width must be a positive number; got {half_width!r}")
    if delta is not None and not (math.isfinite(delta) and delta != 0):
        raise ValueError(f"delta must be a non-zero number; got {delta!r}")
    for name, value in (("power", power), ("alpha", alpha), ("ci", ci)):
        check_open_unit(name, value)


def check_sizes(arms: list[Arm], resample: tuple[str, ...]) -> None:
    for arm in arms:
        n_seeds = arm.blocks[0].shape[0]
        if "seeds" in resample and arm.stream is not None and n_seeds < 2:
            raise ValueError(
                f"{arm.name} has {n_seeds} seed; resampling seeds needs at least 2 (use "
                "resample=('examples',), or design='single-baseline' for a one-seed baseline)"
            )
        if "examples" in resample and min(blk.shape[1] for blk in arm.blocks) < 2:
            raise ValueError(f"{arm.name}: resampling examples needs at least 2 examples")


def _align(n_a: int, n_b: int, seeds_a, seeds_b) -> np.ndarray:
    """Index into b's seeds that puts them in a's order; the seed sets must be equal."""
    ids_a = seed_ids(seeds_a, n_a, "seeds_a")
    ids_b = seed_ids(seeds_b, n_b, "seeds_b")
    if set(ids_a) != set(ids_b):
        raise ValueError(
            f"paired design needs the same seeds in both arms: a has {ids_a}, b has {ids_b} "
            f"(only in a: {[s for s in ids_a if s not in ids_b]}, only in b: "
            f"{[s for s in ids_b if s not in ids_a]}); use design='unpaired' for independent seeds"
        )
    pos = {s: i for i, s in enumerate(ids_b)}
    return np.array([pos[s] for s in ids_a], dtype=np.intp)


def seed_ids(ids, n: int, name: str) -> list:
    if ids is None:
        return list(range(n))
    ids = [s.item() if isinstance(s, np.generic) else s for s in ids]
    if len(ids) != n:
        raise ValueError(f"{name} has {len(ids)} ids but its arm has {n} seeds")
    if len(set(ids)) != n:
        raise ValueError(f"{name} has duplicate seed ids: {ids}")
    return ids


def two_arms(a, b, design, seeds_a, seeds_b) -> tuple[list[Arm], tuple | None]:
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; expected one of {DESIGNS}")
    if isinstance(a, Mapping) != isinstance(b, Mapping):
        raise ValueError("a and b must both be arrays or both be benchmark mappings")
    keys_a, blocks_a = arm_blocks(a, "a", baseline=design == "single-baseline")
    keys_b, blocks_b = arm_blocks(b, "b")
    if keys_a != keys_b:
        raise ValueError("a and b must have the same benchmarks: only in a: "
                         f"{sorted(set(keys_a) - set(keys_b), key=str)}, only in b: "
                         f"{sorted(set(keys_b) - set(keys_a), key=str)}")
    for k, x, y in zip(keys_a or [None], blocks_a, blocks_b, strict=True):
        if x.shape[1] != y.shape[1]:
            where = "" if k is None else f" (benchmark {k!r})"
            raise ValueError(f"a and b must score the same examples{where}: a has "
                             f"{x.shape[1]} examples, b has {y.shape[1]}")
    if design == "paired":
        order = _align(blocks_a[0].shape[0], blocks_b[0].shape[0], seeds_a, seeds_b)
        # One seed draw and one example draw serve both arms, so the engine runs on b - a.
        diff = [y[order] - x for x, y in zip(blocks_a, blocks_b, strict=True)]
        return [Arm(diff, 1.0, 0, "each arm")], keys_a
    if seeds_a is not None:
        seed_ids(seeds_a, blocks_a[0].shape[0], "seeds_a")
    if seeds_b is not None:
        seed_ids(seeds_b, blocks_b[0].shape[0], "seeds_b")
    stream_a = 0 if design == "unpaired" else None  # single-baseline: a's one seed is fixed
    return [Arm(blocks_a, -1.0, stream_a, "a"), Arm(blocks_b, 1.0, 1, "b")], keys_a
