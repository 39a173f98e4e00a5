#!/bin/sh
# The Gray-Scott workflow through `cpl-run --launcher srun` on a Slurm of
# its own (scripts/slurm-local.sh: munged, slurmctld and slurmd on this
# machine, files in a temporary directory, stopped at the end).
#   run_gray_scott_slurm.sh SLURM_LOCAL_SH RUN_GRAY_SCOTT_ARGS...
# Exit 77 (ctest: skipped) with the reason when Slurm cannot be started
# here; any failure after Slurm is up is a failure.
set -u
slurm_local=$1
shift
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "not root (slurmd runs jobs as any user)"
PATH=$PATH:/usr/sbin
for p in srun slurmctld slurmd munged; do
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
SLURM_CONF=$dir/slurm.conf CPL_LAUNCHER=srun
export SLURM_CONF CPL_LAUNCHER
sh "$(dirname "$0")/run_gray_scott.sh" "$@"
