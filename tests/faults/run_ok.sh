#!/bin/sh
# Run a workflow that must succeed under a hard limit, in a fresh scratch
# directory, then optionally check an HDF5 sink's file:
#   run_ok.sh -t SECONDS -d DIR [-h 'H5DUMP FILE STEPS'] [-e REGEX]... -- CMD ARGS...
# -d: DIR is emptied first (programs leave their marks there)
# -h: FILE must be readable by h5dump and hold exactly STEPS step groups
# -e: the output must match this extended regular expression (repeatable)
limit=60 dir= h5check= n=0
while [ $# -gt 0 ]; do
  case $1 in
    -t) limit=$2; shift 2 ;;
    -d) dir=$2; shift 2 ;;
    -h) h5check=$2; shift 2 ;;
    -e) n=$((n + 1)); eval "re_$n=\$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "run_ok.sh: bad option $1" >&2; exit 2 ;;
  esac
done
[ -n "$dir" ] && { rm -rf "$dir" && mkdir -p "$dir" || exit 2; }
out=$(mktemp) || exit 2
timeout -k 5 "$limit" "$@" >"$out" 2>&1
rc=$?
cat "$out"
fail=0
[ $rc -eq 0 ] || { echo "run_ok: FAILED: exit status $rc"; fail=1; }
i=1
while [ $i -le $n ]; do
  eval "re=\$re_$i"
  grep -Eq -- "$re" "$out" || { echo "run_ok: FAILED: no output line matches: $re"; fail=1; }
  i=$((i + 1))
done
rm -f "$out"
if [ -n "$h5check" ]; then
  set -- $h5check
  steps=$("$1" -n "$2" 2>&1 | grep -Ec '^ *group +/step_[0-9]+$')
  if "$1" "$2" >/dev/null 2>&1 && [ "$steps" -eq "$3" ]; then
    echo "run_ok: $2: all $steps steps, readable by h5dump"
  else
    echo "run_ok: FAILED: $2 holds $steps step groups, not $3 (or h5dump cannot read it)"; fail=1
  fi
fi
[ $fail -eq 0 ] && echo "run_ok: ok"
exit $fail
