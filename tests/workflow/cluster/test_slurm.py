"""The tiny study through `--profile profiles/slurm` on a real single-node SLURM.

Needs the cluster of tests/workflow/cluster/up.sh (.ci/run starts it); without one these tests skip,
unless DEPTHLAB_REQUIRE_SLURM=1 (set by .ci/run), which turns the skip into a failure.
The check functions are tested without a cluster (last tests).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
import yaml

from workflow_scripts.core import contracts

sys.path.insert(0, str(Path(__file__).parent))
import slurmrun  # noqa: E402
from conftest import job_counts  # noqa: E402
from slurmrun import SlurmJob  # noqa: E402
from tiny_study import copy_study, tiny_config  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    problem = slurmrun.cluster_problem()
    if problem and os.environ.get("DEPTHLAB_REQUIRE_SLURM") == "1":
        pytest.fail(f"DEPTHLAB_REQUIRE_SLURM=1 but {problem}")
    if problem:
        pytest.skip(problem)


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory, request):
    """The tiny study cut to one seed (slurmrun.cluster_config) through SLURM (everything),
    and its local twin: the session's local tiny study (conftest's tiny_run), whose seed-1
    models and evaluations are the same jobs, with the stats and learning curves redone
    for the cut config in a copy of it (the only jobs the cut config changes)."""
    # Asked for here, after `cluster`: a session fixture in the signature would be built
    # first, also when there is no cluster to skip for.
    study, study_cfg, _ = request.getfixturevalue("tiny_run")
    tmp = tmp_path_factory.mktemp("cluster")
    cfg = slurmrun.cluster_config(yaml.safe_load(study_cfg.read_text()))
    configfile = tmp / "cluster.yaml"
    configfile.write_text(yaml.safe_dump(cfg))
    local, _ = copy_study(study, study_cfg, tmp / "local")
    out, _ = slurmrun.run_snakemake(local, "--configfile", str(configfile), "--cores", "2",
                                    "results/default/stats/ci.parquet",
                                    "results/default/stats/curves.parquet")
    redone = {r: n for r, n in job_counts(out).items() if n}
    assert set(redone) <= {"stats", "curves"}, redone  # the models and evaluations are kept
    profile = slurmrun.ci_profile(tmp / "profile")
    run = slurmrun.run_on_slurm(tmp / "slurm", configfile, profile)
    print(f"SLURM run: {run.seconds:.0f} s, {len(run.submitted)} SLURM jobs")
    return cfg, local, run


def test_every_cluster_job_ran_through_slurm(runs):
    cfg, _, run = runs
    expected = slurmrun.slurm_outputs(cfg)
    produced = {str(p.relative_to(run.workdir)) for d in ("checkpoints", "data", "results")
                for p in (run.workdir / d).rglob("*") if p.is_file()}
    assert expected <= produced
    assert (run.workdir / "results/default/RESULTS.md").exists()  # the whole DAG ran
    jobs = slurmrun.sacct_jobs(run)
    found = slurmrun.problems(jobs, set(run.submitted), expected,
                              slurmrun.expected_submissions(cfg), produced - expected)
    assert not found, "\n".join(found)
    # One SLURM job per training and latency run, one per model's evaluations.
    assert sorted(j.comment for j in jobs) == slurmrun.expected_comments(cfg)


def test_outputs_equal_a_local_run(runs):
    cfg, local, run = runs
    evals = sorted(f for f in slurmrun.slurm_outputs(cfg) if f.startswith("results/default/eval/"))
    for f in (f for f in evals if f.endswith(".parquet")):
        pd.testing.assert_frame_equal(pd.read_parquet(local / f),
                                      pd.read_parquet(run.workdir / f), obj=f)
    # The rankings: the same run text (the sidecars name each run's own paths and host)
    for f in (f for f in evals if f.endswith(".run.gz")):
        assert (gzip.decompress((local / f).read_bytes())
                == gzip.decompress((run.workdir / f).read_bytes())), f
    # the stats tables and the learning curves' (the copy's other tables are the 2 seeds')
    stats = sorted(f for t in (*contracts.STATS_TABLES, *contracts.CURVE_TABLES)
                   if (f := local / f"results/default/stats/{t}.parquet").exists())
    assert len(stats) == 6 + 4
    for f in stats:
        pd.testing.assert_frame_equal(pd.read_parquet(f), pd.read_parquet(
                                          run.workdir / "results/default/stats" / f.name),
                                      obj=f.name)
    # The final models and the learning curve's snapshots (of seed 1, the cut config's).
    models = sorted(p for p in (local / "checkpoints").rglob("model.safetensors")
                    if "seed1" in p.parts)
    assert {str(f.relative_to(local)) for f in models} == {
        f for f in slurmrun.slurm_outputs(cfg)
        if f.startswith("checkpoints/default/") and f.endswith("/model.safetensors")}
    for f in models:
        twin = run.workdir / f.relative_to(local)
        assert _sha(f) == _sha(twin), twin


def test_killed_training_is_retried_from_its_checkpoint(cluster, tiny_model, tmp_path):
    """Issue #17: kill a training job's process after a checkpoint (as the OOM killer or a
    failing node would): SLURM records the job FAILED, the profile's retry resumes from
    that checkpoint and the model ends bit-identical to an uninterrupted local run."""
    cfg = slurmrun.cluster_config(tiny_config(tiny_model))
    # ~17 ms a step on one core: ~5 s of training, a checkpoint every ~1 s.
    cfg["recipes"] = {"r": {"batch_size": 4, "steps": 300, "lr": 1e-3, "warmup": 0,
                            "checkpoint_every": 50, "seeds": [1]}}
    cfg["depths"] = [2]
    del cfg["claims"], cfg["figures"]  # they name the recipes replaced here
    configfile = tmp_path / "kill.yaml"
    configfile.write_text(yaml.safe_dump(cfg))
    model = "checkpoints/default/r/top2/seed1/model.safetensors"
    local = tmp_path / "local"
    slurmrun.run_snakemake(local, "--configfile", str(configfile), "--cores", "1", model)

    work = tmp_path / "slurm"
    state = work / "checkpoints/default/r/top2/seed1.trainer"
    killed = {}

    def kill():
        try:
            killed["id"] = slurmrun.kill_when(
                lambda: (state / "checkpoint-100" / "trainer_state.json").exists(),
                "rule_train_wildcards_r_top_2_1", "workflow_scripts.biencoder.train")
        except Exception as e:  # reported by the main thread
            killed["error"] = e

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    profile = slurmrun.ci_profile(tmp_path / "profile", retries=1)
    run = slurmrun.run_on_slurm(work, configfile, profile, targets=(model,), timeout=600)
    killer.join(timeout=30)
    assert "error" not in killed, killed.get("error")

    jobs = {j.job_id: j.state for j in slurmrun.sacct_jobs(run)}
    assert jobs[killed["id"]] == "FAILED", jobs
    assert sorted(jobs.values()) == ["COMPLETED", "FAILED"], jobs  # the retry
    log = (work / "logs/default/train/r/top2/seed1.log").read_text()
    assert "resuming from" in log and "checkpoint-" in log, log[-2000:]
    summary = json.loads((work / model).with_name("train_summary.json").read_text())
    ref = json.loads((local / model).with_name("train_summary.json").read_text())
    assert summary["resumed_from"] and not ref["resumed_from"]
    assert summary["final_loss"] == ref["final_loss"]
    assert _sha(work / model) == _sha(local / model)
    assert not state.exists()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- the checks themselves, without a cluster ----------------------------------------------

def _job(job_id, outputs, **kw):
    return SlurmJob(**{"job_id": job_id, "comment": "c", "state": "COMPLETED",
                       "partition": slurmrun.PARTITION, "gpus": 1,
                       "outputs": frozenset(outputs), **kw})


def test_checks_pass_a_run_that_went_through_slurm():
    jobs = [_job("1", ["m.safetensors"]), _job("2", ["a.parquet", "b.parquet"])]
    assert slurmrun.problems(jobs, {"1", "2"}, {"m.safetensors", "a.parquet", "b.parquet"},
                             2, {"stats.parquet"}) == []


def test_checks_catch_a_job_that_ran_locally():
    # b.parquet exists but no SLURM job's log shows it: it ran on the submit host.
    jobs = [_job("1", ["m.safetensors"]), _job("2", ["a.parquet"])]
    found = slurmrun.problems(jobs, {"1", "2"}, {"m.safetensors", "a.parquet", "b.parquet"},
                              3, set())
    assert found == ["b.parquet: written by no SLURM job (ran locally?)",
                     "2 SLURM jobs, expected 3"]


def test_checks_catch_failures_wrong_partition_missing_gpu_and_unaccounted_jobs():
    jobs = [_job("1", ["m"], state="FAILED"), _job("2", ["a", "s"], partition="debug", gpus=0)]
    found = slurmrun.problems(jobs, {"1", "2", "3"}, {"m", "a"}, 2, {"s"})
    assert "s: a localrule's output, written inside a SLURM job" in found
    assert "submitted ['1', '2', '3'] but sacct has ['1', '2']" in found
    assert "SLURM job 1 (c): FAILED" in found
    assert "SLURM job 2 (c): partition debug" in found
    assert "SLURM job 2 (c): no GPU" in found


def test_log_outputs_reads_the_output_lines_of_a_slurm_log():
    log = ("rule train:\n    input: x\n"
           "    output: checkpoints/default/r1/top1/seed1/model.safetensors\n    jobid: 3\n"
           "rule evaluate_trained:\n    output: a.parquet, b.parquet\n")
    assert slurmrun.log_outputs(log) == {"checkpoints/default/r1/top1/seed1/model.safetensors",
                                         "a.parquet", "b.parquet"}
