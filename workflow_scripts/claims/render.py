"""Render the decided claims: the "## Claims" section of the report (the forest plot is
claims/forest.py's; this module's CLI draws it too).

Input: results/<study>/claims.parquet (written by claims/decide), one row per claim (`row ==
"claim"`, carrying the deciding member's estimate, interval and Holm-adjusted p-values)
followed by its members (`row == "member"`, the same `claim` id). Both renderers are pure
functions of that table; they decide nothing and recompute nothing.

- `markdown(table)` -> the report section: a verdict count line, the decision rules, one row
  per claim (statement verbatim) and, for claims with several members, a collapsible table
  of the members.
- `forest.forest_plot(table, outs)` (claims/forest.py) -> the forest plot, one strip per
  claim, saved to every path in `outs`.

CLI: python -m workflow_scripts.claims.render --table results/<study>/claims.parquet
        [--figure results/<study>/figures/claims.png [more.pdf ...]]
        [--markdown results/<study>/claims.md]
"""

from __future__ import annotations

import argparse
import math

import pandas as pd

from workflow_scripts.claims import VERDICTS, advice
from workflow_scripts.claims.table import (
    FRAGILE,
    ONSET_TESTS,
    POST_HOC,
    check,
    claims_of,
    decisive_p,
    holm_text,
    is_fragile,
    labels,
    members_of,
    method_text,
    study_wide_cell,
    study_wide_on,
    threshold_text,
)
from workflow_scripts.claims.table import num as _num
from workflow_scripts.claims.table import text as _text
from workflow_scripts.core import contracts, notation

# ---------------------------------------------------------------------------------------
# Small formatters (the report's notation: core/notation.py)
# ---------------------------------------------------------------------------------------
fmt = notation.num  # every number as the report prints it (core/notation.py)
interval = notation.interval  # '0.1234 [0.1000, 0.1500]'; the estimate alone without one


def estimate_text(rec: dict) -> str:
    """The estimate and its CI; an onset in steps, "no onset" where the curve never declines
    (as RESULTS.md's learning curves write it)."""
    if _text(rec.get("test")) in ONSET_TESTS:
        return notation.onset_interval(rec.get("estimate"), rec.get("ci_low"),
                                       rec.get("ci_high"))
    return interval(rec["estimate"], rec["ci_low"], rec["ci_high"])


md_table = notation.pipe_table  # a pipe table of already formatted cells


def notes(rec: dict) -> str:
    """Caveats and the decider's note: for an inconclusive claim, the seed plan's sentence
    (claims/advice.py, written by claims/decide.py at the level it planned at)."""
    parts = [_text(rec.get("caveats")).strip(), _text(rec.get("note")).strip()]
    return "; ".join(p for p in parts if p) or "–"


# ---------------------------------------------------------------------------------------
# Table access
# ---------------------------------------------------------------------------------------
def counted_as(rec: dict) -> str:
    """The verdict a claim is counted as: a fragile one as "fragile", not as decided."""
    return FRAGILE if is_fragile(rec) else _text(rec.get("verdict"))


def verdict_counts(claims: list[dict]) -> str:
    """'9 claims: 4 supported (1 post hoc), 2 refuted, 1 fragile (supported only under the
    borrowed seed variance), 2 inconclusive' (verdicts with no claim left out)."""
    counted = [counted_as(c) for c in claims]
    order = [*VERDICTS[:2], FRAGILE, *VERDICTS[2:]]
    order += sorted(set(counted) - set(order))
    counts = []
    for v in order:
        these = [c for c, k in zip(claims, counted, strict=True) if k == v]
        if not these:
            continue
        post = sum(POST_HOC in labels(c) for c in these)
        what = [f"{post} post hoc"] * bool(post)
        if v == FRAGILE:
            decided = sorted({_text(c.get("verdict")) for c in these})
            what.insert(0, f"{' / '.join(decided)} only with the borrowed seed sd as measured")
        counts.append(f"{len(these)} {v}" + (f" ({'; '.join(what)})" if what else ""))
    head = f"{len(claims)} claim{'s' * (len(claims) != 1)}"
    return f"{head}: {', '.join(counts)}" if counts else head


# ---------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------
def registration_text(claims: list[dict]) -> str:
    """How many decided claims were registered before their data (claims/registration.py;
    a not-applicable claim has no mark); "" for a table without the record's column."""
    marked = [c for c in claims if _text(c.get("registration"))]  # the decided ones
    if not marked:
        return ""
    post = [_text(c["claim"]) for c in marked if _text(c["registration"]) == "post hoc"]
    head = (f"Registered before their data: {len(marked) - len(post)} of {len(marked)} "
            f"decided claim{'s' * (len(marked) != 1)} (claims_registration.json beside this file).")
    if not post:
        return head
    return (head + f" Post hoc (added or edited after their data existed, or driven by a look "
            f"plan registered after it, so their verdicts are not covered by the error rate): "
            f"{', '.join(post)}.")


def _verdict_cell(c: dict, bold: bool = True) -> str:
    """'**supported** (post hoc, fragile)': the verdict and what it rests on."""
    marks = ", ".join(labels(c))
    verdict = _text(c["verdict"])
    return (f"**{verdict}**" if bold else verdict) + (f" ({marks})" if marks else "")


def rules_text(claims: list[dict]) -> str:
    # With study-wide control a claim's `alpha` is its step's level: the rule names the family's.
    own = "study_alpha" if study_wide_on(claims) else "alpha"
    alphas = sorted({a for a in (_num(c.get(own, c.get("alpha"))) for c in claims)
                     if math.isfinite(a)})
    alpha = " / ".join(f"{a:.4g}" for a in alphas)
    return (
        "Each claim is a one-sided test at level α = (1 − CI level)/2"
        + (f" (α = {alpha})" if alpha else "")
        + ", so a claim with one member is decided exactly when its CI excludes the threshold; "
        "column `CI` names the level and the interval method that decided it (the ladder's "
        "claims use `ladder.stats`, latency ratios a bootstrap of the profiling rounds). "
        "A claim over several members (a family: \"at every depth\") is supported when every "
        "member is, each at level α (no correction is needed for a conjunction), and refuted "
        "when any member is refuted after Holm's correction across them; the member shown "
        "decided it. `equivalent` claims are decided by TOST (|δ| < ε), `consistent` "
        "claims hold when the published value lies inside the CI, and `coherent` claims by "
        "the latency coherence checks. p is that of the test that decided the claim (the "
        "refute side Holm-adjusted), or both where none did; where the refute side's Holm "
        "step tested a member at a stricter level than α, column `decision interval` gives "
        "the member's interval at that level (1 − 2α/k for its step k), the one that interval "
        "must clear for a refutation. A verdict labelled *post hoc* was not registered "
        "before its data; one labelled *fragile* flips when a one-seed arm's borrowed seed sd "
        "is doubled (that arm's seed variance cannot be checked) and is counted as fragile, "
        "not as decided."
        + (" An onset claim (`after` / `before` / `no_decline`) reads the bootstrap "
           "distribution of the step after which the learning curve first falls more than ε "
           "below its running best: p is the share of samples outside the claimed steps."
           if any(_text(c.get("test")) in ONSET_TESTS for c in claims) else "")
        + (f" {advice.MEANING}."
           if any(math.isfinite(_num(c.get("seeds_needed"))) for c in claims) else ""))


STUDY_WIDE_NAMES = {"holm": "Holm's step-down", "bonferroni": "Bonferroni's correction"}


def study_wide_text(claims: list[dict]) -> str:
    """What the verdicts control across the study (docs/claims.md, "The study as a whole"):
    with stats.study_wide on, the family and its levels; off, that the chance of any wrong
    verdict among the claims is not controlled. "" for a table without the columns."""
    family = [c for c in claims if math.isfinite(_num(c.get("p_decisive")))]
    if not family:
        return ""
    n, alpha = len(family), min(_num(c.get("study_alpha")) for c in family)
    method = study_wide_on(claims)
    if method:
        step = ("the k-th smallest decisive p at α/(N − k + 1) until one fails"
                if method == "holm" else "each decisive p at α/N")
        return (f"Study-wide control is on (`stats.study_wide: {method}`): the {n} claims a "
                f"test decides form one family at α = {alpha:.4g}, and {STUDY_WIDE_NAMES[method]} "
                f"decides {step} (N = {n}), so the chance that any of their verdicts is wrong "
                "is held at α. A claim's decisive p is its support side's (its weakest "
                "member's) or, if smaller, its refute side's (Holm-adjusted within the "
                "claim); each claim, its members included, is decided at its level in the "
                "family (column `CI` stays at the configured level); column `study-wide p` "
                "gives the adjusted p and that level (a claim is decided when the adjusted p "
                "is at most α). Claims a check decides "
                "(latency coherence) are outside the family.")
    bound = n * alpha
    union = (f"the union bound allows up to {n} × α = {bound:.3g}" if bound < 1
             else "nothing bounds it below 1")
    return (f"Study-wide control is off (`stats.study_wide: none`): each verdict holds its "
            f"error rate on its own (α = {alpha:.4g} per claim); across the {n} claims a test "
            f"decides, the chance that at least one verdict is wrong is not controlled "
            f"({union}). `stats.study_wide: holm` or `bonferroni` decides them as one family "
            "at α (docs/claims.md, \"The study as a whole\").")


def markdown(table: pd.DataFrame) -> str:
    """The report's "## Claims" section (ends with a newline)."""
    check(table)
    claims = claims_of(table)
    out = ["## Claims\n", verdict_counts(claims) + ".\n"]
    if not claims:
        return "\n".join(out)
    out.append(rules_text(claims) + "\n")
    if study := study_wide_text(claims):
        out.append(study + "\n")
    if registered := registration_text(claims):
        out.append(registered + "\n")
    on = bool(study_wide_on(claims))
    rows = [[_text(c["claim"]), _text(c["statement"]), _verdict_cell(c),
             _text(c.get("member")) or "–", estimate_text(c), method_text(c),
             threshold_text(c["test"], c["threshold"], c["epsilon"]), holm_text(c) or "–",
             decisive_p(c), *[study_wide_cell(c)] * on, notes(c)]
            for c in claims]
    out.append(md_table(rows, ["claim", "statement", "verdict", "decided by", "estimate [CI]",
                               "CI", "threshold", "decision interval", "p",
                               *["study-wide p"] * on, "notes"]) + "\n")
    for c in claims:
        members = members_of(table, c["claim"])
        if len(members) <= 1:
            continue
        rows = [[_text(m.get("member")), estimate_text(m), method_text(m),
                 threshold_text(m.get("test"), m.get("threshold"), m.get("epsilon")),
                 holm_text(m) or "–",
                 _verdict_cell(m, bold=False), fmt(m.get("p_support_holm")),
                 fmt(m.get("p_refute_holm")), _text(m.get("design")) or "–",
                 _text(m.get("caveats")) or "–"] for m in members]
        # Blank lines around the table: GitHub renders markdown inside <details> only then.
        out.append(f"<details><summary>{_text(c['claim'])}: members</summary>\n\n"
                   + md_table(rows, ["member", "estimate [CI]", "CI", "threshold",
                                     "decision interval", "verdict",
                                     "p_support_holm",
                                     "p_refute_holm", "design", "caveats"])
                   + "\n\n</details>\n")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Render the decided claims: report section and "
                                             "forest plot.")
    ap.add_argument("--table", required=True, help="results/<study>/claims.parquet")
    ap.add_argument("--figure", nargs="+", default=[], help="forest plot path(s): png/pdf/svg")
    ap.add_argument("--markdown", help="write the '## Claims' section here")
    a = ap.parse_args(argv)
    if not a.figure and not a.markdown:
        ap.error("nothing to do: give --figure and/or --markdown")
    table = contracts.read_parquet(a.table)
    written = []
    if a.markdown:
        contracts.write_text(a.markdown, markdown(table))
        written.append(a.markdown)
    if a.figure:
        from workflow_scripts.claims.forest import forest_plot  # matplotlib: figures only

        forest_plot(table, a.figure)
        written += a.figure
    print(f"wrote {', '.join(written)}")


if __name__ == "__main__":
    main()
