#!/usr/bin/env bash
# The main example, run by `bash scripts/setup.sh` after the build.
# Until the simulation-to-analysis workflow lands, it shows the engine: a
# verified ring schedule, then a short side-by-side benchmark of the
# inter-group algorithms on 4 local ranks (2 senders, 2 receivers).
# On one machine the ranks share cores, so the times show scheduling more
# than communication; scripts/cluster/ gives the faithful testbed.
set -euo pipefail
build=${1:-build}
tools=$build/coupler/tools
shim=$build/scripts/libcpl_yield.so

echo "== Kang ring schedule for 4 senders and 6 receivers (paper's Figure 2): 7 steps"
"$tools/cpl-sched" ring 4 6 --check | awk '{ s[$1] = s[$1] sprintf(" %d->%d:m%d", $2, $3, $4) }
  END { for (i = 0; i in s; i++) printf "step %d:%s\n", i, s[i] }'

echo
echo "== inter-group allgather, 2 senders -> 2 receivers, every byte verified"
pre=()
[[ -f $shim ]] && pre=(-genv LD_PRELOAD "$(realpath "$shim")")
timeout 300 mpiexec "${pre[@]}" -n 4 "$tools/cpl-bench" --inter fc,ring,root,native \
  --shape 2:2 --sizes 4K,256K --reps 7 --baseline native --quiet
