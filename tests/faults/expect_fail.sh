#!/bin/sh
# Run a command that must fail, loudly and quickly, without leaving a
# process behind:
#   expect_fail.sh [-e REGEX]... [-t SECONDS] [-a 'SHELL CODE'] [-h 'H5DUMP FILE'] -- CMD ARGS...
# -e: the output must match this extended regular expression (repeatable)
# -t: the command must end within SECONDS (default 30); it is killed at
#     SECONDS + 30, and that is a failure too
# -a: shell code run in the background while CMD runs (a fault to inject,
#     see inject.sh; it writes the time of the fault to $FAULT_FILE): then
#     CMD must also end within 10 s of the fault
# -h: afterwards FILE (an HDF5 sink's output) must be readable by h5dump
#     with at least one complete step group (MIN_STEPS of them if set)
# Every process of the job inherits EXPECT_FAIL_TAG (hydra passes the
# environment on; its proxies start new sessions, so sessions cannot tell):
# any process still carrying the tag afterwards is reported, killed, and
# fails the test.
EXPECT_FAIL_TAG=$$.$(date +%s%N)
export EXPECT_FAIL_TAG
tagged() { # pids of processes with the tag, except this script's own
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = $$ ] && continue
    grep -qzx "EXPECT_FAIL_TAG=$EXPECT_FAIL_TAG" "$d/environ" 2>/dev/null && echo "$p"
  done
}
limit=30 action= h5check= n=0
while [ $# -gt 0 ]; do
  case $1 in
    -e) n=$((n + 1)); eval "re_$n=\$2"; shift 2 ;;
    -t) limit=$2; shift 2 ;;
    -a) action=$2; shift 2 ;;
    -h) h5check=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "expect_fail.sh: bad option $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp) || exit 2
FAULT_FILE=$(mktemp) || exit 2
export FAULT_FILE
t0=$(date +%s.%N)
if [ -n "$action" ]; then
  sh -c "$action" &
  apid=$!
fi
timeout -k 5 $((limit + 30)) "$@" >"$out" 2>&1
rc=$?
t1=$(date +%s.%N)
[ -n "$action" ] && wait $apid
cat "$out"
elapsed=$(echo "$t1 - $t0" | bc)
echo "expect_fail: exit status $rc after ${elapsed} s (limit ${limit} s)"
fail=0
if [ $rc -eq 0 ]; then echo "expect_fail: FAILED: the command succeeded"; fail=1; fi
# 137 is also a job's own status (srun's after it aborted a step, a rank
# SIGKILLed): the timeout's only once its time has come.
if { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ "$(echo "$elapsed >= $limit + 30" | bc)" = 1 ]; then
  echo "expect_fail: FAILED: killed by the test's timeout"; fail=1
fi
if [ "$(echo "$elapsed > $limit" | bc)" = 1 ]; then
  echo "expect_fail: FAILED: took longer than ${limit} s"; fail=1
fi
if [ -n "$action" ]; then
  if [ ! -s "$FAULT_FILE" ]; then
    echo "expect_fail: FAILED: the fault was never injected"; fail=1
  else
    after=$(echo "$t1 - $(cat "$FAULT_FILE")" | bc)
    echo "expect_fail: ended ${after} s after the fault (limit 10 s)"
    if [ "$(echo "$after > 10" | bc)" = 1 ]; then
      echo "expect_fail: FAILED: more than 10 s after the fault"; fail=1
    fi
  fi
fi
i=1
while [ $i -le $n ]; do
  eval "re=\$re_$i"
  if ! grep -Eq -- "$re" "$out"; then
    echo "expect_fail: FAILED: no output line matches: $re"; fail=1
  fi
  i=$((i + 1))
done
if [ -n "$h5check" ]; then
  set -- $h5check
  steps=$("$1" -n "$2" 2>&1 | grep -Ec '^ *group +/step_[0-9]+$')
  if "$1" "$2" >/dev/null 2>&1 && [ "$steps" -ge "${MIN_STEPS:-1}" ]; then
    echo "expect_fail: $2: $steps steps, the whole file readable by h5dump"
  else
    echo "expect_fail: FAILED: $2 is not readable by h5dump ($steps step groups listed)"; fail=1
  fi
fi
rm -f "$out" "$FAULT_FILE"
# Give the launcher a moment to reap, then look for survivors.
sleep 1
for p in $(tagged); do
  [ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" = $$ ] && continue # our subshell
  args=$(ps -o pid=,stat=,args= -p "$p" 2>/dev/null) || continue
  echo "expect_fail: FAILED: process left behind: $args"
  kill -9 "$p" 2>/dev/null
  fail=1
done
[ $fail -eq 0 ] && echo "expect_fail: ok"
exit $fail
