"""What decides a claim besides its config entry: the seeds of the arms it reads
(`arm_seeds`) and its analysis (`analysis`: the grid its members range over and the values of
core/deciding_keys.py's DECIDING_KEYS it reads), and how a recorded analysis differs from
today's (`changes`). The registration (claims/registration.py) records both with each claim;
the claims rule's param carries the settings some claim reads (`read_settings`).
"""

from __future__ import annotations

import json

from workflow_scripts.core import settings as stage_settings
from workflow_scripts.core.deciding_keys import (
    ABSENT,
    AXIS_KEYS,
    BOOTSTRAP,
    DECIDING_KEYS,
    split_entry,
)

LADDER_SEEDS = "ladder.seeds"  # arm_seeds' key for the ladder's seeds (no recipe has a dot)


def arm_seeds(claim, grid) -> dict[str, list[int]]:
    """The configured seeds of each recipe whose trained arms the parsed claim reads
    (bi-encoder members and learning curves; the untrained base has none) and, for ladder
    members, the ladder's seeds under LADDER_SEEDS. Latency members read timings, no seeds."""
    recipes = sorted({k[0] for m in claim.members if m.study in ("biencoder", "curves")
                      for k in (m.a, m.b) if k is not None and k[0] in grid.recipe_seeds})
    out = {r: [int(s) for s in grid.recipe_seeds[r]] for r in recipes}
    if any(m.study == "ladder" for m in claim.members):
        out[LADDER_SEEDS] = [int(s) for s in grid.ladder_seeds]
    return out


def analysis(claim, grid) -> dict:
    """What decides the parsed claim (claims/spec.py Claim) on `grid` besides its config
    entry and seeds: the values its members take on each grid axis (AXIS_KEYS; benchmark
    `all` stands for every benchmark), and each DECIDING_KEYS value of the studies they read
    (from grid.settings: config_values). A not-applicable claim has no members: nothing."""
    from workflow_scripts.claims.grid import STUDY_AXES

    out: dict = {}
    values = grid.settings
    for study in dict.fromkeys(m.study for m in claim.members):
        members = [m for m in claim.members if m.study == study]
        arms = [k for m in members for k in (m.a, m.b) if k is not None]
        axes = dict(zip(STUDY_AXES[study], zip(*arms, strict=True), strict=True)) if arms else {}
        if study == "latency":
            axes = {"depth": [a["depth"] for a in grid.latency or ()]}
        for axis, taken in axes.items():
            key, taken = AXIS_KEYS.get(axis), sorted(set(taken))
            if axis == "config":
                taken = {c: values.get(key, {}).get(c) for c in taken}
            if key:
                out[key] = _merged(out.get(key), taken)
        if study in ("biencoder", "curves"):
            benches = {b for m in members for b in (m.benchmark, m.versus) if b}
            if "all" in benches:
                benches = (benches - {"all"}) | set(grid.benchmarks)
            out["benchmarks"] = _merged(out.get("benchmarks"), sorted(benches))
            out["stats.metric"] = _merged(out.get("stats.metric"),
                                          sorted({m.metric for m in members}))
            dims = sorted({m.dim for m in members if m.dim})
            if dims:  # recorded only where a claim names one: others' records stay as they were
                out["eval.dims"] = _merged(out.get("eval.dims"), dims)
        trained = {(k[0], k[1]) for k in arms if study in ("biencoder", "curves")}
        datasets = [values.get("train_data"), *out.get("benchmarks", ())]
        for entry in DECIDING_KEYS[study]:
            key, interval = split_entry(entry)
            if key in out or (interval and values.get(interval) != BOOTSTRAP):
                continue
            if key.startswith("recipes.*"):
                picked = {key.replace("*", r, 1) for r, s in trained
                          if key == "recipes.*.eval_steps"
                          or key in stage_settings.train_settings(s).keys().values()}
            elif key == "datasets.*":
                picked = {f"datasets.{d}" for d in datasets if d}
            else:
                picked = {key}
            out.update({k: values[k] for k in sorted(picked) if k in values})
    return json.loads(json.dumps(out, default=str))  # as the record reads it back


def read_settings(claims, grid) -> dict:
    """grid.settings cut to the values some claim's analysis reads, with the interval keys
    that say whether a bootstrap's nboot and seed count: the claims rule's param, so that a
    key no claim reads reruns nothing (the registration reads the same values)."""
    keep = {k for c in claims for k in analysis(c, grid)}
    keep |= {split_entry(e)[1] for entries in DECIDING_KEYS.values() for e in entries}
    return {k: v for k, v in grid.settings.items() if k in keep}


def _merged(a, b):
    if a is None:
        return b
    if isinstance(a, dict):
        return {**a, **b}
    return sorted(set(a) | set(b))


def changes(recorded: dict | None, now: dict) -> list[str]:
    """'stats.interval (calibrated -> multibootstrap)' for each key of `now` whose recorded
    value differs (a dict named down to the entries that differ); a key the record lacks
    (recorded before it was kept) is no change: the entry adopts it."""
    out = []
    for key, value in now.items():
        if recorded is not None and key in recorded and recorded[key] != value:
            out += _differences(key, recorded[key], value)
    return out


def _differences(key: str, old, new) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        return [line for k in dict.fromkeys([*old, *new])
                if old.get(k, ABSENT) != new.get(k, ABSENT)
                for line in _differences(f"{key}.{k}", old.get(k, ABSENT),
                                         new.get(k, ABSENT))]
    return [f"{key} ({_value_text(old)} -> {_value_text(new)})"]


def _value_text(value) -> str:
    if value is ABSENT:
        return "none"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(", ", ": "))
    return str(value)
