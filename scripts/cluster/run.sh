#!/usr/bin/env bash
# Run an MPI program on the emulated cluster: one rank per network namespace,
# hydra entering the namespaces through launch-exec.sh, under a timeout.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
source "$HERE/common.sh"

usage() {
  cat <<USAGE
usage: $(basename "$0") [options] -n N [--] PROG [ARGS...] [: -n M PROG2 [ARGS...] ...]
       $(basename "$0") [options] -- -n N PROG [ARGS...] [: -n M PROG2 ...]

Run PROG with N ranks, rank i in namespace ${CPL_NS_PREFIX}<i> of the testbed made by
setup.sh (so N must not exceed its node count). MPMD: further segments after a
lone ':' are passed to mpiexec unchanged and must carry their own -n; ranks of
all segments together are placed one per namespace, in order.

options:
  -n N            ranks of the first segment
  -t, --timeout S kill the run after S seconds (default \$CPL_RUN_TIMEOUT or 300);
                  exit status 124 then. MPI_Finalize can hang while UCX closes
                  TCP connections, so never run without one.
  --no-yield      preload the shim but do not yield (busy-poll, for A/B runs;
                  the finalize-hang guard stays on)
  --no-shim       do not preload the shim at all (ranks busy-poll, and MPI_Finalize
                  may hang until the timeout)
  --shim PATH     the shim library (default: \$CPL_YIELD_SHIM, else a built
                  libcpl_yield.so under $REPO/build*/scripts/, else it is
                  compiled into /tmp/cpl-cluster-shim/)
  --tuning FILE   Coupler's tuning file for the ranks (CPL_TUNING_FILE); default
                  \$CPL_TUNING_FILE, else the testbed's own, $CPL_STATE_DIR/tuning,
                  measured with cpl-bench --calibrate on all nodes the first
                  time it is needed (and again after setup.sh made a new testbed)
  --calibrate     measure the testbed's tuning file again before the run
  -v, --verbose   print the mpiexec command line
  -h, --help      this text

Environment given to every rank: UCX_TLS=tcp,self, UCX_PROTO_ENABLE=y,
UCX_RNDV_SCHEME=get_zcopy, CPL_TUNING_FILE (Coupler's cost model: alpha,
beta, per-message overhead as measured here; CPL_ALPHA, CPL_BETA,
CPL_OVERHEAD or CPL_CHUNK set in the caller's environment still win, as
everywhere), UCX_NET_DEVICES=<its veth>,
LD_PRELOAD=<shim>[:\$LD_PRELOAD], CPL_NODE_NS, CPL_NODE_ADDR. Extra mpiexec
options go in CPL_MPIEXEC_ARGS (word-split), e.g. CPL_MPIEXEC_ARGS="-genv FOO 1".
USAGE
}

nranks=""
tmo=${CPL_RUN_TIMEOUT:-300}
use_shim=1
shim=${CPL_YIELD_SHIM:-}
verbose=0
tuning=${CPL_TUNING_FILE:-}
recalibrate=0
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -n|-np) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; nranks=$2; shift 2 ;;
    -t|--timeout) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; tmo=$2; shift 2 ;;
    --no-shim) use_shim=0; shift ;;
    --no-yield) export CPL_YIELD_DISABLE=1; shift ;;
    --shim) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; shim=$2; shift 2 ;;
    --tuning) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; tuning=$2; shift 2 ;;
    --calibrate) recalibrate=1; shift ;;
    -v|--verbose) verbose=1; shift ;;
    --) shift; break ;;
    -*) echo "$(basename "$0"): unknown option $1" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { usage >&2; exit 2; }
[[ $tmo =~ ^[0-9]+$ ]] || cpl_die "timeout must be whole seconds (got '$tmo')"

# Build the mpiexec segments and count the ranks of each.
segs=()
if [[ -n $nranks ]]; then
  [[ $nranks =~ ^[0-9]+$ && $nranks -ge 1 ]] || cpl_die "-n needs a positive integer (got '$nranks')"
  segs=(-n "$nranks")
elif [[ $1 != -n && $1 != -np ]]; then
  cpl_die "give the number of ranks with -n N"
fi
segs+=("$@")
total=0
expect_n=1
for ((k = 0; k < ${#segs[@]}; k++)); do
  a=${segs[k]}
  if (( expect_n )); then
    if [[ $a == -n || $a == -np ]]; then
      c=${segs[k + 1]:-}
      [[ $c =~ ^[0-9]+$ ]] || cpl_die "bad rank count '$c' in MPMD segment"
      total=$((total + c)); k=$((k + 1)); expect_n=0; continue
    fi
    cpl_die "every MPMD segment must start with -n M (segment starting at '$a')"
  fi
  [[ $a == : ]] && expect_n=1
done
(( expect_n == 0 )) || cpl_die "empty MPMD segment after ':'"

cpl_need_root
cpl_require_testbed
(( total <= CPL_NNODES )) || cpl_die "$total ranks requested but the testbed has $CPL_NNODES nodes (one rank per node); run setup.sh with more"
command -v mpiexec >/dev/null 2>&1 || cpl_die "mpiexec not found (apt-get install mpich libmpich-dev)"
command -v timeout >/dev/null 2>&1 || cpl_die "timeout not found (coreutils)"

find_shim() {
  local c
  for c in "$REPO"/build/scripts/libcpl_yield.so "$REPO"/build*/scripts/libcpl_yield.so; do
    [[ -r $c ]] && { echo "$c"; return 0; }
  done
  local out=/tmp/cpl-cluster-shim/libcpl_yield.so
  if [[ ! -r $out || $HERE/../yield_shim.c -nt $out ]]; then
    mkdir -p "$(dirname "$out")"
    cpl_log "compiling the yield shim into $out (build target cpl_yield to avoid this)"
    cc -O2 -std=c11 -shared -fPIC -o "$out.tmp" "$HERE/../yield_shim.c" -ldl -lpthread >&2
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

preload=${LD_PRELOAD:-}
if (( use_shim )); then
  [[ -n $shim ]] || shim=$(find_shim)
  [[ -r $shim ]] || cpl_die "yield shim $shim not readable"
  shim=$(readlink -f "$shim")
  preload=$shim${preload:+:$preload}
fi

hostfile=$(mktemp /tmp/cpl-hosts.XXXXXX)
trap 'rm -f "$hostfile"' EXIT
cpl_state_nodes | head -n "$total" | awk '{ print $1 ":1" }' > "$hostfile"

# Coupler's cost model for this testbed (algorithm selection, stream cuts,
# broadcast block counts): a tuning file measured here by cpl-bench
# --calibrate, once per testbed, on all its nodes at once (pairs of nodes
# ping-pong and stream over the shaped links while the other pairs do the
# same, so the CPU load of a full job is in the numbers).
find_bench() {
  local c
  [[ -n ${CPL_BENCH:-} ]] && { echo "$CPL_BENCH"; return 0; }
  for c in "$REPO"/build/coupler/tools/cpl-bench "$REPO"/build*/coupler/tools/cpl-bench; do
    [[ -x $c ]] && { echo "$c"; return 0; }
  done
  command -v cpl-bench 2>/dev/null || return 1
}
if [[ -z $tuning && -z ${CPL_CLUSTER_CALIBRATING:-} ]]; then
  tuning=$CPL_STATE_DIR/tuning
  if (( recalibrate )) || [[ ! -s $tuning || $tuning -ot $CPL_STATE ]]; then
    bench=$(find_bench) || cpl_die "cpl-bench not found for the calibration (set CPL_BENCH, or build it)"
    cpl_log "calibrating Coupler's cost model on all $CPL_NNODES nodes into $tuning"
    CPL_CLUSTER_CALIBRATING=1 "$0" -t 600 -n "$CPL_NNODES" -- "$bench" --calibrate \
      --out "$tuning.new" --quiet >&2 || cpl_die "calibration failed (cpl-bench --calibrate)"
    mv "$tuning.new" "$tuning"
  fi
elif (( recalibrate )); then
  cpl_die "--calibrate measures the testbed's own file; do not combine it with --tuning or CPL_TUNING_FILE"
fi
[[ -z $tuning || -r $tuning ]] || cpl_die "tuning file $tuning not readable"
genv=(-genv UCX_TLS "${UCX_TLS:-tcp,self}" -genv UCX_PROTO_ENABLE "${UCX_PROTO_ENABLE:-y}"
      -genv UCX_RNDV_SCHEME "${UCX_RNDV_SCHEME:-get_zcopy}")
[[ -n $tuning ]] && genv+=(-genv CPL_TUNING_FILE "$(readlink -f "$tuning")")
for v in CPL_ALPHA CPL_BETA CPL_OVERHEAD CPL_CHUNK CPL_INTER_ROOT_MAX CPL_INTRA_ROOT_BYTES; do # the caller's win over the file
  [[ -n ${!v:-} ]] && genv+=(-genv "$v" "${!v}")
done
[[ -n $preload ]] && genv+=(-genv LD_PRELOAD "$preload")
# shellcheck disable=SC2206
extra=(${CPL_MPIEXEC_ARGS:-})
cmd=(mpiexec -f "$hostfile" -launcher ssh -launcher-exec "$HERE/launch-exec.sh"
     -iface "$CPL_BRIDGE" "${genv[@]}" "${extra[@]}" "${segs[@]}")
(( verbose )) && cpl_log "timeout $tmo ${cmd[*]}"

# mpiexec itself runs in the root namespace without the preload; the per-node
# UCX_NET_DEVICES comes from launch-exec.sh, so do not forward a global one.
set +e
env -u LD_PRELOAD -u UCX_NET_DEVICES -u CPL_YIELD_SHIM \
  timeout --kill-after=10 "$tmo" "${cmd[@]}"
rc=$?
set -e
if (( rc == 124 || rc == 137 )); then
  cpl_log "run timed out after ${tmo}s (exit $rc)"
fi
# Ranks orphaned by a timeout or a crash would keep ports and CPU: kill any
# process left in the namespaces this run used (they can only be ours).
for ns in $(awk -F: '{print $1}' "$hostfile"); do
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  if [[ -n $pids ]]; then
    cpl_log "killing leftover processes in $ns: ${pids//$'\n'/ }"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
  fi
done
exit "$rc"
