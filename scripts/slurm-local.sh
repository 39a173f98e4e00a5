#!/usr/bin/env bash
# A throw-away single-node Slurm on this machine: munged, slurmctld and slurmd
# on localhost, every file (configuration, key, sockets, logs, state) under
# one directory, no systemd, nothing under /etc touched.
set -euo pipefail

usage() {
  cat <<USAGE
usage: $(basename "$0") start|stop|status [DIR]

  start   write DIR/slurm.conf and a fresh munge key, start munged, slurmctld
          and slurmd in the background, wait until the node is idle, then
          print the lines to use it:  export SLURM_CONF=DIR/slurm.conf
  stop    stop the daemons started in DIR (by their pid files), remove DIR
  status  show the node's state (sinfo) or say that nothing runs

DIR defaults to \$CPL_SLURM_DIR, else /tmp/cpl-slurm. Environment:
  CPL_SLURM_CPUS  CPUs the node announces (default 16, at least nproc): more
                  than the machine has, so small MPI jobs fit on 2 cores
  CPL_SLURM_PORT  slurmctld's port; slurmd takes the next one (default: the
                  first free pair from 16817)
  CPL_SLURM_WAIT  seconds to wait for the node to become idle (default 30)
Needs root and Debian's slurmctld, slurmd, slurm-client and munge
(scripts/setup.sh installs them). Exit 0 on success; 1 with the reason on
stderr otherwise (the daemons' logs are in DIR).
USAGE
}

die() { echo "slurm-local.sh: $*" >&2; exit 1; }

cmd=${1:-}
dir=${2:-${CPL_SLURM_DIR:-/tmp/cpl-slurm}}
case $cmd in
  -h|--help) usage; exit 0 ;;
  start|stop|status) ;;
  *) usage >&2; exit 2 ;;
esac
[[ $dir == /* ]] || dir=$PWD/$dir

# Kill the daemon whose pid file is $1, if it still runs, and wait for it.
stop_pidfile() {
  local f=$1 pid
  [[ -r $f ]] || return 0
  pid=$(cat "$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

if [[ $cmd == stop ]]; then
  [[ -d $dir ]] || { echo "slurm-local.sh: nothing to stop in $dir"; exit 0; }
  [[ -e $dir/slurm.conf ]] || die "$dir has no slurm.conf: not a directory this script made, left alone"
  for d in slurmd slurmctld munged; do stop_pidfile "$dir/$d.pid"; done
  rm -rf "$dir"
  echo "slurm-local.sh: stopped, $dir removed"
  exit 0
fi

if [[ $cmd == status ]]; then
  [[ -e $dir/slurm.conf ]] || { echo "slurm-local.sh: not running (no $dir/slurm.conf)"; exit 1; }
  SLURM_CONF=$dir/slurm.conf exec sinfo -N -o '%N %T %c'
fi

# ---------------------------------------------------------------- start
[[ $(id -u) -eq 0 ]] || die "must run as root (slurmd starts jobs as any user)"
for p in munged mungekey slurmctld slurmd sinfo srun; do
  command -v "$p" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
  command -v "$p" >/dev/null 2>&1 ||
    die "$p not found: install slurmctld slurmd slurm-client munge (bash scripts/setup.sh)"
done
[[ ! -e $dir/slurm.conf ]] || die "$dir/slurm.conf exists: a Slurm may already run there (stop it first)"
mkdir -p "$dir"
chmod 0700 "$dir"
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 0700 "$dir/munge"

free_port() { ! (ss -Hltn 2>/dev/null | awk '{print $4}' | grep -q ":$1\$"); }
port=${CPL_SLURM_PORT:-}
if [[ -z $port ]]; then
  for ((port = 16817; port < 16917; port += 2)); do
    free_port "$port" && free_port $((port + 1)) && break
  done
fi
cpus=${CPL_SLURM_CPUS:-16}
(( cpus >= $(nproc) )) || cpus=$(nproc)
node=$(hostname -s)

# Own munge instance: key, socket and files in DIR (-f: the key file is ours).
mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null
chmod 0400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
  --seed-file="$dir/munge/munge.seed" ||
  die "munged did not start (see $dir/munged.log)"

cat > "$dir/slurm.conf" <<CONF
# Written by scripts/slurm-local.sh: a single-node test cluster on $node.
ClusterName=cpl-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SchedulerType=sched/builtin
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$dir/slurm.conf

fail() {
  local why=$1
  for d in slurmd slurmctld munged; do stop_pidfile "$dir/$d.pid"; done
  for d in slurmctld slurmd; do
    [[ -r $dir/$d.log ]] && { echo "--- $dir/$d.log (last lines)"; tail -n 5 "$dir/$d.log"; } >&2
  done
  die "$why (files kept in $dir; remove them with: $0 stop $dir)"
}

# -i: ignore state left by another run; both daemonise and write pid files.
slurmctld -i -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"

wait_s=${CPL_SLURM_WAIT:-30}
state=""
for ((i = 0; i < wait_s * 5; i++)); do
  state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1 || true)
  [[ $state == idle ]] && break
  sleep 0.2
done
[[ $state == idle ]] || fail "node $node not idle after ${wait_s}s (state: ${state:-no answer})"
echo "slurm-local.sh: node $node idle ($cpus CPUs), slurmctld on port $port"
echo "export SLURM_CONF=$SLURM_CONF"
