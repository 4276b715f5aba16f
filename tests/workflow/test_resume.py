"""A training job killed mid-run resumes from its last trainer checkpoint and ends with the
same model as an uninterrupted run (CPU, tiny model), a train-once arm's too: its loss samples
layers (and dimensions) with Python's `random`, whose state the checkpoint must restore."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import time

import pandas as pd
import pytest
from conftest import docstring_study_data
from crash_injection import Crash, crash_after, kill_at
from safetensors.numpy import load_file

from workflow_scripts.biencoder import evaluate
from workflow_scripts.biencoder.model.encoder import load_encoder
from workflow_scripts.biencoder.trainer_state import checkpoint_problem

SETTINGS = {"batch_size": 4, "steps": 8, "lr": 1e-3, "warmup": 1, "max_seq_length": 16}
# matryoshka2d draws a prior layer (of 2 at depth 2) and a dimension (of 2) every step: a
# resume that restarted Python's RNG would draw other ones. Matryoshka2dLoss is
# AdaptiveLayerLoss with MatryoshkaLoss inside, so this covers adaptive's draws too.
STRATEGY_SETTINGS = {"top": SETTINGS, "matryoshka2d": {**SETTINGS, "matryoshka_dims": [16]},
                     "adaptive": SETTINGS}
# Learning-curve snapshots at 3 (before the kill at checkpoint 4) and 5 (after it); 8 is
# the final model.
EVAL_STEPS = (3, 5, 8)


def _train_args(model, triples, out, *, strategy="top") -> list[str]:
    """The training CLI's arguments."""
    return ["--base", str(model), "--strategy", strategy, "--depth", "2", "--seed", "5",
            "--settings-json", json.dumps(STRATEGY_SETTINGS[strategy]), "--triples",
            str(triples), "--checkpoint-every", "2", "--eval-steps", *map(str, EVAL_STEPS),
            "--out", str(out)]


def _fork(child) -> int:
    """Run `child()` in a process forked from this one; its pid. The child imports nothing
    anew (a fresh interpreter would import sentence-transformers again, ~6 s a kill) and
    ends with os._exit: it never returns into pytest. torch's single OpenMP thread
    (tests/conftest.py) makes the fork safe."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            child()
        except BaseException:  # noqa: BLE001 - the parent sees the exit status
            import traceback

            traceback.print_exc()
        finally:
            os._exit(70)
    return pid


def _wait(pid) -> int:
    """The forked child's end: -N for a kill by signal N, else its exit status."""
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return docstring_study_data(tmp_path_factory.mktemp("resume"), triples=60, queries=30,
                                docs=60)


@pytest.fixture(scope="module")
def top_reference(tiny_model, data):
    """An uninterrupted in-process training of strategy top with EVAL_STEPS' snapshots:
    (its folder, the train() keywords that made it, its summary); the reference of the
    fallback and missing-snapshot tests, which train it the same way."""
    from workflow_scripts.biencoder.train import train
    from workflow_scripts.core.settings import Train

    kw = dict(base=str(tiny_model), strategy="top", depth=2, seed=5,
              settings=Train.from_json(json.dumps(SETTINGS)), triples=data / "t.parquet",
              checkpoint_every=2)
    ref = data / "top-ref"
    summary = train(out_dir=ref, eval_steps=EVAL_STEPS, **kw)
    return ref, kw, summary


def _metrics(model_dir, bench) -> pd.DataFrame:
    df, _ = evaluate.evaluate_model(load_encoder(str(model_dir), max_seq_length=16), bench,
                                    top_k=100)
    return df


@pytest.mark.parametrize("strategy", ["top", "matryoshka2d"])
def test_killed_training_resumes_to_the_same_model(tiny_model, data, strategy, request,
                                                    capsys):
    from workflow_scripts.biencoder import train

    ref, out = data / f"ref-{strategy}", data / f"out-{strategy}"
    args = functools.partial(_train_args, tiny_model, data / "t.parquet", strategy=strategy)
    if strategy == "top":  # the CLI runs train() as top_reference does (one thread)
        ref = request.getfixturevalue("top_reference")[0]
    else:
        train.main(args(ref))

    def slowed():  # each step slowed down, so that the job can be killed between checkpoints
        real_train = train.train
        train.train = lambda **kw: real_train(**kw, callbacks=[crash_after(None, delay=0.4)])
        train.main(args(out))

    pid = _fork(slowed)
    state = data / f"out-{strategy}.trainer"
    deadline = time.time() + 240
    # Killed once checkpoint 4 is whole by the resume's own test (its elapsed-seconds file is
    # written after trainer_state.json): killed in between, it is rightly skipped for 2.
    while checkpoint_problem(state / "checkpoint-4"):
        assert os.waitpid(pid, os.WNOHANG) == (0, 0), "training ended before it was killed"
        assert time.time() < deadline, "no checkpoint-4 appeared"
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    assert _wait(pid) == -signal.SIGKILL
    assert not out.exists()  # the final model is written atomically, never half

    capsys.readouterr()
    train.main(args(out))  # the rerun, as Snakemake (or its retry) starts it
    assert "resuming from" in capsys.readouterr().out
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["resumed_from"].endswith(("checkpoint-4", "checkpoint-6"))
    assert not state.exists()  # trainer state is removed once the model is saved
    # Issue #17: the loss summary covers the whole run, not only the resumed steps.
    _assert_same_loss(summary, json.loads((ref / "train_summary.json").read_text()))

    pd.testing.assert_frame_equal(_metrics(ref, data / "bench"), _metrics(out, data / "bench"),
                                  check_exact=True)
    _assert_same_weights(ref, out)  # bitwise, not just close, snapshots included
    assert sorted(p.name for p in (out / "steps").iterdir()) == ["step3", "step5"]


def _assert_same_weights(ref, out) -> None:
    for rel in ("model.safetensors", "steps/step3/model.safetensors",
                "steps/step5/model.safetensors"):
        w_ref, w_out = load_file(ref / rel), load_file(out / rel)
        assert w_ref.keys() == w_out.keys()
        assert all((w_ref[k] == w_out[k]).all() for k in w_ref), rel


def _assert_same_loss(resumed: dict, uninterrupted: dict) -> None:
    assert [h["step"] for h in resumed["loss_history"]] == list(range(1, 9))
    assert resumed["loss_history"] == uninterrupted["loss_history"]
    assert resumed["final_loss"] == uninterrupted["final_loss"]


def test_corrupted_newest_checkpoint_falls_back_to_the_one_before(top_reference, data,
                                                                  capsys):
    """Issue #17: a truncated model.safetensors in the newest checkpoint used to fail every
    rerun with "SafetensorError: invalid header length"; now the older one resumes and the
    model ends bit-identical to an uninterrupted run."""
    from workflow_scripts.biencoder.train import train

    ref, kw, _ = top_reference
    kw = {**kw, "eval_steps": EVAL_STEPS}
    out = data / "fallback-out"
    with pytest.raises(Crash):
        train(out_dir=out, callbacks=[crash_after(4)], **kw)
    newest = data / "fallback-out.trainer" / "checkpoint-4" / "model.safetensors"
    newest.write_bytes(newest.read_bytes()[:100])  # truncated mid-write
    summary = train(out_dir=out, **kw)
    said = capsys.readouterr().out
    assert "skipping" in said and "checkpoint-4" in said
    assert summary["resumed_from"].endswith("checkpoint-2")
    _assert_same_loss(summary, json.loads((ref / "train_summary.json").read_text()))
    _assert_same_weights(ref, out)


def test_a_stopped_adaptive_run_resumes_with_the_same_layer_draws(tiny_model, data):
    """The default study's train-once arm, stopped after checkpoint 4 and resumed by a new
    trainer (which seeds Python's RNG afresh before the checkpoint's state replaces it), ends
    bit-identical to an uninterrupted run."""
    from workflow_scripts.biencoder.train import train
    from workflow_scripts.core.settings import TrainAdaptive

    kw = dict(base=str(tiny_model), strategy="adaptive", depth=2, seed=5,
              settings=TrainAdaptive.from_json(json.dumps(SETTINGS)),
              triples=data / "t.parquet", checkpoint_every=2, eval_steps=EVAL_STEPS)
    ref, out = data / "adaptive-ref", data / "adaptive-out"
    reference = train(out_dir=ref, **kw)
    with pytest.raises(Crash):
        train(out_dir=out, callbacks=[crash_after(4)], **kw)
    summary = train(out_dir=out, **kw)
    assert summary["resumed_from"].endswith("checkpoint-4")
    assert summary["loss"] == reference["loss"] and summary["loss"]["n_layers_per_step"] == 1
    _assert_same_loss(summary, reference)
    _assert_same_weights(ref, out)


def test_resume_past_a_missing_snapshot_trains_from_the_start(top_reference, data, capsys):
    """A trainer state past a snapshot step whose snapshot is not there (removed by hand;
    state left by a run with other eval_steps is dropped by its fingerprint, see
    tests/unit/biencoder/test_provenance.py) cannot give that snapshot: the rerun starts over and
    still ends with an uninterrupted run's model and snapshots."""
    from workflow_scripts.biencoder.train import train

    ref, kw, _ = top_reference
    kw = {**kw, "eval_steps": EVAL_STEPS}
    out = data / "lost-out"
    with pytest.raises(Crash):
        train(out_dir=out, callbacks=[crash_after(4)], **kw)
    shutil.rmtree(data / "lost-out.trainer" / "snapshots" / "step3")
    summary = train(out_dir=out, **kw)
    assert "lacks: training from the start" in capsys.readouterr().out
    assert summary["resumed_from"] is None
    _assert_same_weights(ref, out)


def test_failed_retrain_leaves_no_partial_model_folder(tiny_model, data):
    """Issue #17: a failed retrain used to leave the old config, tokenizer and summary in the
    model folder without model.safetensors (which Snakemake removes before the job)."""
    from workflow_scripts.biencoder.train import train
    from workflow_scripts.core.settings import Train

    out = data / "partial-out"
    out.mkdir()
    (out / "config.json").write_text("{}")  # what the old model left
    (out / "train_summary.json").write_text("{}")
    with pytest.raises(Crash):
        train(base=str(tiny_model), strategy="top", depth=2, seed=5,
              settings=Train.from_json(json.dumps(SETTINGS)), triples=data / "t.parquet",
              out_dir=out, checkpoint_every=2, callbacks=[crash_after(2)])
    assert not out.exists()


def test_loss_log_grid_divides_the_checkpoint_interval():
    from workflow_scripts.biencoder.train import logging_interval, run_mean_loss

    assert logging_interval(20000, 0) == 1000
    assert logging_interval(20000, 1000) == 1000
    assert logging_interval(20000, 300) == 300
    assert logging_interval(20000, 1500) == 750
    assert logging_interval(8, 2) == 1
    assert run_mean_loss([{"step": 2, "loss": 1.0}, {"step": 3, "loss": 4.0}], 3) == 2.0
    with pytest.raises(ValueError, match="not at the last step 4"):
        run_mean_loss([{"step": 2, "loss": 1.0}], 4)


# What the rerun says after a kill at each moment (crash_injection.kill_at), and the checkpoint
# it resumes from (None: from the start).
KILL_MOMENTS = {
    "step": ("resuming from", "checkpoint-4"),
    "checkpoint": ("skipping", "checkpoint-4"),  # checkpoint-6 lacks trainer_state.json
    "snapshot": ("removed", "checkpoint-4"),  # the step-5 snapshot's temporary folder
    "final": ("is the last step's: saving the final model from it", "checkpoint-8"),
    "removal-start": ("is the last step's: saving the final model from it", "checkpoint-8"),
    "removal-midway": ("removed", None),  # the half-removed state, renamed: from the start
}


@pytest.mark.parametrize("moment", list(KILL_MOMENTS))
def test_killed_at_any_moment_the_rerun_finishes_the_same_model(top_reference, tiny_model,
                                                                 data, moment, capsys):
    """Issue #40: a training SIGKILLed at each moment of its run (a step, a checkpoint save,
    a snapshot save, the final model save, the trainer state's removal) is finished by one
    plain rerun with an uninterrupted run's model, bit for bit, and no *.tmp left. Before,
    a kill after the last checkpoint made every rerun train one step past the last and fail
    (`loss log ends at step 9, not at the last step 8`)."""
    from workflow_scripts.biencoder.train import main

    ref = top_reference[0]
    out = data / f"kill-{moment}" / "seed5"
    args = _train_args(tiny_model, data / "t.parquet", out)

    def killed():  # as `python tests/helpers/crash_injection.py MOMENT ARGS` does
        kill_at(moment, out)
        main(args)

    assert _wait(_fork(killed)) == -signal.SIGKILL
    if moment in ("snapshot", "final", "removal-midway"):  # what a kill leaves behind
        assert list(out.parent.rglob("*.tmp")), moment

    capsys.readouterr()
    main(args)  # the rerun, as Snakemake (or its retry) starts it
    said = capsys.readouterr().out
    line, resumed = KILL_MOMENTS[moment]
    summary = json.loads((out / "train_summary.json").read_text())
    assert (summary["resumed_from"] or "").endswith(resumed or "") and (
        bool(summary["resumed_from"]) == bool(resumed)), summary["resumed_from"]
    assert not list(out.parent.rglob("*.tmp"))  # the killed writes' leftovers are gone
    assert sorted(p.name for p in out.parent.iterdir()) == ["seed5"]  # the state too
    _assert_same_loss(summary, json.loads((ref / "train_summary.json").read_text()))
    _assert_same_weights(ref, out)
    with capsys.disabled():
        print(f"\n{moment}: rerun: {next(s for s in said.splitlines() if line in s)!r}; "
              "identical to uninterrupted")
