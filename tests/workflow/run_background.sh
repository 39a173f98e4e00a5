#!/bin/sh
# A process that starts a program in the background before cpl_init and
# then ends: the background program holds cpl-exec's pipe (and hydra's
# descriptors, so the job lasts as long as it does). cpl-exec must still
# end with its program, not spin on the pipe until the sleeper is gone.
#   run_background.sh CPL_RUN WORKFLOW PIDFILE
run=$1 wf=$2 pidfile=$3
rm -f "$pidfile"
RUN_BACKGROUND_TAG=$$.$(date +%s%N)
export RUN_BACKGROUND_TAG
tagged() { # pids of the job's processes running $1
  for p in $(pgrep -x "$1"); do
    grep -qzx "RUN_BACKGROUND_TAG=$RUN_BACKGROUND_TAG" "/proc/$p/environ" 2>/dev/null && echo "$p"
  done
}
timeout -k 5 60 "$run" "$wf" &
job=$!
i=0 # the program has ended once its pid file is there and it is gone
while [ $i -lt 300 ] && { [ ! -s "$pidfile" ] || [ -n "$(tagged mpi_groups)" ]; }; do
  sleep 0.1; i=$((i + 1))
done
sleep 2
fail=0
for p in $(tagged cpl-exec); do
  state=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
  ticks=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f12-13 | tr ' ' +)
  echo "cpl-exec pid $p: state $state, CPU ticks $(($ticks))"
  [ "$state" = Z ] || { echo "FAILED: cpl-exec outlives its program (state $state)"; fail=1; }
done
[ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
wait $job
rc=$?
[ $rc -eq 0 ] || { echo "FAILED: the workflow exited with $rc"; fail=1; }
[ $fail -eq 0 ] && echo "run_background: ok"
exit $fail
