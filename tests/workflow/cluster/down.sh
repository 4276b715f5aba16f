#!/usr/bin/env bash
# Stop the test cluster that tests/workflow/cluster/up.sh started: cancel its jobs, then stop exactly
# the daemons whose PIDs up.sh recorded (checking each PID still runs that program), remove
# their pid files (stale ones too) and the /etc/slurm configs that up.sh wrote.
# Safe to run at any time, also when nothing is up. `--quiet` prints only problems.
set -euo pipefail

STATE=${DEPTHLAB_SLURM_STATE:-/run/depthlab-slurm}
MARKER="# Written by depthlab tests/workflow/cluster/up.sh: a throwaway test cluster."
QUIET=false
[[ ${1:-} == --quiet ]] && QUIET=true
say() { $QUIET || echo "down.sh: $*"; }

# The PID recorded for daemon $1, if that process is alive and still runs that program.
live_pid() {
    local f=$STATE/pids/$1.pid pid
    [[ -f $f ]] || return 1
    pid=$(<"$f")
    [[ $pid =~ ^[0-9]+$ ]] && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$1" ]] ||
        return 1
    echo "$pid"
}

# Jobs first: their job steps outlive slurmd otherwise.
if live_pid slurmctld >/dev/null && command -v squeue >/dev/null; then
    jobs=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
    if [[ -n $jobs ]]; then
        say "cancelling jobs: $(echo $jobs)"
        # shellcheck disable=SC2086
        timeout 10 scancel $jobs || true
        for _ in $(seq 40); do
            [[ -z $(timeout 10 squeue -h -o %i 2>/dev/null || true) ]] && break
            sleep 0.5
        done
    fi
fi

# Reverse start order: compute daemons, controller, accounting, database, authentication.
for name in slurmd slurmctld slurmdbd mariadbd munged; do
    f=$STATE/pids/$name.pid
    if pid=$(live_pid "$name"); then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 60); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.25
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "down.sh: $name (pid $pid) ignored SIGTERM for 15 s; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        say "stopped $name (pid $pid)"
    elif [[ -f $f ]]; then
        say "removing stale pid file of $name"
    fi
    rm -f "$f"
done
# The daemons' own pid files (left behind by a daemon that died or was killed).
rm -f "$STATE"/run/*.pid

for f in /etc/slurm/{slurm,slurmdbd,gres}.conf; do
    if [[ -f $f ]] && grep -qxF "$MARKER" "$f"; then
        rm -f "$f"
    fi
done
say "down (logs kept in $STATE/log)"
