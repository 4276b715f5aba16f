"""The grid the claims are checked against: what a config can show (its arms per study,
benchmarks, metrics), what any edit of its grid could show (`possible`), and the selectors
that name arms in it (docs/claims.md).

Arms are dicts over the study's axes: bi-encoder `recipe`, `strategy`, `depth`; ladder
`config`, `method`, `k`; latency `depth`. A selector value is a name or number, a list,
`all`, `first`, `last` or {min, max}. A recipe's train-once arms (`train_once`: adaptive,
matryoshka2d) and fine-tuned-then-truncated arms (`truncated`: strategy truncated, at every
depth but the deepest) are strategies of that recipe; a selector that leaves `strategy` out
means the one per-depth strategy there is, or `top` (the per-depth reference,
core/contracts.py) among several.

Claims follow the grid: a value the config's registries allow but its grid lacks (a depth,
a strategy, a method, a benchmark that is a dataset of the config) makes the claim
not-applicable (claims/spec.py); a value no edit of the grid could give (a recipe or ladder
config the config does not define, a strategy that does not exist, a depth beyond the base
model's layers) is an error.

Imports the standard library (and core/contracts.py, which imports nothing else at module
level) only: the Snakefile checks claims before any job.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from workflow_scripts.core.contracts import BASE, PER_DEPTH_REFERENCE, TRAIN_ONCE, TRUNCATED
from workflow_scripts.study_plan import claims_grid

STUDY_AXES = {"biencoder": ("recipe", "strategy", "depth"), "ladder": ("config", "method", "k"),
              "latency": ("depth",), "curves": ("recipe", "strategy", "depth")}
# Per-depth strategies (config/schema.yaml's `strategies`, biencoder/model/truncation.py;
# tests/unit/claims/test_claims_grid.py holds them equal).
PER_DEPTH_STRATEGIES = ("top", "bottom", "alternate", "freeze")
# core/contracts.py's METRICS and ladder.METHODS (tests/unit/claims/test_claims.py holds them
# equal).
METRICS = ("ndcg@10", "recall@100", "map@100", "mrr@10")
LADDER_METHODS = ("bp", "fa", "dfa")
IN_CONFIG = "in this config, which has"
IN_ANY = "in this config nor in any edit of its grid, which could have"


class ClaimError(ValueError):
    """A claim the config cannot decide; the message names the claim id and key."""


class BeyondModel(ClaimError):
    """A claim depth deeper than the base model: no edit of the grid can give it."""


@dataclass(frozen=True)
class Grid:
    """What a config can show: arms per study (dicts over the study's axes), benchmarks,
    metrics; a study the config lacks is None. datasets: the data registry's names;
    layers: the base model's layer count (0: not known here)."""

    biencoder: tuple[dict, ...] | None = None
    benchmarks: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    ladder: tuple[dict, ...] | None = None
    latency: tuple[dict, ...] | None = None
    recipe_seeds: dict = field(default_factory=dict)  # recipe -> its seeds
    ladder_seeds: tuple[int, ...] = ()
    latency_runs: int = 0
    curves: tuple[dict, ...] | None = None  # the arms with a learning curve
    curve_metric: str = ""  # the metric the curves stage computes (stats.metric)
    datasets: tuple[str, ...] = ()
    layers: int = 0
    dims: tuple[int, ...] = ()  # eval.dims: the embedding dimensions evaluated besides the full
    # The values of the config keys that decide a claim (claims/registration.py
    # DECIDING_KEYS), by concrete key: what the registration records with each claim.
    settings: dict = field(default_factory=dict)
    scope: str = IN_CONFIG  # how a value's absence reads (IN_ANY for `possible`'s grid)

    def arms(self, study: str) -> tuple[dict, ...] | None:
        return getattr(self, study)

    def to_dict(self) -> dict:
        return {"biencoder": self.biencoder, "benchmarks": list(self.benchmarks),
                "metrics": list(self.metrics), "ladder": self.ladder, "latency": self.latency,
                "recipe_seeds": self.recipe_seeds, "ladder_seeds": list(self.ladder_seeds),
                "latency_runs": self.latency_runs, "curves": self.curves,
                "curve_metric": self.curve_metric, "datasets": list(self.datasets),
                "layers": self.layers, "dims": list(self.dims), "settings": self.settings}

    @classmethod
    def from_dict(cls, d: dict) -> Grid:
        def arms(x):
            return None if x is None else tuple(dict(a) for a in x)

        return cls(arms(d.get("biencoder")), tuple(d.get("benchmarks", ())),
                   tuple(d.get("metrics", ())), arms(d.get("ladder")), arms(d.get("latency")),
                   dict(d.get("recipe_seeds", {})), tuple(d.get("ladder_seeds", ())),
                   int(d.get("latency_runs", 0)), arms(d.get("curves")),
                   str(d.get("curve_metric", "")), tuple(d.get("datasets", ())),
                   int(d.get("layers", 0)), tuple(int(m) for m in d.get("dims", ())),
                   dict(d.get("settings", {})))


def grid_from_config(config: dict, metrics=METRICS, ladder_methods=LADDER_METHODS,
                     layers: int = 0) -> Grid:
    """The arms a config produces (the study plan's claims grid, workflow_scripts/study_plan.py),
    in the config's order; the untrained base is the recipe `base`. layers: the base model's
    layer count where known (0: not known)."""
    return Grid.from_dict(claims_grid(config, metrics, ladder_methods, layers))


def possible(grid: Grid, named_depths=(), ladder_methods=LADDER_METHODS) -> Grid:
    """Every arm an edit of `depths`, `strategies`, a recipe's `train_once`, `benchmarks` or
    `ladder.methods` could give this config: the same recipes, ladder configs (with their
    rungs), metrics and curves' recipes; every strategy (the base has no train-once or
    truncated arm); depths 1 to the base model's layers (where not known, to the largest
    depth the config or a claim names: `named_depths`); every dataset of the registry as a
    benchmark."""
    def biencoder(arms):
        if arms is None:
            return None
        recipes = _order(a["recipe"] for a in arms)
        return tuple({"recipe": r, "strategy": s, "depth": d} for r in recipes
                     for s in _order([*(a["strategy"] for a in arms if a["recipe"] == r),
                                      *PER_DEPTH_STRATEGIES,
                                      *((*TRAIN_ONCE, *TRUNCATED.values())
                                        if r != BASE else ())])
                     for d in depths)

    have = [a["depth"] for a in grid.latency or ()]
    top = grid.layers or max([*have, *(d for d in named_depths if isinstance(d, int))],
                             default=0)
    depths = range(1, top + 1)
    rungs = {a["config"]: a["k"] for a in grid.ladder or ()}  # the last k is L
    ladder = None if grid.ladder is None else tuple(
        {"config": c, "method": m, "k": k} for c, last in rungs.items()
        for m in _order([*(a["method"] for a in grid.ladder), *ladder_methods])
        for k in range(last + 1))
    benchmarks = _order([*grid.benchmarks, *(d for d in grid.datasets)])
    return replace(grid, biencoder=biencoder(grid.biencoder), curves=biencoder(grid.curves),
                   latency=None if grid.latency is None else tuple({"depth": d} for d in depths),
                   ladder=ladder, benchmarks=tuple(benchmarks), scope=IN_ANY)


def depths_named(claims: list[dict]) -> list:
    """Every value a claim gives the `depth` axis, however deep in the claim."""
    out = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                out.extend((v if isinstance(v, list) else [v]) if k == "depth" else [])
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(claims)
    return out


# ---------------------------------------------------------------------------------------
# Selectors
# ---------------------------------------------------------------------------------------
def _order(values) -> list:
    return list(dict.fromkeys(values))  # grid order: config order, depths ascending


def pick(spec: Any, present: list, where: str, scope: str = IN_CONFIG) -> list:
    """The values of one axis a selector value names, among those present."""
    if spec == "all":
        return present
    if spec in ("first", "last"):
        return present[:1] if spec == "first" else present[-1:]
    if isinstance(spec, dict):
        low, high = spec.get("min"), spec.get("max")
        return [v for v in present if (low is None or v >= low) and (high is None or v <= high)]
    return known(spec, present, where, scope)


def known(values, allowed: list, where: str, what: str) -> list:
    """`values` (one or a list) as a list, each checked to be in `allowed`."""
    names = values if isinstance(values, list) else [values]
    for v in names:
        if v not in allowed:
            raise ClaimError(f"{where}: {v!r} is not {what} {', '.join(map(str, allowed))}")
    return names


def expand(selector: dict, context: dict, arms: tuple[dict, ...], axes: tuple[str, ...],
           where: str, open_ok: bool = False, scope: str = IN_CONFIG) -> list[dict]:
    """Every arm the selector names, given the context's fixed values (the selector's own
    values win). An axis neither names nor the context fixes must have one value in the
    grid (strategy: one per-depth value, or `top` among several), unless `open_ok`
    (for_each: axes left open stay open)."""
    spec = {**context, **selector}
    out = [{}]
    for axis in axes:
        nxt = []
        for fixed in out:
            here = [a for a in arms if all(a[k] == v for k, v in fixed.items())]
            present = _order(a[axis] for a in here)
            if axis in spec:
                if axis == "depth" and scope == IN_ANY:
                    _within_model(spec[axis], present, f"{where}.{axis}")
                values = pick(spec[axis], present, f"{where}.{axis}", scope)
            elif open_ok:
                nxt.append(fixed)
                continue
            elif len(present) == 1:
                values = present
            elif axis == "strategy" and (implied := _implied_strategy(present)):
                values = implied  # a train-once arm is named, never implied
            else:
                raise ClaimError(f"{where}: leaves {axis} open (this config has "
                                 f"{', '.join(map(str, present))}); name it, or set it in "
                                 "for_each")
            nxt += [{**fixed, axis: v} for v in values]
        out = nxt
    return out


def _within_model(spec: Any, depths: list, where: str) -> None:
    """Raise BeyondModel for a named depth past the deepest one an edit could give (the base
    model's layers, `possible`)."""
    deepest = max(depths, default=0)
    beyond = [d for d in (spec if isinstance(spec, list) else [spec])
              if isinstance(d, int) and deepest and d > deepest]
    if beyond:
        raise BeyondModel(f"{where}: {beyond[0]} is beyond the base model's {deepest} layers; "
                          f"a claim's depths are 1 to {deepest}")


def _implied_strategy(present: list) -> list:
    """The strategy a selector that leaves it out means: the one per-depth strategy, or the
    per-depth reference `top` among several; none otherwise."""
    per_depth = [v for v in present if v not in (*TRAIN_ONCE, *TRUNCATED.values())]
    if len(per_depth) == 1:
        return per_depth
    return [PER_DEPTH_REFERENCE] if PER_DEPTH_REFERENCE in per_depth else []


def arm_key(arm: dict, axes) -> tuple:
    return tuple(arm[a] for a in axes)
