#!/bin/bash
# A workflow across hosts: two network namespaces of its own act as hosts;
# cpl-run places the components with hosts:/ppn: and a --hostfile, hydra
# enters the namespaces through scripts/cluster/launch-exec.sh, and every
# rank checks its intercommunicators (mpi_groups ok) and records where it
# ran. Creates and removes its own namespaces, veths and bridge (unique
# names, never the emulated cluster's); exits 77 (skipped) with the reason
# where it cannot create them.
#   run_netns_hosts.sh CPL_RUN MPI_GROUPS LAUNCH_EXEC [YIELD_SHIM]
# YIELD_SHIM (scripts/cluster/yield_shim.c) goes to the ranks as
# launch-exec.sh preloads it: without its close guard, MPI_Finalize over
# UCX/TCP between namespaces now and then hangs (1 run in 6 here).
set -u
run=$1 groups=$2 launch_exec=$3
[[ -n ${4:-} ]] && export CPL_YIELD_SHIM=$4
skip() { echo "SKIPPED: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "not root (network namespaces need CAP_SYS_ADMIN)"
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"

tag=cpt$$                 # interface names stay under 15 characters
br=${tag}b ns0=${tag}x0 ns1=${tag}x1
subnet=""
for _ in 1 2 3 4 5 6 7 8; do
  s=10.79.$((RANDOM % 250 + 1))
  ip -4 addr show | grep -q "inet $s\." || { subnet=$s; break; }
done
[[ -n $subnet ]] || skip "found no free 10.79.x.0/24 subnet"
dir=$(mktemp -d /tmp/cpl-netns.XXXXXX)

cleanup() {
  for ns in $ns0 $ns1; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    # shellcheck disable=SC2086
    [[ -n $pids ]] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  ip link del "${tag}h0" 2>/dev/null
  ip link del "${tag}h1" 2>/dev/null
  ip link del "$br" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

if ! ip link add name "$br" type bridge 2>"$dir/err"; then
  skip "cannot create a bridge: $(cat "$dir/err")"
fi
ip addr add "$subnet.254/24" dev "$br" && ip link set "$br" up || exit 1
{
  echo "nodes 2"
  echo "bridge_name $br"
  echo "bridge_addr $subnet.254"
} > "$dir/state"
for i in 0 1; do
  ns=${tag}x$i
  ip netns add "$ns" 2>"$dir/err" || skip "cannot create a network namespace: $(cat "$dir/err")"
  ip link add "${tag}h$i" type veth peer name "${tag}n$i" &&
    ip link set "${tag}n$i" netns "$ns" &&
    ip link set "${tag}h$i" master "$br" && ip link set "${tag}h$i" up &&
    ip -n "$ns" link set lo up &&
    ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev "${tag}n$i" &&
    ip -n "$ns" link set "${tag}n$i" up || exit 1
  echo "node $ns $subnet.$((i + 1)) ${tag}n$i ${tag}h$i" >> "$dir/state"
done
for i in 0 1; do # carrier up on both ends before hydra connects
  for _ in $(seq 50); do
    ip -n "${tag}x$i" link show "${tag}n$i" | grep -q 'state UP' && break
    sleep 0.1
  done
done

# sim names its host; ana takes one host from the pool by ppn; viz asks for
# a count: ranks 0-1 on x1, 2 on x0, 3 on x1 (a host twice, not adjacent).
printf '%s\n%s\n' "$ns0" "$ns1" > "$dir/hosts"
record='echo "$CPL_COMPONENT $CPL_NODE_NS" >> "$0" && exec "$1" ok - -'
cat > "$dir/hosts.yaml" <<YAML
name: hosts
components:
  - {name: sim, nprocs: 2, hosts: [$ns1], command: [sh, -c, '$record', $dir/where, $groups], outputs: [out]}
  - {name: ana, nprocs: 1, ppn: 1, command: [sh, -c, '$record', $dir/where, $groups], inputs: [in]}
  - {name: viz, nprocs: 1, hosts: 1, command: [sh, -c, '$record', $dir/where, $groups], inputs: [in]}
links:
  - {from: sim.out, to: ana.in}
  - {from: sim.out, to: viz.in}
YAML
export CPL_STATE=$dir/state
"$run" --dry-run --hostfile "$dir/hosts" "$dir/hosts.yaml"
env -u LD_PRELOAD -u UCX_NET_DEVICES timeout -k 5 40 "$run" --hostfile "$dir/hosts" \
  "$dir/hosts.yaml" -- -launcher ssh -launcher-exec "$launch_exec" -iface "$br"
rc=$?
[[ $rc -eq 0 ]] || { echo "FAILED: the workflow exited with $rc"; exit 1; }
sort "$dir/where" > "$dir/got"
printf '%s\n' "ana $ns0" "sim $ns1" "sim $ns1" "viz $ns1" | sort > "$dir/want"
if ! diff "$dir/want" "$dir/got"; then
  echo "FAILED: ranks ran elsewhere than placed (diff: want, got)"
  exit 1
fi
echo "netns_hosts: 4 ranks on 2 hosts as placed, intercommunicators checked"
