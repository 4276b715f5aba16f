"""The seed counts at which seeds on demand decides its claims (docs/adaptive_seeds.md):
`plan_looks` from the recipes' seeds to the budget, by a step or an explicit list. Pure
Python, so that the config check can run it when the Snakefile is parsed; the looks' levels
are stats/sequential.py's."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

MIN_SEEDS = 2  # the calibrated interval needs 2 seeds to see the seed variance


def check_int(name: str, value) -> int:
    """`value` as an int (bool refused), else a ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {value!r}")
    return int(value)


def plan_looks(start: int, max_seeds: int, step: int | None = None,
               looks: Sequence[int] | None = None) -> list[int]:
    """The seed counts at which the claims are decided: `looks` itself when given (strictly
    increasing, from start to max_seeds), else start, start + step, ... (step 1 when not
    given) with max_seeds as the last look (also when step does not land on it)."""
    start, max_seeds = check_int("start", start), check_int("max_seeds", max_seeds)
    if start < MIN_SEEDS:
        raise ValueError(f"start must be at least {MIN_SEEDS} seeds (the calibrated interval "
                         f"needs {MIN_SEEDS} to see the seed variance); got {start}")
    if max_seeds < start:
        raise ValueError(f"max_seeds ({max_seeds}) must be at least start ({start})")
    if looks is not None:
        if step is not None:
            raise ValueError("give the looks or the step, not both")
        plan = check_looks(looks, "looks")
        if plan[0] != start:
            raise ValueError(f"looks must start at the {start} seeds the arms start with; "
                             f"got {plan}")
        if plan[-1] != max_seeds:
            raise ValueError(f"looks must end at max_seeds ({max_seeds}); got {plan}")
        return plan
    step = 1 if step is None else check_int("step", step)
    if step < 1:
        raise ValueError(f"step must be at least 1 seed; got {step}")
    return [*range(start, max_seeds, step), max_seeds]


def check_looks(seeds_per_look: Sequence[int], name: str = "seeds_per_look") -> list[int]:
    """The seed counts of the looks as ints: a list of at least one look, from MIN_SEEDS,
    strictly increasing; else a ValueError naming `name`."""
    if isinstance(seeds_per_look, (str, bytes)) or not isinstance(seeds_per_look, Sequence):
        raise ValueError(f"{name} must be a list of seed counts; got {seeds_per_look!r}")
    looks = [check_int(f"{name}[{i}]", n) for i, n in enumerate(seeds_per_look)]
    if not looks:
        raise ValueError(f"{name} must hold at least one look")
    if looks[0] < MIN_SEEDS:
        raise ValueError(f"{name} must start at {MIN_SEEDS} seeds or more; got {looks[0]}")
    bad = [i for i in range(1, len(looks)) if looks[i] <= looks[i - 1]]
    if bad:
        raise ValueError(f"{name} must increase strictly; got {looks} (look {bad[0]}: "
                         f"{looks[bad[0]]} after {looks[bad[0] - 1]})")
    return looks
