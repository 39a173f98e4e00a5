#!/usr/bin/env bash
# What a step of many small datasets costs, per N datasets in the step
# (tests/bench/step_bench --datasets: 8 float64 each, an attribute each,
# every dataset and attribute looked up by name on the consumer). Two
# workflows: "pair", 2 producer ranks -> 1 consumer rank (the consumer's
# time per step, after 2 warm-up steps), and "stage", 2 producer ranks ->
# a stage (1 rank, keep 1, block; its input link of depth 1) -> an HDF5
# sink (1 rank): the producer's pace, which the sink sets once the link
# and the store are full (after 5 warm-up steps). Prints one line per case
# and N: ms per step, and us per dataset, which a cost linear in N keeps
# flat.
#   scripts/bench_datasets.sh [BUILD_DIR] [CASES] [N ...]
# Defaults: build "pair stage" 250 1000 4000 16000. Steps measured: about
# 20,000 datasets' worth (pair), 12,000 (stage), at least 3.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "bench_datasets.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
# Absolute, so that the paths below hold in the workflow files too (an
# absolute BUILD_DIR was taken relative to the repository: "build ... first").
build=$(realpath -m "${1:-build}") cases=${2:-pair stage}
shift $(($# > 2 ? 2 : $#))
sizes=("$@")
((${#sizes[@]})) || sizes=(250 1000 4000 16000)
bench=$build/tests/bench/step_bench
run=$build/coupler/tools/cpl-run
[[ -x $bench && -x $run ]] || { echo "bench_datasets.sh: build $build first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shim=()
[[ -f $build/scripts/libcpl_yield.so ]] && shim=(-genv LD_PRELOAD "$build/scripts/libcpl_yield.so")
for n in "${sizes[@]}"; do
  for c in $cases; do
    if [[ $c == pair ]]; then
      warm=2 steps=$((20000 / n > 3 ? 20000 / n : 3))
    else
      warm=5 steps=$((12000 / n > 3 ? 12000 / n : 3))
    fi
    steps=$((steps + warm))
    cmd="[\"$bench\", --datasets, \"$n\", \"$steps\", \"$warm\"]"
    if [[ $c == pair ]]; then
      cat > "$tmp/wf.yaml" <<YAML
name: bench_datasets
components:
  - {name: prod, nprocs: 2, command: $cmd, outputs: [out]}
  - {name: cons, nprocs: 1, command: $cmd, inputs: [in]}
links:
  - {from: prod.out, to: cons.in, depth: 2, timeout: 600}
YAML
      key=per_step_us
    else
      cat > "$tmp/wf.yaml" <<YAML
name: bench_datasets_stage
components:
  - {name: prod, nprocs: 2, command: $cmd, outputs: [out]}
  - {name: relay, nprocs: 1, kind: stage, keep: 1, when_full: block, inputs: [in], outputs: [out]}
  - {name: sink, nprocs: 1, kind: sink, file: "$tmp/out.h5", inputs: [in]}
links:
  - {from: prod.out, to: relay.in, depth: 1, timeout: 600}
  - {from: relay.out, to: sink.in, timeout: 600}
YAML
      key=put_step_us
    fi
    us=$(cd "$tmp" && CPL_PROGRESS=0 timeout 1200 "$run" wf.yaml -- "${shim[@]}" 2>"$tmp/err" |
      sed -n "s/^steps: $key=//p") || true
    rm -f "$tmp/out.h5"
    if [[ -z $us ]]; then
      echo "$c N=$n: failed"
      tail -5 "$tmp/err"
      continue
    fi
    awk -v c="$c" -v n="$n" -v s="$((steps - warm))" -v us="$us" \
      'BEGIN {printf "%-5s N=%-6d %3d steps: %9.2f ms/step, %6.2f us per dataset\n", c, n, s, us / 1000, us / n}'
  done
done
