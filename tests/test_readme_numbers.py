"""README quotes the coverage of the current interval rule; the figure must be the one
bench/coverage.py's rerun recorded in docs/coverage.md, not an older run's."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def current_rule_range() -> tuple[str, str]:
    coverage = (ROOT / "docs" / "coverage.md").read_text()
    section = coverage.split("## Rerun with the current rule", 1)[1]
    found = re.search(
        r"calibrated: coverage over \d+ cells.*?min ([\d.]+)%.*?max ([\d.]+)%", section
    )
    assert found, "docs/coverage.md: no summary line under 'Rerun with the current rule'"
    return found.group(1), found.group(2)


def test_readme_quotes_the_current_rules_coverage():
    low, high = current_rule_range()
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"covers {low}–{high}%" in readme, (
        f"README.md must quote the current rule's coverage {low}–{high}% (docs/coverage.md)"
    )
