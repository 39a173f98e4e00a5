#!/usr/bin/env bash
# The scripts under scripts/ that README.md and examples/README.md name:
# -h and --help print the usage (the script's own name in it) and exit 0
# before doing anything (sanitize.sh built the whole tree first and then
# passed --help to ctest); example.sh, given an option or a directory that
# is no build, exits 2 without removing the outputs of the last run in out/
# (it deleted them, then failed to run cpl-run).
# usage: check_scripts.sh SOURCE_DIR
set -uo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "scripts: FAIL: $*" >&2; fails=$((fails + 1)); }

# A copy of scripts/ in a scratch tree, so out/ and build dirs are its own.
mkdir -p "$tmp/tree/out"
cp -r "$src/scripts" "$tmp/tree/"
cd "$tmp"
for s in example.sh measure_stage.sh bench_trace.sh bench_datasets.sh sanitize.sh setup.sh format.sh \
  fuzz.sh; do
  for h in -h --help; do
    timeout -k 2 20 bash "tree/scripts/$s" $h > out.txt 2> err.txt
    rc=$?
    ((rc == 0)) || fail "$s $h exited $rc: $(head -3 err.txt)"
    grep -q "scripts/$s" out.txt || fail "$s $h: no usage line naming scripts/$s: $(head -3 out.txt)"
    [[ -s err.txt ]] && fail "$s $h wrote to stderr: $(head -3 err.txt)"
  done
done
[[ -e build-asan || -e tree/build-asan ]] && fail "sanitize.sh --help started a build"

for arg in --bogus no-such-build; do
  echo kept > tree/out/stats.csv
  timeout -k 2 20 bash tree/scripts/example.sh $arg > out.txt 2> err.txt
  rc=$?
  ((rc == 2)) || fail "example.sh $arg exited $rc, not 2"
  grep -q -- "$arg" err.txt || fail "example.sh $arg: stderr does not name it: $(head -3 err.txt)"
  [[ -f tree/out/stats.csv ]] || fail "example.sh $arg removed out/stats.csv"
done
((fails == 0)) && echo "scripts: -h/--help of every script and example.sh's refusals: ok"
exit $((fails > 0))
