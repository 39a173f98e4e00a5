#!/bin/sh
# The workflow README documents what the parser accepts: every top-level
# key has a row, and the inter/intra/delivery rows list every value.
# The lists come from cpl-validate's own messages, so a new key or
# algorithm without a README row fails here.
# usage: check_readme_keys.sh CPL_VALIDATE README.md
set -u
validate=$1 readme=$2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/k.yaml" <<'YAML'
name: w
zzzzzzzz: 1
components:
  - {name: a, command: x, outputs: [o]}
  - {name: b, command: x, inputs: [i]}
links:
  - {from: a.o, to: b.i, inter: zzzzzzzz, intra: zzzzzzzz, delivery: zzzzzzzz}
YAML
out=$("$validate" "$tmp/k.yaml" 2>&1)
list() { # the names in "(PREFIX a, b, c)" of the message about $1
  printf '%s\n' "$out" | grep "$1" | sed -n "s/.*($2\([^)]*\)).*/\1/p" | tr -d ' ' | tr ',' ' '
}
fail=0
check() { # key, values: the README row of `key` names every value
  name=$1
  row=$(grep "^| \`$name\` |" "$readme" | head -n 1)
  [ -n "$row" ] || { echo "README: no row for key $name"; fail=1; return; }
  shift
  for v in "$@"; do
    case $row in *"\`$v\`"*) ;; *) echo "README: the row of $name does not list \`$v\`"; fail=1 ;; esac
  done
}
top=$(list 'in workflow' 'known keys: ')
[ -n "$top" ] || { echo "no key list in: $out"; exit 1; }
for key in $top; do check "$key"; done
for key in inter intra delivery; do
  vals=$(list "unknown $key" 'one of: ')
  [ -n "$vals" ] || { echo "no $key list in: $out"; exit 1; }
  check $key $vals
done
[ $fail = 0 ] && echo "README rows cover: $top; inter, intra, delivery values"
exit $fail
