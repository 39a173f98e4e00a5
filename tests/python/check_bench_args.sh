#!/bin/sh
# coupler/python/bench/bench_overhead.py refuses bad arguments with
# argparse's usage error (exit 2, one line naming the value) before any
# run: --steps within the warm-up failed every run ("per_step_us=inf"),
# and a bad --sizes, --shape or build directory ended in a traceback.
# usage: check_bench_args.sh PYTHON BENCH_OVERHEAD_PY BUILD_DIR
py=$1 bench=$2 build=$3
fails=0
check() { # WANT ARGS...
  want=$1
  shift
  "$py" "$bench" "$@" > out.txt 2> err.txt
  rc=$?
  if [ $rc -ne 2 ] || ! grep -qF -- "$want" err.txt || grep -q Traceback err.txt ||
    [ -s out.txt ]; then
    echo "bench_overhead $*: exit $rc: $(tail -1 err.txt)" >&2
    fails=$((fails + 1))
  fi
}
check "--steps must be more than the 5 warm-up steps, got 5" "$build" --steps 5
check "argument --sizes: bad size '4X'" "$build" --sizes 4X
check "argument --sizes: bad size '4'" "$build" --sizes 4K,4
check "argument --shape: bad shape '2x2'" "$build" --shape 2x2
check "--reps must be at least 1, got 0" "$build" --reps 0
check "nosuch/coupler/tools/cpl-run not found: give the build directory" nosuch
[ $fails -eq 0 ] && echo "bench_overhead: bad arguments refused"
[ $fails -eq 0 ]
