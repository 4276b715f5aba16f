"""The decided claims table (results/<study>/claims.parquet, written by claims/decide.py) as its two
readers take it: the columns they need, its claim rows, cell access and what each row says in
words (its interval, unit, threshold, deciding p, label and decision interval). claims/render.py
(claims.md) and claims/forest.py (the forest plot) both import it, and neither imports the other
at module level, so the two say the same.
"""

from __future__ import annotations

import math

import pandas as pd

from workflow_scripts.core import contracts, notation

POST_HOC = "post hoc"  # claims/registration.py's mark (its module reads the config; this the table)
FRAGILE = "fragile"
METRIC_NAMES = {"ndcg": "NDCG", "recall": "Recall", "map": "MAP", "mrr": "MRR"}
REQUIRED = ("claim", "statement", "row", "member", "test", "threshold", "epsilon", "estimate",
            "ci_low", "ci_high", "ci", "interval", "verdict")
ONSET_TESTS = ("after", "before", "no_decline")


def num(x) -> float:
    """x as a float, NaN for None / missing / non-numeric."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def text(x) -> str:
    """A string cell; missing values (None, NaN) are empty."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return str(x)


def check(table: pd.DataFrame) -> None:
    missing = [c for c in REQUIRED if c not in table.columns]
    if missing:
        raise contracts.DataError(f"claims table lacks column(s) {', '.join(missing)}")
    bad = set(table["row"]) - {"claim", "member"}
    if bad:
        raise contracts.DataError(f"claims table: unknown row kind(s) {sorted(map(str, bad))}")


def claims_of(table: pd.DataFrame) -> list[dict]:
    """The claim rows, in table order, as records."""
    return table[table["row"] == "claim"].to_dict("records")


def members_of(table: pd.DataFrame, claim_id: str) -> list[dict]:
    """The member rows of one claim, in table order."""
    return table[(table["row"] == "member") & (table["claim"] == claim_id)].to_dict("records")


def method_text(rec: dict) -> str:
    """The interval that decided the row, '95% calibrated'; "–" where none did (the latency
    coherence checks)."""
    level, method = num(rec.get("ci")), text(rec.get("interval"))
    if not method or (math.isnan(num(rec.get("ci_low")))
                      and math.isnan(num(rec.get("ci_high")))):
        return notation.MISSING
    name = contracts.INTERVAL_NAMES.get(method, method)
    return f"{contracts.ci_label(level)} {name}" if math.isfinite(level) else name


def caption(claims: list[dict]) -> str:
    """'95% calibrated' from the claims' CI levels and interval methods ('' if none)."""
    levels = sorted({x for x in (num(c.get("ci")) for c in claims) if math.isfinite(x)})
    methods = sorted({text(c.get("interval")) for c in claims} - {""})
    level = " / ".join(contracts.ci_label(x) for x in levels)
    method = " / ".join(contracts.INTERVAL_NAMES.get(m, m) for m in methods)
    return " ".join(p for p in (level, method) if p)


def fmt(x) -> str:
    return notation.num(x)


def metric_name(metric) -> str:
    """'ndcg@10' -> 'NDCG@10'; a name it does not know as given."""
    name, at, k = text(metric).strip().partition("@")
    return f"{METRIC_NAMES.get(name.lower(), name)}{at}{k}"


def unit(rec: dict) -> str:
    """What a row's estimate is measured in, from its estimand, metric and study: 'NDCG@10
    difference', 'mean NDCG@10', 'latency ratio', 'steps', 'accuracy difference'; "" where the
    row has no estimate on a scale (the latency coherence checks)."""
    estimand, study = text(rec.get("estimand")), text(rec.get("study"))
    metric = "accuracy" if study == "ladder" else metric_name(rec.get("metric")) or "metric"
    return {"difference": f"{metric} difference", "mean": f"mean {metric}",
            "ratio": f"{metric} ratio",
            "difference_of_differences": f"{metric} difference of differences",
            "latency_ratio": "latency ratio", "onset": "steps"}.get(estimand, "")


def threshold_text(test, threshold, epsilon) -> str:
    """The decision threshold as the claims table shows it, by test: the direction the claim
    asserts and the value ('> 0.0000', '< 0.8500', '|δ| < 0.0100')."""
    test = text(test)
    if test == "greater":
        return f"> {fmt(threshold)}"
    if test == "less":
        return f"< {fmt(threshold)}"
    if test == "equivalent":
        return f"|δ| < {fmt(epsilon)}"
    if test == "consistent":
        return f"= {fmt(threshold)} (published)"
    if test == "coherent":
        return "coherence checks"
    if test in ("after", "before"):
        return f"onset {'≥' if test == 'after' else '<'} step {notation.step(threshold)}"
    if test == "no_decline":
        return notation.NO_ONSET
    return test or "–"


def decisive_p(rec: dict) -> str:
    """The Holm-adjusted p of the test that decided the claim; both for an undecided one."""
    sup, ref = num(rec.get("p_support_holm")), num(rec.get("p_refute_holm"))
    verdict = text(rec.get("verdict"))
    if verdict == "supported" and not math.isnan(sup):
        return f"{fmt(sup)} (support)"
    if verdict == "refuted" and not math.isnan(ref):
        return f"{fmt(ref)} (refute)"
    parts = [f"{name} {fmt(p)}" for name, p in (("support", sup), ("refute", ref))
             if not math.isnan(p)]
    return "; ".join(parts) or "–"


def is_fragile(rec: dict) -> bool:
    """The verdict flips when a one-seed arm's borrowed seed sd is doubled (claims/decide.py);
    False for a table written before the column."""
    x = rec.get("fragile")
    return bool(x) and not (isinstance(x, float) and math.isnan(x))


def labels(rec: dict) -> list[str]:
    """What the verdict rests on beyond its test: 'post hoc' (not registered before its
    data), 'fragile' (decided only under the one-seed arm's borrowed seed variance)."""
    return ([POST_HOC] * (text(rec.get("registration")) == POST_HOC)
            + [FRAGILE] * is_fragile(rec))


def label_text(rec: dict) -> str:
    """'post hoc, fragile'; 'registered' where the registration record says so and nothing
    else applies; "" where the row has no mark (not-applicable, or an older table)."""
    marks = labels(rec)
    if marks:
        return ", ".join(marks)
    return text(rec.get("registration"))


def refute_side(rec: dict) -> bool:
    """Whether the refute side decides what the row reads: refuted, or inconclusive and
    leaning to refute (a supported row, or one leaning to support, was read on the support
    side, at the row's own interval)."""
    verdict = text(rec.get("verdict"))
    sup, ref = num(rec.get("p_support")), num(rec.get("p_refute"))
    return verdict == "refuted" or (verdict == "inconclusive" and not ref >= sup)


def holm_interval(rec: dict) -> tuple[float, float, float] | None:
    """(level, low, high) of the interval a family's refute side decided the row at (its
    member's Holm step, claims/decide.py), None where the row was read at its own interval
    (one member, the support side, or the Holm step at the row's own level)."""
    level, low, high = (num(rec.get(k)) for k in ("holm_ci", "holm_ci_low", "holm_ci_high"))
    if not math.isfinite(level) or level == num(rec.get("ci")) or not refute_side(rec):
        return None
    return level, low, high


def holm_text(rec: dict) -> str:
    """'98.33% [0.0050, 0.0762] (refute side, Holm step)'; "" where none differs."""
    h = holm_interval(rec)
    if h is None:
        return ""
    level, low, high = h
    return f"{level_label(level)} [{fmt(low)}, {fmt(high)}] (refute side, Holm)"


def level_label(level: float) -> str:
    """'98.33%' for Holm's 1 - 2 alpha / 3 (contracts.ci_label's digits shortened)."""
    return f"{100 * level:.4g}%"


def study_wide_on(claims: list[dict]) -> str:
    """The study-wide control the claims were decided under ('holm', 'bonferroni'); "" where
    none was (stats.study_wide: none, or a table written before the column)."""
    methods = {text(c.get("study_wide")) for c in claims} - {"", "none"}
    return methods.pop() if methods else ""


def study_wide_cell(rec: dict) -> str:
    """'0.0123 (level 0.00833)': the claim's study-wide adjusted p and the level its decisive
    p was tested at (claims/decide.py `study_wide`); "–" outside the family."""
    p = num(rec.get("p_study_wide"))
    if math.isnan(p):
        return notation.MISSING
    return f"{fmt(p)} (level {num(rec.get('alpha')):.3g})"
