"""The ladder as Snakemake runs it: dry-run job counts of the shipped configs, a tiny ladder
end to end, and resuming after a lost run."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from conftest import ROOT, job_counts, snakemake

CONFIGS = [str(ROOT / "config/config.yaml")]


def test_paper_config_dry_run_lists_72_training_runs(tmp_path):
    # the user's `snakemake -n ladder --configfile config/ladder.yaml`, run from the repo
    # root, merges config/ladder.yaml into config/config.yaml: do the same here
    proc = snakemake(tmp_path, "-n", "ladder", "--configfile", *CONFIGS,
                     str(ROOT / "config/ladder.yaml"))
    counts = job_counts(proc.stdout + proc.stderr)
    assert counts["ladder_train"] == 72  # 2 shapes' (5 + 3) k x 3 methods x 3 seeds
    assert counts["ladder_standalone"] == 4
    assert counts["ladder_download_cifar10"] == 1
    assert "d256L4/dfa/k4/seed456" in proc.stdout + proc.stderr


def test_embedded_config_dry_run(tmp_path):
    # batch_seeds: one job per (config, method, k) writes the files of all 3 seeds
    proc = snakemake(tmp_path, "-n", "ladder", "--configfile", *CONFIGS)
    counts = job_counts(proc.stdout + proc.stderr)
    assert counts["ladder_train"] == 24 and counts["ladder_standalone"] == 4
    assert "ladder_download_cifar10" not in counts
    out = proc.stdout + proc.stderr
    assert "--seeds 42 123 456" in out or "seed456.parquet" in out


TINY = {"ladder": {
    "dataset": {"name": "digits", "n_train": 120, "n_test": 60, "split_seed": 0},
    "configs": [{"name": "t", "d": 8, "L": 1}],
    "methods": ["bp"],
    "seeds": [1, 2],
    "train": {"epochs": 2, "batch_size": 64},
    "crosscheck": True,
    "stats": {"nboot": 200},
}}


@pytest.mark.slow
def test_tiny_ladder_end_to_end_and_resume(tmp_path):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(TINY))
    args = ("ladder", "--configfile", *CONFIGS, str(cfg))
    snakemake(tmp_path, *args, "--cores", "2")
    res = tmp_path / "results/ladder"
    table = pd.read_parquet(res / "table.parquet")
    assert len(table) == 2 and set(table.n_seeds) == {2}
    cross = pd.read_parquet(res / "crosscheck.parquet")
    assert (cross.same_predictions == 1.0).all()  # BP k=0/k=L == standalone frozen/full
    assert "### Paired comparisons" in (res / "summary.md").read_text()
    assert (tmp_path / "results/figures/depth_ladder.png").stat().st_size > 0

    # an interrupted ladder (one run and the summaries missing) redoes only what is missing
    for f in ("runs/t/bp/k1/seed2.parquet", "table.parquet", "comparisons.parquet",
              "crosscheck.parquet", "summary.md"):
        (res / f).unlink()
    dry = snakemake(tmp_path, *args, "--cores", "1", "-n")
    counts = job_counts(dry.stdout + dry.stderr)
    assert counts == {"ladder_train": 1, "ladder_stats": 1, "ladder_figure": 1,
                      "ladder_summary": 1, "ladder": 1}

    # batch_seeds: the same runs from one job per (config, method, k), equal predictions
    batched = tmp_path / "batched"
    cfg_b = tmp_path / "tiny_batched.yaml"
    cfg_b.write_text(yaml.safe_dump({"ladder": {**TINY["ladder"], "batch_seeds": True,
                                                "crosscheck": False}}))
    proc = snakemake(batched, "ladder", "--configfile", *CONFIGS, str(cfg_b), "--cores", "2")
    assert job_counts(proc.stdout + proc.stderr)["ladder_train"] == 2  # k = 0, 1
    for k in (0, 1):
        for seed in (1, 2):
            run = f"results/ladder/runs/t/bp/k{k}/seed{seed}.parquet"
            if (tmp_path / run).exists():
                a, b = pd.read_parquet(tmp_path / run), pd.read_parquet(batched / run)
                assert a.pred.tolist() == b.pred.tolist()
