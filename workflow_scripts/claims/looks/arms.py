"""Seeds on demand (config `adaptive_seeds`, docs/adaptive_seeds.md): the claims that drive
the looks, the trained arms they read, the seeds an arm has at a given count, and the check
of the config key.

An arm's seeds are its recipe's configured seeds, then the next integers after the largest
(42, 43, 44 -> 45, 46, ...): every arm of a recipe adds the same seeds, so arms that were
paired on their seeds stay paired. Standard library only: the Snakefile plans the looks'
inputs with it.
"""

from __future__ import annotations

from workflow_scripts.claims.spec import Claim
from workflow_scripts.core.contracts import BASE
from workflow_scripts.stats import look_plan

WHERE = "config key adaptive_seeds"
# A look decides its driving claims at its boundary, a level the spending function fixes for
# the whole sequence of looks: a study-wide step's level cannot lower it after the fact.
STUDY_WIDE_REFUSED = ("config key stats.study_wide: study-wide control across claims is not "
                      "defined with adaptive_seeds (each look decides its driving claims at "
                      "its boundary's level, which Holm or Bonferroni cannot lower); set "
                      "stats.study_wide: none, or remove adaptive_seeds")


def seeds_at(configured: list[int], n: int) -> list[int]:
    """The first n seeds of a recipe: its configured ones, then the next integers."""
    extra = range(max(configured) + 1, max(configured) + 1 + max(n - len(configured), 0))
    return [*configured, *extra][:n]


def trained_arms(claim: Claim) -> list[tuple]:
    """The claim's bi-encoder arms that have seeds (the untrained base has none)."""
    keys = [k for m in claim.members for k in (m.a, m.b) if k is not None and k[0] != BASE]
    return list(dict.fromkeys(keys))


def driving(claims: list[Claim], adaptive: dict) -> list[Claim]:
    """The driving claims, in the config's order."""
    ids = set(adaptive["claims"])
    return [c for c in claims if c.id in ids]


def start(claims: list[Claim], recipe_seeds: dict) -> int:
    """The seeds every driving arm starts with (check() makes them one number)."""
    return min(len(recipe_seeds[k[0]]) for c in claims for k in trained_arms(c))


def errors(adaptive: dict | None, claims: list[Claim], recipe_seeds: dict,
           study_wide: str = "none") -> list[str]:
    """What makes `adaptive_seeds` unusable with these claims (and stats.study_wide, the
    control across claims: refused with looks), naming the key."""
    if not adaptive:
        return []
    if study_wide != "none":
        return [STUDY_WIDE_REFUSED]
    by_id = {c.id: c for c in claims}
    for i, cid in enumerate(adaptive["claims"]):
        where = f"{WHERE}.claims[{i}]"
        claim = by_id.get(cid)
        if claim is None:
            return [f"{where}: {cid!r} is not a claim id of this config (ids: "
                    f"{', '.join(by_id) or 'none'})"]
        if claim.not_applicable:
            return [f"{where}: claim {cid} is not-applicable ({claim.not_applicable})"]
        other = sorted({m.study for m in claim.members} - {"biencoder"})
        if other:
            return [f"{where}: claim {cid} reads the {other[0]} study; only bi-encoder "
                    "claims (per-query evaluations of trained models) can add seeds"]
        if not trained_arms(claim):
            return [f"{where}: claim {cid} has no trained arm to add seeds to"]
    chosen = driving(claims, adaptive)
    counts = {r: len(recipe_seeds[r]) for c in chosen for r, *_ in trained_arms(c)}
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{r} has {n}" for r, n in counts.items())
        return [f"{WHERE}.claims: the driving claims' recipes start with different numbers "
                f"of seeds ({listed}); the looks add seeds to every arm alike: give them "
                "the same number"]
    first = start(chosen, recipe_seeds)
    if adaptive["max_seeds"] <= first:
        return [f"{WHERE}.max_seeds: {adaptive['max_seeds']} is not more than the {first} "
                "seeds the driving claims' recipes start with"]
    key = "looks" if adaptive.get("looks") is not None else "step"
    try:
        look_plan.plan_looks(first, adaptive["max_seeds"], adaptive.get("step"),
                             adaptive.get("looks"))
    except ValueError as e:
        return [f"{WHERE}.{key}: {e}"]
    return []


def arm_rows(arms: dict) -> list[list]:
    """{(recipe, strategy, depth): seeds} as JSON rows [recipe, strategy, depth, seeds]."""
    return [[*k, list(s)] for k, s in arms.items()]


def arms_of(rows: list[list]) -> dict:
    """JSON rows [recipe, strategy, depth, seeds] -> {(recipe, strategy, depth): seeds}."""
    return {(r, s, int(d)): [int(x) for x in seeds] for r, s, d, seeds in rows}
