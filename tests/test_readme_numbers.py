"""README quotes the 3-seed coverage of the calibrated df rule; the figure must be the one
bench/coverage.py's 3-seed rerun recorded in docs/coverage.md, not an older run's."""

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
