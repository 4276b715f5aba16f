"""Seeds on demand: one look of a group-sequential design over the driving claims
(config `adaptive_seeds`, docs/adaptive_seeds.md).

The looks are planned before any data: the seeds per arm at each look (stats/look_plan.py
`plan_looks`: from the recipes' seeds to `max_seeds` by `step`, or the configured `looks`)
and the one-sided level of each look (stats/sequential.py `look_alphas`, an alpha-spending
boundary that holds
the error rate over all planned looks). At look k every driving claim still open is decided
at its arms' seeds of that look with level alpha_k (claims/decide.py, the claims' own tests);
then each open claim either

  is decided (supported or refuted): frozen, its verdict that of this look;
  cannot be decided by seeds: the examples limit it (stats/seed_planning.seeds_for_margin
      finds no seed count whose expected interval reaches the threshold, even at the most
      lenient level of the looks left: the last under O'Brien-Fleming spending, the next
      under Pocock's, whose levels fall): frozen inconclusive, with the reason;
  stays open: its trained arms get the next look's seeds (the planner's estimate of the
      seeds it needs is reported, not used: from a few seeds it is too noisy to stop on).

The last planned look decides what is open, inconclusive if not settled (budget spent). A
look with no claim left open stops. Each look writes one JSON document: the plan (claims/
looks/plan.py: the driving claims, budget, spending, seeds and levels; a look whose previous
document has another plan is refused, `refusal` says what a reset does), every driving
claim's state, one row per member (seeds, boundary, statistic, verdict) and the
arms' seeds of the next look, which the workflow reads to train and evaluate only those
(rules/looks.smk).

  python -m workflow_scripts.claims.looks --settings-json S --grid-json G \\
      --adaptive-json A --look K [--previous lookK-1.json] --results results/STUDY --out lookK.json
  python -m workflow_scripts.claims.looks --gather look0.json ... --out claims_looks.parquet
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

from workflow_scripts.claims import data as claims_data
from workflow_scripts.claims import decide, registration, spec
from workflow_scripts.claims.looks import arms as look_arms
from workflow_scripts.claims.looks import plan as look_plan_doc
from workflow_scripts.core import contracts, notation, paths
from workflow_scripts.core.settings import Claims, Looks
from workflow_scripts.stats.seed_planning import ASSURANCE

DECIDED = ("supported", "refuted")
# Per (look, member): the seeds per trained arm, the look's boundary, the statistic.
COLUMNS = ("look", "claim", "member", "seeds", "boundary", "estimate", "ci_low", "ci_high",
           "p_support", "p_refute", "verdict", "claim_verdict", "status", "reason")


def _need(members: list[dict], column: str = "seeds_needed") -> float:
    """Seeds per arm at which the planner says the claim could be settled (NaN: by no seed
    count). Supported needs every inconclusive member supported, so every one leaning that
    way (p_support < p_refute) with a finite count; refuted needs one member refuted, so one
    leaning that way with a finite count. column: "seeds_needed" (decided in at least
    seed_planning.ASSURANCE of studies like it) or "seeds_at_margin" (the expected interval
    reaches the threshold; NaN: the examples limit it, the stop)."""
    open_ = [(m.get(column, math.nan), m.get("p_support", math.nan) <
              m.get("p_refute", math.nan)) for m in members if m["verdict"] == "inconclusive"]
    support = (max(n for n, _ in open_) if open_ and all(math.isfinite(n) and lean
                                                           for n, lean in open_) else math.nan)
    refute = min((n for n, lean in open_ if math.isfinite(n) and not lean), default=math.nan)
    return min((n for n in (support, refute) if math.isfinite(n)), default=math.nan)


def plan_level(alphas: list[float], k: int) -> tuple[int, float]:
    """(look, level) a claim open at look k is planned at: the most lenient look left (the
    last under O'Brien-Fleming spending; the next under Pocock's, whose levels fall), since
    only a later look can settle it; look k itself at the last look."""
    j = max(range(k + 1, len(alphas)), key=lambda i: (alphas[i], i), default=k)
    return j, alphas[j]


def _state(verdict: str, need: float, k: int, seeds: list[int], budget: int,
           plan: tuple[int, float], limit: float | None = None) -> tuple:
    """(status, reason) of a claim decided at look k; `need` (the seeds that decide it in
    seed_planning.ASSURANCE of studies like it) and `limit` (the seeds at which its expected
    interval reaches the threshold; NaN: the examples limit it, and it stops; None: need's)
    are planned at `plan` (look, level: plan_level, yet stricter than the (1 - ci) / 2 at
    which claims.md counts the seeds to settle a claim): the reason says which level."""
    if verdict in DECIDED:
        return "decided", f"{verdict} at look {k} ({seeds[k]} seeds per arm)"
    if verdict != "inconclusive":
        return "stopped", f"{verdict}: no seeds added"
    if k == len(seeds) - 1:
        return "budget spent", f"still inconclusive at the budget of {budget} seeds per arm"
    if not math.isfinite(need if limit is None else limit):
        return "examples limit", ("no seeds added: more seeds alone would not settle it "
                                  f"(seeds to settle it: {notation.UNREACHABLE}, the "
                                  "examples limit it)")
    at = ("the last look's" if plan[0] == len(seeds) - 1 else f"look {plan[0]}'s")
    count = f"{need:.0f}" if math.isfinite(need) else f"{notation.UNREACHABLE} in {ASSURANCE:.0%}"
    return "open", (f"{seeds[k + 1]} seeds per arm at look {k + 1} (planner: {count} at "
                    f"{at} α = {plan[1]:.3g}, the most lenient left)")


def run_look(k: int, settings: Claims, grid: spec.Grid, adaptive_cfg: dict,
             previous: dict | None, results, threads=None) -> dict:
    claims = spec.parse(settings.claims, grid)
    driving = look_arms.driving(claims, adaptive_cfg)
    the_plan = look_plan_doc.record(settings.ci, adaptive_cfg, claims, grid.recipe_seeds)
    seeds, alphas = the_plan["seeds"], the_plan["alphas"]
    if k >= len(seeds):
        raise ValueError(f"look {k} is beyond the {len(seeds)} planned looks ({seeds})")
    if (previous is None) != (k == 0) or (previous and previous["look"] != k - 1):
        raise ValueError(f"look {k} needs look {k - 1}'s document (--previous)")
    if previous and previous["plan"] != the_plan:
        raise ValueError(refusal(k, previous["plan"], the_plan, results))
    state = dict(previous["claims"]) if previous else {}
    live = [c for c in driving if state.get(c.id, {}).get("status", "open") == "open"]
    arms = {key: look_arms.seeds_at(grid.recipe_seeds[key[0]], seeds[k])
            for c in live for key in look_arms.trained_arms(c)}
    data = claims_data.load(results, grid, live, arms)
    options, rows = decide.Options(settings, threads), []
    planned = plan_level(alphas, k)
    for c in live:
        # Decided at this look's level; planned at the most lenient look left (what could
        # still settle it).
        head, *members = decide.decide_claim(c, data, options, alphas[k], planned[1])
        # Stopped only where the examples limit it (the rule validation/sequential.py measured);
        # the reason shows the assured count.
        status, reason = _state(head["verdict"], _need(members), k, seeds,
                                adaptive_cfg["max_seeds"], planned,
                                _need(members, "seeds_at_margin"))
        state[c.id] = {"status": status, "verdict": head["verdict"], "reason": reason,
                       "look": k, "alpha": alphas[k],
                       "arms": look_arms.arm_rows({key: arms[key]
                                                  for key in look_arms.trained_arms(c)})}
        rows += [{"look": k, "claim": c.id, "member": m["member"], "seeds": seeds[k],
                  "boundary": alphas[k], "estimate": m.get("estimate", math.nan),
                  "ci_low": m.get("ci_low", math.nan), "ci_high": m.get("ci_high", math.nan),
                  "p_support": m.get("p_support_holm", math.nan),
                  "p_refute": m.get("p_refute_holm", math.nan), "verdict": m["verdict"],
                  "claim_verdict": head["verdict"], "status": status, "reason": reason}
                 for m in members]
    still = [c for c in live if state[c.id]["status"] == "open"]
    nxt = {key: look_arms.seeds_at(grid.recipe_seeds[key[0]], seeds[k + 1])
           for c in still for key in look_arms.trained_arms(c)}
    return {"look": k, "plan": the_plan, "claims": state,
            "rows": rows, "next": look_arms.arm_rows(nxt), "stop": not still}


def refusal(k: int, made: dict, configured: dict, results) -> str:
    """Why look k does not follow a previous look made with another plan, and what a reset
    does: the registration keeps the first plan, so the claims a plan changed after their
    data drives are post hoc. results: the study's results folder."""
    drives = ", ".join(dict.fromkeys([*made.get("claims", []), *configured["claims"]]))
    doc = Path(results) / paths.LOOK.format(k=k - 1)
    registry = Path(results) / paths.CLAIMS_REGISTRY
    return (f"look {k - 1}'s document ({doc}) was made with another "
            f"look plan ({registration.describe_plan(made)}) "
            f"than the config's ({registration.describe_plan(configured)}). To restart the "
            f"looks with the config's plan, remove {doc.parent}; the reset is recorded: "
            f"{registry} keeps the first plan in its history, so the new looks "
            f"come after their data and the claims they drive ({drives}) will be decided and "
            "shown as post hoc (not covered by the error rate). To keep them registered, "
            "restore the plan the looks were made with.")


def final_arms(look: dict) -> dict:
    """{claim id: ({arm key: seeds}, alpha)}: where the last look left each driving claim."""
    return {cid: (look_arms.arms_of(s["arms"]), s["alpha"]) for cid, s in look["claims"].items()}


def gather(paths) -> pd.DataFrame:
    """One row per (look, member) of every look document, in look order."""
    rows = [r for p in paths for r in json.loads(Path(p).read_text(encoding="utf-8"))["rows"]]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def registration_text(record: dict, plan: dict) -> str:
    """What the registration (claims/registration.py) says of the looks' plan: registered
    before its data, so the starting seeds' report is its look 0, decided at that look's
    level; or post hoc, and why."""
    entry = record.get("looks")
    drives = ", ".join(plan["claims"])
    where = f"the study's {paths.CLAIMS_REGISTRY}"
    if registration.plan_status(record, plan) == registration.REGISTERED:
        return (f"**Registered before the data.** This plan was recorded in {where} at "
                f"{entry['registered_at']}, before any data of the claims it drives "
                f"({drives}) existed: the report at the starting {plan['seeds'][0]} seeds per "
                f"arm is look 0 of this plan, so those claims are decided there at its level "
                f"{plan['alphas'][0]:.3g} (not at the fixed-seed α), and the error rate covers "
                "the looks as planned.")
    if entry is None or entry["fingerprint"] != registration.plan_fingerprint(plan):
        why = f"it is not the plan {where} records"
    elif entry.get("history"):
        first, off = entry["history"][0], [h for h in entry["history"] if h["plan"] is None]
        how = (f"seeds on demand was turned off at {off[-1]['registered_at']} (its fixed-seed "
               "report at α is a look the plan does not count)" if off else
               "the looks were reset")
        why = (f"it was recorded at {entry['registered_at']}, after their data existed, in "
               f"place of the plan first registered at {first['registered_at']} "
               f"({registration.describe_plan(first['plan'])}): {how}")
    else:
        why = (f"it was recorded at {entry['registered_at']}, after their data existed: the "
               "fixed-seed report at α was a look the plan does not count")
    return (f"**Post hoc.** The claims this plan drives ({drives}) are post hoc, their "
            f"verdicts not covered by the error rate: {why}.")


def markdown(paths, recipe_seeds: dict, record: dict | None = None) -> str:
    """The looks' section of claims.md: the plan (and, given the registration's `record`,
    whether it was registered before its data), the path of every driving claim."""
    looks = [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]
    df = gather(paths)
    last = looks[-1]
    seeds, alphas = last["plan"]["seeds"], last["plan"]["alphas"]
    configured = "; ".join(f"{r}: {', '.join(map(str, s))}" for r, s in recipe_seeds.items())
    out = ["### Seeds on demand", "",
           f"Planned looks at {', '.join(map(str, seeds))} seeds per arm, one-sided "
           f"boundaries {', '.join(f'{a:.3g}' for a in alphas)} (alpha spent over the looks; "
           "docs/adaptive_seeds.md). A member is supported at a look when p_support is at most "
           "the look's boundary, refuted when p_refute is. The driving claims above are "
           "decided as at the look that settled them; every other claim, table and figure "
           f"uses the configured seeds ({configured}), and the training compute and usage "
           "tables count only those trainings.", ""]
    if record is not None:  # (a document made before plans named their claims: the looks')
        out += [registration_text(record, {"claims": list(last["claims"]), **last["plan"]}), ""]
    for cid, s in last["claims"].items():
        out.append(f"- **{cid}** ({s['verdict']}, look {s['look']}): {s['reason']}")
    out.append("")
    weakest = df.loc[df["p_support"].fillna(-1.0).groupby(
        [df["look"], df["claim"]], sort=False).idxmax().values]
    out.append(notation.pipe_table(
        [[str(r.look), r.claim, str(r.seeds), f"{r.boundary:.3g}", _p(r.p_support),
          _p(r.p_refute), r.claim_verdict] for r in weakest.itertuples()],
        ["look", "claim", "seeds per arm", "boundary", "p_support (weakest member)",
         "p_refute", "verdict"]))
    return "\n".join(out) + "\n"


def _p(p) -> str:
    return "—" if p is None or not math.isfinite(p) else f"{p:.3g}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m workflow_scripts.claims.looks",
                                 description="One look of seeds on demand, or gather them.")
    ap.add_argument("--settings-json", help="core/settings.py Claims as JSON")
    ap.add_argument("--grid-json", help="claims/spec.py Grid as JSON")
    ap.add_argument("--adaptive-json", help="core/settings.py Looks as JSON")
    ap.add_argument("--look", type=int)
    ap.add_argument("--previous", help="the previous look's document (looks after the first)")
    ap.add_argument("--results", help="the study's results folder (a look)")
    ap.add_argument("--gather", nargs="+", help="look documents -> one table (--out)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int)
    a = ap.parse_args(argv)
    if a.gather:
        contracts.write_parquet(a.out, gather(a.gather))
        return
    if None in (a.settings_json, a.grid_json, a.adaptive_json, a.look, a.results):
        ap.error("a look needs --settings-json, --grid-json, --adaptive-json, --look and "
                 "--results")
    previous = (json.loads(Path(a.previous).read_text(encoding="utf-8"))
                if a.previous else None)
    try:
        doc = run_look(a.look, Claims.from_json(a.settings_json),
                       spec.Grid.from_dict(json.loads(a.grid_json)),
                       json.loads(Looks.from_json(a.adaptive_json).to_json()), previous,
                       a.results, a.threads)
    except ValueError as e:  # SettingsError too
        sys.exit(f"error: {e}")
    contracts.write_text(a.out, json.dumps(doc, indent=1, allow_nan=True) + "\n")
    for cid, s in doc["claims"].items():
        print(f"look {a.look}: {cid}: {s['status']} ({s['reason']})")
