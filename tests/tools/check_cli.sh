#!/usr/bin/env bash
# The command-line conventions every Coupler tool follows (coupler/tools/cli.h):
#   -h, --help      usage on stdout (first line "usage: NAME ..."), nothing on
#                   stderr, exit 0
#   -V, --version   exactly "NAME (Coupler) VERSION", exit 0
#   a bad option    exit 2, stderr names the option, nothing on stdout
# usage: check_cli.sh NAME PATH VERSION
set -uo pipefail
name=$1 tool=$2 version=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "$name: FAIL: $*" >&2; fails=$((fails + 1)); }

# run ARGS...: status in $rc, stdout in $tmp/out, stderr in $tmp/err.
run() { timeout -k 2 20 "$tool" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?; }

for h in -h --help; do
  run $h
  ((rc == 0)) || fail "$h exited $rc"
  [[ $(head -1 "$tmp/out") == "usage: "*"$name"* ]] || fail "$h: stdout does not start with usage: $name"
  (($(wc -l < "$tmp/out") >= 4)) || fail "$h: usage is under 4 lines: $(cat "$tmp/out")"
  [[ -s $tmp/err ]] && fail "$h wrote to stderr: $(cat "$tmp/err")"
done
for v in -V --version; do
  run $v
  ((rc == 0)) || fail "$v exited $rc"
  [[ $(cat "$tmp/out") == "$name (Coupler) $version" ]] || fail "$v printed '$(cat "$tmp/out")'"
done
for bad in --no-such-option -Z; do
  run $bad
  ((rc == 2)) || fail "$bad exited $rc, not 2"
  grep -q -- "$bad" "$tmp/err" || fail "$bad: stderr does not name it: $(head -2 "$tmp/err")"
  [[ -s $tmp/out ]] && fail "$bad wrote to stdout: $(head -2 "$tmp/out")"
done

# Tool-specific promises.
case $name in
  cpl-bench)
    # No arguments: the usage, not a table header and an MPI_Abort.
    run
    ((rc == 2)) || fail "no arguments exited $rc, not 2"
    grep -q '^usage: ' "$tmp/err" || fail "no arguments: no usage on stderr"
    [[ -s $tmp/out ]] && fail "no arguments wrote to stdout: $(head -2 "$tmp/out")"
    run --reps
    ((rc == 2)) && grep -q -- '--reps needs a value' "$tmp/err" || fail "--reps without a value: $rc $(head -1 "$tmp/err")"
    ;;
  cpl-sched)
    run ring 2 2
    [[ $(head -1 "$tmp/out") == "step from to message" ]] || fail "ring: no header line"
    (($(grep -c '^[0-9]' "$tmp/out") == $(wc -l < "$tmp/out") - 1)) || fail "ring: not one header + data"
    run ring 2 2 --no-header
    [[ $(head -1 "$tmp/out") =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]] || fail "ring --no-header: $(head -1 "$tmp/out")"
    run circulant 5
    [[ $(sed -n 2p "$tmp/out") == "rank side blocks" && $(head -1 "$tmp/out") == "skips "* ]] ||
      fail "circulant: no header: $(head -2 "$tmp/out")"
    run circulant 5 --no-header
    [[ $(head -1 "$tmp/out") =~ ^[0-9\ ]+$ ]] || fail "circulant --no-header: $(head -1 "$tmp/out")"
    run ring 2 0
    ((rc == 2)) && grep -q 'ring 2 0' "$tmp/err" || fail "ring 2 0: $rc $(head -1 "$tmp/err")"
    run
    ((rc == 2)) || fail "no arguments exited $rc, not 2"
    ;;
  cpl-model)
    run --max x
    ((rc == 2)) && grep -q -- '--max: x' "$tmp/err" || fail "--max x: $rc $(head -1 "$tmp/err")"
    ;;
  cpl-run | cpl-validate)
    run
    ((rc == 2)) && grep -q '^usage: ' "$tmp/err" || fail "no arguments: $rc $(head -1 "$tmp/err")"
    ;;
esac
((fails == 0)) && echo "$name: command-line conventions hold"
exit $((fails > 0))
