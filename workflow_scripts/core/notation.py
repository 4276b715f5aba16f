"""How a number or a special value reads in every table of the report: RESULTS.md and its
sections (biencoder/report), the claims section (claims/render.py) and the ladder's summary
(ladder/report.py). One notation per concept, so that the same value reads the same
everywhere:

- a number: `digits` decimals, or two significant digits in scientific notation where the
  decimals would round a non-zero value to zero (a variance of 0.00016 at 3 decimals reads
  1.6e-04, never 0.000); a column of small values asks for more decimals;
- missing (not computed, not applicable): "–"; an infinite value: "∞" / "−∞";
- a learning curve's onset that never happened (NaN) or an interval bound beyond the step
  grid (+inf: no onset in that share of the samples): "no onset";
- a number of seeds no count reaches (the query part alone is too wide): "unreachable";
- accuracy and every other metric as a fraction (0.904), never in percentage points.

Standard library only: core, the studies and the claims all import it.
"""

from __future__ import annotations

import math

MISSING = "–"
NO_ONSET = "no onset"
UNREACHABLE = "unreachable"


def _float(x) -> float | None:
    """x as a float; None for None and for what is not a number."""
    if x is None or isinstance(x, (bool, str)):
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def num(x, digits: int = 4) -> str:
    """A number as the report prints it (module docstring); "–" for None / NaN."""
    v = _float(x)
    if v is None:
        return MISSING if x is None else str(x)
    if math.isnan(v):
        return MISSING
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    text = f"{v:.{digits}f}"
    if v != 0 and float(text) == 0:  # the decimals would say zero
        return f"{v:.1e}"
    return text


def cell(x, digits: int = 4) -> str:
    """A table cell: floats through num(); booleans yes/no; integers and text as they are."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float) or x is None:
        return num(x, digits)
    return str(x)


def interval(est, lo, hi, digits: int = 4) -> str:
    """'0.1234 [0.1000, 0.1500]'; the estimate alone where there is no interval."""
    if num(lo) == MISSING and num(hi) == MISSING:
        return num(est, digits)
    return f"{num(est, digits)} [{num(lo, digits)}, {num(hi, digits)}]"


def step(x) -> str:
    """A step of a learning curve's grid; NaN (no onset) and ±inf (a bound beyond the grid:
    no onset in that share of the samples) read "no onset"."""
    v = _float(x)
    return NO_ONSET if v is None or not math.isfinite(v) else f"{v:g}"


def onset_interval(est, lo, hi) -> str:
    """An onset with its interval, in steps: '6 [6, no onset]'."""
    return f"{step(est)} [{step(lo)}, {step(hi)}]"


def percent(share, max_decimals: int = 2) -> str:
    """A share as a percentage with the decimals that keep it off 0% and 100% unless it is
    exactly that: 0.003 reads 0.3%, 0.00001 "<0.01%", 0.9999 99.99%; NaN "–"."""
    v = _float(share)
    if v is None or math.isnan(v):
        return MISSING
    pct = 100 * v
    if pct in (0, 100):
        return f"{pct:.0f}%"
    for d in range(max_decimals + 1):
        text = f"{pct:.{d}f}"
        if 0 < float(text) < 100:
            return f"{text}%"
    floor = 10.0 ** -max_decimals
    return f"<{floor:g}%" if pct < 50 else f">{100 - floor:g}%"


def seeds(n) -> str:
    """A number of seeds to reach a target; None / NaN: no number of seeds reaches it."""
    v = _float(n)
    return UNREACHABLE if v is None or math.isnan(v) else f"{math.ceil(v):d}"


def ci_cell(lo, hi, digits: int = 4) -> str:
    """'[0.1000, 0.1500]': an interval without its estimate (the Multi-Bootstrap's beside)."""
    return f"[{num(lo, digits)}, {num(hi, digits)}]"


def pipe_table(rows, columns) -> str:
    """A markdown pipe table of already formatted cells; a `|` in a cell is escaped (it would
    end the cell) and a line break becomes a space (it would end the row)."""
    def cell(x) -> str:
        return str(x).replace("|", "\\|").replace("\r", " ").replace("\n", " ")

    lines = ["| " + " | ".join(map(cell, columns)) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(lines)
