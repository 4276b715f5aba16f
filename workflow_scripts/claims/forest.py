"""The forest plot of the decided claims (results/<study>/figures/claims.*), drawn from
results/<study>/claims.parquet's claim rows (read with claims/table.py; this module decides and
recomputes nothing).

`forest_figure(table)` -> a matplotlib Figure: one horizontal strip per claim, each with its
own x-range (claims mix NDCG differences, ratios, ladder accuracies, latency ratios and
learning-curve steps) and says so: above the axis its unit, the test's direction and threshold
and the p that decided it; the estimate, its CI and the decision threshold(s), coloured by
verdict, and where a family's refute side was decided at a Holm step's stricter level, the
member's interval at that level beneath (thin, marked); right of the axis the verdict, its
labels (post hoc, fragile) and its interval's name. An onset claim whose curve never declines
is drawn as such, a "no decline" marker at the claimed step. `forest_plot(table, outs)` draws
it and saves it atomically to every path in `outs` (format from the suffix: png, pdf, svg),
byte-identical on a rerun.
`python -m workflow_scripts.claims.render --table T --figure F` is its CLI.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")  # headless: jobs run without a display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from workflow_scripts.claims import VERDICTS  # noqa: E402
from workflow_scripts.claims.table import (  # noqa: E402
    ONSET_TESTS,
    caption,
    check,
    claims_of,
    decisive_p,
    holm_interval,
    label_text,
    labels,
    level_label,
    method_text,
    threshold_text,
    unit,
)
from workflow_scripts.claims.table import num as _num  # noqa: E402
from workflow_scripts.claims.table import text as _text  # noqa: E402
from workflow_scripts.core import contracts  # noqa: E402
from workflow_scripts.core.notation import MISSING  # noqa: E402

COLORS = {"supported": "#2ca02c", "refuted": "#d62728", "inconclusive": "#e69f00",
          "not-applicable": "#bdbdbd"}
DPI = 150  # as biencoder/report/figures.py
STRIP_IN = 0.95  # one claim's strip, inches: its test and member on two lines above the axis
GAP_IN = 0.5  # of which between two axes: the tick labels and those two lines
HOLM_Y = -0.55  # where a strip draws the Holm step's interval, below the CI
LABEL_COLOR = "#7b3294"  # post hoc / fragile: a colour no verdict uses
HEADER_IN = 1.0  # title and legend (two rows)
FOOTER_IN = 0.3


def reference_lines(rec: dict) -> list[tuple[float, str, str, float]]:
    """(x, linestyle, colour, linewidth) of the decision threshold(s) of one claim."""
    test, t, eps = _text(rec.get("test")), _num(rec.get("threshold")), _num(rec.get("epsilon"))
    lines = []
    if test in ("greater", "less", "after", "before") and math.isfinite(t):
        lines.append((t, "--", "k", 1.0))
    elif test == "equivalent" and math.isfinite(eps):
        lines += [(0.0, "-", "0.6", 0.6), (-abs(eps), "--", "k", 1.0), (abs(eps), "--", "k", 1.0)]
    elif test == "consistent" and math.isfinite(t):
        lines.append((t, ":", "k", 1.3))
    return lines


def test_text(rec: dict) -> str:
    """The strip's test in words: 'NDCG@10 difference > 0.0000 · p 0.0018 (support)'."""
    test = threshold_text(rec.get("test"), rec.get("threshold"), rec.get("epsilon"))
    p = decisive_p(rec)
    return " · ".join(x for x in (f"{unit(rec)} {test}".strip(),
                                  f"p {p}" if p != MISSING else "") if x)


def plotted_text(rec: dict) -> str:
    """What a strip plots: its member ("r4/top2 − r4/adaptive2 [all]") and, for a family,
    that it is the member that decided the claim of n; "" where the claim has no member."""
    member, n = _text(rec.get("member")), _num(rec.get("n_members"))
    if not member:
        return ""
    return (f"{member} (decided the claim; {int(n)} members)" if math.isfinite(n) and n > 1
            else member)


def x_range(rec: dict) -> tuple[float, float] | None:
    """Limits covering the finite estimate, CI ends and thresholds of one claim, padded; an
    onset claim's over its step grid, from step 0 (the base) to `last_step` where known."""
    xs = [_num(rec.get(k)) for k in ("estimate", "ci_low", "ci_high")]
    xs += [x for x, *_ in reference_lines(rec)]
    xs += list(holm_interval(rec) or ())[1:]
    xs = [x for x in xs if math.isfinite(x)]
    if not xs:
        return None
    lo, hi = min(xs), max(xs)
    if _text(rec.get("test")) in ONSET_TESTS:  # the step grid: from 0 to its last step
        lo, last = 0.0, _num(rec.get("last_step"))
        hi = max(hi, last) if math.isfinite(last) else hi
    span = hi - lo if hi > lo else max(abs(hi) * 0.2, 1e-3)
    pad = 0.12 * span
    # An infinite CI end gets room for its arrow beyond the last finite value.
    extra = 0.15 * span
    start = 0.0 if _text(rec.get("test")) in ONSET_TESTS else lo - pad
    return (start - extra * (_num(rec.get("ci_low")) == -math.inf),
            hi + pad + extra * (_num(rec.get("ci_high")) == math.inf))


def _strip(ax, rec: dict) -> None:
    verdict = _text(rec.get("verdict"))
    color = COLORS.get(verdict, "k")
    est, lo, hi = (_num(rec.get(k)) for k in ("estimate", "ci_low", "ci_high"))
    ax.set_ylim(-1, 1)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="x", labelsize=7, length=2, pad=1)
    ax.set_ylabel(_text(rec.get("claim")), rotation=0, ha="right", va="center", fontsize=8,
                  labelpad=6)
    # Right of the arrowhead an unbounded CI draws at the axis edge; light grey is too faint
    # for text, so not-applicable is written in a darker grey.
    ax.text(1.025, 0.62, verdict, transform=ax.transAxes, ha="left", va="center", fontsize=8,
            color="0.55" if verdict == "not-applicable" else color, fontweight="bold")
    # What the verdict rests on (registered / post hoc / fragile), then the interval that
    # decided it (claims.md's CI column), under the verdict.
    if mark := label_text(rec):
        ax.text(1.025, 0.25, mark, transform=ax.transAxes, ha="left", va="center",
                fontsize=6.5, color=LABEL_COLOR if labels(rec) else "0.35",
                fontweight="bold" if labels(rec) else "normal")
    if (method := method_text(rec)) != MISSING:
        ax.text(1.025, -0.12, method, transform=ax.transAxes, ha="left", va="center",
                fontsize=6.5, color="0.35")
    # Above the axis: the test (unit, direction, threshold, deciding p), then which member
    # the strip draws.
    if tested := test_text(rec):
        ax.annotate(tested, xy=(0.0, 1.0), xycoords="axes fraction", xytext=(0, 9),
                    textcoords="offset points", ha="left", va="bottom", fontsize=6.5,
                    color="0.1")
    if plotted := plotted_text(rec):
        ax.annotate(plotted, xy=(0.0, 1.0), xycoords="axes fraction", xytext=(0, 1),
                    textcoords="offset points", ha="left", va="bottom", fontsize=6.5,
                    color="0.4")
    limits = x_range(rec)
    if no_decline(rec):
        _no_decline_strip(ax, rec, color)
        return
    if limits is None or (math.isnan(est) and math.isnan(lo) and math.isnan(hi)):
        # Nothing to draw on a scale: say why instead.
        label = (f"coherence checks: {verdict}" if _text(rec.get("test")) == "coherent"
                 else f"no estimate ({verdict})")
        ax.text(0.5, 0.0, label, transform=ax.get_yaxis_transform(), ha="center",
                va="center", fontsize=8, color="0.3" if verdict == "not-applicable" else color)
        ax.set_xlim(0, 1)
        ax.set_xticks([])
        ax.spines["bottom"].set_visible(False)
        return
    ax.set_xlim(*limits)
    ax.grid(axis="x", alpha=0.3, lw=0.5)
    for x, ls, c, lw in reference_lines(rec):
        ax.axvline(x, ls=ls, color=c, lw=lw, zorder=1)
    left = limits[0] if lo == -math.inf else lo
    right = limits[1] if hi == math.inf else hi
    if math.isfinite(left) and math.isfinite(right):
        ax.plot([left, right], [0, 0], color=color, lw=2.5, solid_capstyle="butt", zorder=2)
    for end, edge in ((lo, limits[0]), (hi, limits[1])):
        if math.isinf(end):  # an unbounded end: an arrow to the axis edge
            start = est if math.isfinite(est) else (right if end < 0 else left)
            ax.annotate("", xy=(edge, 0), xytext=(start, 0), zorder=2,
                        arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2.5,
                                    "shrinkA": 0, "shrinkB": 0})
    if math.isfinite(est):
        ax.plot([est], [0], "o", color=color, ms=6, mec="k", mew=0.6, zorder=3)
    _holm(ax, rec, color)


def _holm(ax, rec: dict, color: str) -> None:
    """The member's interval at its Holm step's level (the refute side of a family), thin
    under the CI with its level: the interval a refutation had to clear."""
    if (h := holm_interval(rec)) is None:
        return
    level, low, high = h
    x0, x1 = ax.get_xlim()
    low, high = max(low, x0), min(high, x1)  # an unbounded end reaches the axis edge
    ax.plot([low, high], [HOLM_Y, HOLM_Y], color=color, lw=1.2, marker="|", ms=6,
            solid_capstyle="butt", zorder=2)
    # Its level in the column right of the axis, under the interval's name.
    ax.text(1.025, -0.49, f"thin: {level_label(level)} Holm (refute)", transform=ax.transAxes,
            ha="left", va="center", fontsize=6, color="0.35")


def no_decline(rec: dict) -> bool:
    """An onset claim whose curve never declines (its estimate is "none")."""
    return _text(rec.get("test")) in ONSET_TESTS and math.isnan(_num(rec.get("estimate")))


def _no_decline_strip(ax, rec: dict, color: str) -> None:
    """An onset that never comes: a right-pointing marker labelled "no decline" at the
    claimed step (mid-strip for `no_decline`, which claims no step), on steps from 0 (the
    base); the part of the CI that has a step is drawn from it to the axis edge (the other
    samples never decline)."""
    lo, step = _num(rec.get("ci_low")), _num(rec.get("threshold"))
    last = max((x for x in (step, lo) if math.isfinite(x)), default=math.nan)
    grid_end = _num(rec.get("last_step"))
    if math.isfinite(grid_end) and grid_end > 0:  # the step grid, room for the marker's label
        ax.set_xlim(0.0, 1.15 * max(grid_end, last if math.isfinite(last) else 0.0))
        ax.grid(axis="x", alpha=0.3, lw=0.5)
    elif math.isfinite(last) and last > 0:
        ax.set_xlim(0.0, 1.5 * last)
        ax.grid(axis="x", alpha=0.3, lw=0.5)
    else:
        ax.set_xlim(0.0, 1.0)
        ax.set_xticks([])
    if not math.isfinite(step):
        step = sum(ax.get_xlim()) / 2
    for x, ls, c, lw in reference_lines(rec):
        ax.axvline(x, ls=ls, color=c, lw=lw, zorder=1)
    if math.isfinite(lo):  # the samples that decline, from step `lo` on
        ax.annotate("", xy=(ax.get_xlim()[1], 0), xytext=(lo, 0), zorder=2,
                    arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2.5,
                                "shrinkA": 0, "shrinkB": 0})
    ax.plot([step], [0], ">", color=color, ms=7, mec="k", mew=0.6, zorder=3)
    ax.annotate("no decline", xy=(step, 0), xytext=(7, 0), textcoords="offset points",
                ha="left", va="center", fontsize=7, zorder=3,
                color="0.3" if _text(rec.get("verdict")) == "not-applicable" else color)


def forest_figure(table: pd.DataFrame) -> plt.Figure:
    """The forest plot of the claims, one strip per claim, top to bottom in table order."""
    check(table)
    claims = claims_of(table)
    if not claims:
        raise contracts.DataError("claims table has no claim rows to plot")
    n = len(claims)
    width = 8.0
    height = HEADER_IN + STRIP_IN * n + FOOTER_IN
    # Left margin sized for the longest claim id (approx. width of an 8 pt character).
    left_in = min(max(1.0, 0.075 * max(len(_text(c["claim"])) for c in claims) + 0.3), 3.5)
    right_in = 1.4  # fits "not-applicable" at 8 pt bold and "thin: 99.17% Holm (refute)"
    fig = plt.figure(figsize=(width, height))
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    # hspace is relative to the axes height.
    axis_in = STRIP_IN - GAP_IN
    fig.subplots_adjust(left=left_in / width, right=1 - right_in / width,
                        top=1 - (HEADER_IN + 0.2) / height, bottom=FOOTER_IN / height,
                        hspace=GAP_IN / axis_in)
    for ax, rec in zip(axes, claims, strict=True):
        _strip(ax, rec)
    # One method for all: the title names it; else each strip names its own (under the verdict).
    what = caption(claims) if len({method_text(c) for c in claims} - {MISSING}) == 1 else ""
    fig.suptitle("Claims: estimate and " + (f"{what} CI" if what else "CI")
                 + " against the decision threshold", y=1 - 0.1 / height, va="top", fontsize=10)
    handles = [Line2D([], [], marker="o", ls="-", lw=2.5, color=COLORS[v], mec="k", mew=0.6,
                      label=v) for v in VERDICTS if v in COLORS]
    handles += [Line2D([], [], ls="--", color="k", lw=1.0, label="threshold t / ±ε"),
                Line2D([], [], ls=":", color="k", lw=1.3, label="published value")]
    if any(holm_interval(c) for c in claims):
        handles.append(Line2D([], [], ls="-", lw=1.2, marker="|", ms=6, color="0.3",
                              label="Holm step's CI (refute side)"))
    if any(no_decline(c) for c in claims):
        handles.append(Line2D([], [], marker=">", ls="", color="0.5", mec="k", mew=0.6,
                              label="no decline (onset)"))
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.35 / height),
               ncol=math.ceil(len(handles) / 2), fontsize=7, frameon=False, handlelength=2.2,
               columnspacing=1.2)
    return fig


def save(fig: plt.Figure, outs) -> None:
    contracts.write_figure(fig, outs, dpi=DPI)


def forest_plot(table: pd.DataFrame, outs: list[str]) -> None:
    """Draw the forest plot of `table` and save it to every path in `outs`."""
    save(forest_figure(table), outs)
