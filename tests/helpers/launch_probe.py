"""A stage stand-in for tests/unit/core/test_launch.py: prints its argv, cwd and an env var,
computes a seeded torch step (bytes to compare), then exits as asked: a code, an exception, a
Ctrl-C, a signal, or a sleep (writing its pid first)."""

import os
import signal
import sys
import time

print("argv", sys.argv[1:], "cwd", os.getcwd(), "env", os.environ.get("PROBE"), flush=True)
print("to stderr", file=sys.stderr)
what = sys.argv[1]
if what == "torch":
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 1))
    loss = m(torch.randn(64, 8)).pow(2).mean()
    loss.backward()
    with open(sys.argv[2], "wb") as f:
        f.write(b"".join(p.grad.numpy().tobytes() for p in m.parameters()))
elif what == "busy":
    t = time.process_time()
    while time.process_time() - t < 0.3:
        pass
elif what == "raise":
    raise RuntimeError("probe failed")
elif what == "interrupt":  # as Ctrl-C does
    raise KeyboardInterrupt
elif what == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
elif what == "sleep":
    with open(sys.argv[2], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(60)
sys.exit(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0)
