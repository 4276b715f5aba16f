"""Runs a job's stage module and measures it: every rule's shell command is

    python -m workflow_scripts.core.launch [--preloaded] --log LOG --outputs OUT... \
        -- MODULE ARGS...

The stage's stdout and stderr go to LOG; on success its wall time, CPU time and peak memory
(the job's own process, from wait4) are recorded at core/paths.record_of(LOG), with its
outputs, for the usage table (core/usage.py). The exit status is the stage's (a stage killed
by signal N kills the launcher with N, so the shell sees 128+N as for a plain process).

Why a preloaded interpreter: importing sentence-transformers costs ~11 s, torch ~2 s, more
than a small training or a digits ladder run. A local run starts one server that imports
those once (`serve`, started by the Snakefile's onstart through `start_server`); a
`--preloaded` job whose environment names its socket (DEPTHLAB_PRELOAD) runs in a process
forked from it. The job gets the client's argv, working directory, environment and file
descriptors, and imports every workflow_scripts module afresh (the server imports none but
this one), so it computes what a fresh process computes (tests/unit/core/test_launch.py compares the
bytes). What a fork cannot change: modules imported by the server read their environment
variables at import, so the server is started with the jobs' environment; each stage sets
torch's threads itself (core/runtime.set_threads). A server named by DEPTHLAB_PRELOAD before
Snakemake starts serves its run instead of a new one (tests/conftest.py starts one per test
process, with the environment it gives Snakemake). Without a server (a cluster job, preload
off, or a server that is gone) the stage runs in a fresh child (`launch stage MODULE ARGS`,
as `python -m MODULE`). Either way a Ctrl-C ends the stage with one line in its log, not a
traceback, and the run's onerror (rules/common.smk) says that a rerun resumes.

A job dies with its client: in preloaded mode the supervisor process that waits for the job
sees the client's connection close and ends the job; a fresh child gets SIGTERM when the
client dies (PR_SET_PDEATHSIG) or is interrupted. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOCKET_ENV = "DEPTHLAB_PRELOAD"
ROOT = Path(__file__).resolve().parents[2]
_LEN = struct.Struct("!Q")


# ---- messages over the Unix socket: a length, then JSON ------------------------------------
def _send(conn: socket.socket, obj, fds=()) -> None:
    data = json.dumps(obj).encode()
    socket.send_fds(conn, [_LEN.pack(len(data)) + data], list(fds))


def _recv(conn: socket.socket, with_fds: int = 0):
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, with_fds)
    if len(data) < _LEN.size:
        raise ConnectionError("no message")
    (n,) = _LEN.unpack(data[:_LEN.size])
    data = data[_LEN.size:]
    while len(data) < n:
        more = conn.recv(n - len(data))
        if not more:
            raise ConnectionError("message cut short")
        data += more
    return json.loads(data), fds


def _usage(rusage) -> dict:
    return {"cpu_s": rusage.ru_utime + rusage.ru_stime, "max_rss_mb": rusage.ru_maxrss / 1024}


# ---- the client: one job -------------------------------------------------------------------
def _preloaded(argv: list[str], log_fd: int) -> dict | None:
    """Run argv (MODULE ARGS) in the server's fork; None when no server answers."""
    path = os.environ.get(SOCKET_ENV)
    if not path:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    with conn:
        _send(conn, {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)},
              [0, log_fd, log_fd])
        reply, _ = _recv(conn)  # the job's end; the client's death closes conn and ends it
    return {**reply, "mode": "preloaded"}


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _fresh(argv: list[str], log_fd: int) -> dict:
    child = subprocess.Popen([sys.executable, "-m", "workflow_scripts.core.launch", "stage",
                              *argv], stdout=log_fd, stderr=log_fd, preexec_fn=_die_with_parent)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    _, status, rusage = os.wait4(child.pid, 0)
    return {**_status(status), **_usage(rusage), "mode": "fresh"}


def _status(status: int) -> dict:
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"exit": os.waitstatus_to_exitcode(status)}


def run(argv: list[str], log: str, outputs: list[str], preloaded: bool) -> int:
    from workflow_scripts.core import paths  # standard library only

    record = Path(paths.record_of(log))
    record.unlink(missing_ok=True)
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "wb", buffering=0) as f:
        result = (preloaded and _preloaded(argv, f.fileno())) or _fresh(argv, f.fileno())
    if "signal" in result:  # die of it, as the stage did
        if result["signal"] not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(result["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), result["signal"])
    if result["exit"] == 0:
        doc = {"wall_s": time.monotonic() - start, "cpu_s": result["cpu_s"],
               "max_rss_mb": result["max_rss_mb"], "mode": result["mode"],
               "outputs": outputs}
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(f".{record.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        os.replace(tmp, record)
    return result["exit"]


# ---- Ctrl-C of a run -------------------------------------------------------------------------
INTERRUPTED: list[int] = []
RESUME_NOTE = ("depthlab: interrupted (Ctrl-C). Run the same command again to resume: finished "
               "jobs are kept, and a training continues from its last checkpoint (recipe key "
               "checkpoint_every; without one it starts over)")


def note_interrupts() -> None:
    """Remember a Ctrl-C (SIGINT) of this process, Snakemake's, in INTERRUPTED, then handle it
    as before (Snakemake stops its jobs on the KeyboardInterrupt), so that the run's onerror
    can say RESUME_NOTE. A run that ignores SIGINT (started in the background) keeps it so."""
    before = signal.getsignal(signal.SIGINT)
    if not callable(before):
        return

    def noted(signum, frame):
        INTERRUPTED.append(signum)
        before(signum, frame)

    signal.signal(signal.SIGINT, noted)


# ---- the server ------------------------------------------------------------------------------
def _run_job(request: dict, fds: list[int]) -> None:
    """In the forked job process: become the client's process, run the module, exit."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    # The job's code, not the server's: workflow_scripts from the job's own PYTHONPATH.
    for name in [m for m in sys.modules if m == "workflow_scripts" or
                 m.startswith("workflow_scripts.")]:
        del sys.modules[name]
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [request["cwd"], *extra, *[p for p in sys.path[1:] if p not in extra]]
    if "numpy" in sys.modules:  # a fork copies numpy's global generator (random reseeds)
        sys.modules["numpy"].random.seed()
    _end(*run_stage(request["argv"]), os._exit)  # never the server's frames


def run_stage(argv: list[str]) -> tuple[int, int | None]:
    """Run MODULE ARGS as `python -m` would, in this process: (exit status, signal to die
    of). A Ctrl-C ends it with one line, not a traceback, and it dies of SIGINT as python
    does."""
    module, *args = argv
    sys.argv = [module, *args]
    try:
        import runpy

        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C (the launcher's) waits
        print(f"{module}: interrupted (Ctrl-C)", file=sys.stderr)
        return 1, signal.SIGINT
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
        return (e.code if isinstance(e.code, int) else (0 if e.code is None else 1)), None
    except BaseException:  # as a fresh interpreter: the traceback, status 1
        import traceback

        traceback.print_exc()
        return 1, None
    return 0, None


def _end(code: int, died_of: int | None, exit_with) -> None:
    """Flush, then die of `died_of` or exit with `code` (os._exit in a forked job: as
    multiprocessing's fork children end)."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    if died_of:
        signal.signal(died_of, signal.SIG_DFL)
        os.kill(os.getpid(), died_of)
    exit_with(code)


def _supervise(conn: socket.socket) -> None:
    """In a forked supervisor: receive a job, fork it, wait for it or for the client's end."""
    request, fds = _recv(conn, 3)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_job(request, fds)
    for fd in fds:
        os.close(fd)
    done = os.pidfd_open(pid)
    watch, killed_at = [done, conn], None
    while True:
        ready, _, _ = select.select(watch, [], [], 1.0)
        if done in ready:
            _, status, rusage = os.wait4(pid, 0)
            with contextlib.suppress(OSError):  # the client may be gone
                _send(conn, {**_status(status), **_usage(rusage)})
            return
        if conn in ready and not conn.recv(1):  # the client died: so does the job
            os.kill(pid, signal.SIGTERM)
            watch, killed_at = [done], time.monotonic()
        if killed_at and time.monotonic() - killed_at > 5:
            os.kill(pid, signal.SIGKILL)


def serve(path: str, preload: list[str], parent: int | None) -> None:
    Path(path).unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)  # clients queue while the modules import
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    import importlib

    for name in preload:
        importlib.import_module(name)
    print(f"preloaded {' '.join(preload)}; serving {path}", flush=True)
    try:
        while parent is None or _alive(parent):
            ready, _, _ = select.select([listener], [], [], 1.0)
            while True:  # reap finished supervisors
                try:
                    if os.waitpid(-1, os.WNOHANG)[0] == 0:
                        break
                except ChildProcessError:
                    break
            if not ready:
                continue
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                try:
                    _supervise(conn)
                finally:
                    os._exit(0)
            conn.close()
    finally:
        Path(path).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Server:
    """A running preload server (start_server); stop() ends it and removes its socket."""

    def __init__(self, proc: subprocess.Popen, path: str):
        self.proc, self.socket = proc, path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        Path(self.socket).unlink(missing_ok=True)


def start_server(preload: list[str], log: str | None = None,
                 env: dict[str, str] | None = None) -> Server:
    """Start a server importing `preload`, with this process's environment (or `env`: the
    jobs' own, which the modules it imports read), ending when this process does. Returns
    at once (the imports run in the background)."""
    name = f"depthlab-{os.getpid()}-{os.urandom(4).hex()}.sock"
    path = os.path.join(tempfile.gettempdir(), name)
    out = subprocess.DEVNULL
    if log:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        out = open(log, "ab")  # noqa: SIM115 (the server's for its lifetime)
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.Popen(
        [sys.executable, "-m", "workflow_scripts.core.launch", "serve", "--socket", path,
         "--parent", str(os.getpid()), "--preload", *preload],
        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=ROOT,
        start_new_session=True)
    # It binds before it imports: from then on clients queue, none starts a fresh process.
    deadline = time.monotonic() + 10
    while not os.path.exists(path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return Server(proc, path)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["stage"]:  # a fresh job's process (_fresh)
        _end(*run_stage(argv[1:]), sys.exit)
    if argv[:1] == ["serve"]:
        ap = argparse.ArgumentParser(prog="launch serve")
        ap.add_argument("--socket", required=True)
        ap.add_argument("--preload", nargs="*", default=[])
        ap.add_argument("--parent", type=int)
        a = ap.parse_args(argv[1:])
        serve(a.socket, a.preload, a.parent)
        return
    if "--" not in argv:
        raise SystemExit("usage: launch [--preloaded] --log LOG --outputs OUT... -- MODULE "
                         "ARGS...")
    cut = argv.index("--")
    ap = argparse.ArgumentParser(prog="launch")
    ap.add_argument("--preloaded", action="store_true",
                    help="run in the preloaded interpreter where one serves this run")
    ap.add_argument("--log", required=True, help="the job's log: the stage's stdout+stderr")
    ap.add_argument("--outputs", nargs="*", default=[], help="the job's outputs (recorded)")
    a = ap.parse_args(argv[:cut])
    if not argv[cut + 1:]:
        raise SystemExit("launch: no module after --")
    sys.exit(run(argv[cut + 1:], a.log, a.outputs, a.preloaded))


if __name__ == "__main__":
    main()
