"""profiles/slurm without a cluster: the paper's plan asks GPUs where a model runs and groups
each model's evaluations. (tests/workflow/cluster runs the profile on a real SLURM.)"""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import ROOT, job_counts, snakemake

GPU_RULES = {"train", "evaluate_trained", "evaluate_steps", "evaluate_base",
             "evaluate_base_one_pass", "evaluate_train_once", "evaluate_steps_train_once",
             "evaluate_truncated", "evaluate_truncated_one_pass", "latency_run"}


def job_resources(output: str) -> list[tuple[str, str]]:
    """(rule, resources line) of every job of a dry run."""
    jobs, current = [], None
    for line in output.splitlines():
        if m := re.match(r"\s*(?:local)?rule (\w+):$", line):
            current = m[1]
        elif current and (m := re.match(r"\s*resources: (.*)$", line)):
            jobs.append((current, m[1]))
            current = None
    return jobs


@pytest.mark.workflow
def test_slurm_profile_plans_the_paper_with_gpus_and_evaluation_groups(tmp_path,
                                                                       paper_hub_env):
    proc = snakemake(tmp_path, "-n", "--profile", str(ROOT / "profiles/slurm"),
                     "--configfile", str(ROOT / "config/paper.yaml"), env=paper_hub_env)
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["train"] == 26 and "evaluate_trained" not in counts
    assert counts["evaluate_steps"] == 60  # every model's weights and snapshots, per benchmark
    assert counts["evaluate_steps_train_once"] == 18 and "evaluate_train_once" not in counts
    assert counts["evaluate_truncated_one_pass"] == 15  # 5 cut models x 3 benchmarks
    jobs = job_resources(out)
    assert len(jobs) == sum(counts.values())
    for rule, resources in jobs:
        assert "slurm_partition=gpu" in resources
        if rule in GPU_RULES:
            assert re.search(r"\bgpu=1\b", resources), (rule, resources)
        else:  # downloads, stats, figures, report: localrules, no GPU
            assert "gpu=" not in resources, (rule, resources)
    assert all("slurm_extra=--exclusive" in r for rule, r in jobs if rule == "latency_run")
    # One group job per model (20 per-depth, 6 train-once: its final model and its snapshots
    # on 3 benchmarks, every depth; 5 deepest per-depth models cut to the shallower depths)
    # and one for the untrained base (every depth, one pass).
    groups = re.findall(r"Group job (eval_\S+) ", out)
    assert len(groups) == len(set(groups)) == 20 + 6 + 5 + 1


def test_slurm_profile_names_only_existing_rules():
    prof = yaml.safe_load((ROOT / "profiles/slurm/profile.yaml").read_text())
    text = "".join(p.read_text() for p in (ROOT / "rules").glob("*.smk"))
    rules = {a or b for a, b in re.findall(r"^\s*(?:rule (\w+):|use rule \w+ as (\w+))",
                                           text, re.M)}
    named = set(prof["set-resources"]) | set(prof["set-threads"]) | set(prof["groups"])
    assert named <= rules, named - rules


def test_every_rule_without_a_model_is_a_localrule():
    """On a cluster only the jobs that run a model are submitted. `use rule … with:` resets
    `localrule` (Snakemake 9.27), so each rule of a family says it again; a dry run does not
    print which rules are local, hence this reading of the rules (tests/workflow/cluster runs
    them)."""
    text = "".join(p.read_text() for p in sorted((ROOT / "rules").glob("*.smk")))
    # A rule may be defined under an `if` (indented): its block starts at its own indent.
    blocks = re.split(r"^(?=\s*(?:rule |use rule ))", text, flags=re.M)
    local = {}
    for block in blocks:
        if m := re.match(r"\s*(?:rule (\w+)|use rule \w+ as (\w+) with):", block):
            local[m[1] or m[2]] = re.search(r"\n\s+localrule: True\n", block) is not None
    remote = {name for name, is_local in local.items() if not is_local}
    ladder = {"ladder_prepare", "ladder_train", "ladder_standalone", "ladder_identity"}
    assert remote == GPU_RULES | ladder, remote
