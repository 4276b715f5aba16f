"""Mistakes at the edges of a run, made as a user makes them, and what the run says: a clone's
Snakefile run from another folder, Ctrl-C during a training."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import yaml
from conftest import ROOT, SNAKEMAKE, copy_workflow, ctrl_c_reaches_it, snakemake


def _dry_run_in(folder, *args) -> str:
    """`snakemake -s CLONE/Snakefile -n` started in `folder`, as a user in another folder."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"),
                           "-n", "--cores", "1", *args], cwd=folder, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout + proc.stderr


def test_a_clones_snakefile_run_from_another_folder_says_where_it_writes(tmp_path):
    out = _dry_run_in(tmp_path)
    assert (f"depthlab: results/, checkpoints/ and logs/ go under {tmp_path.resolve()} (not "
            f"the clone {ROOT}, whose Snakefile runs); to continue the clone's study, pass "
            f"--directory {ROOT}") in out
    # a folder that holds a study already, or one named with --directory: nothing to say
    (tmp_path / "results").mkdir()
    assert "depthlab: results/" not in _dry_run_in(tmp_path)
    named = snakemake(tmp_path / "named", "-n", "--cores", "1")
    assert "depthlab: results/" not in named.stdout + named.stderr


def test_ctrl_c_during_a_training_says_a_rerun_resumes(tmp_path, tiny_model):
    """Ctrl-C (SIGINT to Snakemake's process group, as a terminal sends it) once the training
    has saved a checkpoint: the stage's log ends in one line, not a KeyboardInterrupt
    traceback, and the run ends saying that the same command resumes."""
    from tiny_study import tiny_config

    from workflow_scripts.core import launch

    wd = copy_workflow(tmp_path / "study")
    conf = tiny_config(tiny_model)
    conf["recipes"]["r1"].update(steps=3000, checkpoint_every=5, seeds=[1])
    cfg = wd / "long.yaml"
    cfg.write_text(yaml.safe_dump(conf))
    model = "checkpoints/default/r1/top1/seed1/model.safetensors"
    proc = subprocess.Popen([*SNAKEMAKE, "-s", str(wd / "Snakefile"), "--directory", str(wd),
                             "--cores", "1", model, "--configfile", str(cfg)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONHASHSEED": "0"},
                            start_new_session=True, preexec_fn=ctrl_c_reaches_it)
    state = wd / "checkpoints/default/r1/top1/seed1.trainer"
    deadline = time.monotonic() + 300
    while not list(state.glob("checkpoint-*")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()[-3000:]
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode != 0
    assert launch.RESUME_NOTE in out, out[-3000:]
    assert "workflow_scripts.biencoder.train: interrupted (Ctrl-C)" in out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    assert not (wd / model).exists() and list(state.glob("checkpoint-*"))


def test_the_command_line_mistakes_snakemake_stops_on_and_their_fixes(tmp_path):
    """A target after --configfile and an unquoted --config value with a space stop Snakemake
    before it reads the workflow (its own traceback, which the project cannot reword):
    docs/guide.md names the last line of each and the fix, run here as written there."""
    ladder = str(ROOT / "config/ladder.yaml")
    cases = [(["--configfile", ladder, "ladder"], "FileNotFoundError: [Errno 2] No such file "
              "or directory: 'ladder'", ["--configfile", ladder, "--", "ladder"]),
             (["--config", "depths=[1,", "2]"], "(Unparsable value: '2]')",
              ["--config", "depths=[1, 2]"])]
    guide = (ROOT / "docs/guide.md").read_text()
    assert "`… config/ladder.yaml -- ladder`" in guide
    assert "`--config 'depths=[1, 2]'`" in guide and "`Unparsable value: '2]'`" in guide
    for mistake, said, fix in cases:
        proc = snakemake(tmp_path, "-n", "--cores", "1", *mistake, check=False)
        assert proc.returncode != 0 and said in proc.stdout + proc.stderr
        assert snakemake(tmp_path, "-n", "--cores", "1", *fix).returncode == 0
