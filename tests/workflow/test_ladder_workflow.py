"""The ladder as Snakemake runs it: dry-run job counts of the shipped configs, the tiny
study's ladder end to end (conftest's tiny_run, one job per run and the crosscheck, a record
per job), resuming after a lost run, and reruns triggered by settings."""

from __future__ import annotations

import pandas as pd
import yaml
from conftest import ROOT, job_counts, snakemake

PAPER = str(ROOT / "config/ladder.yaml")


def test_paper_config_dry_run_lists_72_training_runs(tmp_path):
    # the user's `snakemake -n ladder --configfile config/ladder.yaml`: the file replaces the
    # embedded default, so only the ladder study is configured
    proc = snakemake(tmp_path, "-n", "ladder", "--configfile", PAPER)
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["ladder_train"] == 72  # 2 shapes' (5 + 3) k x 3 methods x 3 seeds
    assert counts["ladder_standalone"] == 12
    assert counts["ladder_download_cifar10"] == 1
    assert sum(counts.values()) == 91
    assert "d256L4/dfa/k4/seed456" in out


def test_embedded_config_dry_run(tmp_path):
    # one job per run: 2 shapes' (5 + 3) k x 3 methods x 3 seeds, and the crosscheck's
    proc = snakemake(tmp_path, "-n", "ladder")
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["ladder_train"] == 72 and counts["ladder_standalone"] == 12
    assert "ladder_download_cifar10" not in counts
    assert sum(counts.values()) == 90
    assert "--method dfa --k 4 " in out and "--seeds 456 " in out
    assert "--out results/default/ladder/runs/d32L4/bp/k4/seed42.parquet" in out
    # the stage gets exactly the keys it reads, as one argument
    assert ("""--settings-json '{"ci": 0.95, "interval": "calibrated", "nboot": 2000, """
            """"seed": 0}'""") in out


def write_config(path, ladder: dict) -> str:
    path.write_text(yaml.safe_dump({"study": "default", "ladder": ladder}))
    return str(path)


def test_tiny_ladder_end_to_end_and_resume(tiny_run, tiny_run_copy, tmp_path):
    """The tiny study's ladder (tests/helpers/tiny_study.py: one job per run, the crosscheck), then
    on a copy of it: what a setting and a lost run rerun, and the batched jobs."""
    from tiny_study import TINY_LADDER

    wd, _, proc = tiny_run
    counts = job_counts(proc.stdout + proc.stderr)
    res = wd / "results/default/ladder"
    table = pd.read_parquet(res / "table.parquet")
    assert len(table) == 2 and set(table.n_seeds) == {2}
    cross = pd.read_parquet(res / "crosscheck.parquet")
    assert (cross.same_predictions == 1.0).all()  # BP k=0/k=L == standalone frozen/full
    assert "### Paired comparisons" in (res / "summary.md").read_text()
    assert (wd / "results/default/figures/depth_ladder.png").stat().st_size > 0
    assert counts["ladder_train"] == 4 and counts["ladder_standalone"] == 4  # 2 k, 2 seeds
    records = [p for p in (wd / "results/default/benchmarks").rglob("*.json")
               if p.relative_to(wd / "results/default/benchmarks").parts[0].startswith("ladder_")]
    assert len(records) == sum(n for r, n in counts.items()  # every job but `ladder`
                               if r.startswith("ladder_"))

    # on a copy, ladder-only configs of the same ladder: a stats setting reruns the stats
    # and what reads them, no training
    copy_wd, _ = tiny_run_copy
    cfg = write_config(tmp_path / "ladder.yaml", TINY_LADDER)
    args = ("ladder", "--configfile", cfg)
    more_boot = write_config(tmp_path / "nboot.yaml", {**TINY_LADDER, "stats": {"nboot": 300}})
    dry = snakemake(copy_wd, "ladder", "--configfile", more_boot, "--cores", "1", "-n")
    assert job_counts(dry.stdout + dry.stderr) == {
        "ladder_stats": 1, "ladder_figure": 1, "ladder_summary": 1, "ladder": 1}

    # an interrupted ladder (one run and the summaries missing) redoes only what is missing
    for f in ("runs/t/bp/k1/seed2.parquet", "table.parquet", "comparisons.parquet",
              "crosscheck.parquet", "summary.md"):
        (copy_wd / "results/default/ladder" / f).unlink()
    dry = snakemake(copy_wd, *args, "--cores", "1", "-n")
    assert job_counts(dry.stdout + dry.stderr) == {
        "ladder_train": 1, "ladder_stats": 1, "ladder_figure": 1, "ladder_summary": 1,
        "ladder": 1}
