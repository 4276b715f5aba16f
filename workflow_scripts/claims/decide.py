"""Decide claims: each member's estimate, interval and one-sided p-values, Holm over a claim's
members on the refute side, and the verdict (docs/claims.md has the rules).

A claim over several members is a conjunction ("at every depth"): supported when every member
is. By the intersection-union principle each member's own level-alpha test already bounds the
error of "supported" at alpha, so the support side takes no correction (`p_support_holm` is
`p_support`); "refuted" needs one member refuted, a union, and keeps Holm's correction.

Every estimate is a linear contrast that stats/intervals.compare tests (claims/contrast.py),
so each design and both interval methods serve every kind:
  difference            metric(b) - metric(a), designed as the stats stage does
                        (stats/design.py)
  mean                  metric(b) against a fixed arm of zeros (design "one arm (mean)")
  difference_of_diffs   (b - a) on one benchmark minus on another: the stratified mean of the
                        two benchmarks' arrays scaled by +2 and -2 (the stratified mean is
                        their unweighted mean, so this is exactly the signed sum)
  ratio                 metric(b) / metric(a): a test of ratio vs rho is a test of
                        b - rho * a vs 0; the interval is Fieller's, the rho where that
                        contrast's interval just reaches 0
Latency claims: claims/latency.py; a learning curve's onset: claims/onset.py.

Tests at level alpha = intervals.alpha_of(ci) = (1 - ci) / 2 one-sided, so a single claim is
decided exactly when its ci interval lies on one side of the threshold.

Across claims (stats.study_wide: holm, bonferroni) each claim counts once, at its decisive p
(`claim_p`), and is decided again at its step's level (`study_wide`, `decide`); docs/claims.md,
"The study as a whole".
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workflow_scripts.claims import advice
from workflow_scripts.claims.contrast import Contrast, compare, contrast, fieller, seeds_needed
from workflow_scripts.claims.data import Data, MissingInput
from workflow_scripts.claims.latency import decide_latency
from workflow_scripts.claims.layout import need_key
from workflow_scripts.claims.looks.arms import STUDY_WIDE_REFUSED
from workflow_scripts.claims.onset import decide_onset
from workflow_scripts.claims.spec import Claim, Member
from workflow_scripts.core.settings import Claims
from workflow_scripts.stats import intervals

COLUMNS = ("claim", "statement", "row", "member", "part", "study", "estimand", "test",
           "threshold", "epsilon", "benchmark", "metric", "estimate", "ci_low", "ci_high", "ci",
           "interval", "mb_ci_low", "mb_ci_high", "p_support", "p_refute", "p_support_holm",
           "p_refute_holm", "alpha", "verdict", "design", "resample", "caveats",
           "seeds_needed", "seeds_share", "seeds_at_margin", "note", "n_members", "last_step",
           "registration", "fragile", "holm_ci", "holm_ci_low", "holm_ci_high",
           "study_wide", "study_alpha", "p_decisive", "p_study_wide")
# "" where a row has none
TEXT_COLUMNS = ("caveats", "note", "member", "registration", "study_wide")


@dataclass(frozen=True)
class Options:
    """How the claims are decided: the Claims stage settings (core/settings.py: stats.* for
    the bi-encoder's intervals, ladder.stats.* for the ladder's, latency.* for the latency
    ratio's bootstrap; their defaults are config/schema.yaml's, none here) and the threads a
    bootstrap may use (the job's, not a setting; None: every usable CPU)."""

    settings: Claims
    threads: int | None = None

    def for_study(self, study: str) -> dict:
        s = self.settings
        if study == "ladder":
            return {"method": s.ladder_interval, "nboot": s.ladder_nboot, "ci": s.ladder_ci,
                    "seed": s.ladder_seed}
        return {"method": s.interval, "nboot": s.nboot, "ci": s.ci, "seed": s.seed}


def _add_caveat(row: dict, text: str) -> None:
    row["caveats"] = "; ".join(filter(None, [row.get("caveats", ""), text]))


def _p_values(m: Member, c: Contrast, opts: dict, threads, rho: float, g: dict,
              less: dict) -> dict:
    """p_support and p_refute of the member's test from its two one-sided comparisons."""
    if m.test == "equivalent":
        eq = intervals.equivalence(*c.sides(), epsilon=m.epsilon, design=c.design,
                                   alpha=intervals.alpha_of(opts["ci"]), resample=c.resample,
                                   threads=threads, method=opts["method"],
                                   nboot=opts["nboot"], seed=opts["seed"], **c.kwargs)
        # Refuted: |delta| > epsilon, the near side's test at its margin plus the far
        # side's at the other (refute_equivalence_p).
        positive = g["estimate"] >= 0
        near = (g if positive else less)["p_value"]
        far = compare(c, opts, "greater" if positive else "less",
                       -m.epsilon if positive else m.epsilon, threads, rho)["p_value"]
        return {"p_support": eq["equivalence_p"], "p_refute": refute_equivalence_p(near, far)}
    p = {"greater": g["p_value"], "less": less["p_value"]}
    if m.test == "consistent":
        return {"p_support": math.nan, "p_refute": min(p.values())}
    other = "less" if m.test == "greater" else "greater"
    return {"p_support": p[m.test], "p_refute": p[other]}


def decide_member(m: Member, data: Data, options: Options) -> dict:
    """The member's estimate, interval, p_support and p_refute (before Holm)."""
    if m.study == "latency":
        s = options.settings
        return decide_latency(m, data, s.ci, s.latency_nboot, s.latency_seed)
    if m.study == "curves":
        return decide_onset(m, data)
    opts, threads = options.for_study(m.study), options.threads
    c = contrast(m, data)
    ratio = m.estimate == "ratio"
    # The tested contrast: b - a against t, or b - rho * a against 0 for a ratio vs rho.
    t = {"greater": m.threshold, "less": m.threshold, "consistent": m.value}.get(m.test, 0.0)
    rho, at = (t, 0.0) if ratio else (1.0, t)
    # Equivalence is refuted beyond either margin: delta > epsilon or delta < -epsilon.
    above, below = (m.epsilon, -m.epsilon) if m.test == "equivalent" else (at, at)
    g = compare(c, opts, "greater", above, threads, rho)
    less = compare(c, opts, "less", below, threads, rho)
    # A mean is tested as single-baseline against zeros; what a reader needs is "one arm".
    design = "one arm (mean)" if m.a is None else c.design
    row = {"interval": g["interval"], "design": design, "resample": g["resample"],
           "ci": opts["ci"], "caveats": "; ".join(c.caveats), "estimate": g["estimate"],
           "ci_low": g["ci_low"], "ci_high": g["ci_high"], "mb_ci_low": g["mb_ci_low"],
           "mb_ci_high": g["mb_ci_high"]}
    if ratio:
        mean_a = c.mean_a()
        row["estimate"] = (g["estimate"] + t * mean_a) / mean_a if mean_a else math.nan
        row["ci_low"], row["ci_high"] = fieller(c, opts, row["estimate"], threads)
        row["mb_ci_low"] = row["mb_ci_high"] = math.nan  # Fieller with the main method only
    row.update(_p_values(m, c, opts, threads, rho, g, less))
    if m.test == "equivalent":
        margin = abs(m.epsilon - abs(row["estimate"]))
    else:
        margin = abs(g["estimate"] - at)
    if c.kwargs.get("borrowed"):
        # The equal-seed-variance assumption cannot be checked for the one-seed arm: the
        # same test with its borrowed seed sd doubled (variance x 4), for `fragile`.
        wide = dataclasses.replace(c, kwargs={**c.kwargs, "borrowed": [
            dataclasses.replace(t, coef=4 * t.coef) for t in c.kwargs["borrowed"]]})
        g2 = compare(wide, opts, "greater", above, threads, rho)
        less2 = compare(wide, opts, "less", below, threads, rho)
        row["_doubled"] = _p_values(m, wide, opts, threads, rho, g2, less2)
        low, high = (fieller(wide, opts, row["estimate"], threads) if ratio
                     else (g2["ci_low"], g2["ci_high"]))
        _add_caveat(row, f"with the borrowed seed sd doubled: [{low:.4f}, {high:.4f}]")
    row["_plan"] = (c, rho, margin, opts["method"])
    return row


def refute_equivalence_p(near: float, far: float) -> float:
    """p of "|delta| > epsilon" (an equivalence refuted), of level alpha at the boundary
    delta = +-epsilon: for a positive estimate near = p_greater(epsilon) and far =
    p_greater(-epsilon) (a negative one mirrors it), whose sum is the folded test's p under
    a symmetric pivot. The near side's p alone (or the smaller of the two sides') rejects
    up to 2 alpha where epsilon is small against the standard error."""
    return min(1.0, near + far)


# ---------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------
def holm(p) -> np.ndarray:
    """Holm's step-down adjusted p-values; NaN stays NaN and does not count."""
    p = np.asarray(p, float)
    out = np.full(len(p), np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m, running = len(order), 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out


def holm_levels(p, alpha: float) -> np.ndarray:
    """The one-sided level at which Holm's step-down tests each p (NaN where p is NaN): the
    i-th smallest at alpha / (m - i) while every smaller one was rejected; from the first
    step that is not rejected on, every later p is judged at that step's level (Holm stops
    there, and each later p is at least as large, so its interval at that level holds the
    threshold as its adjusted p says)."""
    p = np.asarray(p, float)
    out = np.full(len(p), np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m, adjusted, stop = len(order), holm(p), None
    for i, j in enumerate(order):
        if stop is None and adjusted[j] > alpha:
            stop = i
        out[j] = alpha / (m - (i if stop is None else stop))
    return out


def _member_verdict(row: dict, test: str, alpha: float) -> str:
    if "verdict" in row:  # latency coherence: decided by its checks
        return row["verdict"]
    if test == "consistent":
        return "refuted" if row["p_refute_holm"] <= alpha else "supported"
    if row["p_support_holm"] <= alpha:
        return "supported"
    if row["p_refute_holm"] <= alpha:
        return "refuted"
    return "inconclusive"


def decide_claim(claim: Claim, data: Data, options: Options, alpha: float | None = None,
                 plan_alpha: float | None = None) -> list[dict]:
    """The claim's row followed by one row per member. alpha: the one-sided level of a look
    (claims/looks/run.py: a group-sequential boundary) instead of (1 - ci) / 2; plan_alpha: the
    level the seeds needed are planned for (default: the deciding level)."""
    return judge_claim(claim, measure_claim(claim, data, options), options, alpha, plan_alpha)


def measure_claim(claim: Claim, data: Data, options: Options) -> tuple[list[dict], list[str]]:
    """Each member's row before Holm (decide_member; the costly part: its intervals) and the
    members whose input is missing; `judge_claim` decides them at a level, as often as asked."""
    rows, missing = [], []
    if claim.not_applicable:
        return rows, missing
    for m in claim.members:
        need = [(m.study, need_key(m, k)) for k in (m.a, m.b, None)
                if k is not None or m.study == "latency"]
        gone = [data.missing[n] for n in need if n in data.missing]
        try:
            if gone:
                raise MissingInput(f"{gone[0]} is missing")
            rows.append(decide_member(m, data, options))
        except MissingInput as e:
            missing.append(f"{m.label}: {e}")
            rows.append({"verdict": "not-applicable", "note": str(e)})
    return rows, missing


def _ci_levels(claim: Claim, options: Options) -> dict[str, float]:
    return {m.study: options.for_study(m.study)["ci"] if m.study not in ("latency", "curves")
            else options.settings.ci for m in claim.members}


def own_alpha(claim: Claim, options: Options) -> float:
    """The claim's own one-sided level: (1 - ci) / 2 of the strictest CI level it reads."""
    return intervals.alpha_of(min(_ci_levels(claim, options).values()))


def judge_claim(claim: Claim, measured: tuple[list[dict], list[str]], options: Options,
                alpha: float | None = None, plan_alpha: float | None = None) -> list[dict]:
    """decide_claim's rows from measure_claim's (left as they are: judged again at another
    level, they give that level's rows)."""
    head = {"claim": claim.id, "statement": claim.statement, "row": "claim",
            "n_members": len(claim.members)}
    if claim.not_applicable:
        return [{**head, "verdict": "not-applicable", "note": claim.not_applicable}]
    rows, missing = [dict(r) for r in measured[0]], measured[1]
    ci = _ci_levels(claim, options)
    if alpha is None:
        alpha = own_alpha(claim, options)
    else:
        ci = dict.fromkeys(ci, intervals.ci_of(plan_alpha or alpha))
    live = [i for i, r in enumerate(rows) if r.get("verdict") != "not-applicable"]
    adj = holm([rows[i].get("p_refute", math.nan) for i in live])
    for i, p in zip(live, adj, strict=True):
        rows[i]["p_refute_holm"] = p
        rows[i]["p_support_holm"] = rows[i].get("p_support", math.nan)  # intersection-union
    if any("_doubled" in rows[i] for i in live):  # the family again, borrowed sd doubled
        twice = [rows[i].get("_doubled", rows[i]) for i in live]
        for i, d, p in zip(live, twice, holm([d.get("p_refute", math.nan) for d in twice]),
                           strict=True):
            if "_doubled" in rows[i]:
                rows[i]["_doubled"] = {"p_support_holm": d["p_support"], "p_refute_holm": p}
    if len(live) > 1:  # the refute side's Holm step: its level and interval
        for i, level in zip(live, holm_levels([rows[i].get("p_refute", math.nan)
                                               for i in live], alpha), strict=True):
            if math.isfinite(level) and "_plan" in rows[i]:
                rows[i].update(holm_interval(rows[i], level, options, claim.members[i]))
    out, flips = [], []
    for m, r in zip(claim.members, rows, strict=True):
        plan, doubled = r.pop("_plan", None), r.pop("_doubled", None)
        if r.get("verdict") != "not-applicable":
            r["verdict"] = _member_verdict(r, m.test, alpha)
        flip = _member_verdict(doubled, m.test, alpha) if doubled else r["verdict"]
        flips.append(flip)
        r["fragile"] = r["verdict"] in DECIDED and flip != r["verdict"]
        if r["fragile"]:
            _add_caveat(r, f"fragile: {flip} with the borrowed seed sd doubled (the one-seed "
                        "arm's seed variance cannot be checked)")
        if r["verdict"] == "inconclusive" and plan is not None:
            # supported needs every member at alpha (intersection-union), refuted one member
            # at Holm's first level alpha / m: a member leaning to refute is planned there
            level, holm_m = intervals.alpha_of(ci[m.study]), 1
            if len(live) > 1 and r.get("p_refute", math.nan) < r.get("p_support", math.nan):
                holm_m = len(live)
            r.update(seeds_needed(plan, intervals.ci_of(level / holm_m)))
            r["note"] = advice.seeds_note(r["seeds_needed"], r["seeds_share"],
                                          r["seeds_at_margin"], level, holm_m, m.test)
        out.append({"claim": claim.id, "statement": claim.statement, "row": "member",
                    "member": m.label, "part": m.part, "study": m.study,
                    "estimand": m.estimate, "test": m.test,
                    "threshold": m.value if m.test == "consistent" else m.threshold,
                    "epsilon": m.epsilon, "benchmark": m.benchmark or "", "metric": m.metric,
                    "alpha": alpha, **r})
    verdict = claim_verdict([r["verdict"] for r in out])
    decider = _decider(out, verdict)
    head.update({k: v for k, v in decider.items() if k not in ("row", "n_members")})
    head.update(verdict=verdict, note="; ".join(missing) if missing else decider.get("note", ""),
                fragile=verdict in DECIDED and claim_verdict(flips) != verdict)
    return [head, *out]


DECIDED = ("supported", "refuted")


def claim_verdict(verdicts: list[str]) -> str:
    """A claim's verdict from its members': refuted when one is, supported when all are."""
    if "refuted" in verdicts:
        return "refuted"
    if "not-applicable" in verdicts:
        return "not-applicable"
    if all(v == "supported" for v in verdicts):
        return "supported"
    return "inconclusive"


def holm_interval(row: dict, level: float, options: Options, m: Member) -> dict:
    """The member's interval at the level of its Holm step on the refute side (ci_of(level)),
    from the same contrast and test as its own interval: what a reader checks the refute
    side's verdict against."""
    c, rho, _, _ = row["_plan"]
    opts = {**options.for_study(m.study), "ci": intervals.ci_of(level)}
    if m.estimate == "ratio":
        low, high = fieller(c, opts, row["estimate"], options.threads)
    else:
        g = compare(c, opts, "greater", 0.0, options.threads, rho)
        low, high = g["ci_low"], g["ci_high"]
    return {"holm_ci": opts["ci"], "holm_ci_low": low, "holm_ci_high": high}


def _decider(members: list[dict], verdict: str) -> dict:
    """The member that decides the claim: a refuted one (smallest p), else the weakest."""
    same = [r for r in members if r["verdict"] == verdict] or members
    if verdict == "refuted":
        return min(same, key=lambda r: _nan_last(r.get("p_refute_holm")))
    return max(same, key=lambda r: -_nan_last(-r.get("p_support_holm", math.nan)))


def claim_p(rows: list[dict]) -> float:
    """The claim's decisive one-sided p (NaN: no test decides it): the smaller of its support
    side's p (the largest member's: every member must be supported, by intersection-union)
    and its refute side's (the smallest Holm-adjusted member's: the claim's family-wise p).
    The claim is decided at a level exactly when this p is at most that level (judge_claim);
    members a check decides (latency coherence) or `consistent` ones (supported unless
    refuted) have no support p and add none. `rows`: decide_claim's."""
    head, *members = rows
    if head["verdict"] == "not-applicable":
        return math.nan
    support, refute = ([p for r in members if np.isfinite(p := r.get(k, math.nan))]
                       for k in ("p_support_holm", "p_refute_holm"))
    if not (support or refute):
        return math.nan
    return float(min(max(support, default=math.inf), min(refute, default=math.inf)))


def study_wide(p, alpha: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    """(adjusted p, level) of each claim's decisive p in the study's family at level alpha:
    holm, Holm's step-down (`holm`, `holm_levels`); bonferroni, alpha / m for each; none,
    NaN (each claim keeps its own level). A claim is decided exactly when its adjusted p is
    at most alpha, that is when its decisive p is at most its level."""
    p = np.asarray(p, float)
    if method == "holm":
        return holm(p), holm_levels(p, alpha)
    if method == "bonferroni":
        m = int(np.isfinite(p).sum())
        return np.minimum(1.0, m * p), np.where(np.isfinite(p), alpha / max(m, 1), np.nan)
    if method == "none":
        return np.full(len(p), np.nan), np.full(len(p), np.nan)
    raise ValueError(f"stats.study_wide: {method!r} is not none, holm or bonferroni")


def _nan_last(p) -> float:
    return math.inf if p is None or not np.isfinite(p) else float(p)


def decide(claims: list[Claim], data: Data, options: Options,
           at_looks: dict | None = None) -> pd.DataFrame:
    """Every claim's rows; at_looks: {claim id: (its Data, alpha)} for the claims that
    drove seeds on demand, decided as at the look that settled them (claims/looks/run.py).
    With stats.study_wide on, each claim is then decided again at its level in the family
    of the claims' decisive tests (`study_wide`)."""
    at_looks = at_looks or {}
    method = options.settings.study_wide
    if at_looks and method != "none":
        raise ValueError(STUDY_WIDE_REFUSED)
    measured, decided = {}, {}
    for c in claims:
        here, alpha = at_looks.get(c.id, (data, None))
        measured[c.id] = measure_claim(c, here, options)
        decided[c.id] = judge_claim(c, measured[c.id], options, alpha)
    family = [c for c in claims if math.isfinite(claim_p(decided[c.id]))]
    p = [claim_p(decided[c.id]) for c in family]
    alpha = min((own_alpha(c, options) for c in family), default=math.nan)
    adjusted, levels = study_wide(p, alpha, method)
    for c, p_c, adj, level in zip(family, p, adjusted, levels, strict=True):
        if method != "none" and level < own_alpha(c, options):
            decided[c.id] = judge_claim(c, measured[c.id], options, level)
        decided[c.id][0].update(p_decisive=p_c, p_study_wide=adj, study_alpha=alpha)
    rows = [{**r, "study_wide": method} if r["row"] == "claim" else r
            for c in claims for r in decided[c.id]]
    df = pd.DataFrame(rows)
    for col in COLUMNS:
        if col not in df:
            df[col] = "" if col in TEXT_COLUMNS else math.nan
    df["fragile"] = df["fragile"].astype(object).where(df["fragile"].notna(), False).astype(bool)
    for col in (*TEXT_COLUMNS, "design", "resample", "interval"):
        df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    return df[list(COLUMNS)]
