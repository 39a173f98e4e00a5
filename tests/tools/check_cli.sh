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
  cpl-exec)
    # Options only in front of the program: its own -h is its own (the
    # program never reaches cpl_init, so cpl-exec stops "the job").
    run sh -c 'echo "program got $0"' -h
    grep -q 'program got -h' "$tmp/out" && grep -q 'without calling cpl_init' "$tmp/err" ||
      fail "a program's -h: $rc $(head -2 "$tmp/out" "$tmp/err")"
    run
    ((rc == 2)) && grep -q '^usage: ' "$tmp/err" || fail "no arguments: $rc $(head -1 "$tmp/err")"
    # A script that is there but cannot be exec'd names its #! line (it was
    # "cannot execute ...: No such file or directory" alone).
    printf '#!/nonexistent-cpl/sh\n' > "$tmp/bad.sh" && printf '#!/bin/sh\r\n' > "$tmp/crlf.sh" &&
      chmod +x "$tmp/bad.sh" "$tmp/crlf.sh"
    run "$tmp/bad.sh"
    grep -q "cannot execute $tmp/bad.sh: No such file or directory (its #! interpreter /nonexistent-cpl/sh is missing)" "$tmp/err" ||
      fail "missing interpreter: $rc $(head -1 "$tmp/err")"
    run "$tmp/crlf.sh"
    grep -q "cannot execute $tmp/crlf.sh: .*(its #! line ends in a carriage return" "$tmp/err" ||
      fail "CRLF #! line: $rc $(head -1 "$tmp/err")"
    ;;
  cpl-bench)
    # No arguments: the usage, not a table header and an MPI_Abort.
    run
    ((rc == 2)) || fail "no arguments exited $rc, not 2"
    grep -q '^usage: ' "$tmp/err" || fail "no arguments: no usage on stderr"
    [[ -s $tmp/out ]] && fail "no arguments wrote to stdout: $(head -2 "$tmp/out")"
    run --reps
    ((rc == 2)) && grep -q -- '--reps needs a value' "$tmp/err" || fail "--reps without a value: $rc $(head -1 "$tmp/err")"
    # Variant options: a bad one is named (it printed "cpl-bench: " alone),
    # chunks follow the library's CPL_CHUNK rule (>= 512), and an empty
    # list is an error (it ran the default inter benchmark).
    run --intra circulant@cabc --sizes 1K --reps 1
    ((rc == 2)) && grep -q 'circulant@cabc: unknown option "@cabc"' "$tmp/err" ||
      fail "@cabc: $rc $(head -1 "$tmp/err")"
    for c in 0 1 511 1.5; do
      run --intra circulant@c$c --sizes 1K --reps 1
      ((rc == 2)) && grep -q "circulant@c$c: @c needs a whole number of bytes from 512 to 10^15" "$tmp/err" ||
        fail "@c$c: $rc $(head -1 "$tmp/err")"
    done
    # An unknown algorithm: the list names the benchmark's baselines too
    # (it gave the library's alone, as if mpi were not a choice).
    run --inter bogus --sizes 1K --reps 1
    ((rc == 2)) && grep -q 'unknown inter-group algorithm "bogus" (expected auto|fc|.*|chains); cpl-bench also takes ring-intra and mpi' "$tmp/err" ||
      fail "--inter bogus: $rc $(head -1 "$tmp/err")"
    run --intra bogus --sizes 1K --reps 1
    ((rc == 2)) && grep -q 'unknown intra-group algorithm "bogus" (expected auto|circulant|.*|root); cpl-bench also takes mpi$' "$tmp/err" ||
      fail "--intra bogus: $rc $(head -1 "$tmp/err")"
    run --intra circulant@ixyz --sizes 1K --reps 1
    ((rc == 2)) && grep -q '"@ixyz"' "$tmp/err" || fail "@ixyz: $rc $(head -1 "$tmp/err")"
    # Numbers are read whole (atoi took --reps 1e3 for 1 run, atof
    # --min-time abc for 0), sizes fit the int counts the runs use (3G
    # wrapped negative), and a shape is P:Q alone (1:1:5 ran as 1:1).
    for arg in "--reps 1e3" "--reps 10x" "--warmup 99999999999" "--prime -1" \
      "--min-time abc" "--min-time inf" "--rate 5x" "--sizes 3G" "--sizes 0.5"; do
      run --inter fc $arg
      ((rc == 2)) && grep -q -- "bad value for ${arg% *}: ${arg#* } (" "$tmp/err" || fail "$arg: $rc $(head -1 "$tmp/err")"
    done
    # A --csv that cannot be written: refused before any run (it ran, said
    # "cannot write" and exited 0 without the file).
    run --intra ring --sizes 1K --reps 1 --warmup 0 --min-time 0 --csv "$tmp/no/such/dir.csv"
    ((rc == 1)) && grep -q "cannot write $tmp/no/such/dir.csv: No such file or directory" "$tmp/err" &&
      [[ ! -s $tmp/out ]] || fail "--csv unwritable: $rc $(head -1 "$tmp/err")"
    run --inter fc --reps 300
    ((rc == 2)) && grep -q -- '--reps 300: at most 256 runs per point' "$tmp/err" ||
      fail "--reps 300: $rc $(head -1 "$tmp/err")"
    run --inter fc --shape 1:1:5
    ((rc == 2)) && grep -q 'shape 1:1:5 is not P:Q' "$tmp/err" || fail "--shape 1:1:5: $rc $(head -1 "$tmp/err")"
    run --intra ring --procs 1x
    ((rc == 2)) && grep -q 'group size 1x is not a whole number' "$tmp/err" ||
      fail "--procs 1x: $rc $(head -1 "$tmp/err")"
    for opt in --intra --inter; do
      for list in "" ","; do
        run $opt "$list" --sizes 1K --reps 1
        ((rc == 2)) && grep -q -- "$opt needs at least one algorithm" "$tmp/err" ||
          fail "$opt '$list': $rc $(head -1 "$tmp/err")"
        [[ -s $tmp/out ]] && fail "$opt '$list' wrote to stdout: $(head -2 "$tmp/out")"
      done
    done
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
    # --explain and --size mean nothing to ring and circulant: refused (the
    # schedule was printed as if they had not been given).
    for args in "ring 2 2 --explain" "ring 2 2 --size 1K" "circulant 5 --explain" "circulant 5 --size 1K"; do
      run $args
      ((rc == 2)) && grep -q -- "is for fc, direct-ring, two-hop, chains, root, not ${args%% *}" "$tmp/err" &&
        [[ ! -s $tmp/out ]] || fail "$args: $rc $(head -1 "$tmp/err")"
    done
    # A bad --size is named with what is taken (it said "--size needs a
    # byte count (e.g. 1M)" for 3G, 0 and 1.5 alike).
    for sz in 3G 0 1.5; do
      run fc 2 2 --size $sz
      ((rc == 2)) && grep -q -- "bad value for --size: $sz (a whole number of bytes, 1 to 10^15, with K or M)" "$tmp/err" ||
        fail "--size $sz: $rc $(head -1 "$tmp/err")"
    done
    run
    ((rc == 2)) || fail "no arguments exited $rc, not 2"
    ;;
  cpl-model)
    # A bad model variable is refused, as the library refuses it (it ran
    # with the defaults and said nothing).
    CPL_ALPHA=abc run --max 2
    ((rc == 2)) && grep -q 'cpl-model: CPL_ALPHA: expected a number of seconds from 1e-09 to 10, got "abc"' "$tmp/err" ||
      fail "CPL_ALPHA=abc: $rc $(head -1 "$tmp/err")"
    [[ -s $tmp/out ]] && fail "CPL_ALPHA=abc wrote to stdout: $(head -1 "$tmp/out")"
    run --max x
    ((rc == 2)) && grep -q -- '--max: x' "$tmp/err" || fail "--max x: $rc $(head -1 "$tmp/err")"
    # --beta and --rate are alternatives (the usage's "|"): the last won.
    for pair in "--beta 1e-9 --rate 100" "--rate 100 --beta 1e-9"; do
      run $pair --max 2
      ((rc == 2)) && grep -q -- '--beta and --rate both set beta' "$tmp/err" || fail "$pair: $rc $(head -1 "$tmp/out")"
    done
    # --size is bounded (p * k overflowed size_t: 1e30 bytes modelled as 0.01 ms)
    for sz in 1e30 18446744073709551615 1099511627777 -1; do
      run --size $sz
      ((rc == 2)) && grep -q -- "--size: $sz" "$tmp/err" || fail "--size $sz: $rc $(head -1 "$tmp/err")"
      [[ -s $tmp/out ]] && fail "--size $sz wrote to stdout"
    done
    # Not finite: --rate inf modelled beta 0, --alpha 1e400 an infinite latency
    for arg in "--alpha inf" "--alpha 1e400" "--beta nan" "--rate inf"; do
      run $arg --max 2
      ((rc == 2)) && grep -q -- "bad value for ${arg% *}: ${arg#* }" "$tmp/err" || fail "$arg: $rc $(head -1 "$tmp/err")"
    done
    run --size 1099511627776 --max 4 --shapes 3:4
    ((rc == 0)) && grep -q '^ *3 *4 ' "$tmp/out" || fail "--size 2^40: $rc $(head -1 "$tmp/err")"
    run --size 64K --max 2 # the suffixes cpl-sched and cpl-bench take
    ((rc == 0)) && grep -q 'k = 65536 bytes' "$tmp/out" || fail "--size 64K: $rc $(head -1 "$tmp/err")"
    # --shapes is checked before any output (the report came first)
    for sh in 0:3 2:3x 8:2 ,; do
      run --max 4 --shapes "$sh"
      ((rc == 2)) && grep -q -- 'shape' "$tmp/err" || fail "--shapes $sh: $rc $(head -1 "$tmp/err")"
      [[ -s $tmp/out ]] && fail "--shapes $sh printed $(wc -l < "$tmp/out") lines before the error"
    done
    run --shapes 4:4 --max 2 # --max given later still counts
    ((rc == 2)) && grep -q 'bad shape 4:4' "$tmp/err" || fail "--shapes 4:4 --max 2: $rc"
    ;;
  cpl-run | cpl-validate)
    run
    ((rc == 2)) && grep -q '^usage: ' "$tmp/err" || fail "no arguments: $rc $(head -1 "$tmp/err")"
    ;;
esac
((fails == 0)) && echo "$name: command-line conventions hold"
exit $((fails > 0))
