#!/usr/bin/env bash
# Bring up a throwaway single-node SLURM (with accounting, so `sacct` works) on this machine,
# for tests/workflow/cluster/test_slurm.py. Debian 12 packages; no systemd: every daemon is started
# here, in the foreground of its own session, and its PID recorded in $STATE/pids/ so that
# down.sh stops exactly these processes.
#
#   bash tests/workflow/cluster/up.sh      # root; installs the packages if missing: ~20 s, else ~7 s
#   bash tests/workflow/cluster/down.sh    # stops the daemons, removes the pid files and the configs
#
# Environment: DEPTHLAB_SLURM_STATE (default /run/depthlab-slurm) holds state, logs and pids;
# DEPTHLAB_SLURM_DB_PORT (default 33061) is MariaDB's port on 127.0.0.1.
set -euo pipefail

STATE=${DEPTHLAB_SLURM_STATE:-/run/depthlab-slurm}
DB_PORT=${DEPTHLAB_SLURM_DB_PORT:-33061}
PARTITION=local
CLUSTER=depthlab
MARKER="# Written by depthlab tests/workflow/cluster/up.sh: a throwaway test cluster."
HERE=$(cd "$(dirname "$0")" && pwd)
PACKAGES=(slurm-wlm slurmdbd munge mariadb-server)
T0=$SECONDS

die() { echo "up.sh: $*" >&2; exit 1; }
step() { printf 'up.sh: [%3ds] %s\n' $((SECONDS - T0)) "$*"; }
show_logs() {
    for f in "$STATE"/log/*.log; do
        [[ -f $f ]] && { echo "---- tail $f"; tail -n 20 "$f"; }
    done >&2
}

[[ $(id -u) == 0 ]] || die "run as root (it installs packages and starts daemons)"

# ---- packages -----------------------------------------------------------------------------
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$p")
done
if ((${#missing[@]})); then
    step "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # --no-install-recommends: 33 packages instead of ~60 (no docs, no X11 for sview).
    apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
fi
for b in munged mungekey mariadbd mariadb-install-db mariadb slurmdbd slurmctld slurmd \
    sacctmgr sbatch sacct sinfo scontrol; do
    command -v "$b" >/dev/null || die "$b not found after installing ${PACKAGES[*]}"
done

# ---- a clean slate ------------------------------------------------------------------------
# Anything a previous up.sh left running is stopped first (by its recorded PID).
bash "$HERE/down.sh" --quiet
for f in /etc/slurm/{slurm,slurmdbd,gres}.conf; do
    if [[ -e $f ]] && ! grep -qxF "$MARKER" "$f"; then
        die "$f exists and was not written by this script: refusing to replace a real" \
            "SLURM configuration (run the cluster test on a CI machine or a container)"
    fi
done
if [[ -S /run/munge/munge.socket.2 ]] && munge -n </dev/null >/dev/null 2>&1; then
    die "a munged that this script did not start is running (/run/munge/munge.socket.2)"
fi
for port in 6817 6818 6819 "$DB_PORT"; do
    if command -v ss >/dev/null && ss -Hltn "sport = :$port" | grep -q .; then
        die "port $port is already in use (another SLURM or database running?)"
    fi
done
# Wipe only a state dir that this script made (it has pids/), or an empty one.
[[ $STATE == /?* ]] || die "DEPTHLAB_SLURM_STATE must be an absolute path: $STATE"
if [[ -d $STATE && ! -d $STATE/pids ]] && [[ -n $(ls -A "$STATE") ]]; then
    die "$STATE is not empty and not this script's state dir: set DEPTHLAB_SLURM_STATE"
fi
rm -rf "$STATE"
mkdir -p "$STATE"/{pids,log,run,munge,ctld,slurmd,db}
chmod 700 "$STATE/munge"

# Start daemon $1 (the command, argv "${@:2}") in a session of its own; record its PID.
start() {
    local name=$1
    shift
    setsid "$@" >"$STATE/log/$name.out" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$STATE/pids/$name.pid"
    sleep 0.2
    if ! kill -0 "$pid" 2>/dev/null; then
        show_logs
        cat "$STATE/log/$name.out" >&2
        die "$name exited at start"
    fi
    # down.sh stops a recorded PID only while it still runs this program.
    [[ $(cat "/proc/$pid/comm") == "$name" ]] || die "pid $pid is not $name"
}
# Wait up to $1 seconds for "${@:2}" to succeed.
wait_for() {
    local limit=$1
    shift
    local t=$SECONDS
    until "$@" >/dev/null 2>&1; do
        ((SECONDS - t < limit)) || { show_logs; die "timed out after ${limit}s waiting for: $*"; }
        sleep 0.5
    done
}

# ---- munge: authentication between the SLURM daemons and clients -------------------------
step "munged"
mungekey --create --keyfile "$STATE/munge/munge.key" --force
chmod 400 "$STATE/munge/munge.key"
# The default socket path: SLURM's clients (sacctmgr at least) ignore AuthInfo=socket=.
MUNGE_SOCKET=/run/munge/munge.socket.2
mkdir -p /run/munge
# --force: munged otherwise refuses the 0700 key dir and such; this is a throwaway key.
start munged munged --foreground --force --key-file "$STATE/munge/munge.key" \
    --socket "$MUNGE_SOCKET" --pid-file "$STATE/run/munged.pid" \
    --log-file "$STATE/log/munged.log" --seed-file "$STATE/munge/munged.seed"
wait_for 10 test -S "$MUNGE_SOCKET"

# ---- MariaDB for slurmdbd: a private data dir, TCP on 127.0.0.1 only ----------------------
step "mariadbd"
mariadb-install-db --no-defaults --user=root --datadir="$STATE/db" --skip-test-db \
    --auth-root-authentication-method=socket >"$STATE/log/mariadb-install.log" 2>&1 ||
    { cat "$STATE/log/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
DB_SOCKET=$STATE/run/mariadb.sock
# Buffer pool and lock wait as slurmdbd's start-up check recommends (else it warns).
start mariadbd mariadbd --no-defaults --user=root --datadir="$STATE/db" \
    --socket="$DB_SOCKET" --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
    --pid-file="$STATE/run/mariadbd.pid" --log-error="$STATE/log/mariadb.log" \
    --innodb-buffer-pool-size=1024M --innodb-lock-wait-timeout=900
wait_for 30 mariadb-admin --no-defaults --socket="$DB_SOCKET" ping
DB_PASS=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
mariadb --no-defaults --socket="$DB_SOCKET" -u root <<SQL
CREATE DATABASE slurm_acct_db;
CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
SQL

# ---- SLURM configuration ------------------------------------------------------------------
HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo) # leave 20% to the OS
GPUS=2 # one per stand-in device file in gres.conf
mkdir -p /etc/slurm
cat >/etc/slurm/slurm.conf <<EOF
$MARKER
ClusterName=$CLUSTER
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
# No cgroups in a container: track processes by parent PID; task/affinity avoids the
# job-step plugin's cpu-bind error.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
# Without a default, a job that names no memory takes the whole node's.
DefMemPerCPU=1000
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoreFlags=job_comment
# sacct then shows each job's GPUs (AllocTRES gres/gpu=N).
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# Stand-in GPUs (see gres.conf): jobs asking --gpus=N schedule as on a GPU cluster, while
# the work itself runs on the CPU (no CUDA here).
GresTypes=gpu
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MB Gres=gpu:$GPUS State=UNKNOWN
PartitionName=$PARTITION Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
# SLURM 22.05 drops GPUs without a device file, so two harmless character devices stand in.
cat >/etc/slurm/gres.conf <<EOF
$MARKER
NodeName=$HOST Name=gpu File=/dev/null
NodeName=$HOST Name=gpu File=/dev/zero
EOF
(
    umask 077 # slurmdbd refuses a config that others can read (it holds the password)
    cat >/etc/slurm/slurmdbd.conf <<EOF
$MARKER
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
LogFile=$STATE/log/slurmdbd.log
PidFile=$STATE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
)

# ---- the SLURM daemons --------------------------------------------------------------------
step "slurmdbd"
start slurmdbd slurmdbd -D
wait_for 60 sacctmgr -n list cluster
sacctmgr -i add cluster "$CLUSTER" >/dev/null
step "slurmctld"
start slurmctld slurmctld -D -i
step "slurmd"
start slurmd slurmd -D
node_ready() { [[ $(sinfo -h -n "$HOST" -o %t) =~ ^(idle|mix|alloc)$ ]]; }
wait_for 30 node_ready

# ---- smoke test: a job runs and reaches the accounting database ---------------------------
step "smoke test"
jobid=$(sbatch --parsable -p "$PARTITION" -A root -n1 -c1 --mem 100 -t 1 -J depthlab-smoke \
    -o /dev/null --wrap true)
sacct_done() { [[ $(sacct -X -n -P -j "$jobid" -o State) == COMPLETED ]]; }
wait_for 60 sacct_done
step "up: partition '$PARTITION' ($CPUS CPUs, $MEM_MB MB) on $HOST; state and logs in $STATE"
