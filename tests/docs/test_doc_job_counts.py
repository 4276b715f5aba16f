"""Every job count the docs quote, read from the docs and compared with the plan of the config
it names: what a dry run of that config lists (tests/workflow/test_config_dry_runs.py holds the
dry runs to the plan, one per config), so a study that gains jobs fails here until the docs
say so."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT
from test_study_plan import CONFIGS, expected_jobs, load

from workflow_scripts.study_plan import StudyPlan

# (doc, the sentence with the count as its group, config, what is counted)
QUOTED = [
    ("docs/guide.md", r"The default study is (\d+) jobs", "default", "total"),
    ("docs/guide.md", r"config/paper.yaml +# (\d+) jobs: the plan", "paper", "total"),
    ("docs/guide.md", r"(\d+) trainings, \d+ evaluation jobs", "paper", "train"),
    ("docs/guide.md", r"\d+ trainings, (\d+) evaluation jobs", "paper", "evaluation"),
    ("docs/guide.md", r"paper\s+study submits \d+ evaluation jobs instead of (\d+)", "paper",
     "evaluation"),
    ("config/README.md", r"The whole default is (\d+) jobs", "default", "total"),
    ("config/README.md", r"44: (\d+) training jobs", "default", "train"),
    ("config/README.md", r"`snakemake -n`: (\d+)\s+jobs besides the target `all`", "laptop",
     "besides all"),
    ("docs/laptop.md", r"(\d+) jobs in `snakemake -n`", "laptop", "total"),
    ("docs/laptop.md", r"(\d+) jobs in its `snakemake -n`", "nanobeir", "total"),
]


def _count(jobs: dict[str, int], what: str) -> int:
    if what == "total":
        return sum(jobs.values())
    if what == "besides all":
        return sum(jobs.values()) - jobs["all"]
    if what == "evaluation":
        return sum(n for rule, n in jobs.items() if rule.startswith("evaluate"))
    return jobs[what]


@pytest.fixture(scope="module")
def planned():
    return {name: expected_jobs(StudyPlan(load(files))) for name, files in CONFIGS.items()}


@pytest.mark.parametrize(("doc", "sentence", "config", "what"), QUOTED,
                         ids=[f"{d}:{c}:{w}" for d, _, c, w in QUOTED])
def test_a_quoted_job_count_is_the_configs(planned, doc, sentence, config, what):
    found = re.findall(sentence, (ROOT / doc).read_text())
    assert len(found) == 1, f"{doc}: the sentence {sentence!r} is gone or repeated"
    assert int(found[0]) == _count(planned[config], what), (
        f"{doc} quotes {found[0]} ({what}) for config {config}: the plan has "
        f"{_count(planned[config], what)}")
