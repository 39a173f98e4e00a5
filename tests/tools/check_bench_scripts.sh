#!/usr/bin/env bash
# scripts/bench_trace.sh and scripts/bench_datasets.sh run, from another
# directory, against a build directory given as an absolute path (it was
# taken relative to the repository: "build /abs/build first"), and print
# positive times; bench_trace.sh refuses STEPS within its 20 warm-up steps
# (it printed negative times per step).
# usage: check_bench_scripts.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1 build=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fails=0
fail() { echo "bench scripts: FAIL: $*" >&2; fails=$((fails + 1)); }

timeout -k 5 100 bash "$src/scripts/bench_trace.sh" "$build" 1024 25 1 > out.txt 2> err.txt
rc=$?
cat out.txt
((rc == 0)) || fail "bench_trace.sh $build 1024 25 1 exited $rc: $(tail -3 err.txt)"
grep -q '^bytes 1024, 2 x 2 ranks, 25 steps: median off [0-9.]* us/step, on [0-9.]* us/step' out.txt ||
  fail "bench_trace.sh: no summary with positive times per step"
grep -q -- '-[0-9]' out.txt && fail "bench_trace.sh printed a negative number"

timeout -k 5 30 bash "$src/scripts/bench_trace.sh" "$build" 1024 5 1 > out.txt 2> err.txt
rc=$?
((rc == 2)) && grep -q 'STEPS must be more than the 20 warm-up steps' err.txt ||
  fail "bench_trace.sh STEPS 5: exit $rc, $(head -2 err.txt) $(head -2 out.txt)"

timeout -k 5 60 bash "$src/scripts/bench_datasets.sh" "$build" pair 10 > out.txt 2> err.txt
rc=$?
cat out.txt
((rc == 0)) || fail "bench_datasets.sh $build pair 10 exited $rc: $(tail -3 err.txt)"
grep -q '^pair  *N=10 .* ms/step, .* us per dataset' out.txt || fail "bench_datasets.sh: no line for N=10"
((fails == 0)) && echo "bench scripts: ok"
exit $((fails > 0))
