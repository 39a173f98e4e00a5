#!/usr/bin/env bash
# cpl-bench --calibrate on 2 ranks writes a tuning file that the library's
# parser reads (cpl-sched shows its values as coming from the file); the
# environment still wins; with 4 ranks it measures the small-block switch
# points (inter_root_max, intra_root_bytes); a broken file is refused,
# naming file:line.
# Timings are not checked.
# usage: check_calibrate.sh MPIEXEC SHIM CPL_BENCH CPL_SCHED
set -uo pipefail
mpiexec=$1 shim=$2 bench=$3 sched=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
pre=()
[[ -n $shim && -r $shim ]] && pre=(-genv LD_PRELOAD "$shim")
unset CPL_ALPHA CPL_BETA CPL_OVERHEAD CPL_CHUNK CPL_INTER_ROOT_MAX CPL_INTRA_ROOT_BYTES CPL_TUNING_FILE
export XDG_CONFIG_HOME=$tmp/xdg

# 1. calibrate into the default path ($XDG_CONFIG_HOME/coupler/tuning)
timeout -k 5 240 "$mpiexec" "${pre[@]}" -n 2 "$bench" --calibrate --reps 3 \
  --sizes 1,4K,64K,256K --quiet > "$tmp/out" 2> "$tmp/err"
rc=$?
((rc == 0)) || fail "calibrate exited $rc: $(cat "$tmp/err")"
file=$tmp/xdg/coupler/tuning
[[ -s $file ]] || fail "no tuning file at $file"
grep -q "ping-pong fit: .* (R^2 " "$tmp/out" || fail "no ping-pong fit quality: $(cat "$tmp/out")"
grep -q "^alpha: " "$tmp/out" || fail "does not say where alpha comes from"
# the shift column: every size's round took a positive time
awk '$1 ~ /^[0-9]+$/ && NF == 6 { n++; if ($2 <= 0) bad++ } END { exit !(n == 4 && !bad) }' \
  "$tmp/out" || fail "no shift round per size: $(cat "$tmp/out")"
grep -q "stream fit: overhead .* (R^2 " "$tmp/out" || fail "no stream fit quality"
grep -q "^wrote $file" "$tmp/out" || fail "does not say where it wrote"
grep -Eq '^alpha = [0-9.e+-]+ ' "$file" && grep -Eq '^beta = [0-9.e+-]+ ' "$file" ||
  fail "file lacks alpha or beta: $(cat "$file")"
grep -q "^inter_root_max: not measured (fewer than 4 ranks" "$tmp/out" &&
  grep -q "^intra_root_bytes: not measured (fewer than 3 ranks" "$tmp/out" ||
  fail "2 ranks: the switch points not said to be unmeasured: $(cat "$tmp/out")"
grep -q "_root_max" "$file" && fail "2 ranks: a switch point written: $(cat "$file")"

# 2. the library reads it (default path, then named); the environment wins
"$sched" fc 2 6 --size 64K --explain > "$tmp/x" 2>&1 || fail "cpl-sched with the file: $(cat "$tmp/x")"
grep -q "alpha .* (file), beta .* (file" "$tmp/x" || fail "values not from the file: $(head -3 "$tmp/x")"
grep -q "# tuning file: $file" "$tmp/x" || fail "file not named"
CPL_TUNING_FILE=$file CPL_ALPHA=3e-3 "$sched" fc 2 6 --size 64K --explain > "$tmp/x" 2>&1
grep -q "alpha 0.003 s (CPL_ALPHA), beta .* (file" "$tmp/x" || fail "CPL_ALPHA does not win: $(head -2 "$tmp/x")"

# 3. --out - prints, writes nothing
timeout -k 5 240 "$mpiexec" "${pre[@]}" -n 2 "$bench" --calibrate --reps 2 \
  --sizes 1,4K,64K --quiet --out - > "$tmp/out2" 2>&1 || fail "--out - failed: $(cat "$tmp/out2")"
grep -q "^beta = " "$tmp/out2" || fail "--out - printed no values"


# 4. 4 ranks: the small-block switch points, root against the model's
# pick at 2|2 and in groups of 3 and 4 per block size, in tables and as
# inter_root_max and intra_root_bytes
timeout -k 5 240 "$mpiexec" "${pre[@]}" -n 4 "$bench" --calibrate --reps 2 \
  --sizes 1,4K,64K --quiet --out - > "$tmp/out4" 2>&1 || fail "4 ranks failed: $(cat "$tmp/out4")"
grep -q "^small blocks, inter-group, 2|2: " "$tmp/out4" &&
  grep -q "^small blocks, intra-group, p = 3: " "$tmp/out4" &&
  grep -q "^small blocks, intra-group, p = 4: " "$tmp/out4" ||
  fail "4 ranks: no small-block tables: $(cat "$tmp/out4")"
awk '/^small blocks/ { t = 1; next } t && $1 ~ /^[0-9]+$/ && NF == 5 { n++ } END { exit n != 21 }' \
  "$tmp/out4" || fail "4 ranks: not 7 block sizes per table: $(cat "$tmp/out4")"
grep -Eq "^inter_root_max = (0|256|512|1024|2048|4096|8192|16384)$" "$tmp/out4" ||
  fail "4 ranks: no inter_root_max among the sizes: $(cat "$tmp/out4")"
# what member 0 sends: in a group of 3, 2 messages of 2 blocks; of 4, 2
# of 3 (the smaller of the two)
grep -Eq "^intra_root_bytes = (0|[0-9]*(0|2|4|6|8))$" "$tmp/out4" &&
  awk '$1 == "intra_root_bytes" { b = $3; ok = b == 0; for (k = 256; k <= 16384; k *= 2)
         ok = ok || b == 4 * k || b == 6 * k } END { exit !ok }' "$tmp/out4" ||
  fail "4 ranks: intra_root_bytes not 4 or 6 blocks of a size: $(cat "$tmp/out4")"

# 5. a broken file: refused with file:line
printf 'alpha = 1e-5\nbeta = fast\n' > "$tmp/bad"
CPL_TUNING_FILE=$tmp/bad "$sched" fc 2 2 --explain > "$tmp/x" 2>&1 && fail "cpl-sched accepted a bad file"
grep -q "$tmp/bad:2: beta" "$tmp/x" || fail "no file:line: $(cat "$tmp/x")"
# (the library's refusals: tests/mpi/test_tuning_agree.c)
((fails == 0)) && echo "calibrate: all checks passed"
exit $((fails > 0))
