#!/bin/sh
# Run a command against a Slurm of its own: scripts/slurm-local.sh starts
# munged, slurmctld and slurmd on this machine with every file in a new
# temporary directory, the command runs with SLURM_CONF set, then Slurm
# is stopped and the directory removed.
#   with_slurm.sh SLURM_LOCAL_SH COMMAND [ARGS...]
# Exit: the command's; 77 (ctest: skipped) with the reason printed when
# Slurm cannot be started here (not root, not installed, does not start).
set -u
slurm_local=$1
shift
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "not root (slurmd runs jobs as any user)"
PATH=$PATH:/usr/sbin
for p in srun salloc slurmctld slurmd munged; do
  command -v "$p" >/dev/null 2>&1 || skip "$p not installed (bash scripts/setup.sh installs slurm-client, slurmctld, slurmd, munge)"
done
dir=$(mktemp -d /tmp/cpl-slurm-test.XXXXXX) || exit 1
rmdir "$dir" # slurm-local.sh creates it
trap 'bash "$slurm_local" stop "$dir" >/dev/null 2>&1 || true' EXIT INT TERM
if ! out=$(bash "$slurm_local" start "$dir" 2>&1); then
  echo "$out"
  skip "could not start a local Slurm (above)"
fi
echo "$out"
SLURM_CONF=$dir/slurm.conf
export SLURM_CONF
"$@"
