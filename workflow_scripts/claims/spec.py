"""The claims language: parse the config's `claims:` list into members, checked against the
config's grid (claims/grid.py; docs/claims.md).

A claim is one part or a conjunction of parts (`all_of`; keys beside `all_of` are defaults
for every part). A part says what is estimated (`estimate`), over which arms (a generator:
`a`/`b`, `arm`, `pairs`, `adjacent`, `candidate`/`among`), repeated over a grid (`for_each`),
and how it is decided (`test` with `threshold`, `epsilon` or `value`). Every part expands
into members: one estimate and one test each.

A claim is not-applicable, with its reason, where the config lacks the study a part needs,
or where a part names what the grid lacks but an edit of the grid could give (a depth, a
strategy, a benchmark: claims/grid.py `possible`); a claim that names what no edit could give
is an error.

Imports the standard library (and core/contracts.py, which imports nothing else at module
level) only: the Snakefile checks claims before any job.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from workflow_scripts.claims.grid import (
    IN_CONFIG,
    STUDY_AXES,
    BeyondModel,
    ClaimError,
    Grid,
    arm_key,
    depths_named,
    expand,
    grid_from_config,
    known,
    possible,
)

__all__ = ["Claim", "ClaimError", "Grid", "Member", "arm_label", "grid_from_config",
           "not_applicable_warnings", "parse"]

ESTIMATES = ("difference", "ratio", "mean", "difference_of_differences", "latency_ratio",
             "latency_coherent", "onset")
TESTS = {"greater": "threshold", "less": "threshold", "equivalent": "epsilon",
         "consistent": "value"}
# The onset of a learning curve's decline (biencoder/curves.py) is a step on the recipe's
# grid, not a contrast: it has tests of its own, `step` their threshold.
ONSET_TESTS = {"after": "step", "before": "step", "no_decline": None}
PAIR_GENERATORS = ("a", "pairs", "adjacent", "candidate")
ALL_BENCHMARKS, EACH_BENCHMARK = "all", "each"


@dataclass(frozen=True)
class Member:
    """One estimate and its test. a, b: arm keys (tuples over the study's axes); `mean` has
    b only; latency_coherent none. benchmark: a name, "all" (the stratified mean) or "" (ladder,
    latency); versus: the other benchmark of a difference of differences; dim: the embedding
    dimension both arms are scored at (one of eval.dims), 0 the full dimension."""

    claim: str
    part: int
    study: str
    estimate: str
    test: str
    a: tuple | None
    b: tuple | None
    benchmark: str = ""
    versus: str = ""
    metric: str = ""
    threshold: float | None = None
    epsilon: float | None = None
    value: float | None = None
    dim: int = 0

    @property
    def label(self) -> str:
        a, b = (None if x is None else arm_label(self.study, x) for x in (self.a, self.b))
        bench = self.benchmark if not self.versus else f"{self.benchmark} − {self.versus}"
        where = ", ".join(x for x in (bench, f"{self.dim} dims" if self.dim else "") if x)
        where = f" [{where}]" if where else ""
        if self.estimate == "latency_coherent":
            return "canonical latency ladder"
        if self.estimate == "mean":
            return f"{b}{where}"
        if self.estimate == "onset":
            return f"onset of {b}{where}"
        if self.estimate in ("ratio", "latency_ratio"):
            return f"{b} / {a}{where}"
        return f"{b} − {a}{where}"


def arm_label(study: str, key: tuple) -> str:
    if study in ("biencoder", "curves"):
        return f"{key[0]}/{key[1]}{key[2]}"
    if study == "ladder":
        return f"{key[0]}/{key[1]}/k{key[2]}"
    return f"L{key[0]}"


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    members: tuple[Member, ...]
    not_applicable: str = ""  # why: a study the config lacks, or what its grid lacks


# ---------------------------------------------------------------------------------------
# Parts and claims
# ---------------------------------------------------------------------------------------
_PART_KEYS = ("estimate", "test", "threshold", "epsilon", "value", "step", "a", "b", "arm",
              "pairs", "adjacent", "candidate", "among", "for_each", "benchmark", "versus",
              "metric", "dim")
_SELECTORS = ("a", "b", "arm", "pairs", "adjacent", "candidate", "among", "for_each")


def _study(part: dict, where: str) -> str:
    estimate = part.get("estimate", "difference")
    if estimate.startswith("latency"):
        return "latency"
    if estimate == "onset":
        return "curves"
    used = {ax for k in _SELECTORS for ax in (part.get(k) or {})}
    studies = {s for s, axes in STUDY_AXES.items()
               if s not in ("latency", "curves") and used & set(axes)}
    if len(studies) > 1:
        raise ClaimError(f"{where}: mixes bi-encoder axes (recipe, strategy, depth) with ladder "
                         "axes (config, method, k)")
    return studies.pop() if studies else "biencoder"


def _pairs(part: dict, ctx: dict, arms, axes, where: str,
           scope: str) -> list[tuple[tuple, tuple]]:
    """(a, b) arm keys of a two-arm estimate; the estimate is b against a."""
    given = [g for g in PAIR_GENERATORS if g in part]
    if len(given) != 1:
        raise ClaimError(f"{where}: give exactly one of a/b, pairs, adjacent, candidate/among "
                         f"(found {', '.join(given) or 'none'})")
    gen = given[0]
    if gen == "a":
        if "b" not in part:
            raise ClaimError(f"{where}.b: missing (a and b go together)")
        a = expand(part["a"], ctx, arms, axes, f"{where}.a", scope=scope)
        b = expand(part["b"], ctx, arms, axes, f"{where}.b", scope=scope)
        if len(a) != 1 or len(b) != 1:
            raise ClaimError(f"{where}: a and b must each name one arm (a names {len(a)}, b "
                             f"{len(b)}); use for_each for a family")
        if a == b:  # e.g. depth first and last in a grid of one depth
            raise ClaimError(f"{where}: a and b name the same arm in this config "
                             f"({arm_label(_study(part, where), arm_key(a[0], axes))})")
        return [(arm_key(a[0], axes), arm_key(b[0], axes))]
    if gen == "candidate":
        if "among" not in part:
            raise ClaimError(f"{where}.among: missing (candidate and among go together)")
        cand = expand(part["candidate"], ctx, arms, axes, f"{where}.candidate", scope=scope)
        if len(cand) != 1:
            raise ClaimError(f"{where}.candidate: must name one arm (names {len(cand)})")
        among = expand(part["among"], cand[0], arms, axes, f"{where}.among", scope=scope)
        others = [o for o in among if o != cand[0]]
        if not others:
            raise ClaimError(f"{where}.among: no arm besides the candidate")
        return [(arm_key(o, axes), arm_key(cand[0], axes)) for o in others]
    members = expand(part[gen], ctx, arms, axes, f"{where}.{gen}", scope=scope)
    if len(members) < 2:
        raise ClaimError(f"{where}.{gen}: names {len(members)} arm(s); a set needs 2 or more")
    keys = [arm_key(m, axes) for m in members]
    if gen == "pairs":
        return list(itertools.combinations(keys, 2))
    varying = [i for i in range(len(axes)) if len({k[i] for k in keys}) > 1]
    if len(varying) != 1:
        raise ClaimError(f"{where}.adjacent: the set must vary along one axis (it varies "
                         f"along {', '.join(axes[i] for i in varying)})")
    return list(itertools.pairwise(keys))


def _benchmarks(part: dict, grid: Grid, where: str) -> list[str]:
    bench = part.get("benchmark", ALL_BENCHMARKS)
    if bench == ALL_BENCHMARKS:
        return [ALL_BENCHMARKS if len(grid.benchmarks) > 1 else grid.benchmarks[0]]
    if bench == EACH_BENCHMARK:
        return list(grid.benchmarks)
    return known(bench, list(grid.benchmarks), f"{where}.benchmark",
                  "all, each or a benchmark of this config:")


def _test(part: dict, estimate: str, where: str) -> dict:
    if estimate == "latency_coherent":
        extra = [k for k in ("test", *TESTS.values()) if k in part]
        if extra:
            raise ClaimError(f"{where}.{extra[0]}: latency_coherent is decided by the coherence "
                             "checks; it takes no test")
        return {"test": "coherent"}
    test = part.get("test")
    if estimate == "onset":
        return _onset_test(part, test, where)
    if test in ONSET_TESTS:
        raise ClaimError(f"{where}.test: {test} is a test of a learning curve's onset "
                         "(estimate: onset)")
    if test not in TESTS:
        raise ClaimError(f"{where}.test: missing or unknown ({test!r}); expected one of "
                         f"{', '.join(TESTS)}")
    need = TESTS[test]
    if need == "threshold":
        return {"test": test, "threshold": float(part.get("threshold", 0.0))}
    if need not in part:
        what = "the margin ε" if need == "epsilon" else "the published value"
        raise ClaimError(f"{where}.{need}: missing; a {test} test needs {what}")
    if test == "equivalent" and estimate in ("ratio", "latency_ratio"):
        raise ClaimError(f"{where}.test: equivalence is for differences; state a ratio as "
                         "greater/less/consistent")
    return {"test": test, need: float(part[need])}


def _onset_test(part: dict, test, where: str) -> dict:
    if test not in ONSET_TESTS:
        raise ClaimError(f"{where}.test: missing or unknown for an onset ({test!r}); expected "
                         f"one of {', '.join(ONSET_TESTS)}")
    stray = [k for k in (*TESTS.values(), "step") if k in part and k != ONSET_TESTS[test]]
    if stray:
        raise ClaimError(f"{where}.{stray[0]}: an onset {test} test does not take it")
    if ONSET_TESTS[test] is None:
        return {"test": test}
    if "step" not in part:
        raise ClaimError(f"{where}.step: missing; an onset {test} test needs the step")
    return {"test": test, "threshold": float(part["step"])}


def members_of(part: dict, claim_id: str, index: int, grid: Grid, where: str) -> list[Member]:
    estimate = part.get("estimate", "difference")
    if estimate not in ESTIMATES:
        raise ClaimError(f"{where}.estimate: unknown {estimate!r}; expected one of "
                         f"{', '.join(ESTIMATES)}")
    study = _study(part, where)
    arms, axes = grid.arms(study), STUDY_AXES[study]
    test = _test(part, estimate, where)
    if estimate == "latency_coherent":
        return [Member(claim_id, index, study, estimate, a=None, b=None, **test)]
    metric = part.get("metric", "")
    if study == "curves":
        metric = metric or grid.curve_metric
        if metric != grid.curve_metric:
            raise ClaimError(f"{where}.metric: the learning curves are computed for "
                             f"{grid.curve_metric} (stats.metric) only")
    elif study == "biencoder":
        metric = metric or grid.curve_metric or grid.metrics[0]  # stats.metric by default
        if metric not in grid.metrics:
            raise ClaimError(f"{where}.metric: {metric!r} is not a metric the evaluation "
                             f"writes ({', '.join(grid.metrics)})")
    elif metric:
        raise ClaimError(f"{where}.metric: the {study} study has one metric; leave it out")
    dim = _dim(part, study, grid, where)
    if study not in ("biencoder", "curves") and ("benchmark" in part or "versus" in part):
        key = "benchmark" if "benchmark" in part else "versus"
        raise ClaimError(f"{where}.{key}: the {study} study has no benchmarks")
    contexts = (expand(part["for_each"], {}, arms, axes, f"{where}.for_each", open_ok=True,
                       scope=grid.scope)
                if "for_each" in part else [{}])
    if not contexts:
        raise ClaimError(f"{where}.for_each: the family is empty in this config")
    benches = _benchmarks(part, grid, where) if study in ("biencoder", "curves") else [""]
    out = []
    for ctx in contexts:
        if estimate in ("mean", "onset"):
            if "arm" not in part:
                raise ClaimError(f"{where}.arm: missing; {estimate} names its arm")
            named = expand(part["arm"], ctx, arms, axes, f"{where}.arm", scope=grid.scope)
            pairs = [(None, arm_key(x, axes)) for x in named]
        else:
            pairs = _pairs(part, ctx, arms, axes, where, grid.scope)
        for (a, b), bench in itertools.product(pairs, benches):
            for versus in _versus(part, estimate, bench, grid, where):
                out.append(Member(claim_id, index, study, estimate, a=a, b=b, benchmark=bench,
                                  versus=versus, metric=metric, dim=dim, **test))
    if not out:
        raise ClaimError(f"{where}: expands to no member in this config")
    return list(dict.fromkeys(out))


def _dim(part: dict, study: str, grid: Grid, where: str) -> int:
    """The embedding dimension a part scores both arms at: one of the config's eval.dims
    (any positive one where an edit of eval.dims could give it), 0 (the full) by default."""
    if "dim" not in part:
        return 0
    dim = part["dim"]
    if study != "biencoder":
        raise ClaimError(f"{where}.dim: only the bi-encoder's evaluations are scored at "
                         "embedding dimensions")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ClaimError(f"{where}.dim: {dim!r} is not an embedding dimension (a positive "
                         "integer; leave dim out for the full dimension)")
    if grid.scope == IN_CONFIG and dim not in grid.dims:
        raise ClaimError(f"{where}.dim: {dim} is not a dimension this config evaluates "
                         f"(eval.dims: {', '.join(map(str, grid.dims)) or 'none'})")
    return dim


def _versus(part, estimate, bench, grid: Grid, where) -> list[str]:
    if estimate != "difference_of_differences":
        if "versus" in part:
            raise ClaimError(f"{where}.versus: only a difference_of_differences compares "
                             "benchmarks")
        return [""]
    if bench in (ALL_BENCHMARKS, ""):
        raise ClaimError(f"{where}.benchmark: a difference_of_differences names one benchmark")
    versus = part.get("versus", "others")
    others = [b for b in grid.benchmarks if b != bench]
    if versus == "others":
        return others
    return known(versus, others, f"{where}.versus", "one of the other benchmarks:")


def parse(claims: list[dict], grid: Grid) -> list[Claim]:
    """Every claim with its members; raises ClaimError naming the claim id and key. A claim
    whose parts need a study the config lacks, or name what the grid lacks but an edit of it
    could give, is not-applicable: no members, the reason in `not_applicable`."""
    out, seen, wider = [], set(), None
    for i, raw in enumerate(claims):
        cid = raw.get("id", "")
        where = f"config key claims[{i}] (id {cid})"
        if cid in seen:
            raise ClaimError(f"{where}.id: {cid!r} is used twice; claim ids must be unique")
        seen.add(cid)
        shared = {k: v for k, v in raw.items() if k not in ("id", "statement", "all_of")}
        parts = ([{**shared, **p} for p in raw["all_of"]] if "all_of" in raw else [shared])
        members, missing, gaps = [], [], []
        for j, part in enumerate(parts):
            pw = f"{where}.all_of[{j}]" if "all_of" in raw else where
            study = _study(part, pw)
            if grid.arms(study) is None:
                missing.append(study)
                continue
            try:
                members += members_of(part, cid, j, grid, pw)
            except ClaimError as gap:
                wider = wider or possible(grid, depths_named(claims))
                _check_possible(part, cid, j, wider, pw, gap)
                gaps.append(str(gap)[len(where):].lstrip(".: "))
        why = "; ".join(gaps)
        if missing:
            names = {"biencoder": "bi-encoder study (recipes:)", "latency": "latency ladder "
                     "(the bi-encoder study)", "ladder": "ladder study (ladder:)",
                     "curves": "learning curve (a recipe's eval_steps)"}
            why = "; ".join(x for x in ("this config has no " + " and no ".join(
                names[s] for s in dict.fromkeys(missing)), why) if x)
        out.append(Claim(cid, raw.get("statement", ""), () if gaps else tuple(members), why))
    return out


def _check_possible(part: dict, claim_id: str, index: int, wider: Grid, where: str,
                    gap: ClaimError) -> None:
    """Raise unless an edit of the grid could give what the part names (`wider`): the
    grid's own message where both fail at the same key (it says what this config has),
    else the wider grid's (the key no edit could satisfy)."""
    try:
        members_of(part, claim_id, index, wider, where)
    except ClaimError as error:
        same = _key_of(gap) == _key_of(error) and not isinstance(error, BeyondModel)
        raise (gap if same else error) from None


def _key_of(error: ClaimError) -> str:
    return str(error).split(": ", 1)[0]


def not_applicable_warnings(claims: list[Claim]) -> list[str]:
    """One line per not-applicable claim, naming it and why (the Snakefile prints them)."""
    return [f"warning: claim {c.id} is not-applicable: {c.not_applicable}"
            for c in claims if c.not_applicable]
