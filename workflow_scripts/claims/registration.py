"""Claims registered before their data: a claim's error rate holds only if it was stated
before its evaluations existed, so the workflow records each claim (its id, statement and a
fingerprint of its whole config entry) the first time a run starts, with whether any of its
input files already existed then, and with everything else that decides it: its arms' seeds
(`arm_seeds`) and its analysis (`analysis`: the grid its members range over, the settings
of the models they name, the metric, the CI level and the interval method:
core/deciding_keys.py's DECIDING_KEYS, the one list). The claims stage reads that record: a
claim whose entry matches what the config says now and predates its data is `registered`;
one added, edited or decided on another analysis after its data existed, or missing from
the record, is `post hoc` and shown so (its verdict is not covered by the error rate). A
grid edit that changes the arms a claim ranges over (`depth: all` with a depth fewer)
decides it on the new grid, post hoc, never silently on a narrower question.

With seeds on demand the record holds the whole look plan too (claims/looks/plan.py: the
driving claims, the budget, the spending, each look's seeds and level), registered before
its data when none of the driving claims' data existed then. A plan recorded after that (a
finished fixed-seed study, then `adaptive_seeds` turned on: the fixed-seed report at α was
a look the plan does not count) or changed after it (the looks reset) makes every claim it
drives post hoc.

The record (paths.CLAIMS_REGISTRY) only grows: an edited claim or plan gets a new entry, the
old one moves to its history: one edited after its data stays post hoc, even edited back.
Pure functions plus read and write; rules/claims.smk calls `register_study` when a run
starts, and with dry=True on a dry run (which prints the same lines and writes nothing).
Imports the standard library and core/ only: the Snakefile calls it at parse time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from workflow_scripts.claims.analysis import analysis, arm_seeds, changes
from workflow_scripts.core import contracts

REGISTERED, POST_HOC = "registered", "post hoc"
_KEPT = ("fingerprint", "registered_at", "before_data", "seeds", "analysis")  # in history


def _hash(value) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint(claim: dict) -> str:
    """Hash of the claim's config entry (every key: statement, arms, test, threshold ...)."""
    return _hash(claim)


def plan_fingerprint(plan: dict) -> str:
    """Hash of the look plan (claims/looks/plan.py `record`); its levels to 10 significant
    digits, so that a last-digit difference of another machine's libm is the same plan."""
    return _hash({**plan, "alphas": [float(f"{a:.10g}") for a in plan["alphas"]]})


def _history(old: dict | None, *keys: str) -> list[dict]:
    if not old:
        return []
    return [*old.get("history", []), {k: old[k] for k in (*_KEPT, *keys) if k in old}]


def describe_plan(plan: dict) -> str:
    """'looks at 3, 6, 10 seeds per arm, one-sided boundaries 4.27e-05, 0.00377, 0.0212
    (obrien-fleming), driving a, b': a plan as the messages and claims.md name it (a look
    document made before plans named their spending and claims: seeds and levels only)."""
    text = (f"looks at {', '.join(map(str, plan['seeds']))} seeds per arm, one-sided "
            f"boundaries {', '.join(f'{a:.3g}' for a in plan['alphas'])}")
    if "spending" in plan:
        text += f" ({plan['spending']})"
    return text + (f", driving {', '.join(plan['claims'])}" if plan.get("claims") else "")


def update(record: dict, claims: Iterable[dict], has_data: Callable[[dict], bool],
           now: str, seeds_of: Callable[[dict], dict] | None = None,
           analysis_of: Callable[[dict], dict] | None = None) -> tuple[dict, list[str]]:
    """The record with an entry for every claim it lacks or whose fingerprint, seeds or
    analysis changed (before_data: has_data(claim) is false now), and one line per new
    entry. seeds_of: the seeds of a claim's trained arms per recipe (`arm_seeds`), kept in
    its entry: deciding a claim again on other seeds after its data existed (the planner's
    count followed by editing the recipes) is a look no plan counts, so the claim gets a new
    entry, post hoc. analysis_of: what else decides it (`analysis`), kept likewise: an
    analysis chosen after seeing the data (another interval method, a grid edit that
    narrows its range) gets a new entry, post hoc, its `changed` keys named. An entry
    recorded before a field or key was kept adopts it. The look plan's entry (`update_plan`)
    is kept as it is."""
    entries = {k: dict(v) for k, v in record.get("claims", {}).items()}
    said = []
    for claim in claims:
        fp, old = fingerprint(claim), entries.get(claim["id"])
        seeds = seeds_of(claim) if seeds_of else None
        now_analysis = analysis_of(claim) if analysis_of else None
        same = old is not None and old["fingerprint"] == fp
        moved = same and seeds is not None and not _same_seeds(old.get("seeds"), seeds)
        changed = changes(old.get("analysis"), now_analysis or {}) if same else []
        if same and not moved and not changed:
            adopted = {**old, **({"seeds": seeds} if seeds is not None else {}),
                       **({"analysis": {**old.get("analysis", {}), **now_analysis}}
                          if now_analysis is not None else {})}
            entries[claim["id"]] = adopted
            continue
        before = not has_data(claim)
        reseeded = ([f"its arms' seeds changed ({_seeds_text(old['seeds'])} -> "
                     f"{_seeds_text(seeds)})"] if moved else [])
        what = reseeded + changed  # kept in the entry: why it is post hoc
        text = "; ".join(reseeded + ([_changed_text(changed)] if changed else []))
        entries[claim["id"]] = {"fingerprint": fp, "statement": claim.get("statement", ""),
                                "registered_at": now, "before_data": before,
                                **({"seeds": seeds} if seeds is not None else {}),
                                **({"analysis": now_analysis}
                                   if now_analysis is not None else {}),
                                **({"changed": what} if what and not before else {}),
                                "history": _history(old, "statement", "changed")}
        if not same:
            said.append(f"claims: {'edited' if old else 'new'} claim {claim['id']!r} "
                        "registered " + ("before its data" if before else
                                         "after its data existed: it will be decided as "
                                         "post hoc"))
        elif before:
            said.append(f"claims: claim {claim['id']!r}: {text} before its data")
        elif moved:
            said.append(f"claims: claim {claim['id']!r}: {text} after its data "
                        "existed: deciding it again on other seeds is a look no plan counts "
                        "(seeds on demand adds seeds within the error rate: "
                        "docs/adaptive_seeds.md); it will be decided as post hoc")
        else:
            said.append(f"claims: claim {claim['id']!r}: {text} after its data existed: it "
                        "will be decided as post hoc, on what the config says now")
    return {**record, "claims": entries}, said


def _changed_text(changed: list[str]) -> str:
    return "its analysis changed: " + ", ".join(changed)


def _seeds_text(seeds: dict) -> str:
    return "; ".join(f"{r}: {', '.join(map(str, s))}" for r, s in seeds.items())


def _same_seeds(recorded: dict | None, seeds: dict) -> bool:
    """The seeds an entry recorded are these; a key it lacks (recorded before that kind of
    arm's seeds were: the ladder's) is adopted, not a change."""
    return recorded is None or all(recorded.get(k, v) == v for k, v in seeds.items())


def update_plan(record: dict, plan: dict | None, had_data: bool, now: str,
                ) -> tuple[dict, list[str]]:
    """The record with `plan` (claims/looks/plan.py `record`; None: seeds on demand is off)
    as its look plan where it is new or changed (before_data: had_data, whether any driving
    claim's data existed, is false), the previous plan moved to the entry's history; and the
    line that says so. Off after a plan is a change too: the fixed-seed report it gives is a
    look no plan counts, so a plan turned on again after the data is post hoc."""
    old = record.get("looks")
    if plan is None:
        if old is None or old["plan"] is None:
            return record, []
        entry = {"fingerprint": None, "plan": None, "registered_at": now,
                 "before_data": not had_data, "history": _history(old, "plan")}
        return {**record, "looks": entry}, [
            f"seeds on demand: turned off; the look plan registered at {old['registered_at']} "
            "stays in the record's history, and a plan turned on again after its driving "
            "claims' data existed will make them post hoc"]
    fp = plan_fingerprint(plan)
    if old is not None and old["fingerprint"] == fp:
        return record, []
    entry = {"fingerprint": fp, "plan": plan, "registered_at": now,
             "before_data": not had_data, "history": _history(old, "plan")}
    what = "changed" if old else "new"
    line = f"seeds on demand: {what} look plan ({describe_plan(plan)}) registered "
    if not had_data:
        line += "before its driving claims' data"
    else:
        if old is None:
            why = "their fixed-seed report at α was a look this plan does not count"
        elif old["plan"] is None:
            why = (f"seeds on demand was off from {old['registered_at']}: the fixed-seed "
                   "report at α was a look this plan does not count")
        else:
            why = (f"it replaces the plan registered at {old['registered_at']}, kept in the "
                   "record's history: the looks restart")
        line += (f"after its driving claims' data existed ({why}): "
                 f"{', '.join(plan['claims'])} will be decided as post hoc")
    return {**record, "looks": entry}, [line]


def plan_status(record: dict, plan: dict) -> str:
    """registered: the record's look plan is `plan` and was recorded before its data."""
    entry = record.get("looks")
    ok = (entry is not None and entry["fingerprint"] == plan_fingerprint(plan)
          and entry["before_data"])
    return REGISTERED if ok else POST_HOC


def status(record: dict, claim: dict, plan: dict | None = None,
           seeds: dict | None = None, analysis: dict | None = None) -> str:
    """registered: recorded with this fingerprint before any of its data existed, on these
    `seeds` (`arm_seeds`) and this `analysis` (`analysis`: where given and recorded), and,
    for a claim that `plan` (the looks' plan, where seeds on demand decided it) drives, that
    plan registered before its data too."""
    return REGISTERED if not why_post_hoc(record, claim, plan, seeds, analysis) else POST_HOC


def why_post_hoc(record: dict, claim: dict, plan: dict | None = None,
                 seeds: dict | None = None, analysis: dict | None = None) -> str:
    """Why `status` says post hoc, in a clause ('' where registered): 'stats.interval
    (calibrated -> multibootstrap) changed after its data existed' and the like, for
    whatever shows a claim's label."""
    entry = record.get("claims", {}).get(claim["id"])
    if entry is None:
        return "not in the registration record"
    if entry["fingerprint"] != fingerprint(claim):
        return "its entry was edited since it was registered"
    if seeds is not None and not _same_seeds(entry.get("seeds"), seeds):
        return "its arms' seeds changed since it was registered"
    if analysis is not None and (now := changes(entry.get("analysis"), analysis)):
        return f"{'; '.join(now)} changed since it was registered"
    if not entry["before_data"]:
        if entry.get("changed"):
            return f"{'; '.join(entry['changed'])} changed after its data existed"
        return "added or edited after its data existed"
    if plan is not None and claim["id"] in plan["claims"] and (
            plan_status(record, plan) != REGISTERED):
        return "the look plan that drives it was not registered before its data"
    return ""


def read(path) -> dict:
    """The record, or an empty one where there is none yet."""
    path = Path(path)
    if not path.exists():
        return {"claims": {}}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise contracts.DataError(f"{path}: not valid JSON ({e}); it records when each claim "
                                  "was registered, so it is not rewritten") from e
    if not isinstance(record.get("claims"), dict):
        raise contracts.DataError(f"{path}: no 'claims' mapping")
    looks = record.get("looks")
    if looks is not None and not (isinstance(looks, dict)
                                  and {"fingerprint", "plan", "before_data"} <= set(looks)):
        raise contracts.DataError(f"{path}: 'looks' is not a look plan's entry (fingerprint, "
                                  "plan, before_data); it records when the plan was "
                                  "registered, so it is not rewritten")
    return record


def register_study(path, settings, parsed, results, grid, looks=None,
                   dry: bool = False) -> None:
    """`register` for a workflow run: a claim has data when any of its input files
    (claims/layout.py, from its parsed form in `parsed`) exists; `settings` the Claims stage
    settings, `looks` the Looks stage's with seeds on demand (else None): its plan is
    recorded too. The new entries' lines go to stderr; dry: read only (a dry run), the
    lines of the claims and plan the run would record post hoc, marked so."""
    import sys

    from workflow_scripts.claims.layout import input_files

    by_id = {c.id: c for c in parsed}

    def has_data(entry: dict) -> bool:
        return any(Path(p).exists() for p in input_files(results, grid, [by_id[entry["id"]]]))

    plan = None
    if looks is not None:
        from workflow_scripts.claims.looks.plan import record as plan_record

        plan = plan_record(settings.ci, json.loads(looks.to_json()), parsed,
                           grid.recipe_seeds)

    def seeds_of(entry: dict) -> dict:
        return arm_seeds(by_id[entry["id"]], grid)

    def analysis_of(entry: dict) -> dict:
        return analysis(by_id[entry["id"]], grid)

    if dry:
        for line in would_post_hoc(path, settings.claims, has_data, plan, seeds_of,
                                   analysis_of):
            print(f"dry run (nothing recorded): {line}", file=sys.stderr)
        return
    for line in register(path, settings.claims, has_data, plan, seeds_of, analysis_of):
        print(line, file=sys.stderr)


def register(path, claims: Iterable[dict], has_data: Callable[[dict], bool],
             plan: dict | None = None, seeds_of: Callable[[dict], dict] | None = None,
             analysis_of: Callable[[dict], dict] | None = None) -> list[str]:
    """Add the claims the record at `path` lacks, and the look plan `plan` where it is new
    or changed (its data: any of its driving claims' by has_data; None: seeds on demand is
    off, recorded where a plan was), written atomically; their lines."""
    before, record, said = _renewed(path, claims, has_data, plan, seeds_of, analysis_of)
    if record != before:  # new lines, or fields adopted by older entries
        contracts.write_json(path, record)
    return said


def would_post_hoc(path, claims: Iterable[dict], has_data: Callable[[dict], bool],
                   plan: dict | None = None, seeds_of: Callable[[dict], dict] | None = None,
                   analysis_of: Callable[[dict], dict] | None = None) -> list[str]:
    """The lines of `register` that record a claim or the look plan post hoc, the record
    left as it is (a dry run says which claims the run would make post hoc)."""
    before, record, said = _renewed(path, claims, has_data, plan, seeds_of, analysis_of)
    late = [f"claim {cid!r}" for cid, e in record["claims"].items()
            if e != before["claims"].get(cid) and not e["before_data"]]
    plan_late = record.get("looks") not in (None, before.get("looks")) and (
        not record["looks"]["before_data"])
    return [line for line in said if any(c in line for c in late)
            or (plan_late and line.startswith("seeds on demand"))]


def _renewed(path, claims, has_data, plan, seeds_of, analysis_of) -> tuple[dict, dict, list]:
    """(the record at `path`, the record `register` would write, its lines)."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    claims = list(claims)
    before = read(path)
    record, said = update(before, claims, has_data, now, seeds_of, analysis_of)
    by_id = {c["id"]: c for c in claims}
    had = plan is not None and any(has_data(by_id[c]) for c in plan["claims"])
    record, more = update_plan(record, plan, had, now)
    return before, record, said + more
