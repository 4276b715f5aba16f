"""The ladder as Snakemake runs it: dry-run job counts of the shipped configs, one benchmark
per job (LADDER_BENCHMARKS), the tiny study's ladder end to end (conftest's tiny_run, one job
per run and the crosscheck), resuming after a lost run, reruns triggered by settings, and
the batched jobs' equal runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pandas as pd
import pytest
import yaml
from conftest import ROOT, SNAKEMAKE, job_counts, snakemake

PAPER = str(ROOT / "config/ladder.yaml")


def benchmark_targets_dry_run(tmp_path, *configfiles) -> tuple[dict, dict]:
    """(job counts of a dry run whose only targets are LADDER_BENCHMARKS' files, as the
    report's usage rule takes them; {rule: number of files} of LADDER_BENCHMARKS), through a
    Snakefile that includes the repository's."""
    wrapper, listed = tmp_path / "Snakefile", tmp_path / "listed.json"
    wrapper.write_text(
        f'include: "{ROOT / "Snakefile"}"\n\n'
        "import json\n\n"
        f'with open("{listed}", "w") as f:\n'
        "    json.dump({r: len(b) for r, b in LADDER_BENCHMARKS.items() if b}, f)\n\n\n"
        "rule bench_check:\n    input:\n"
        "        [b for files in LADDER_BENCHMARKS.values() for b in files],\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the wrapper's folder is not the repo
    proc = subprocess.run([*SNAKEMAKE, "-s", str(wrapper), "-n", "bench_check", "--configfile",
                           *configfiles], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return job_counts(proc.stdout + proc.stderr), json.loads(listed.read_text())


def by_rule(counts: dict) -> dict:
    """Job counts with the batched rules' jobs under the rule they batch (ladder_train_batch0
    -> ladder_train), as LADDER_BENCHMARKS and the usage table count them."""
    out: dict = {}
    for rule, n in counts.items():
        rule = re.sub(r"_batch[0-9]+$", "", rule)
        out[rule] = out.get(rule, 0) + n
    return out


def check_one_benchmark_per_job(tmp_path, counts, out, *configfiles):
    """Every job but the aggregate `ladder` has a benchmark, and LADDER_BENCHMARKS names
    exactly those jobs' benchmark files, under their rules."""
    jobs = {r: n for r, n in by_rule(counts).items() if r != "ladder"}
    assert out.count("    benchmark: results/benchmarks/") == sum(jobs.values())
    via_benchmarks, listed = benchmark_targets_dry_run(tmp_path, *configfiles)
    via_benchmarks = by_rule(via_benchmarks)
    assert via_benchmarks.pop("bench_check") == 1
    assert via_benchmarks == jobs
    assert listed == jobs


def test_paper_config_dry_run_lists_72_training_runs(tmp_path):
    # the user's `snakemake -n ladder --configfile config/ladder.yaml`: the file replaces the
    # embedded default, so only the ladder study is configured
    proc = snakemake(tmp_path, "-n", "ladder", "--configfile", PAPER)
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["ladder_train"] == 72  # 2 shapes' (5 + 3) k x 3 methods x 3 seeds
    assert counts["ladder_standalone"] == 12  # one job per run: batch_seeds is off
    assert counts["ladder_download_cifar10"] == 1
    assert sum(counts.values()) == 91
    assert "d256L4/dfa/k4/seed456" in out
    check_one_benchmark_per_job(tmp_path, counts, out, PAPER)


def test_embedded_config_dry_run(tmp_path):
    # batch_seeds + batch_methods: one job per (config, k) writes the files of all 3
    # methods x 3 seeds
    proc = snakemake(tmp_path, "-n", "ladder")
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert by_rule(counts)["ladder_train"] == 5 + 3 and by_rule(counts)["ladder_standalone"] == 4
    assert "ladder_download_cifar10" not in counts
    assert sum(counts.values()) == 18
    assert "--method bp fa dfa --k 4 " in out and "--seeds 42 123 456" in out
    assert ("--out results/ladder/runs/d32L4/bp/k4/seed42.parquet "
            "results/ladder/runs/d32L4/bp/k4/seed123.parquet") in out
    # the stage gets exactly the keys it reads, as one argument
    assert ("""--settings-json '{"ci": 0.95, "interval": "calibrated", "nboot": 2000, """
            """"seed": 0}'""") in out
    ladder_only = tmp_path / "ladder_only.yaml"
    ladder_only.write_text(yaml.safe_dump(
        {"ladder": yaml.safe_load((ROOT / "config/config.yaml").read_text())["ladder"]}))
    check_one_benchmark_per_job(tmp_path, counts, out, str(ladder_only))


def write_config(path, ladder: dict) -> str:
    path.write_text(yaml.safe_dump({"ladder": ladder}))
    return str(path)


@pytest.mark.slow
def test_tiny_ladder_end_to_end_and_resume(tiny_run, tiny_run_copy, tmp_path):
    """The tiny study's ladder (tests/tiny_study.py: one job per run, the crosscheck), then
    on a copy of it: what a setting and a lost run rerun, and the batched jobs."""
    from tiny_study import TINY_LADDER

    wd, _, proc = tiny_run
    counts = by_rule(job_counts(proc.stdout + proc.stderr))
    res = wd / "results/ladder"
    table = pd.read_parquet(res / "table.parquet")
    assert len(table) == 2 and set(table.n_seeds) == {2}
    cross = pd.read_parquet(res / "crosscheck.parquet")
    assert (cross.same_predictions == 1.0).all()  # BP k=0/k=L == standalone frozen/full
    assert "### Paired comparisons" in (res / "summary.md").read_text()
    assert (wd / "results/figures/depth_ladder.png").stat().st_size > 0
    assert counts["ladder_train"] == 4 and counts["ladder_standalone"] == 4  # 2 k, 2 seeds
    benchmarks = [*(wd / "results/benchmarks/ladder").rglob("*.tsv"),
                  *(wd / "results/benchmarks/data/ladder").rglob("*.tsv"),
                  *(wd / "results/benchmarks/figures").glob("depth_ladder.*.tsv")]
    assert len(benchmarks) == sum(n for r, n in counts.items()  # every job but `ladder`
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
        (copy_wd / "results/ladder" / f).unlink()
    dry = snakemake(copy_wd, *args, "--cores", "1", "-n")
    assert job_counts(dry.stdout + dry.stderr) == {
        "ladder_train": 1, "ladder_stats": 1, "ladder_figure": 1, "ladder_summary": 1,
        "ladder": 1}

    # batch_seeds (+ batch_methods): the same runs from one job per (config, method, k)
    # (per (config, k)), equal predictions. Only the runs are asked for: the stats, figure
    # and summary of batched runs are test_batching's study's.
    for batch, methods in (({"batch_seeds": True}, ["bp"]),
                           ({"batch_seeds": True, "batch_methods": True}, ["bp", "fa"])):
        batched = tmp_path / f"batched{len(batch)}"
        shutil.copytree(wd / "data/ladder", batched / "data/ladder")  # the digits, prepared
        cfg_b = write_config(tmp_path / f"tiny_batched{len(batch)}.yaml",
                             {**TINY_LADDER, **batch, "methods": methods,
                              "crosscheck": False})
        runs = [f"results/ladder/runs/t/{m}/k{k}/seed{seed}.parquet" for m in methods
                for k in (0, 1) for seed in (1, 2)]
        proc = snakemake(batched, *runs, "--configfile", cfg_b, "--cores", "2")
        counts = by_rule(job_counts(proc.stdout + proc.stderr))
        assert counts["ladder_train"] == 2 and "ladder_prepare" not in counts  # k = 0, 1
        for k in (0, 1):
            assert (batched / f"results/ladder/runs/t/fa/k{k}/seed2.parquet").exists() == (
                "fa" in methods)
            for seed in (1, 2):
                run = f"results/ladder/runs/t/bp/k{k}/seed{seed}.parquet"
                if (wd / run).exists():
                    a, b = pd.read_parquet(wd / run), pd.read_parquet(batched / run)
                    assert a.pred.tolist() == b.pred.tolist()
