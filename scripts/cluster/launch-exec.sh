#!/usr/bin/env bash
# Hydra "-launcher ssh -launcher-exec" target: behaves like ssh, but "logs in"
# to a network namespace of the emulated cluster instead of a remote host.
#
# Hydra calls it as:   launch-exec.sh -x HOST '"/usr/bin/hydra_pmi_proxy"' --control-port ...
# i.e. ssh options, the host, then the remote command as words that ssh would
# join with spaces and hand to a shell (hydra quotes the proxy path itself).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$HERE/common.sh"

usage() {
  cat <<USAGE
usage: $(basename "$0") [ssh-options] HOST COMMAND...

Run COMMAND (joined by spaces and interpreted by /bin/sh, like ssh does) in
network namespace HOST of the emulated cluster, with the environment a rank
needs there:
  UCX_TLS=tcp,self          only TCP (any shared-memory transport bypasses the shaping)
  UCX_PROTO_ENABLE=y        UCX's new protocol selection
  UCX_RNDV_SCHEME=get_zcopy the receiver pulls rendezvous data; with the default
                            (put) two ranks sending each other a large message at
                            once take turns instead of using both directions
  UCX_NET_DEVICES=<veth>    the namespace's own veth
  LD_PRELOAD+=\$CPL_YIELD_SHIM  if CPL_YIELD_SHIM names the yield shim library
                            (or a colon list, e.g. the ASan runtime, then the shim)
Variables already set (e.g. by mpiexec -genv) win over UCX_TLS/UCX_PROTO_ENABLE
defaults here; hydra also forwards mpiexec's environment to the ranks.
Meant to be used by run.sh: mpiexec -launcher ssh -launcher-exec $0 ...
USAGE
}

# skip ssh-style options (hydra passes -x)
while [[ $# -gt 0 && $1 == -* ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;  # ssh options taking an argument
    *) shift ;;
  esac
done
[[ $# -ge 2 ]] || { usage >&2; exit 2; }
host=$1; shift

cpl_require_testbed
line=$(cpl_state_nodes | awk -v h="$host" '$1 == h || $2 == h { print; exit }')
[[ -n $line ]] || cpl_die "host '$host' is not a node of the testbed in $CPL_STATE"
read -r ns addr nif _hif <<<"$line"

env_args=(
  "UCX_TLS=${UCX_TLS:-tcp,self}"
  "UCX_PROTO_ENABLE=${UCX_PROTO_ENABLE:-y}"
  "UCX_RNDV_SCHEME=${UCX_RNDV_SCHEME:-get_zcopy}"
  "UCX_NET_DEVICES=$nif"
  "CPL_NODE_NS=$ns"
  "CPL_NODE_ADDR=$addr"
)
if [[ -n ${CPL_YIELD_SHIM:-} ]]; then
  # a colon list is allowed: a sanitized build puts the ASan runtime first
  IFS=: read -ra shim_libs <<<"$CPL_YIELD_SHIM"
  for lib in "${shim_libs[@]}"; do
    [[ -r $lib ]] || cpl_die "CPL_YIELD_SHIM: $lib is not readable"
  done
  env_args+=("LD_PRELOAD=$CPL_YIELD_SHIM${LD_PRELOAD:+:$LD_PRELOAD}")
fi

exec ip netns exec "$ns" env "${env_args[@]}" /bin/sh -c "$*"
