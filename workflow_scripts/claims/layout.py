"""Where the claims' inputs lie in a results folder (docs/architecture.md's layout), for
the claims rule's inputs and for loading. Standard library only: the Snakefile calls it.
"""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.claims.spec import Claim, Grid

BASE = "base"  # core/contracts.py's name of the untrained model (tests hold them equal)


def eval_files(results: Path, grid: Grid, key: tuple, seeds=None) -> list[Path]:
    """An arm's per-query files: at its recipe's seeds, or at `seeds` (a look's)."""
    recipe, strategy, depth = key
    model = (f"{BASE}/{strategy}{depth}" if recipe == BASE else None)
    folders = ([results / "eval" / model] if model else
               [results / "eval" / recipe / f"{strategy}{depth}" / f"seed{s}"
                for s in (grid.recipe_seeds[recipe] if seeds is None else seeds)])
    return [f / f"{b}.parquet" for f in folders for b in grid.benchmarks]


def ladder_files(results: Path, grid: Grid, key: tuple) -> list[Path]:
    config, method, k = key
    return [results / "ladder" / "runs" / config / method / f"k{k}" / f"seed{s}.parquet"
            for s in grid.ladder_seeds]


def latency_files(results: Path, grid: Grid) -> list[Path]:
    return [results / "latency" / f"run{r}.parquet" for r in range(grid.latency_runs)] + [
        results / "latency" / "coherence.json"]


def curve_files(results: Path) -> list[Path]:
    """The curves stage's onset tables (biencoder/curves.py): an onset claim reads the
    onset and its bootstrap distribution there, as the figure and report do."""
    return [results / "stats" / f"{name}.parquet" for name in ("curves_onset",
                                                                "curves_onset_dist")]


def input_files(results, grid: Grid, claims: list[Claim], arm_seeds=None) -> list[Path]:
    """Every file the claims read (the claims rule's inputs); arm_seeds: {arm key: seeds}
    for arms read at other seeds than their recipe's (a look's, claims/looks.py)."""
    results, out = Path(results), []
    for study, key in needed(claims):
        out += files_of(results, grid, study, key, arm_seeds)
    return list(dict.fromkeys(out))


def files_of(results: Path, grid: Grid, study: str, key, arm_seeds=None) -> list[Path]:
    if study == "biencoder":
        return eval_files(results, grid, key, (arm_seeds or {}).get(key))
    if study == "ladder":
        return ladder_files(results, grid, key)
    if study == "curves":
        return curve_files(results)
    return latency_files(results, grid)


def needed(claims: list[Claim]) -> list[tuple[str, object]]:
    out = []
    for c in claims:
        for m in c.members:
            keys = [k for k in (m.a, m.b) if k is not None]
            out += ([("latency", None)] if m.study == "latency" else
                    [(m.study, k) for k in keys])
    return list(dict.fromkeys(out))
