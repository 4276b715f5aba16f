"""Which files the claims read in a results folder (a study's, results/<study>: core/paths.py's
templates are relative to it), for the claims rule's inputs and for loading. Standard library
only: the Snakefile calls it.
"""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.claims.spec import Claim, Grid, Member
from workflow_scripts.core import paths
from workflow_scripts.core.contracts import BASE


def eval_files(results: Path, grid: Grid, key: tuple, seeds=None) -> list[Path]:
    """An arm's per-query files: at its recipe's seeds, or at `seeds` (a look's); a key
    with a fourth value (need_key) at that embedding dimension."""
    recipe, strategy, depth, *dim = key
    dim = dim[0] if dim else 0
    if recipe == BASE:
        template = paths.BASE_EVAL_DIM if dim else paths.BASE_EVAL
        files = [template.format(strategy=strategy, depth=depth, benchmark=b, dim=dim)
                 for b in grid.benchmarks]
    else:
        template = paths.EVAL_DIM if dim else paths.EVAL
        files = [template.format(recipe=recipe, strategy=strategy, depth=depth, seed=s,
                                 benchmark=b, dim=dim)
                 for s in (grid.recipe_seeds[recipe] if seeds is None else seeds)
                 for b in grid.benchmarks]
    return [Path(results) / f for f in files]


def ladder_files(results: Path, grid: Grid, key: tuple) -> list[Path]:
    config, method, k = key
    return [Path(results) / paths.LADDER_RUN.format(arch=config, method=method, k=k, seed=s)
            for s in grid.ladder_seeds]


def latency_files(results: Path, grid: Grid) -> list[Path]:
    return [Path(results) / f for f in
            [*(paths.LATENCY_RUN.format(r=r) for r in range(grid.latency_runs)),
             paths.LATENCY_COHERENCE]]


def curve_files(results: Path) -> list[Path]:
    """The curves stage's onset tables (biencoder/curves.py): an onset claim reads the
    onset and its bootstrap distribution there, as the figure and report do."""
    return [Path(results) / paths.STATS_TABLE.format(table=t)
            for t in ("curves_onset", "curves_onset_dist")]


def input_files(results, grid: Grid, claims: list[Claim], arm_seeds=None) -> list[Path]:
    """Every file the claims read (the claims rule's inputs); arm_seeds: {arm key: seeds}
    for arms read at other seeds than their recipe's (a look's, claims/looks/run.py)."""
    results, out = Path(results), []
    for study, key in needed(claims):
        out += files_of(results, grid, study, key, arm_seeds)
    return list(dict.fromkeys(out))


def files_of(results: Path, grid: Grid, study: str, key, arm_seeds=None) -> list[Path]:
    if study == "biencoder":
        return eval_files(results, grid, key, (arm_seeds or {}).get(key[:3]))
    if study == "ladder":
        return ladder_files(results, grid, key)
    if study == "curves":
        return curve_files(results)
    return latency_files(results, grid)


def needed(claims: list[Claim]) -> list[tuple[str, object]]:
    """(study, need_key) of every input the claims read."""
    out = []
    for c in claims:
        for m in c.members:
            keys = [k for k in (m.a, m.b) if k is not None]
            out += ([("latency", None)] if m.study == "latency" else
                    [(m.study, need_key(m, k)) for k in keys])
    return list(dict.fromkeys(out))


def need_key(m: Member, key: tuple | None) -> tuple | None:
    """What a member reads for one of its arms: the arm key, with the member's embedding
    dimension appended where it names one (its files are that dimension's)."""
    return (*key, m.dim) if m.dim and key is not None else key
