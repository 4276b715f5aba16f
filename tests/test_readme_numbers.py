"""README and docs/statistics.md ("In short", the summary moved there from the README) quote
the 3-seed coverage of the calibrated df rule; the figure must be the one bench/coverage.py's
3-seed rerun recorded in docs/coverage.md, not an older run's."""

import re

from conftest import ROOT


def three_seed_rerun_range() -> tuple[str, str]:
    coverage = (ROOT / "docs" / "coverage.md").read_text()
    section = coverage.split("## Rerun with the current rule", 1)[1]
    found = re.search(
        r"calibrated: coverage over \d+ cells.*?min ([\d.]+)%.*?max ([\d.]+)%", section
    )
    assert found, "docs/coverage.md: no summary line under 'Rerun with the current rule'"
    return found.group(1), found.group(2)


def test_readme_quotes_the_three_seed_reruns_coverage():
    low, high = three_seed_rerun_range()
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"covers {low}–{high}%" in readme, (
        f"README.md must quote the 3-seed rerun's coverage {low}–{high}% (docs/coverage.md)"
    )


def test_statistics_summary_quotes_the_three_seed_reruns_coverage():
    low, high = three_seed_rerun_range()
    text = (ROOT / "docs" / "statistics.md").read_text()
    summary = text.split("## In short: what the intervals cover at 3 seeds", 1)
    assert len(summary) == 2, "docs/statistics.md: no section 'In short: what the intervals cover'"
    section = " ".join(summary[1].split("\n## ", 1)[0].split())
    assert f"covers {low}–{high}%" in section, (
        f"docs/statistics.md, 'In short': must quote the 3-seed rerun's coverage {low}–{high}%"
        " (docs/coverage.md)"
    )
