"""What the claims read from a results folder, found by the workflow's layout
(docs/architecture.md): per-query evaluations (bi-encoder), per-example run files (ladder),
per-call latency runs and the coherence document. An arm whose files are missing is
recorded with the first missing path, so that its claims become not-applicable by name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from workflow_scripts.claims.layout import files_of, needed
from workflow_scripts.claims.spec import Claim, Grid, Member
from workflow_scripts.core import contracts
from workflow_scripts.core.arms import build_arms, load_evals
from workflow_scripts.ladder.runs import collect, scores


class MissingInput(ValueError):
    """An input file is there but lacks what a member needs (a results folder made by
    another config): the member is not-applicable, with this message."""


@dataclass
class Data:
    """biencoder: (metric, dim) -> {(recipe, strategy, depth): Arm}, dim 0 the full
    dimension (`arms`); ladder: (config, method, k) -> ([seeds, examples] correctness, seed
    ids); latency: per-call rows and coherence.json; missing: (study, layout.need_key) -> the
    first missing file."""

    biencoder: dict = field(default_factory=dict)
    ladder: dict = field(default_factory=dict)
    latency_calls: pd.DataFrame | None = None
    coherence: dict | None = None
    onsets: pd.DataFrame | None = None  # results/<study>/stats/curves_onset.parquet
    onset_dist: pd.DataFrame | None = None  # results/<study>/stats/curves_onset_dist.parquet
    latency_depths: tuple[int, ...] = ()  # the config's latency ladder
    latency_dir: Path | None = None  # where the latency runs were read
    missing: dict = field(default_factory=dict)

    def arms(self, m: Member) -> dict:
        """The bi-encoder arms a member compares: at its metric and embedding dimension."""
        return self.biencoder[(m.metric, m.dim)]


def load(results, grid: Grid, claims: list[Claim], arm_seeds=None) -> Data:
    """The claims' inputs; arm_seeds: {arm key: seeds} read at other seeds than the
    recipe's (a look's, claims/looks/run.py)."""
    results, data = Path(results), Data()
    evals: dict[int, list] = {}  # embedding dimension (0: the full) -> per-query files
    ladder: list = []
    for study, key in needed(claims):
        files = files_of(results, grid, study, key, arm_seeds)
        gone = [f for f in files if not f.exists()]
        if gone:
            data.missing[(study, key)] = gone[0]
        elif study == "curves":
            if data.onsets is None:
                data.onsets, data.onset_dist = (contracts.read_stats(f.parent, f.stem)
                                                for f in files)
        elif study == "biencoder":  # by embedding dimension: each its own arms
            evals.setdefault(key[3] if len(key) > 3 else 0, []).extend(files)
        elif study == "ladder":
            ladder.extend(files)
        else:
            runs = [contracts.read_latency(f) for f in files[:-1]]
            data.latency_calls = pd.concat(runs, ignore_index=True)
            data.coherence = json.loads(files[-1].read_text(encoding="utf-8"))
            data.latency_dir = files[-1].parent
            data.latency_depths = tuple(int(a["depth"]) for a in grid.latency or ())
    for dim, files in evals.items():
        df = load_evals(list(dict.fromkeys(files)))
        metrics = {m.metric for c in claims for m in c.members
                   if m.study == "biencoder" and m.dim == dim}
        data.biencoder.update({(metric, dim): build_arms(df, metric) for metric in metrics})
    if ladder:
        rows, _ = collect(ladder)
        for key, grp in rows.groupby(["config", "method", "k"], sort=False):
            data.ladder[(key[0], key[1], int(key[2]))] = scores(grp)
    return data


def missing_depths(data: Data, depths) -> MissingInput | None:
    """The error of a latency member whose depths the folder's profiling runs lack (a
    results folder of another config), else None."""
    have = sorted(int(d) for d in data.coherence.get("depths") or
                  data.coherence.get("canonical_ladder", {}).get("depth", []))
    lack = [int(d) for d in depths if int(d) not in have]
    if not have or not lack:  # a document without its depths: the fit says what is wrong
        return None
    return MissingInput(f"the latency runs in {data.latency_dir or 'latency/'} profiled depths "
                        f"{', '.join(map(str, have))}, not "
                        f"{', '.join(map(str, lack))} (a results folder of another config?)")
