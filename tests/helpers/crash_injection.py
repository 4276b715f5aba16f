"""Crash injection for the training tests (test scaffolding; production code knows nothing of
it), the one home of every way a test stops or slows a training:

- crash_after(step, delay): a trainer callback that stops the run like a kill (raises Crash)
  once checkpoint `step` is saved; `delay`: seconds each step is slowed by first (step None:
  only slowed, so that a test can kill the job between two checkpoints: tiny models train
  too fast to catch otherwise).
- kill_at(moment, out): the training CLI SIGKILLed (as a time limit or a failing node does:
  no cleanup runs) at a chosen moment, installed in a process forked from the test's, which
  has the imports already. MOMENT: step (inside step 5, before its optimizer step),
  checkpoint (checkpoint-6 half written: weights and optimizer, no trainer_state.json),
  snapshot (the step-5 snapshot written to its temporary folder, not renamed), final (the
  final model written to its temporary folder, not renamed), removal-start (the model in
  place, the trainer state not yet touched), removal-midway (the trainer state renamed for
  removal and half deleted).

By hand: python tests/helpers/crash_injection.py MOMENT <arguments of biencoder.train>
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path


class Crash(Exception):
    """What crash_after raises: the run stopped like a kill."""


def crash_after(step: int | None, delay: float = 0.0):
    from transformers import TrainerCallback

    class CrashAfter(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            time.sleep(delay)

        def on_save(self, args, state, control, **kw):
            if step is not None and state.global_step >= step:
                raise Crash

    return CrashAfter()


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def kill_at(moment: str, out: Path) -> None:
    from sentence_transformers import SentenceTransformer
    from transformers import Trainer, TrainerCallback

    from workflow_scripts.biencoder import train
    from workflow_scripts.core import contracts, files

    if moment == "step":
        class KillInStep(TrainerCallback):
            def on_pre_optimizer_step(self, args, state, control, **kw):
                if state.global_step == 4:  # step 5's forward and backward are done
                    die()

        real_train = train.train
        train.train = lambda **kw: real_train(**kw, callbacks=[KillInStep()])
    elif moment == "checkpoint":
        real_save = Trainer._save_optimizer_and_scheduler

        def save_optimizer(self, output_dir):
            real_save(self, output_dir)
            if self.state.global_step == 6:
                die()

        Trainer._save_optimizer_and_scheduler = save_optimizer
    elif moment in ("snapshot", "final"):
        prefix = ".step5." if moment == "snapshot" else f".{out.name}."
        real_model_save = SentenceTransformer.save

        def save(self, path, *a, **kw):
            real_model_save(self, path, *a, **kw)
            name = Path(path).name
            if name.startswith(prefix) and name.endswith(".tmp"):
                die()

        SentenceTransformer.save = save
    elif moment == "removal-start":
        contracts.remove_dir = lambda path: die()
    elif moment == "removal-midway":
        real_rmtree = shutil.rmtree

        def rmtree(path, *a, **kw):
            p = Path(path)
            if p.name.startswith(f".{out.name}.trainer.") and p.name.endswith(".tmp"):
                (p / "fingerprint.json").unlink()
                real_rmtree(sorted(p.glob("checkpoint-*"))[0])
                die()
            real_rmtree(path, *a, **kw)

        files.shutil.rmtree = rmtree
    else:
        raise SystemExit(f"unknown moment {moment!r}")


if __name__ == "__main__":
    from workflow_scripts.biencoder import train

    argv = sys.argv[2:]
    kill_at(sys.argv[1], Path(argv[argv.index("--out") + 1]))
    train.main(argv)
    raise SystemExit("the training ended before the kill")
