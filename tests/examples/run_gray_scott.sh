#!/bin/sh
# End-to-end test of the Gray-Scott example: run the workflow in a fresh
# directory, then let check_gray_scott compare every output with the others
# and with a serial reference.
#   run_gray_scott.sh DIR CPL_RUN YAML SECONDS CHECKER CHECKER_ARGS... [-- MPIEXEC_ARGS...]
set -eu
dir=$1 run=$2 yaml=$3 seconds=$4 checker=$5
shift 5
args=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do args="$args $1"; shift; done
[ $# -gt 0 ] && shift # the --
rm -rf "$dir"
mkdir -p "$dir/out"
cd "$dir"
start=$(date +%s)
timeout -k 5 "$seconds" "$run" "$yaml" -- "$@"
echo "run_gray_scott: workflow finished in $(( $(date +%s) - start )) s"
# shellcheck disable=SC2086 # word splitting of $args is intended
"$checker" out $args
