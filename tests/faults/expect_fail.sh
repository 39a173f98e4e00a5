#!/bin/sh
# Run a command that must fail, loudly and quickly, without leaving a
# process behind:
#   expect_fail.sh [-e REGEX]... [-t SECONDS] [-a 'SHELL CODE'] -- CMD ARGS...
# -e: the output must match this extended regular expression (repeatable)
# -t: the command must end within SECONDS (default 30); it is killed at
#     SECONDS + 30, and that is a failure too
# -a: shell code run in the background while CMD runs (a fault to inject;
#     it sees $SID, the session of the test's processes)
# The script runs in its own session, so every process the job started
# (mpiexec, hydra_pmi_proxy, ranks, cpl-exec) is found with pgrep -s
# afterwards: any left is reported, killed and fails the test.
if [ "$EXPECT_FAIL_SESSION" != 1 ]; then
  EXPECT_FAIL_SESSION=1 exec setsid "$0" "$@"
fi
SID=$(ps -o sid= -p $$ | tr -d ' ')
export SID
limit=30 action= n=0
while [ $# -gt 0 ]; do
  case $1 in
    -e) n=$((n + 1)); eval "re_$n=\$2"; shift 2 ;;
    -t) limit=$2; shift 2 ;;
    -a) action=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "expect_fail.sh: bad option $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp) || exit 2
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
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "expect_fail: FAILED: killed by the test's timeout"; fail=1; fi
if [ "$(echo "$elapsed > $limit" | bc)" = 1 ]; then
  echo "expect_fail: FAILED: took longer than ${limit} s"; fail=1
fi
i=1
while [ $i -le $n ]; do
  eval "re=\$re_$i"
  if ! grep -Eq -- "$re" "$out"; then
    echo "expect_fail: FAILED: no output line matches: $re"; fail=1
  fi
  i=$((i + 1))
done
rm -f "$out"
# Give the launcher a moment to reap, then look for survivors.
sleep 1
left=$(pgrep -s "$SID" | grep -vx -e $$ | tr '\n' ' ')
for p in $left; do
  if [ -r /proc/$p/cmdline ] && [ "$(ps -o ppid= -p $p | tr -d ' ')" != $$ ]; then
    echo "expect_fail: FAILED: process left behind: $(ps -o pid=,stat=,args= -p $p)"
    kill -9 $p 2>/dev/null
    fail=1
  fi
done
[ $fail -eq 0 ] && echo "expect_fail: ok"
exit $fail
