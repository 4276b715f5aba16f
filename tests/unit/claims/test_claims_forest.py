"""claims/forest: an onset claim whose learning curve never declines is drawn as such, a
"no decline" marker at the claimed step, not an empty strip."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from workflow_scripts.claims import forest

NAN, INF = math.nan, math.inf


def row(cid, test, threshold, estimate, ci_low, ci_high, verdict) -> dict:
    return {"claim": cid, "statement": "s", "row": "claim", "member": f"onset of {cid}",
            "test": test, "threshold": threshold, "epsilon": NAN, "estimate": estimate,
            "ci_low": ci_low, "ci_high": ci_high, "ci": 0.95, "interval": "calibrated",
            "verdict": verdict, "alpha": 0.025}


def markers(ax, shape=">") -> list[tuple[float, float]]:
    return [(float(line.get_xdata()[0]), float(line.get_ydata()[0])) for line in ax.lines
            if line.get_marker() == shape]


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


@pytest.fixture
def figure():
    table = pd.DataFrame([
        row("never", "after", 6.0, NAN, INF, INF, "refuted"),          # no sample declines
        row("rarely", "after", 6.0, NAN, 12.0, INF, "inconclusive"),   # some from step 12
        row("none-claimed", "no_decline", NAN, NAN, INF, INF, "supported"),
        row("declines", "after", 6.0, 18.0, 12.0, 24.0, "supported"),
    ])
    fig = forest.forest_figure(table)
    yield fig
    forest.plt.close(fig)


def test_a_curve_without_decline_has_its_marker_at_the_claimed_step(figure):
    never, rarely, claimed, declines = figure.axes
    assert markers(never) == [(6.0, 0.0)] and "no decline" in texts(never)
    lo, hi = never.get_xlim()
    assert lo < 6.0 < hi
    assert [line.get_xdata()[0] for line in never.lines if line.get_linestyle() == "--"] == [6.0]
    # the samples that do decline (from step 12) are drawn as a CI open to the right
    assert markers(rarely) == [(6.0, 0.0)] and "no decline" in texts(rarely)
    assert rarely.get_xlim()[0] < 6.0 and rarely.get_xlim()[1] > 12.0
    (arrow,) = [c for c in rarely.texts if getattr(c, "arrow_patch", None) is not None]
    assert arrow.xyann == (12.0, 0)  # from step 12 to the axis edge
    # `no_decline` claims no step: the marker sits mid-strip
    ((x, _),) = markers(claimed)
    assert x == pytest.approx(sum(claimed.get_xlim()) / 2)
    assert "no decline" in texts(claimed)
    # a curve that declines keeps its estimate and interval, no marker
    assert not markers(declines) and markers(declines, "o") == [(18.0, 0.0)]
    assert "no decline" not in texts(declines)


def test_the_legend_names_the_marker_only_where_one_is_drawn(figure):
    (legend,) = figure.legends
    assert "no decline (onset)" in [t.get_text() for t in legend.get_texts()]
    plain = forest.forest_figure(pd.DataFrame([row("declines", "after", 6.0, 18.0, 12.0, 24.0,
                                                   "supported")]))
    assert "no decline (onset)" not in [t.get_text() for t in plain.legends[0].get_texts()]
    forest.plt.close(plain)


def test_each_strip_names_the_member_it_plots(figure):
    """A family's strip plots the member that decided it: the strip says which, of how many."""
    assert "onset of never" in texts(figure.axes[0])
    family = {**row("budget", "greater", 0.0, 0.01, -0.01, 0.03, "inconclusive"),
              "member": "r4/top2 − r1/top2 [all]", "n_members": 3.0}
    fig = forest.forest_figure(pd.DataFrame([family]))
    assert "r4/top2 − r1/top2 [all] (decided the claim; 3 members)" in texts(fig.axes[0])
    forest.plt.close(fig)


def test_an_onset_strip_starts_at_step_0(figure):
    """The onset steps run from the base (step 0): a strip padded around 12-24 read as if the
    grid started at 10."""
    declines = figure.axes[3]
    assert declines.get_xlim()[0] == 0.0 and declines.get_xlim()[1] > 24.0


def test_an_onset_strip_spans_the_step_grid():
    """An onset at 6 [6, 6] on a 0-24 grid: the axis runs over the grid (claims.parquet's
    last_step), not 0-9 around the interval."""
    rec = {**row("early", "after", 4.0, 6.0, 6.0, 6.0, "supported"), "last_step": 24.0}
    never = {**row("never", "after", 6.0, NAN, INF, INF, "refuted"), "last_step": 24.0}
    fig = forest.forest_figure(pd.DataFrame([rec, never]))
    for ax in fig.axes:
        lo, hi = ax.get_xlim()
        assert lo == 0.0 and hi >= 24.0
    forest.plt.close(fig)
