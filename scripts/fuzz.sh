#!/bin/sh
# Fuzz Coupler's parsers of untrusted input with libFuzzer (clang, ASan and
# UBSan) for N minutes each:
#   workflow  the YAML workflow parser and validator
#   desc      dataset descriptions received from a peer
#   attrs     step attributes received from a peer
#   header    step headers (lengths, description, attributes)
# usage: scripts/fuzz.sh [-m MINUTES] [-b BUILD_DIR] [HARNESS...]
# Harnesses run one after another (all at once with -p). Each starts
# from its committed seeds; new inputs go to BUILD_DIR/corpus/HARNESS,
# crashes to BUILD_DIR/crashes/HARNESS (add a minimised reproducer to
# tests/*/fuzz*/found/ with the fix, so ctest replays it). Prints each
# harness's executions and exit status; exits 1 if any found something.
set -u
case ${1:-} in -h|--help) sed -n 2,13p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
minutes=10 build=build-fuzz par=1
while getopts m:b:p o; do
  case $o in
    m) minutes=$OPTARG ;;
    b) build=$OPTARG ;;
    p) par=2 ;;
    *) sed -n 2,13p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
src=$(cd "$(dirname "$0")/.." && pwd)
harnesses=${*:-workflow desc attrs header}
CC=clang cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCPL_FUZZ=ON >/dev/null || exit 2
targets=
for h in $harnesses; do targets="$targets fuzz_$h"; done
cmake --build "$build" -j2 --target $targets >/dev/null || exit 2

seeds() {
  case $1 in
    workflow) echo "$src/tests/workflow/fuzz_seeds $src/tests/workflow/good $src/tests/workflow/bad" ;;
    *) echo "$src/tests/data/fuzz/seeds/$1 $src/tests/data/fuzz/found/$1" ;;
  esac
}
run() {
  h=$1
  exe=$(find "$build" -name "fuzz_$h" -type f -perm -u+x | head -n 1)
  mkdir -p "$build/corpus/$h" "$build/crashes/$h"
  # -rss_limit_mb: a decoder asking for a gigabyte is a finding, not a test
  # of the machine. -timeout: one input taking 10 s is a hang. UCX (pulled
  # in by MPI) would catch the crash signals before libFuzzer saves the input.
  ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$src/tests/data/fuzz/lsan.supp \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 UCX_HANDLE_ERRORS=none \
    "$exe" -max_total_time=$((minutes * 60)) -rss_limit_mb=1024 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$build/crashes/$h/" \
    "$build/corpus/$h" $(seeds "$h") >"$build/fuzz_$h.log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz_$h.log")
  found=$(ls "$build/crashes/$h" | wc -l)
  echo "fuzz $h: ${minutes} min, ${execs:-?} executions, exit $rc, $found crash file(s) in $build/crashes/$h (log $build/fuzz_$h.log)"
  [ "$rc" -eq 0 ]
}
status=0
if [ "$par" = 2 ]; then
  pids=
  for h in $harnesses; do run "$h" & pids="$pids $!"; done
  for p in $pids; do wait "$p" || status=1; done
else
  for h in $harnesses; do run "$h" || status=1; done
fi
exit $status
