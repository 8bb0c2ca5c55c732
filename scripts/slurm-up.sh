#!/usr/bin/env bash
# Bring up a one-node Slurm cluster on this machine (Debian's slurm-wlm + munge), for CI and for trying
# `embodmem-run -m hydra/launcher=slurm ...` without a real cluster. Run as root; idempotent (a cluster
# that already answers is left alone). Installs nothing: .ci/run installs the packages when missing.
#
#   sudo scripts/slurm-up.sh            # then: sinfo; embodmem-run -m hydra/launcher=slurm seed=0,1
#   sudo scripts/slurm-up.sh --down     # stop the daemons this script started
#
# The configuration is the minimal one that works in a container: the daemons run as root, munge
# authentication, no cgroups (proctrack/linuxproc, task/none), one node with this machine's CPUs and
# memory in one default partition "debug".
set -euo pipefail

CONF_DIR=/etc/slurm
STATE_DIR=/var/lib/slurm
LOG_DIR=/var/log/slurm
RUN_DIR=/run/slurm
PIDS=("$RUN_DIR/slurmctld.pid" "$RUN_DIR/slurmd.pid" /run/munge/munged.pid)

die() { echo "slurm-up: $*" >&2; exit 1; }

if [[ "${1:-}" == "--down" ]]; then
    for pid_file in "${PIDS[@]}"; do
        [[ -s "$pid_file" ]] && kill "$(cat "$pid_file")" 2>/dev/null || true
    done
    exit 0
fi

[[ "$(id -u)" == 0 ]] || die "run as root (the daemons need it)"
for tool in munged slurmctld slurmd sinfo sbatch; do
    command -v "$tool" >/dev/null || die "$tool not found: apt-get install slurm-wlm munge"
done

if scontrol ping 2>/dev/null | grep -q "is UP" && sinfo -h -o %T 2>/dev/null | grep -qE "idle|mixed|alloc"; then
    echo "slurm-up: cluster already up"; sinfo; exit 0
fi

# munge: a key (created once), then the daemon as the munge user.
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
[[ -s /etc/munge/munge.key ]] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
chmod 0700 /etc/munge /var/lib/munge /var/log/munge
chmod 0755 /run/munge
chmod 0400 /etc/munge/munge.key
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    su -s /bin/sh munge -c "munged --force"
    for _ in $(seq 50); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi
munge -n </dev/null | unmunge >/dev/null || die "munged does not answer"

# slurm.conf: one node (this host, its CPUs and memory), one partition.
host="$(hostname -s)"
cpus="$(nproc --all)"  # --all: plain nproc obeys OMP_NUM_THREADS
mem_mb="$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"
mkdir -p "$CONF_DIR" "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd" "$LOG_DIR" "$RUN_DIR"
cat >"$CONF_DIR/slurm.conf" <<EOF
# Written by embodmem's scripts/slurm-up.sh: a one-node cluster for tests.
ClusterName=embodmem
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ReturnToService=2
StateSaveLocation=$STATE_DIR/slurmctld
SlurmdSpoolDir=$STATE_DIR/slurmd
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

for pid_file in "$RUN_DIR/slurmctld.pid" "$RUN_DIR/slurmd.pid"; do  # stale daemons from an earlier config
    [[ -s "$pid_file" ]] && kill "$(cat "$pid_file")" 2>/dev/null || true
done
sleep 1
slurmctld
slurmd

for _ in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qE "^(idle|mixed|alloc)"; then
        echo "slurm-up: cluster up"; sinfo; exit 0
    fi
    scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true
    sleep 1
done
sinfo || true
tail -n 20 "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" >&2 || true
die "the node did not become idle within 60 s"
