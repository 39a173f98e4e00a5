#!/usr/bin/env bash
# Remove exactly what setup.sh created, as recorded in its state file.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$HERE/common.sh"

usage() {
  cat <<USAGE
usage: $(basename "$0")

Delete the namespaces, veths and bridge that setup.sh recorded in
$CPL_STATE (override with CPL_STATE), in reverse order of creation, then the
state file. Objects that are already gone are skipped; nothing that is not
recorded there is touched. Also kills processes still running inside the
recorded namespaces (leftover MPI ranks) before deleting them.
USAGE
}
case ${1:-} in -h|--help) usage; exit 0 ;; "") ;; *) usage >&2; exit 2 ;; esac

cpl_need_root
if [[ ! -e $CPL_STATE ]]; then
  cpl_log "nothing to do: no state file $CPL_STATE"
  exit 0
fi

mapfile -t objs < <(awk '$1 == "obj" { print $2, $3 }' "$CPL_STATE")
rc=0
for ((k = ${#objs[@]} - 1; k >= 0; k--)); do
  read -r kind name <<<"${objs[k]}"
  case $kind in
    netns)
      if ip netns list | awk '{print $1}' | grep -qx "$name"; then
        # Leftover processes keep the namespace alive after "ip netns del".
        pids=$(ip netns pids "$name" 2>/dev/null || true)
        if [[ -n $pids ]]; then
          cpl_log "killing leftover processes in $name: ${pids//$'\n'/ }"
          # shellcheck disable=SC2086
          kill -KILL $pids 2>/dev/null || true
        fi
        ip netns del "$name" || { cpl_log "could not delete namespace $name"; rc=1; }
      fi ;;
    link|bridge)
      if ip link show "$name" >/dev/null 2>&1; then
        ip link del "$name" || { cpl_log "could not delete interface $name"; rc=1; }
      fi ;;
    *) cpl_log "unknown object '$kind $name' in state file, skipped"; rc=1 ;;
  esac
done
if (( rc == 0 )); then
  rm -f "$CPL_STATE"
  rmdir "$(dirname "$CPL_STATE")" 2>/dev/null || true
  cpl_log "testbed removed (${#objs[@]} objects)"
else
  cpl_log "some objects could not be removed; state kept in $CPL_STATE"
fi
exit "$rc"
