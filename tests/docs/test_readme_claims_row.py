"""README.md ("What a run gives") quotes one row of the default study's claims table. The
quote must stay what the report prints: its header is claims.md's, its statement is the
claim's in config/config.yaml, and claims/render.py, given the row's numbers, prints it
character for character (so a change to the table's columns or wording fails here until
the README is updated)."""

from __future__ import annotations

import math
import re

import pandas as pd
import yaml
from conftest import ROOT

from workflow_scripts.claims import render
from workflow_scripts.stats.seed_planning import ASSURANCE

HEADER = "| claim | statement | verdict | decided by | estimate [CI] |"
NUM = r"(-?\d+\.\d+)"


def readme_quote() -> tuple[str, str]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    section = lines[lines.index("## What a run gives"):]
    at = next(i for i, line in enumerate(section) if line.startswith(HEADER))
    return section[at], section[at + 2]


def _cells(row: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)[1:-1]]


def test_readme_claims_row_is_what_the_report_prints():
    header, row = readme_quote()
    cid, statement, verdict, member, estimate, ci, threshold, decision, p, notes = _cells(row)
    assert decision == "–", "the quoted claim leans to support: read at its own CI"
    claims = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["claims"]
    claim = next((c for c in claims if c["id"] == cid), None)
    assert claim is not None, f"README.md quotes claim {cid}, which config/config.yaml lacks"
    assert statement == claim["statement"]
    est = re.fullmatch(rf"{NUM} \[{NUM}, {NUM}\]", estimate)
    level = re.fullmatch(r"(\d+)% (\w+)", ci)
    ps = re.fullmatch(rf"support {NUM}; refute {NUM}", p)
    # The notes: the seed plan's sentence as claims/advice.py words it (decide.py's note).
    plan = re.match(r"(No number of seeds settles it|\d+ seeds per arm would settle it) at "
                    rf"α(/\d+)? = [\d.]+ in {ASSURANCE:.0%} of studies like this one", notes)
    assert est and level and ps and plan, row
    rec = {"claim": cid, "statement": statement, "row": "claim", "member": member,
           "test": claim["test"], "threshold": float(claim.get("threshold", 0.0)),
           "epsilon": math.nan, "estimate": float(est[1]), "ci_low": float(est[2]),
           "ci_high": float(est[3]), "ci": int(level[1]) / 100, "interval": level[2],
           "verdict": verdict.strip("*"), "p_support_holm": float(ps[1]),
           "p_refute_holm": float(ps[2]),
           "seeds_needed": math.nan, "alpha": 0.025, "caveats": "", "note": notes}
    printed = render.markdown(pd.DataFrame([rec])).splitlines()
    assert header in printed, "README.md's claims header is not claims.md's"
    assert row in printed, f"claims/render.py prints\n{printed[-1]}\nwhere README.md has\n{row}"
    assert threshold == render.threshold_text(rec["test"], rec["threshold"], math.nan)
