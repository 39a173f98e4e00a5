#!/bin/bash
# Format Coupler's C sources with clang-format and the repository's
# .clang-format.
#   bash scripts/format.sh           format every tracked .c/.h file in place
#   bash scripts/format.sh --check   change nothing; list the files that are
#                                    not formatted and exit 1 if there are any
# Files: what git tracks under coupler/, adapters/, examples/, tests/ and
# scripts/ (fuzz seeds and other data are not C).
set -euo pipefail

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "format.sh: unknown option '$1' (--check or nothing)" >&2; exit 2 ;;
esac
# After --help, which reads "$0" as given (relative to where we started).
cd "$(dirname "$0")/.."

fmt=${CLANG_FORMAT:-clang-format}
if ! command -v "$fmt" >/dev/null; then
  echo "format.sh: $fmt not found (Debian: apt-get install clang-format)" >&2
  exit 2
fi

mapfile -t files < <(git ls-files -- 'coupler/*.[ch]' 'adapters/*.[ch]' \
  'examples/*.[ch]' 'tests/*.[ch]' 'scripts/*.[ch]')

if [ "$check" = 0 ]; then
  "$fmt" -i --style=file "${files[@]}"
  exit 0
fi

bad=0
for f in "${files[@]}"; do
  if ! "$fmt" --style=file "$f" | cmp -s - "$f"; then
    echo "$f"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "format.sh: $bad of ${#files[@]} files are not formatted (bash scripts/format.sh)" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted"
