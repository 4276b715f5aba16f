"""The decided claims table (results/<study>/claims.parquet, written by claims/decide.py) as its two
readers take it: the columns they need, its claim rows, cell access and the interval's name.
claims/render.py (claims.md) and claims/forest.py (the forest plot) both import it, and
neither imports the other at module level.
"""

from __future__ import annotations

import math

import pandas as pd

from workflow_scripts.core import contracts, notation

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
