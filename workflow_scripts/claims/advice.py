"""What an inconclusive member's seed plan means, in one sentence a researcher can act on.

claims/decide.py plans each inconclusive member (claims/contrast.seeds_needed: the assured
count, its share and the coin-flip count, stats/seed_planning.py) at the level that decides
it, and writes this sentence as the member's note; claims.md prints it and its rules say
what "studies like this one" means (MEANING). The sentence is chosen by the plan's own
quantities:

  examples limit   no seed count's expected interval reaches the threshold (seeds_at_margin
                   none): seeds cannot settle it, more test queries can
  unreachable      some count reaches the threshold but none decides it in ASSURANCE of
                   studies like this one (seeds_needed none): the queries limit it too
  large            more than LARGE_SEEDS: the estimate sits near its threshold; the
                   coin-flip count and seeds on demand are the cheaper step
  settled by n     n seeds per arm

Every count is an average over the true effects the estimate leaves open (a flat prior,
seed_planning.seeds_for_assurance): at one fixed effect the share is higher or lower
(docs/methods.md, "The planner", measured it), so the sentence says "on average".
"""

from __future__ import annotations

import math

from workflow_scripts.stats.seed_planning import ASSURANCE

# Beyond this many seeds per arm a count is "large": several times the 3 seeds a default
# study trains, where a plan's long right tail begins (docs/methods.md: the assured count's
# median is 18-33 where seeds matter) and where adding seeds at once costs most.
LARGE_SEEDS = 20

MEANING = (f"\"n seeds per arm would settle it\": with n seeds per arm, on average over the "
           f"true effects its interval leaves open, the claim would be decided in at least "
           f"{ASSURANCE:.0%} of studies like this one (a small true effect is decided less "
           "often, a large one more); the count is planned at the level that decides the "
           "member: α where it leans to support, Holm's α/m in a claim of m members where it "
           "leans to refute (docs/methods.md, \"The planner\")")


def level_text(alpha: float, members: int = 1) -> str:
    """'α = 0.025', or for a member planned at Holm's first level 'α/6 = 0.00417'."""
    if members > 1:
        return f"α/{members} = {alpha / members:.3g}"
    return f"α = {alpha:.3g}"


def _seeds(n: float) -> str:
    k = int(math.ceil(n))
    return f"{k} seed{'s' * (k != 1)}"


def seeds_note(needed: float, share: float, at_margin: float, alpha: float,
               members: int = 1, test: str = "") -> str:
    """The plan in one sentence. needed: the assured count (NaN: none reaches ASSURANCE);
    share: the share decided there, or with unlimited seeds where needed is NaN; at_margin:
    the coin-flip count (NaN: the examples limit it); alpha: the one-sided level the row was
    decided at; members: m where the member was planned at Holm's alpha / m (1: at alpha);
    test: the member's test (an equivalence can also widen its margin ε)."""
    level = level_text(alpha, members)
    wider = " or a wider ε" if test == "equivalent" else ""
    if not math.isfinite(at_margin):
        return (f"No number of seeds settles it at {level}: the test queries' noise alone "
                f"keeps its interval across the threshold, so only more test queries{wider} "
                "would")
    if not math.isfinite(needed):
        unlimited = f"{share:.0%}" if math.isfinite(share) else "fewer"
        return (f"No number of seeds settles it at {level} in {ASSURANCE:.0%} of studies "
                f"like this one (unlimited seeds: {unlimited}; {_seeds(at_margin)} per arm: "
                f"about a coin flip): the test queries limit it, so more test queries{wider} would "
                "help more than seeds")
    head = (f"{_seeds(needed)} per arm would settle it at {level} in {ASSURANCE:.0%} of "
            "studies like this one, on average over the effects its interval leaves open")
    if needed > LARGE_SEEDS:
        return (f"{head}; it lies near its threshold, where {_seeds(at_margin)} per arm are "
                "about a coin flip: add seeds in planned looks (adaptive_seeds) rather than "
                f"{int(math.ceil(needed))} at once")
    return head

