"""README and docs/statistics.md quote the 3-seed coverage of the reported (tail calibrated)
interval; the figure must be the one in docs/methods.md's `coverage-3-seeds` block, which
`python -m validation coverage-3-seeds --write` regenerates, not an older run's."""

import re

from conftest import ROOT

from validation import run


def three_seed_coverage() -> tuple[str, str]:
    methods = (ROOT / "docs" / "methods.md").read_text(encoding="utf-8")
    block = next((m.group("body") for m in run.BLOCK.finditer(methods)
                  if m.group("name") == "coverage-3-seeds"), None)
    assert block, "docs/methods.md: no <!-- validation: coverage-3-seeds --> block"
    found = re.search(r"calibrated: coverage over \d+ cells.*?min ([\d.]+)%.*?max ([\d.]+)%", block)
    assert found, "docs/methods.md, coverage-3-seeds: no 'calibrated: coverage over' line"
    return found.group(1), found.group(2)


def test_readme_quotes_the_three_seed_coverage():
    low, high = three_seed_coverage()
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"covers {low}–{high}%" in readme, (
        f"README.md must quote the 3-seed coverage {low}–{high}% (docs/methods.md)")


def test_statistics_quotes_the_three_seed_coverage():
    low, high = three_seed_coverage()
    text = " ".join((ROOT / "docs" / "statistics.md").read_text(encoding="utf-8").split())
    assert f"covers {low}–{high}%" in text and f"| {low}–{high}% |" in text, (
        f"docs/statistics.md must quote the 3-seed coverage {low}–{high}% (docs/methods.md)")
