#!/usr/bin/env bash
# Set up Coupler on a fresh Debian machine: install what is missing, build,
# then run the main example (default) or the whole test suite (--test).
#   bash scripts/setup.sh          install, build, run the example
#   bash scripts/setup.sh --test   install, build, run every test, then the
#                                  sanitized subset (scripts/sanitize.sh --ci)
# Environment: BUILD_DIR (default build; the sanitized one is BUILD_DIR-asan),
# JOBS (default nproc).
set -euo pipefail

mode=example
case "${1:-}" in
  "") ;;
  --test) mode=test ;;
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup.sh: unknown argument '$1' (expected --test or nothing)" >&2; exit 2 ;;
esac
# After --help, which reads "$0" as given (relative to where we started).
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config mpich libmpich-dev libhdf5-mpich-dev
          hdf5-tools libyaml-dev libpng-dev clang-format
          iproute2 slurmctld slurmd slurm-client munge) # cpl-run's launcher tests
# Python components (coupler/python) and their tests. Not python3-mpi4py:
# Debian builds it on Open MPI, and its openmpi-bin would take over
# /usr/bin/mpiexec (README, "Python components").
packages+=(python3-dev python3-numpy python3-matplotlib python3-h5py-serial)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup.sh: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
# Runs a part of the set-up and says how long it took (wall and CPU).
timed() {
  local TIMEFORMAT="setup.sh: $1: %0R s (CPU: %0U s user, %0S s system)"
  shift
  time "$@"
}
timed configure cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
timed build cmake --build "$build" -j "$jobs"

if [[ $mode == test ]]; then
  # MPI tests declare PROCESSORS, so ctest never oversubscribes past -j.
  # Both parts run even if the first fails; either failing fails the command.
  status=0
  timed "test suite" ctest --test-dir "$build" --output-on-failure -j "$jobs" || status=1
  timed "sanitized build and subset" \
    bash scripts/sanitize.sh -b "$build-asan" -j "$jobs" --ci || status=1
  exit $status
else
  exec scripts/example.sh "$build"
fi
