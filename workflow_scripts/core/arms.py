"""Arms of the bi-encoder study: per-seed, per-query scores of one model configuration
(recipe, strategy, depth) for each benchmark, read from the per-query evaluation files; and
the comparison design two arms' seeds allow. Shared by the stats stage and the claims.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from workflow_scripts.core import contracts


@dataclass(frozen=True)
class Arm:
    """One model configuration: per-seed, per-query scores for each benchmark."""

    recipe: str
    strategy: str
    depth: int
    seeds: tuple[int, ...]
    scores: dict  # benchmark -> float array [seeds, queries], queries sorted by id
    query_ids: dict = field(default_factory=dict, compare=False)  # benchmark -> the ids, sorted

    @property
    def label(self) -> str:
        return f"{self.recipe}/{self.strategy}{self.depth}"


def load_evals(paths) -> pd.DataFrame:
    frames = [contracts.read_eval(p).assign(_path=str(p)) for p in paths]
    if not frames:
        raise contracts.DataError("no evaluation files given")
    empty = [str(p) for p, f in zip(paths, frames, strict=True) if f.empty]
    if empty:  # averaging over the other benchmarks would hide it
        raise contracts.DataError(f"{empty[0]}: 0 queries; every configured benchmark needs "
                                  f"rows ({len(empty)} empty file(s))")
    return pd.concat(frames, ignore_index=True)


def build_arms(df: pd.DataFrame, metric: str) -> dict[tuple, Arm]:
    """Group the long table into arms; every seed of an arm must have the same queries."""
    arms = {}
    benchmarks = set(df["benchmark"])
    for (recipe, strategy, depth), g in df.groupby(["recipe", "strategy", "depth"], sort=True):
        lacking = sorted(benchmarks - set(g["benchmark"]))
        if lacking:
            raise contracts.DataError(f"{recipe}/{strategy}{depth}: no evaluation on benchmark(s) "
                                      f"{', '.join(lacking)} that other models have")
        seeds = tuple(sorted(int(s) for s in g["seed"].unique()))
        scores, ids = {}, {}
        for bench, gb in g.groupby("benchmark", sort=True):
            wide = gb.pivot(index="seed", columns="query_id", values=metric)
            if set(wide.index) != set(seeds) or wide.isna().any().any():
                files = ", ".join(sorted(gb["_path"].unique()))
                raise contracts.DataError(
                    f"{recipe}/{strategy}{depth}/{bench}: seeds do not share one query set "
                    f"or a seed is missing ({files})")
            wide = wide.loc[list(seeds)].sort_index(axis=1)
            scores[bench] = wide.to_numpy(np.float64)
            ids[bench] = tuple(str(q) for q in wide.columns)
        arms[(recipe, strategy, int(depth))] = Arm(recipe, strategy, int(depth), seeds, scores,
                                                   ids)
    return arms


def grid_gaps(arms: dict[tuple, Arm], expected: dict) -> list[str]:
    """What the configured grid has that the arms lack. `expected`: {"benchmarks": [..],
    "arms": [[recipe, strategy, depth, [seeds]], ..]} (the untrained base: recipe 'base',
    seed -1). Empty when every arm has every seed on every benchmark."""
    gaps = []
    for recipe, strategy, depth, seeds in expected["arms"]:
        label = f"{recipe}/{strategy}{depth}"
        arm = arms.get((recipe, strategy, int(depth)))
        if arm is None:
            gaps.append(f"{label}: no evaluations")
            continue
        lacking = sorted(set(int(x) for x in seeds) - set(arm.seeds))
        if lacking:
            gaps.append(f"{label}: no evaluations of seed(s) {', '.join(map(str, lacking))}")
        lacking = [b for b in expected["benchmarks"] if b not in arm.scores]
        if lacking:
            gaps.append(f"{label}: no evaluations on benchmark(s) {', '.join(lacking)}")
    return gaps


def check_aligned(a: Arm, b: Arm) -> None:
    """Every comparison pairs the two arms' scores example by example (column k of one with
    column k of the other): their query ids must be the same on every shared benchmark, or a
    DataError names the first id present in one arm only."""
    for bench in sorted(set(a.query_ids) & set(b.query_ids)):
        ids_a, ids_b = set(a.query_ids[bench]), set(b.query_ids[bench])  # sorted, unique
        only = sorted(ids_a ^ ids_b)
        if only:
            qid = only[0]
            side = a.label if qid in ids_a else b.label
            raise contracts.DataError(
                f"{a.label} vs {b.label} on {bench}: query {qid!r} is evaluated for {side} "
                f"only ({len(only)} ids differ); comparisons align queries by id")
