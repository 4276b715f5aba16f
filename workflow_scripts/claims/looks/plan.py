"""Seeds on demand, the look plan as a whole (docs/adaptive_seeds.md): the driving claims,
the budget, the spending function, the seeds per arm at each look and each look's one-sided
level. The looks' documents carry it (claims/looks/run.py refuses a look planned otherwise)
and the registration records it when a run starts (claims/registration.py: a plan recorded
after its driving claims' data existed makes them post hoc). Its own module, without the
claims' statistics, so that recording it at run start stays light.
"""

from __future__ import annotations

from workflow_scripts.claims.looks import arms as look_arms
from workflow_scripts.stats import intervals, look_plan, sequential


def plan(ci: float, adaptive_cfg: dict, claims: list, recipe_seeds: dict,
         ) -> tuple[list[int], list[float]]:
    """(seeds per arm at each look, the one-sided level of each look), fixed in advance."""
    first = look_arms.start(look_arms.driving(claims, adaptive_cfg), recipe_seeds)
    seeds = look_plan.plan_looks(first, adaptive_cfg["max_seeds"], adaptive_cfg.get("step"),
                                 adaptive_cfg.get("looks"))
    return seeds, sequential.look_alphas(seeds, intervals.alpha_of(ci), adaptive_cfg["spending"])


def record(ci: float, adaptive_cfg: dict, claims: list, recipe_seeds: dict) -> dict:
    """The whole plan as the look documents and the registration hold it."""
    seeds, alphas = plan(ci, adaptive_cfg, claims, recipe_seeds)
    return {"claims": [c.id for c in look_arms.driving(claims, adaptive_cfg)],
            "max_seeds": int(adaptive_cfg["max_seeds"]),
            "spending": adaptive_cfg["spending"], "seeds": seeds,
            "alphas": [float(a) for a in alphas]}
