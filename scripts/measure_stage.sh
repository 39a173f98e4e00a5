#!/usr/bin/env bash
# Selective delivery against the allgather on the staged Gray-Scott example
# (configs/gray_scott_stage.yaml): per analysis rank, the bytes it received
# against the bytes it needs (its rows of V), the most step data it held,
# its peak RSS against its box, and the time per step.
#
#   scripts/measure_stage.sh [BUILD_DIR] [SIZE] [ITERATIONS] [EVERY]
#
# Defaults: build, 1024, 300, 50 (the example: 6 steps). Each variant runs
# once in a fresh directory under $TMPDIR; a second run at size 64 gives
# the fixed RSS overhead (libraries, MPI, HDF5) to subtract. Pictures are
# off (--image-every -1): for them rank 0 gathers the whole field and, with
# --select rows, every rank keeps a float32 copy of its rows, which is the
# analysis's memory, not delivery's. On a machine
# with fewer cores than the 6 ranks, times are CPU scheduling as much as
# data movement: say so next to them.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "measure_stage.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
build=${1:-build}
size=${2:-1024}
iterations=${3:-300}
every=${4:-50}
base=$build/configs/gray_scott_stage.yaml
[[ -x $build/coupler/tools/cpl-run && -f $base ]] ||
  { echo "measure_stage.sh: no $build/coupler/tools/cpl-run or $base: build first" >&2; exit 2; }
run=$(realpath "$build/coupler/tools/cpl-run")
shim=$build/scripts/libcpl_yield.so
pre=()
[[ -f $shim ]] && pre=(-genv LD_PRELOAD "$(realpath "$shim")")
work=$(mktemp -d "${TMPDIR:-/tmp}/measure_stage.XXXXXX")
trap 'rm -rf "$work"' EXIT

# variant NAME N: the example at N x N; NAME select (rows selected,
# delivery: select) or allgather (nothing selected, delivery: allgather).
variant() {
  local name=$1 n=$2 dir=$work/$1-$2
  mkdir -p "$dir"
  sed -e "s/--size 1024 --iterations 300 --every 50/--size $n --iterations $iterations --every $every/" \
      -e "s/dims: \[1024, 1024\]/dims: [$n, $n]/" \
      -e "s/--image-every 3/--image-every -1/" "$base" > "$dir/wf.yaml"
  if [[ $name == allgather ]]; then
    sed -i -e 's/--select rows/--select all/' \
        -e 's/delivery: select   # the rows each/delivery: allgather # the rows each/' "$dir/wf.yaml"
  fi
  local start=$SECONDS
  (cd "$dir" && timeout -k 10 600 "$run" wf.yaml -- "${pre[@]}") > "$dir/log" 2>&1 ||
    { cat "$dir/log"; echo "measure_stage: $name at $n failed" >&2; exit 1; }
  echo "$((SECONDS - start))" > "$dir/wall"
}

# field LOG RANK KEY: a number from the analysis rank's report line.
field() {
  sed -n "s/^analysis rank $2: .*$3/\\1/p" "$1"
}

report() {
  local name=$1 log=$work/$1-$size/log small=$work/$1-64/log
  for r in 0 1; do
    local recv held rows rss rss0 steps sps
    recv=$(field "$log" $r 'received \([0-9.]*\) MiB.*')
    held=$(field "$log" $r 'held at most \([0-9.]*\) MiB.*')
    rows=$(field "$log" $r 'its rows \([0-9.]*\) MiB per step.*')
    rss=$(field "$log" $r 'peak RSS \([0-9.]*\) MiB.*')
    rss0=$(field "$small" $r 'peak RSS \([0-9.]*\) MiB.*')
    steps=$(field "$log" $r ', \([0-9]*\) steps (.*')
    sps=$(field "$log" $r ', \([0-9.]*\) s per step.*')
    awk -v n="$name" -v r="$r" -v recv="$recv" -v held="$held" -v rows="$rows" \
        -v rss="$rss" -v rss0="$rss0" -v steps="$steps" -v sps="$sps" 'BEGIN {
      need = rows * steps
      printf "%-9s %4d %9.2f %9.2f %8.2f %9.2f %8.2f %8.1f %8.1f %8.2f %8.3f\n",
        n, r, recv, need, recv / need, held, rows, rss, rss0, (rss - rss0) / rows, sps }'
  done
}

echo "measure_stage: $size x $size, $iterations iterations, a step every $every; $(nproc) cores"
for v in select allgather; do
  variant "$v" "$size"
  variant "$v" 64
done
echo
echo "analysis ranks (2), per rank; MiB = 2^20 bytes; box = its rows of V (float64) per step"
printf "%-9s %4s %9s %9s %8s %9s %8s %8s %8s %8s %8s\n" variant rank received needed moved/nd \
  "held max" box "RSS" "RSS@64" "(RSS-RSS@64)/box" "s/step"
report select
report allgather
echo
for v in select allgather; do
  echo "$v: workflow $(cat "$work/$v-$size/wall") s; $(grep -o 'sim: done in .*' "$work/$v-$size/log")"
  grep -o 'stage: steps in .*' "$work/$v-$size/log" | sed 's/^/  /'
done
