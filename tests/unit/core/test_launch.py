"""core/launch.py: a stage run in the preloaded interpreter behaves as the same stage run as a
fresh process (output, exit status, signals, bytes computed), dies with its client, and is
measured."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import HELPERS, ROOT

from workflow_scripts.core import launch, paths


@pytest.fixture(scope="module")
def server():
    srv = launch.start_server(["torch"])
    yield srv
    srv.stop()


def _launch(tmp_path, *args, server=None, name="job", wait=True):
    env = {**os.environ, "PROBE": "hello",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(HELPERS)])}
    env.pop(launch.SOCKET_ENV, None)
    if server:
        env[launch.SOCKET_ENV] = server.socket
    cmd = [sys.executable, "-m", "workflow_scripts.core.launch", "--preloaded",
           "--log", f"logs/{name}.log", "--outputs", "out.txt", "--", "launch_probe", *args]
    if not wait:
        return subprocess.Popen(cmd, cwd=tmp_path, env=env)
    return subprocess.run(cmd, cwd=tmp_path, env=env, timeout=120)


def _record(tmp_path, name="job"):
    f = tmp_path / paths.record_of(f"logs/{name}.log")
    return json.loads(f.read_text()) if f.exists() else None


@pytest.mark.parametrize("what", ["busy 0", "busy 3", "raise"])
def test_preloaded_and_fresh_runs_are_alike(tmp_path, server, what):
    out = {}
    for mode, srv in (("fresh", None), ("preloaded", server)):
        proc = _launch(tmp_path, *what.split(), server=srv, name=mode)
        log = (tmp_path / f"logs/{mode}.log").read_text()
        out[mode] = (proc.returncode, log.splitlines()[:2])
        rec = _record(tmp_path, mode)
        if proc.returncode == 0:
            assert rec["mode"] == mode and rec["outputs"] == ["out.txt"]
            assert rec["cpu_s"] >= 0.2 and rec["wall_s"] >= rec["cpu_s"] * 0.5
        else:
            assert rec is None
        if what == "raise":
            assert "RuntimeError: probe failed" in log
    assert out["fresh"] == out["preloaded"]
    assert out["fresh"][1] == [f"argv {what.split()} cwd {tmp_path} env hello", "to stderr"]
    assert out["fresh"][0] == {"busy 0": 0, "busy 3": 3, "raise": 1}[what]


def test_the_same_bytes_in_both(tmp_path, server):
    for mode, srv in (("fresh", None), ("preloaded", server)):
        assert _launch(tmp_path, "torch", f"{mode}.bin", server=srv, name=mode).returncode == 0
        assert _record(tmp_path, mode)["mode"] == mode
    assert (tmp_path / "fresh.bin").read_bytes() == (tmp_path / "preloaded.bin").read_bytes()


def test_a_job_killed_by_a_signal_kills_its_client(tmp_path, server):
    for srv in (None, server):
        assert _launch(tmp_path, "kill", server=srv).returncode == -signal.SIGKILL


def test_a_ctrl_c_ends_the_stage_with_one_line_and_kills_its_client(tmp_path, server):
    """No KeyboardInterrupt traceback in the job's log (Snakemake shows it): one line, and the
    launcher dies of SIGINT, as python does."""
    for mode, srv in (("fresh", None), ("preloaded", server)):
        assert _launch(tmp_path, "interrupt", server=srv, name=mode).returncode == -signal.SIGINT
        log = (tmp_path / f"logs/{mode}.log").read_text()
        assert log.splitlines()[-1] == "launch_probe: interrupted (Ctrl-C)"
        assert "Traceback" not in log


def test_a_killed_client_ends_its_job(tmp_path, server):
    client = _launch(tmp_path, "sleep", "pid.txt", server=server, wait=False)
    pid_file = tmp_path / "pid.txt"
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)
    job = int(pid_file.read_text())
    client.kill()  # as a node failure: no chance to clean up
    client.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{job}"):
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{job}")


def test_no_server_or_a_stale_socket_runs_fresh(tmp_path):
    stale = launch.Server(subprocess.Popen(["true"]), str(tmp_path / "gone.sock"))
    assert _launch(tmp_path, "busy", server=stale).returncode == 0
    assert _record(tmp_path)["mode"] == "fresh"


def test_the_server_ends_with_its_parent(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    sock = str(tmp_path / "s.sock")
    srv = subprocess.Popen([sys.executable, "-m", "workflow_scripts.core.launch", "serve",
                            "--socket", sock, "--parent", str(parent.pid)], cwd=ROOT)
    deadline = time.monotonic() + 10
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(sock)
    parent.kill()
    parent.wait()
    assert srv.wait(timeout=10) == 0
    assert not os.path.exists(sock)
