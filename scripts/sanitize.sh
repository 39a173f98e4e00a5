#!/bin/sh
# Build the whole tree with AddressSanitizer and UBSan (-DCPL_SANITIZE=ON)
# in BUILD_DIR (default build-asan) and run the test suite there.
#   scripts/sanitize.sh [-b BUILD_DIR] [-j N] [--ci] [CTEST_ARGS...]
# --ci: only the subset below (CI_TESTS), sized for CI on 2 cores.
# Leak checking: unit tests with the suppressions of tests/sanitize/lsan.supp
# (MPICH, UCX and hwloc initialisation); MPI tests run with
# detect_leaks=0 (cpl_add_mpi_test), since MPICH and UCX leak at exit from
# modules they have already unloaded, which no suppression can name.
# Valgrind instead: scripts/sanitize.sh --valgrind (memcheck on the unit
# tests and a 2-rank transfer).
set -u
build=build-asan jobs=2
while [ $# -gt 0 ]; do
  case $1 in
    -b) build=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --valgrind) valgrind=1; shift ;;
    --ci) ci=1; shift ;;
    # Before any build: was passed on to ctest after a full sanitized build.
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
if [ "${valgrind:-0}" = 1 ]; then
  b=${VALGRIND_BUILD:-build}
  command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 2; }
  status=0
  for t in "$b"/tests/unit/test_*; do
    [ -x "$t" ] || continue
    # the exhaustive schedule checks take minutes under memcheck: kept
    valgrind -q --error-exitcode=99 --leak-check=no "$t" >/dev/null 2>"$b/valgrind_$(basename "$t").log"
    rc=$?; echo "valgrind $(basename "$t"): exit $rc"; [ $rc -eq 99 ] && status=1
  done
  # A 2-rank transfer through the engine (fc, 4 KiB), every rank under memcheck.
  mpiexec -n 2 valgrind -q --error-exitcode=99 --log-file="$b/valgrind_bench.%p.log" \
    "$b/coupler/tools/cpl-bench" --inter fc --shape 1:1 --sizes 4K --reps 2 --warmup 1 >/dev/null
  rc=$?; echo "valgrind 2-rank cpl-bench fc: exit $rc"; [ $rc -ne 0 ] && status=1
  exit $status
fi
# The build's output goes to BUILD_DIR/sanitize-build.log, shown if it fails.
mkdir -p "$build" || exit 2
log=$build/sanitize-build.log
{ cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCPL_SANITIZE=ON &&
  cmake --build "$build" -j "$jobs"; } >"$log" 2>&1 ||
  { tail -n 40 "$log"; echo "sanitize.sh: the sanitized build failed (whole log: $log)" >&2; exit 2; }
echo "sanitize.sh: built $build"
# The CI subset: every decoder and parser fed hostile input (fuzz replays,
# the workflow tests, the source's bad files, bad tuning files), the unit
# tests but the two exhaustive schedule checks (75-100 s each under ASan;
# CI_SKIP, so a new unit test is in without editing this), and the MPI
# paths at small rank counts. Left to the full run: the larger MPI
# shapes (mpi.inter.upto6 and up, chunked, ringphase, lockstep: 50-120 s
# each), the drop-in (dropin.linked.np4 and dropin.preload.np4: over
# 195 s each), the fault tests that wait out a timeout or inject a fault
# (tens of seconds each), wf_run_netns_hosts (network namespaces) and
# format (no sanitized code).
CI_TESTS='^(unit\.|tools\.|wf_|data\.fuzz_|'\
'data\.(shapes_.*|select_.*|policy_.*|fanout|fanin|detach|overlap|declared|unopened|requests|serve|misuse|serve_split)$|'\
'mpi\.(intra\.np[23]|circulant\.np3|inter\.upto4|errors|tuning\..*)$|faults_source_|'\
'faults_(missing_program|not_executable|bare_not_in_path|exit3_before_init)$|'\
'adapters_(source_2to2|sink_3to1|component_help)$)'
CI_SKIP='^(unit\.(ring|circulant)_sched|wf_run_netns_hosts)$'
[ "${ci:-0}" = 1 ] && set -- -R "$CI_TESTS" -E "$CI_SKIP" "$@"
LSAN_OPTIONS=suppressions=$src/tests/sanitize/lsan.supp:print_suppressions=0 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir "$build" -j "$jobs" --output-on-failure "$@"
