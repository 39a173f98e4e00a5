#!/bin/sh
# h5same.sh H5DIFF H5DUMP REF OUT [MARK]
#
# OUT, written by an HDF5 sink (or a stage's drain), holds what REF holds:
# the same values (h5diff), shapes, types and attributes (h5dump -A; h5diff
# does not compare empty datasets), and its sink marked it finished with
# the steps it holds (root attribute coupler_steps; or MARK, e.g. -1 for a
# file a failure cut short), the one root attribute REF lacks.
set -u
h5diff=$1 h5dump=$2 ref=$3 out=$4 mark=${5:-}
fail() { echo "h5same: FAILED: $*" >&2; exit 1; }
[ -f "$out" ] || fail "$out was not written"
"$h5diff" -r --exclude-attribute / "$ref" "$out" || fail "h5diff $ref $out"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$h5dump" -A "$ref" | sed 1d > "$tmp/ref.dump" || fail "h5dump $ref"
"$h5dump" -A "$out" | sed 1d | sed '/^   ATTRIBUTE "coupler_steps" {$/,/^   }$/d' > "$tmp/out.dump" ||
  fail "h5dump $out"
diff -u "$tmp/ref.dump" "$tmp/out.dump" || fail "h5dump -A of $ref and $out differ"
[ -n "$mark" ] || mark=$("$h5dump" -n "$out" | grep -Ec '^ *group +/(.*/)?step_[0-9]+$')
got=$("$h5dump" -a /coupler_steps "$out" | sed -n 's/^ *(0): *\(-*[0-9]*\)$/\1/p')
[ "$got" = "$mark" ] || fail "$out: coupler_steps is '$got', not $mark"
echo "$out: same as $ref, coupler_steps $mark"
