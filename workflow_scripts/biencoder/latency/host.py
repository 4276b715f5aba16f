"""What a latency profiling run records about its host: the environment (torch version,
device name, threads, dtype), the host's CPU time from /proc/stat around the timed rounds
(hence how much other work ran beside them), the load average and on CUDA the GPU clocks.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time

import numpy as np


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_clocks() -> dict:
    """Current SM / memory clocks (MHz), temperature and power of the current GPU; NaN where
    neither nvidia-smi nor torch can tell."""
    import subprocess

    import torch

    keys = ("clocks.sm", "clocks.mem", "clocks.max.sm", "temperature.gpu", "power.draw")
    out = dict.fromkeys(("gpu_sm_mhz", "gpu_mem_mhz", "gpu_max_sm_mhz", "gpu_temp_c",
                         "gpu_power_w"), float("nan"))
    try:
        idx = torch.cuda.current_device()
        res = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(keys)}", "-i", str(idx),
                              "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=10, check=True)
        for k, v in zip(out, res.stdout.strip().split(","), strict=False):
            with contextlib.suppress(ValueError):
                out[k] = float(v)
    except Exception:  # noqa: BLE001 - no nvidia-smi: try torch (needs pynvml)
        with contextlib.suppress(Exception):
            out["gpu_sm_mhz"] = float(torch.cuda.clock_rate())
    return out


def environment(device: str, dtype: str) -> dict:
    import torch

    return {"torch": torch.__version__, "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(), "dtype": dtype,
            "python": platform.python_version(), "host_cpus": os.cpu_count() or 0,
            "device_name": (torch.cuda.get_device_name() if device == "cuda"
                            else _cpu_model())}


def host_cpu_seconds() -> dict:
    """CPU seconds of the whole host (/proc/stat: busy = user + nice + system + irq + softirq;
    steal = taken by the hypervisor), of this process, and a monotonic clock. Differences
    over the timed rounds say how much other work ran beside them (`other_work`)."""
    out = {"host_busy_s": np.nan, "host_steal_s": np.nan}
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/stat", encoding="ascii") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        tick = os.sysconf("SC_CLK_TCK")
        out = {"host_busy_s": (v[0] + v[1] + v[2] + v[5] + v[6]) / tick,
               "host_steal_s": v[7] / tick}
    return {**out, "proc_cpu_s": time.process_time(), "clock_s": time.monotonic()}


def other_work(env) -> tuple[float, float]:
    """(cores busy with other processes, share of the host's CPU time stolen by the
    hypervisor) on average over the timed rounds; NaN where not recorded."""
    try:
        wall = float(env["clock_s_after"]) - float(env["clock_s_before"])
        busy = float(env["host_busy_s_after"]) - float(env["host_busy_s_before"])
        own = float(env["proc_cpu_s_after"]) - float(env["proc_cpu_s_before"])
        steal = float(env["host_steal_s_after"]) - float(env["host_steal_s_before"])
        cpus = float(env["host_cpus"])
    except (KeyError, TypeError, ValueError):
        return float("nan"), float("nan")
    if not wall > 0:
        return float("nan"), float("nan")
    return max(0.0, (busy - own) / wall), steal / (wall * cpus)


def snapshot(device: str, when: str) -> dict:
    """Load average, host CPU seconds and (CUDA) GPU clocks, keys suffixed `_{when}`."""
    snap = {f"loadavg_{when}": os.getloadavg()[0] if hasattr(os, "getloadavg") else np.nan}
    snap.update({f"{k}_{when}": v for k, v in host_cpu_seconds().items()})
    if device == "cuda":
        snap.update({f"{k}_{when}": v for k, v in gpu_clocks().items()})
    return snap
