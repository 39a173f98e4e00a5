#!/bin/sh
# Fault injection for expect_fail.sh -a (finds the job's processes by
# the EXPECT_FAIL_TAG they inherit):
#   inject.sh kill|stop COMPONENT INDEX DELAY [SECONDS]
#   inject.sh signal:SIG - INDEX DELAY
#   inject.sh group:SIG - INDEX DELAY
#   inject.sh both:SIG COMPONENT INDEX DELAY
# Waits for the INDEX-th process (0-based, by pid) of COMPONENT, then
# DELAY seconds, then kills it (SIGKILL) or stops it for SECONDS
# (SIGSTOP, then SIGCONT). signal:SIG sends SIG to the INDEX-th job
# process running PROGRAM instead (the launcher: Ctrl-C is signal:INT);
# group:SIG to that process's whole process group, as a terminal's
# Ctrl-C or `kill -INT -PGID` reaches every process of a shell's job.
# both:SIG sends SIG to the INDEX-th process of COMPONENT, then 50 ms
# later to its parent (its cpl-exec), as srun signals each process of a
# step in turn.
# Writes the time of the fault to $FAULT_FILE.
# Optional WAIT_FILE: see below. With stop, prints the peak RSS (VmHWM) of every process of the job 2 s
# into the stop. PROGRAM: the command name of the job's processes.
what=$1 comp=$2 index=$3 delay=$4 secs=${5:-0}
job_pids() { # processes of the job running PROGRAM
  for p in $(pgrep -x "$PROGRAM"); do
    grep -qzx "EXPECT_FAIL_TAG=$EXPECT_FAIL_TAG" "/proc/$p/environ" 2>/dev/null && echo "$p"
  done
}
find_pid() {
  case $what in signal:* | group:*) job_pids | sort -n | sed -n "$((index + 1))p"; return ;; esac
  for p in $(job_pids); do
    grep -qzx "CPL_COMPONENT=$comp" "/proc/$p/environ" 2>/dev/null && echo "$p"
  done | sort -n | sed -n "$((index + 1))p"
}
i=0
while [ $i -lt 300 ]; do
  pid=$(find_pid)
  [ -n "$pid" ] && break
  sleep 0.1; i=$((i + 1))
done
[ -n "$pid" ] || { echo "inject: no process $index of $comp"; exit 1; }
# WAIT_FILE (the sink's file): wait until this run has created it, i.e.
# every component is past cpl_init and steps flow, however loaded the
# machine.
i=0
while [ -n "${WAIT_FILE:-}" ] && [ $i -lt 600 ] &&
      [ -z "$(find "$WAIT_FILE" -newer "$FAULT_FILE" 2>/dev/null)" ]; do
  sleep 0.1; i=$((i + 1))
done
sleep "$delay"
date +%s.%N >"$FAULT_FILE"
case $what in
  kill) echo "inject: SIGKILL to $comp #$index (pid $pid)"; kill -9 "$pid" ;;
  stop)
    echo "inject: SIGSTOP to $comp #$index (pid $pid) for $secs s"
    kill -STOP "$pid"; sleep 2
    for p in $(job_pids); do
      echo "inject: peak RSS of pid $p ($(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep CPL_COMPONENT=)): $(grep VmHWM "/proc/$p/status" 2>/dev/null | tr -s '\t ' ' ')"
    done
    sleep $((secs - 2)); kill -CONT "$pid" 2>/dev/null ;;
  signal:*) echo "inject: SIG${what#signal:} to $PROGRAM #$index (pid $pid)"; kill -"${what#signal:}" "$pid" ;;
  both:*)
    parent=$(ps -o ppid= -p "$pid" | tr -d ' ')
    echo "inject: SIG${what#both:} to $comp #$index (pid $pid), then to its parent (pid $parent)"
    kill -"${what#both:}" "$pid"; sleep 0.05; kill -"${what#both:}" "$parent" ;;
  group:*)
    pgid=$(ps -o pgid= -p "$pid" | tr -d ' ')
    echo "inject: SIG${what#group:} to the process group $pgid of $PROGRAM #$index (pid $pid)"
    kill -"${what#group:}" -"$pgid" ;;
esac
exit 0
