"""Error rate of refuting an `equivalent` claim (claims/decide.py refute_equivalence_p) at the
boundary delta = epsilon, against the rule it replaced (the smaller of the two one-sided p),
on simulated paired studies where the one-sided calibrated test is itself near exact (many
examples; seed effects as given), over epsilon from far below the standard error to far
above it. Prints each rule's rejection rate at level alpha with a 95% Wilson interval.

    .venv/bin/python -m validation.equivalence_refute [--studies 20000] [--seeds 10]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from validation import model
from validation.montecarlo import wilson
from workflow_scripts.claims.decide import refute_equivalence_p
from workflow_scripts.stats import calibrated as cal


def one_study(rng, seeds: int, examples: int, seed_sd: float, eps: float):
    """(new p_refute, old p_refute) of one paired study with true delta = eps."""
    example = model.example_effects(rng, 1, examples, 0.2)
    a, b = (model.scores(rng, model.seed_effects(rng, 1, seeds, seed_sd), example, level=level,
                         noise_sd=0.1)[0] for level in (0.0, eps))

    def p(alternative: str, threshold: float) -> float:
        return cal.compare(a, b, design="paired", threshold=threshold,
                           alternative=alternative).p_value

    positive = cal.compare(a, b, design="paired").estimate >= 0
    side = "greater" if positive else "less"
    new = refute_equivalence_p(p(side, eps if positive else -eps),
                               p(side, -eps if positive else eps))
    return new, min(p("greater", eps), p("less", -eps))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--studies", type=int, default=20000)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--examples", type=int, default=1000)
    ap.add_argument("--seed-sd", type=float, default=0.0)
    ap.add_argument("--alpha", type=float, default=0.025)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(2026)
    se = math.sqrt(2 * 0.1**2 / (a.seeds * a.examples) + 2 * a.seed_sd**2 / a.seeds)
    print(f"{a.studies} paired studies, {a.seeds} seeds x {a.examples} examples, seed sd "
          f"{a.seed_sd}, se ~ {se:.4f}; refuted at p <= {a.alpha}, true delta = epsilon")
    for ratio in (0.01, 0.5, 1.0, 3.0):
        eps = ratio * se
        new = old = 0
        for _ in range(a.studies):
            n_p, o_p = one_study(rng, a.seeds, a.examples, a.seed_sd, eps)
            new += n_p <= a.alpha
            old += o_p <= a.alpha
        lo, hi = wilson(new, a.studies)
        olo, ohi = wilson(old, a.studies)
        print(f"  epsilon = {ratio:>4} se: folded p {new / a.studies:.4f} [{lo:.4f}, {hi:.4f}]"
              f"  (old min of sides {old / a.studies:.4f} [{olo:.4f}, {ohi:.4f}]), "
              f"ratio to alpha {new / a.studies / a.alpha:.2f} "
              f"(old {old / a.studies / a.alpha:.2f})", flush=True)


if __name__ == "__main__":
    main()
