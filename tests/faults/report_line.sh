#!/bin/sh
# cpl-exec's report starts a line of its own after a program that left a
# partial line on stderr ("abc" without a newline), and adds no empty line
# where it can see stderr ends with one (a regular file).
#   report_line.sh CPL_EXEC
d=$(mktemp -d) || exit 2
trap 'rm -rf "$d"' EXIT
fail=0
check() { # name, program's stderr, expected first two lines
  CPL_COMPONENT=c "$1" sh -c "$3" 2>"$d/$2"
  l1=$(sed -n 1p "$d/$2") l2=$(sed -n 2p "$d/$2")
  case $l2 in
    "cpl-run: component \"c\""*) [ "$l1" = abc ] && return ;;
  esac
  echo "FAILED ($2): stderr was:"; cat "$d/$2"; fail=1
}
check "$1" partial 'printf abc >&2; exit 3'
check "$1" whole 'echo abc >&2; exit 3'
[ $fail = 0 ] && echo "report_line: ok"
exit $fail
