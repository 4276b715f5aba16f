"""Fault-injection scaffolding for tests/test_resume.py: the training CLI with every
optimizer step slowed down, so that a test can kill the job between two checkpoints (tiny
models train too fast to catch otherwise). Production code knows nothing of it.

    python tests/slow_train.py SECONDS_PER_STEP <arguments of biencoder.train>

(tests/test_resume.py uses StepDelay in a process forked from the test's.)
"""

from __future__ import annotations

import sys
import time

from transformers import TrainerCallback

from workflow_scripts.biencoder import train


class StepDelay(TrainerCallback):
    def __init__(self, seconds: float):
        self.seconds = seconds

    def on_step_end(self, args, state, control, **kwargs):
        time.sleep(self.seconds)


if __name__ == "__main__":
    delay = float(sys.argv[1])
    real_train = train.train
    train.train = lambda **kw: real_train(**kw, callbacks=[StepDelay(delay)])
    train.main(sys.argv[2:])
