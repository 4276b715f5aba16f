"""What the SLURM profile's evaluation groups save: the tiny cluster study (tests/workflow/cluster)
through `--profile profiles/slurm` with and without `groups:`, side by side in one run, on
the test cluster of tests/workflow/cluster/up.sh. Prints per variant: SLURM jobs (sbatch calls, from
sacct), the time jobs waited in the queue (sum of start - submit), the time they ran (sum
of elapsed) and the run's wall time.

    bash tests/workflow/cluster/up.sh
    .venv/bin/python bench/slurm_groups.py [--repeats 1]
    bash tests/workflow/cluster/down.sh
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests/helpers"),
                 str(ROOT / "tests/workflow/cluster")]
import slurmrun  # noqa: E402
from tiny_models import make_tiny_model  # noqa: E402
from tiny_study import tiny_config  # noqa: E402


def sacct_times(run_id: str) -> tuple[int, float, float]:
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-S", "now-2days", "--name", run_id, "-o",
         "Submit,Start,End"], capture_output=True, text=True, check=True).stdout
    rows = [[datetime.fromisoformat(t) for t in line.split("|")] for line in out.splitlines()]
    queued = sum((start - submit).total_seconds() for submit, start, _ in rows)
    ran = sum((end - start).total_seconds() for _, start, end in rows)
    return len(rows), queued, ran


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    if problem := slurmrun.cluster_problem():
        sys.exit(problem)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = make_tiny_model(tmp / "tiny", layers=3, hidden=32, heads=2, intermediate=64,
                                seed=0)
        cfg = slurmrun.cluster_config(tiny_config(model))
        configfile = tmp / "cluster.yaml"
        configfile.write_text(yaml.safe_dump(cfg))
        rows = {}
        for i in range(args.repeats):
            # Alternate the order so that a warming or loaded machine favours neither.
            for groups in ((False, True) if i % 2 == 0 else (True, False)):
                name = "groups" if groups else "no groups"
                profile = slurmrun.ci_profile(tmp / f"profile-{name}", groups=groups)
                run = slurmrun.run_on_slurm(tmp / f"run{i}-{name}", configfile, profile)
                jobs, queued, ran = sacct_times(run.run_id)
                assert jobs == slurmrun.expected_submissions(cfg, groups=groups), jobs
                rows.setdefault(name, []).append((jobs, queued, ran, run.seconds))
    n_models = sum(len(s["seeds"]) for s in cfg["recipes"].values()) * len(cfg["depths"])
    print(f"tiny cluster study: {n_models} models + {len(cfg['depths'])} bases x "
          f"{len(cfg['benchmarks'])} benchmarks, {args.repeats} run(s) each; means:")
    print(f"{'':10s} {'SLURM jobs':>10s} {'queued s':>9s} {'ran s':>7s} {'wall s':>7s}")
    for name, vals in rows.items():
        jobs, queued, ran, wall = (sum(v) / len(v) for v in zip(*vals, strict=True))
        print(f"{name:10s} {jobs:10.0f} {queued:9.0f} {ran:7.0f} {wall:7.0f}")
    (g_jobs, *_, g_wall), (n_jobs, *_, n_wall) = (
        [sum(v) / len(v) for v in zip(*rows[k], strict=True)] for k in ("groups", "no groups"))
    print(f"groups / no groups: SLURM jobs {g_jobs / n_jobs:.2f}, wall {g_wall / n_wall:.2f}")


if __name__ == "__main__":
    main()
