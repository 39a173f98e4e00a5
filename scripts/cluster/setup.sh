#!/usr/bin/env bash
# Create the Coupler emulated cluster: N network namespaces, one veth each,
# all attached to one Linux bridge, every link shaped in both directions with
# tc tbf. See scripts/cluster/README.md.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$HERE/common.sh"

usage() {
  cat <<USAGE
usage: $(basename "$0") [--force] N [RATE]

Create an emulated cluster of N nodes (1 <= N <= 253):
  namespaces  ${CPL_NS_PREFIX}0 .. ${CPL_NS_PREFIX}<N-1>, address $CPL_SUBNET.<i+1>/24 on veth ${CPL_NS_PREFIX}n<i>
  bridge      $CPL_BRIDGE (root namespace), address $CPL_SUBNET.254/24 (hydra control only)
  shaping     tc tbf RATE on both ends of every veth (default 400mbit = 50 MB/s)

  --force     if a testbed recorded in $CPL_STATE exists, tear it down first
              (default: refuse)

Environment: CPL_BRIDGE, CPL_NS_PREFIX, CPL_SUBNET (first three octets),
  CPL_BURST (tbf burst, default 24kb; must exceed CPL_GSO_MAX),
  CPL_GSO_MAX (veth gso_max_size, default 16384), CPL_TBF_LATENCY (default 20ms),
  CPL_MTU (default 1500), CPL_STATE (state file, default $CPL_STATE).
Undo with teardown.sh.
USAGE
}

force=0
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --force) force=1; shift ;;
    --) shift; break ;;
    -*) usage >&2; exit 2 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 && $# -le 2 ]] || { usage >&2; exit 2; }
N=$1
RATE=${2:-400mbit}
BURST=${CPL_BURST:-24kb}
GSO_MAX=${CPL_GSO_MAX:-16384}
TBF_LATENCY=${CPL_TBF_LATENCY:-20ms}
MTU=${CPL_MTU:-1500}
if ! [[ $N =~ ^[0-9]+$ ]] || (( N < 1 || N > 253 )); then cpl_die "N must be an integer in 1..253 (got '$N')"; fi
[[ $RATE =~ ^[0-9.]+[kmgt]?(bit|bps)$ ]] || cpl_die "RATE must look like 400mbit or 50mbps (got '$RATE')"
[[ $CPL_SUBNET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || cpl_die "CPL_SUBNET must be three octets, e.g. 10.77.0"

cpl_need_root

# --- requirements ---------------------------------------------------------
need_pkgs=()
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
command -v tc >/dev/null 2>&1 || need_pkgs+=(iproute2)
command -v timeout >/dev/null 2>&1 || need_pkgs+=(coreutils)
if (( ${#need_pkgs[@]} )); then
  command -v apt-get >/dev/null 2>&1 || cpl_die "missing ${need_pkgs[*]} and no apt-get to install them"
  cpl_log "installing ${need_pkgs[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
tc qdisc help 2>&1 | grep -q . || cpl_die "tc does not work"

# --- leftovers ------------------------------------------------------------
if [[ -e $CPL_STATE ]]; then
  if (( force )); then
    cpl_log "existing testbed found in $CPL_STATE, tearing it down (--force)"
    "$HERE/teardown.sh"
  else
    cpl_die "a testbed already exists (state $CPL_STATE, $(cpl_state_get nodes) nodes); run teardown.sh first or use --force"
  fi
fi
# Refuse to touch objects we did not create (no state file records them).
ip link show "$CPL_BRIDGE" >/dev/null 2>&1 && cpl_die "interface $CPL_BRIDGE exists but is not recorded in $CPL_STATE; remove it by hand or set CPL_BRIDGE"
for ((i = 0; i < N; i++)); do
  ns=$CPL_NS_PREFIX$i
  ip netns list | awk '{print $1}' | grep -qx "$ns" && cpl_die "namespace $ns exists but is not recorded in $CPL_STATE; remove it by hand (ip netns del $ns) or set CPL_NS_PREFIX"
  for l in "${CPL_NS_PREFIX}h$i" "${CPL_NS_PREFIX}n$i"; do
    ip link show "$l" >/dev/null 2>&1 && cpl_die "interface $l exists but is not recorded in $CPL_STATE"
  done
done
if ip -4 addr show | grep -q "inet $CPL_SUBNET\."; then
  cpl_die "subnet $CPL_SUBNET.0/24 is already in use in the root namespace"
fi

# --- create, recording every object as soon as it exists -------------------
mkdir -p "$(dirname "$CPL_STATE")"
{
  echo "# Coupler emulated cluster, created $(date -Is) by $0"
  echo "nodes $N"
  echo "rate $RATE"
  echo "burst $BURST"
  echo "gso_max_size $GSO_MAX"
  echo "bridge_name $CPL_BRIDGE"
  echo "bridge_addr $CPL_SUBNET.254"
  echo "subnet $CPL_SUBNET.0/24"
} > "$CPL_STATE"
record() { echo "$*" >> "$CPL_STATE"; }

on_error() {
  local rc=$?
  trap - ERR
  cpl_log "setup failed (exit $rc); removing what was created"
  "$HERE/teardown.sh" || true
  exit "$rc"
}
trap on_error ERR

# Disable IPv6 on an interface (no link-local chatter through the shaper).
no_ipv6() { # [netns] ifname
  local f
  if [[ $# -eq 2 ]]; then
    ip netns exec "$1" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$2/disable_ipv6" 2>/dev/null || true
  else
    f=/proc/sys/net/ipv6/conf/$1/disable_ipv6
    if [[ -w $f ]]; then echo 1 > "$f"; fi
  fi
}


ip link add name "$CPL_BRIDGE" type bridge
record obj bridge "$CPL_BRIDGE"
no_ipv6 "$CPL_BRIDGE"
ip link set dev "$CPL_BRIDGE" mtu "$MTU" 2>/dev/null || true
ip addr add "$CPL_SUBNET.254/24" dev "$CPL_BRIDGE"
ip link set dev "$CPL_BRIDGE" up

for ((i = 0; i < N; i++)); do
  ns=$CPL_NS_PREFIX$i
  hif=${CPL_NS_PREFIX}h$i      # bridge side, root namespace
  nif=${CPL_NS_PREFIX}n$i      # namespace side
  addr=$CPL_SUBNET.$((i + 1))

  ip netns add "$ns"
  record obj netns "$ns"
  ip link add name "$hif" mtu "$MTU" type veth peer name "$nif" mtu "$MTU"
  record obj link "$hif"
  ip link set dev "$nif" netns "$ns"

  # bridge side: the node's receive direction (switch -> node)
  no_ipv6 "$hif"
  ip link set dev "$hif" gso_max_size "$GSO_MAX"
  ip link set dev "$hif" master "$CPL_BRIDGE"
  tc qdisc replace dev "$hif" root tbf rate "$RATE" burst "$BURST" latency "$TBF_LATENCY"
  ip link set dev "$hif" up

  # namespace side: the node's send direction (node -> switch)
  ip -n "$ns" link set dev lo up
  # no slow start after idle: the alpha-beta model has no TCP warm-up per message
  ip netns exec "$ns" sh -c "echo 0 > /proc/sys/net/ipv4/tcp_slow_start_after_idle"
  no_ipv6 "$ns" all
  no_ipv6 "$ns" default
  no_ipv6 "$ns" "$nif"
  ip -n "$ns" link set dev "$nif" gso_max_size "$GSO_MAX"
  ip -n "$ns" addr add "$addr/24" dev "$nif"
  ip netns exec "$ns" tc qdisc replace dev "$nif" root tbf rate "$RATE" burst "$BURST" latency "$TBF_LATENCY"
  ip -n "$ns" link set dev "$nif" up

  record node "$ns" "$addr" "$nif" "$hif"
done
trap - ERR

# Wait until every namespace can reach the bridge address (carrier + ARP).
for ((i = 0; i < N; i++)); do
  ns=$CPL_NS_PREFIX$i
  ok=0
  for _ in $(seq 50); do
    if ip -n "$ns" link show "${CPL_NS_PREFIX}n$i" | grep -q 'state UP'; then ok=1; break; fi
    sleep 0.1
  done
  (( ok )) || cpl_log "warning: ${CPL_NS_PREFIX}n$i in $ns is not UP yet"
done

if [[ -r /proc/sys/net/bridge/bridge-nf-call-iptables ]] &&
   [[ $(cat /proc/sys/net/bridge/bridge-nf-call-iptables) == 1 ]] &&
   command -v iptables >/dev/null 2>&1 &&
   iptables -S FORWARD 2>/dev/null | grep -q -- '-P FORWARD DROP'; then
  cpl_log "warning: bridged traffic passes iptables (bridge-nf-call-iptables=1) and FORWARD policy is DROP;"
  cpl_log "         nodes may not reach each other (see README, pitfalls)"
fi

cpl_log "testbed up: $N nodes ${CPL_NS_PREFIX}0..${CPL_NS_PREFIX}$((N - 1)) on $CPL_BRIDGE ($CPL_SUBNET.0/24), $RATE per link and direction"
cpl_log "state recorded in $CPL_STATE"
