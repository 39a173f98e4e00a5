#!/usr/bin/env bash
# What writing a trace costs per step: the same pair (P producer ranks,
# Q consumer ranks, BYTES per step) with CPL_TRACE off and on, in turns,
# ROUNDS times each; prints each round and the ratio of the medians. Then
# the cost of one record alone (tests/bench/trace_cost: every rank writes
# one record per step and link), as a fraction of the fastest step seen:
# on a loaded machine the pipelines' times scatter far more than 2%, the
# record's cost does not.
#   scripts/bench_trace.sh [BUILD_DIR] [BYTES] [STEPS] [ROUNDS] [P] [Q]
# Defaults: build 1048576 200 7 2 2 (STEPS: more than the 20 warm-up steps).
# Needs the build's tests/bench/step_bench.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "bench_trace.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
# Absolute, so that the paths below hold in the workflow files too (an
# absolute BUILD_DIR was taken relative to the repository: "build ... first").
build=$(realpath -m "${1:-build}") bytes=${2:-1048576} steps=${3:-200} rounds=${4:-7} p=${5:-2} q=${6:-2}
bench=$build/tests/bench/step_bench
run=$build/coupler/tools/cpl-run
cost=$build/tests/bench/trace_cost
[[ -x $bench && -x $run && -x $cost ]] || { echo "bench_trace.sh: build $build first" >&2; exit 2; }
# The consumer times the steps after 20 warm-up steps (fewer printed
# negative times), and a step carries at least one float64.
[[ $steps =~ ^[0-9]+$ && $steps -gt 20 && $bytes =~ ^[0-9]+$ && $bytes -ge 8 ]] ||
  { echo "bench_trace.sh: STEPS must be more than the 20 warm-up steps and BYTES at least 8, got $steps and $bytes" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/pair.yaml" <<YAML
name: bench_trace
components:
  - {name: prod, nprocs: $p, command: ["$bench", "$bytes", "$steps", "20", "0"], outputs: [out]}
  - {name: cons, nprocs: $q, command: ["$bench", "$bytes", "$steps", "20", "0"], inputs: [in]}
links:
  - {from: prod.out, to: cons.in, depth: 2}
YAML
shim=()
[[ -f $build/scripts/libcpl_yield.so ]] && shim=(-genv LD_PRELOAD "$build/scripts/libcpl_yield.so")
one() { # $1: trace spec or "" -> per-step microseconds
  CPL_PROGRESS=0 CPL_TRACE=$1 timeout 300 "$run" "$tmp/pair.yaml" -- "${shim[@]}" |
    sed -n 's/^steps: per_step_us=//p'
}
off=() on=()
for ((i = 0; i < rounds; i++)); do
  off+=("$(one "")")
  on+=("$(one "$tmp/trace.jsonl")")
  rm -f "$tmp/trace.jsonl"
  echo "round $((i + 1)): off ${off[-1]} us/step, on ${on[-1]} us/step"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mo=$(median "${off[@]}") mn=$(median "${on[@]}")
echo "bytes $bytes, $p x $q ranks, $steps steps: median off $mo us/step, on $mn us/step, on/off $(awk -v a="$mn" -v b="$mo" 'BEGIN {printf "%.4f", a / b}')"
fast=$(printf '%s\n' "${off[@]}" | sort -g | head -1)
for spec in "$tmp/cost.jsonl" "chrome:$tmp/cost.json"; do
  us=$("$cost" "$spec" 100000 | sed -n 's/^trace_us_per_record=//p')
  echo "one record ($spec): $us us = $(awk -v a="$us" -v b="$fast" 'BEGIN {printf "%.3f", 100 * a / b}')% of the fastest step without trace ($fast us)"
done
