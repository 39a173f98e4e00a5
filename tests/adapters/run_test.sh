#!/bin/sh
# One end-to-end test of the built-in components (cases below; CMake
# generates each workflow as WORK/NAME.yaml):
#
#   run_test.sh NAME WORK TIMEOUT CPL_RUN REFGEN ODDGEN H5DIFF H5DUMP [SHIM]
#
# Output files go to WORK/NAME/. Sink files are checked against a reference
# that refgen writes with serial HDF5 from the same formulas the producer
# uses: values with h5diff, shapes, types and attributes with h5dump -A
# (h5diff does not compare empty datasets).
set -u
name=$1 work=$2 limit=$3 run=$4 refgen=$5 oddgen=$6 h5diff=$7 h5dump=$8
shim=${9:-}
out=$work/$name
rm -rf "$out" && mkdir -p "$out" || exit 1

fail() { echo "FAIL $name: $*" >&2; exit 1; }

# cpl-run under a timeout (it has none of its own); the yield shim lets
# oversubscribed busy-polling ranks give up the core.
launch() {
  if [ -n "$shim" ]; then
    timeout -k 5 "$limit" "$run" "$work/$name.yaml" -- -genv LD_PRELOAD "$shim"
  else
    timeout -k 5 "$limit" "$run" "$work/$name.yaml"
  fi
}

ref() { "$refgen" "$@" || fail "refgen $*"; }

# same REF OUT [MARK]: h5same.sh (beside this script).
same() { sh "$(dirname "$0")/h5same.sh" "$h5diff" "$h5dump" "$@" || fail "$2 differs from $1"; }

# expect_failure REGEX: the job must fail, and its output match REGEX.
expect_failure() {
  launch > "$out/log" 2>&1
  rc=$?
  cat "$out/log"
  [ "$rc" -ne 0 ] || fail "the job succeeded, expected a failure"
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "timed out instead of failing"
  grep -Eq "$1" "$out/log" || fail "no message matching: $1"
  echo "failed as expected"
}

# evict_counts LINK N: the consumer on LINK received R steps (its line
# "verified R steps (lossy)") and the stage's summary counts M missed by
# LINK (or none): R + M = N, the steps the stage took.
evict_counts() {
  r=$(sed -n 's/^consumer: verified \([0-9]*\) steps (lossy) after.*/\1/p' "$out/log")
  s=$(grep 'stage: steps in' "$out/log") || fail "no stage summary"
  m=$(echo "$s" | sed -n "s/.*; $1 missed \([0-9]*\).*/\1/p")
  [ -n "$r" ] || fail "the lossy consumer did not report"
  [ $((r + ${m:-0})) -eq "$2" ] ||
    fail "$1 received $r steps and missed ${m:-0}: not the $2 the stage took"
  echo "$1: received $r, missed ${m:-0} of $2"
}

case $name in
sink_1to3)
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  ref "$out/ref.h5" 1,3,1,3
  same "$out/ref.h5" "$out/out.h5"
  # CPL_VERBOSE=2: one line per step (rank 0 only), then the summary.
  [ "$(grep -c '^cpl-component\[writer\]: ' "$out/log")" -eq 4 ] &&
    grep -q '^cpl-component\[writer\]: sink: step 1 from sim.out->writer.in: ' "$out/log" &&
    grep -q '^cpl-component\[writer\]: sink: step 7 from sim.out->writer.in: ' "$out/log" &&
    grep -q '^cpl-component\[writer\]: sink: 3 steps, .* from 1 link written to "[^"]*/out.h5" in [0-9.]* s$' "$out/log" ||
    fail "not 3 step lines and a summary from the sink" ;;
sink_colon)
  rm -rf ufs: # the sink's working directory is this one
  launch || fail "job exit status $?"
  ref "$out/ref.h5" 5,2,0,1
  same "$out/ref.h5" "$out/run_12:00.h5"
  same "$out/ref.h5" "$out/new dir/out.h5"
  [ ! -e ufs: ] || fail "the prefix ufs: was made a directory" ;;
sink_dotdot)
  launch || fail "job exit status $?"
  ref "$out/ref.h5" 5,2,0,1
  same "$out/ref.h5" "$out/b/out.h5"
  [ ! -e "$out/a" ] || fail "directory a was made, only to be left by '..'" ;;
sink_rows)
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  ref "$out/ref.h5" 5,4,0,1
  same "$out/ref.h5" "$out/out.h5"
  # Every sink rank received each of the 4 steps, and less than the whole
  # step: its rows only (each rank took every step whole before).
  grep '"comp":"writer"' "$out/trace.json" | grep '"ev":"received"' > "$out/recv" || fail "no trace"
  [ "$(wc -l < "$out/recv")" -eq 12 ] || fail "not 3 ranks x 4 steps received"
  sed 's/.*"bytes":\([0-9]*\),"step_bytes":\([0-9]*\),.*/\1 \2/' "$out/recv" |
    awk '$1 >= $2 { print "a sink rank took " $1 " of " $2 " bytes"; bad = 1 } END { exit bad }' ||
    fail "a sink rank received a whole step, not only its rows" ;;
progress_last)
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  # Each side's lines: the last names step 59, and 1 + N per line adds to
  # 60. Taken out of the log with grep -o: the launcher may print the two
  # processes' lines run together.
  for side in 'sim\] sim\.out->cons\.in: step [0-9]+ sent' \
              'cons\] sim\.out->cons\.in: step [0-9]+ received'; do
    grep -oE "\[$side[^[]*" "$out/log" | sed 's/ *$//' > "$out/lines" || fail "no line: $side"
    last=$(tail -n 1 "$out/lines" | sed 's/.*: step \([0-9]*\) .*/\1/')
    [ "$last" = 59 ] || fail "the last progress line names step $last, not 59: $side"
    sum=$(sed -n 's/.*(+\([0-9]*\) steps)$/\1/p' "$out/lines" |
      awk -v n="$(wc -l < "$out/lines")" '{ s += $1 } END { print s + n }')
    [ "$sum" = 60 ] || fail "the progress lines count $sum steps, not 60: $side"
  done ;;
sink_allgather_in)
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  ref "$out/ref.h5" pA.out=5,4,0,1 pB.out=4,3,10,1
  same "$out/ref.h5" "$out/out.h5"
  [ "$(grep -c 'warning: input link pA\.out->writer\.in forces delivery: allgather, so each of the 3 sink ranks receives every step whole' "$out/log")" -eq 1 ] ||
    fail "not one warning about the forced allgather"
  ! grep -q 'warning: input link pB' "$out/log" || fail "a warning for the select link" ;;
sink_3to1)
  launch || fail "job exit status $?"
  ref "$out/ref.h5" 2,4,0,1
  same "$out/ref.h5" "$out/out.h5" ;;
stage_fanout)
  launch || fail "job exit status $?"
  ref "$out/ref.h5" 10,3,0,1
  same "$out/ref.h5" "$out/out.h5" ;;
sink_fanin)
  launch || fail "job exit status $?"
  ref "$out/ref.h5" pA.out=3,2,0,1 pB.out=4,3,10,1 pC.out=5,1,7,1
  same "$out/ref.h5" "$out/out.h5" ;;
sink_fanin_ports)
  launch || fail "job exit status $?"
  ref "$out/ref.h5" pA.out:in=3,2,0,1 pA.out:aux=3,2,0,1 pB.out=4,3,10,1
  same "$out/ref.h5" "$out/out.h5" ;;
sink_fanin_pace)
  launch || fail "job exit status $?"
  ref "$out/ref.h5" slow.out=6,3,0,1 fast.out=7,16,0,1
  same "$out/ref.h5" "$out/out.h5" ;;
sink_crash)
  # The job dies after the producer's 3rd step; depth 1 means steps 0 and
  # 1 were delivered. The file must hold m >= 2 complete steps.
  launch > "$out/log" 2>&1 && fail "the job did not abort"
  cat "$out/log"
  m=$("$h5dump" -n "$out/out.h5" | grep -Ec '^ *group +/step_[0-9]+$')
  [ "$m" -ge 2 ] || fail "only $m steps readable after the crash"
  echo "$m steps readable after the crash"
  ref "$out/ref.h5" "11,$m,0,1"
  same "$out/ref.h5" "$out/out.h5" -1 ;; # not finished
source_2to2)
  ref "$out/in.h5" 6,3,0,2
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  ! grep -q '^cpl-component' "$out/log" || fail "CPL_VERBOSE=0, but the source printed" ;;
source_flat_3to1)
  ref --flat "$out/in.h5" 7,1,5,1
  launch || fail "job exit status $?" ;;
roundtrip_4to2)
  ref "$out/in.h5" 8,3,2,5
  mkdir -p "$out/rt" # the sink's workdir: its file name is relative
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  same "$out/in.h5" "$out/rt/out.h5"
  # Default verbosity: one summary line from each built-in, nothing else.
  [ "$(grep -c '^cpl-component' "$out/log")" -eq 2 ] &&
    grep -q '^cpl-component\[src\]: source: 3 steps, [0-9.]* [KMG]*i*B* *[a-z]* *read from "[^"]*/in.h5" and sent on 1 port in [0-9.]* s$' "$out/log" &&
    grep -q '^cpl-component\[writer\]: sink: 3 steps, .* from 1 link written to "out.h5" (in [^)]*/rt) in [0-9.]* s$' "$out/log" ||
    fail "not one summary line from each built-in" ;;
source_odd)
  "$oddgen" in "$out/in.h5" || fail "oddgen in"
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  grep -q 'root: 1 objects beside the step groups not replayed: "stray"' "$out/log" &&
    grep -q 'step_9: 1 groups or named types not replayed: "sub"' "$out/log" ||
    fail "the skipped objects were not named in warnings"
  "$oddgen" expected "$out/expected.h5" || fail "oddgen expected"
  same "$out/expected.h5" "$out/out1.h5"
  same "$out/expected.h5" "$out/out2.h5" ;;
stage_1_3_2)
  # Decoupling: the stage's store (keep 4) takes the producer's
  # steps while the consumer sleeps 100 ms per step, so the producer is
  # done by the consumer's second step at the latest: >= 0.4 s early.
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  p=$(sed -n 's/^producer: .* after \([0-9.]*\) s$/\1/p' "$out/log")
  c=$(sed -n 's/^consumer: verified .* after \([0-9.]*\) s$/\1/p' "$out/log")
  [ -n "$p" ] && [ -n "$c" ] || fail "no timings in the output"
  awk -v p="$p" -v c="$c" 'BEGIN { exit !(p + 0.2 < c) }' ||
    fail "producer done after $p s, consumer after $c s: the stage did not decouple them" ;;
stage_late_reader)
  # The late consumer's requests (each step checked in full by it), the
  # refusal of a step never made, and the sink beside it complete.
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  grep -q 'consumer: refused: .*step 12 is not held by stage "relay": it holds steps 0\.\.9 (keep 16); the stream ended at step 9' "$out/log" ||
    fail "no refusal of step 12 naming the steps held"
  grep -Eq 'stage: steps in 10 \(0\.\.9\); served relay\.out->late\.in [0-9]+, relay\.out->writer\.in 10; keep 16 block, evicted 0' "$out/log" ||
    fail "no stage summary, or wrong counts"
  ref "$out/ref.h5" 12,10,0,1
  same "$out/ref.h5" "$out/out.h5" ;;
stage_evict)
  # Every step the stage took was either received by the slow consumer or
  # counted as missed by it; the peeking consumer's evicted step is refused.
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  evict_counts "relay.out->slow.in" 12
  grep -q 'consumer: refused: .*step 0 is not held by stage "relay": it holds steps 10\.\.11 (keep 2); older steps were evicted' "$out/log" ||
    fail "no refusal of step 0 naming the steps held" ;;
stage_block)
  # Nothing lost: the consumer checked all 10 steps in order.
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  grep -q '^consumer: verified 10 steps after' "$out/log" || fail "steps lost"
  grep -q 'stage: steps in 10 (0\.\.9); served relay\.out->check\.in 10; keep 1 block, evicted 0' "$out/log" ||
    fail "no stage summary, or wrong counts" ;;
stage_drain)
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  evict_counts "relay.out->slow.in" 12
  grep -q 'consumer: refused: .*step 5 is not held by stage "relay": it holds steps 23\.\.25 (keep 2); older steps were evicted; every step the stage received is in its drain file "[^"]*/stage_drain/sub/drain.h5" (group step_000005)' "$out/log" ||
    fail "no refusal of step 5 naming the drain file"
  ref "$out/ref.h5" 15,12,3,2
  same "$out/ref.h5" "$out/sub/drain.h5" ;;
stage_paces)
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  [ "$(grep -c '^consumer: verified 8 steps after' "$out/log")" -eq 3 ] ||
    fail "not every consumer verified its 8 steps"
  [ "$(grep -c '^consumer rank [01]: 8 steps, received' "$out/log")" -eq 2 ] ||
    fail "the selecting ranks did not report their bytes" ;;
stage_idle)
  # No false idle timeout: every consumer finished, the stage summary shows
  # what each link got.
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  grep -q '^consumer: verified 150 steps after' "$out/log" || fail "fast did not get all 150 steps"
  grep -q '^consumer: request next=4: step 4 verified' "$out/log" || fail "slow did not get step 4"
  grep -Eq 'stage: steps in 150 \(0\.\.149\); served relay\.out->gone\.in 1, relay\.out->fast\.in 150, relay\.out->slow\.in 5;' "$out/log" ||
    fail "no stage summary, or wrong counts" ;;
stage_gap)
  # Steps 1 and 4 were never made: said so, no drain group named for them.
  # Step 3 was received and evicted: the drain file has it.
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  grep -q 'consumer: refused: .*step 1 is not held by stage "relay": it holds steps 30\.\.33 (keep 2); the producer made no step 1$' "$out/log" ||
    fail "the refusal of step 1 does not say it was never made"
  grep -q 'consumer: refused: .*step 4 is not held by stage "relay": it holds steps 30\.\.33 (keep 2); the producer made no step 4$' "$out/log" ||
    fail "the refusal of step 4 does not say it was never made"
  grep -q 'consumer: refused: .*step 3 is not held by stage "relay": it holds steps 30\.\.33 (keep 2); older steps were evicted; every step the stage received is in its drain file "[^"]*/stage_gap/drain.h5" (group step_000003)' "$out/log" ||
    fail "the refusal of step 3 does not name its drain group"
  ! grep -q 'group step_00000[14]' "$out/log" || fail "a drain group named for a step never made" ;;
stage_evict_read)
  # evicted == missed by the one link, and each warning names the link.
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  evict_counts "relay.out->A.in" 8
  s=$(grep 'stage: steps in' "$out/log")
  m=$(echo "$s" | sed -n 's/.*; relay\.out->A\.in missed \([0-9]*\).*/\1/p')
  e=$(echo "$s" | sed -n 's/.*, evicted \([0-9]*\).*/\1/p')
  [ "${e:-x}" = "${m:-0}" ] || fail "evicted ${e:-?} steps but the only link missed ${m:-0}"
  ! grep 'evicted step' "$out/log" | grep -v 'not yet read by relay\.out->A\.in' ||
    fail "an eviction warning for a step the consumer had" ;;
stage_allgather_in)
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  grep -q '^consumer: verified 4 steps after' "$out/log" || fail "steps lost"
  [ "$(grep -c 'warning: input link sim\.out->relay\.in forces delivery: allgather, so each of the 2 stage ranks receives every step whole' "$out/log")" -eq 1 ] ||
    fail "not one warning about the forced allgather" ;;
stage_cpu)
  # The stage's busiest rank used less than half the elapsed time in CPU
  # (it was about all of it; now about 15 %).
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  cat "$out/log"
  grep -q '^consumer: verified 6 steps after' "$out/log" || fail "steps lost"
  s=$(grep 'stage: steps in' "$out/log") || fail "no stage summary"
  cpu=$(echo "$s" | sed -n 's/.*CPU \([0-9.]*\) s (largest of 2 ranks) in \([0-9.]*\) s$/\1 \2/p')
  [ -n "$cpu" ] || fail "no CPU time in the summary"
  echo "$cpu" | awk '{ exit !($2 >= 1.5 && $1 < 0.5 * $2) }' ||
    fail "stage CPU $cpu (CPU s, elapsed s): a rank busy-waits" ;;
consumer_cpu)
  # The whole job's CPU (every rank) stays below its elapsed time: idle
  # consumer ranks nap instead of spinning.
  t0=$(date +%s.%N)
  launch > "$out/log" 2>&1 || { cat "$out/log"; fail "job exit status"; }
  t1=$(date +%s.%N)
  cat "$out/log"
  grep -q '^consumer: verified 3 steps after' "$out/log" || fail "steps lost"
  times > "$out/times" # children's user and system time, on its last line
  cpu=$(tail -n 1 "$out/times" | awk '{ for (i = 1; i <= 2; i++) { sub(/s$/, "", $i); split($i, a, "m"); c += a[1] * 60 + a[2] } print c }')
  echo "$cpu $t0 $t1" | awk '{ printf "job CPU %.2f s in %.2f s\n", $1, $3 - $2; exit !($1 < $3 - $2) }' ||
    fail "the job's CPU exceeds its elapsed time: ranks busy-wait" ;;
stage_drain_bad)
  : > "$out/file"
  expect_failure 'cpl-component\[relay rank 0\]: stage "relay" .*drain file "[^"]*/stage_drain_bad/file/sub/d.h5": cannot create directory [^ ]*/file/sub: Not a directory' ;;
stage_future_timeout)
  expect_failure 'link relay\.out->A\.in, receiver 0, step 50: no step from the producer within 1 s: consumer "A" asked producer "relay" for step 50 and has had no answer'
  grep -q 'still waiting after 0\.5 s (half the 1 s timeout): link relay\.out->A\.in, consumer rank 0, step 50: waiting for the producer to send this step' "$out/log" &&
    grep -q 'receiver 1: rank 0 of this component failed to take the step 50 (its message says why)' "$out/log" ||
    fail "the watchdog or the other rank did not name step 50" ;;
stage_two_inputs) # refused by cpl-run's validation, before anything starts
  expect_failure 'stage "relay" needs exactly one input link .*but has 2 \(pA.out->relay.in, pB.out->relay.in2\)' ;;
verbose_bad)
  expect_failure 'cpl-component\[writer rank 0\]: CPL_VERBOSE="loud": expected 0 \(quiet\), 1' ;;
source_missing_file)
  expect_failure 'cpl-component\[src rank 0\]: hdf5 source "src": file "[^"]*/missing.h5": cannot open the file' ;;
*)
  fail "unknown test" ;;
esac
