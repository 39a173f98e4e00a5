#!/usr/bin/env bash
# The main example, run by `bash scripts/setup.sh` after the build: the
# Gray-Scott workflow of configs/gray_scott.yaml (examples/README.md), a
# simulation on 4 ranks feeding an analysis on 2 ranks and an HDF5 sink.
#   scripts/example.sh [BUILD_DIR]       (default: build)
# Outputs go to out/ of the repository. Then a few seconds of cpl-bench.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "example.sh: unknown option '$1' (a build directory or nothing)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
build=${1:-build}
run=$build/coupler/tools/cpl-run
shim=$build/scripts/libcpl_yield.so
# Checked before the old outputs below are removed: a wrong argument must
# not cost the user the pictures and file of the last run.
[[ -x $run ]] || { echo "example.sh: no $run: build into $build first (scripts/setup.sh)" >&2; exit 2; }

# configs/gray_scott.yaml finds the programs in build/; any other build
# directory has a copy with its own absolute paths.
config=configs/gray_scott.yaml
if [[ $(realpath -m "$build") != $(realpath -m build) ]]; then
  config=$build/configs/gray_scott.yaml
fi
# 7 ranks share the cores: MPICH busy-polls, the shim makes idle ranks yield.
pre=()
[[ -f $shim ]] && pre=(-genv LD_PRELOAD "$(realpath "$shim")")

# Old pictures of another run would mislead (the components create out/).
rm -f out/V_*.png out/stats.csv out/gray_scott.h5
echo "== $run $config -- ${pre[*]}"
start=$SECONDS
timeout -k 10 300 "$run" "$config" -- "${pre[@]}"
echo
echo "== finished in $((SECONDS - start)) s; outputs in out/:"

pngs=(out/V_*.png)
echo "pictures of V:  ${#pngs[@]} PNG files, ${pngs[0]} .. ${pngs[-1]}"
echo "statistics:     out/stats.csv, $(($(wc -l < out/stats.csv) - 1)) steps; the last:"
awk -F, 'NR == 1 { split($0, h) } END { for (i = 1; i <= NF; i++)
  printf "  %s %s", h[i], ($i ~ /e|\./ ? sprintf("%.4g", $i) : $i); print "" }' out/stats.csv
h5=out/gray_scott.h5
if command -v h5ls > /dev/null; then
  groups=$(h5ls "$h5" | grep -c ' Group$')
  first=$(h5ls "$h5" | awk 'NR == 1 { print $1 }')
  last=$(h5ls "$h5" | awk 'END { print $1 }')
  # "U    Dataset {256, 256}" lines -> "U {256, 256}, V {256, 256}"
  content=$(h5ls "$h5/$first" | sed 's/ *Dataset */ /' | paste -sd ';' | sed 's/;/, /g')
  echo "HDF5 file:      $h5, $(du -h "$h5" | cut -f1), $groups step groups $first .. $last, each: $content"
  echo "look at them:   h5ls -r $h5 | head;  h5dump -A -g /$last $h5"
else
  echo "HDF5 file:      $h5 (install hdf5-tools for h5ls and h5dump)"
fi
echo "more:           examples/README.md (h5py, the options of the programs)"

echo
echo "== inter-group allgather, 2 senders -> 2 receivers, every byte verified"
timeout 60 mpiexec "${pre[@]}" -n 4 "$build/coupler/tools/cpl-bench" \
  --inter fc,ring,root,native --shape 2:2 --sizes 256K --reps 5 \
  --baseline native --quiet
