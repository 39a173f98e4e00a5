# shellcheck shell=bash
# Shared settings for the Coupler emulated cluster scripts. Sourced, not run.
# Every name can be overridden from the environment; setup.sh records the
# values it used in the state file, and the other scripts read them back.

CPL_BRIDGE=${CPL_BRIDGE:-cplbr0}          # Linux bridge in the root namespace
CPL_NS_PREFIX=${CPL_NS_PREFIX:-cpl}       # namespaces: cpl0 .. cpl<N-1>
CPL_SUBNET=${CPL_SUBNET:-10.77.0}         # /24 used only on the bridge + namespaces
CPL_STATE_DIR=${CPL_STATE_DIR:-/run/cpl-cluster}
CPL_STATE=${CPL_STATE:-$CPL_STATE_DIR/state}

cpl_die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }
cpl_log() { echo "$(basename "$0"): $*" >&2; }

cpl_need_root() {
  [[ $(id -u) -eq 0 ]] || cpl_die "must run as root (network namespaces, bridge, tc)"
}

# cpl_state_get KEY -> first value recorded for KEY ("KEY value..." lines)
cpl_state_get() {
  [[ -r $CPL_STATE ]] || return 1
  awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$CPL_STATE"
}

# cpl_state_nodes -> lines "ns addr ns_if host_if" for every node, in rank order
cpl_state_nodes() {
  [[ -r $CPL_STATE ]] || return 1
  awk '$1 == "node" { print $2, $3, $4, $5 }' "$CPL_STATE"
}

cpl_require_testbed() {
  [[ -r $CPL_STATE ]] || cpl_die "no testbed (state file $CPL_STATE missing): run scripts/cluster/setup.sh N first"
  CPL_BRIDGE=$(cpl_state_get bridge_name)
  CPL_NNODES=$(cpl_state_get nodes)
  export CPL_BRIDGE_ADDR
  CPL_BRIDGE_ADDR=$(cpl_state_get bridge_addr)
  [[ -n $CPL_BRIDGE && -n $CPL_NNODES ]] || cpl_die "state file $CPL_STATE is incomplete"
}
