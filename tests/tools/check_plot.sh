#!/usr/bin/env bash
# scripts/plot.py as the README shows it: --help on stdout with exit 0 (it
# went to stderr with exit 1), figures from a small cpl-bench CSV and a
# CPL_TRACE file, and a one-line message, exit 1, for a missing file, a
# file of the wrong kind (tracebacks: FileNotFoundError, KeyError: 'shape',
# JSONDecodeError) and a ratio baseline the CSV lacks (empty panels).
# usage: check_plot.sh SOURCE_DIR
set -uo pipefail
plot=$1/scripts/plot.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fails=0
fail() { echo "plot: FAIL: $*" >&2; fails=$((fails + 1)); }

"$plot" --help > out.txt 2> err.txt
(($? == 0)) && grep -q 'scripts/plot.py bench RESULTS.csv OUT.png' out.txt && [[ ! -s err.txt ]] ||
  fail "--help: $(head -2 err.txt)"

cat > b.csv <<'CSV'
shape,p,q,kind,algorithm,bytes,median_s,min_s,ratio_to_baseline,bound_s,runs
1|1,1,1,inter,fc,1024,0.000002,0.000002,1.5,0,10
1|1,1,1,inter,fc,2048,0.000003,0.000003,1.3,0,10
1|1,1,1,inter,mpi,1024,0.000003,0.000003,1.0,0,10
1|1,1,1,inter,mpi,2048,0.000004,0.000004,1.0,0,10
CSV
cat > t.json <<'JSON'
{"ts":1000000.0,"comp":"sim","rank":0,"link":"sim.out->ana.in","ev":"sent","step":0,"bytes":8,"step_bytes":8,"mode":"allgather","alg":"fc","wait_s":0.001,"transfer_s":0.002,"compute_s":0.0,"queue":0,"dropped":0}
{"ts":1000000.0,"comp":"ana","rank":0,"link":"sim.out->ana.in","ev":"received","step":0,"bytes":8,"step_bytes":8,"mode":"allgather","alg":"fc","wait_s":0.001,"transfer_s":0.002,"compute_s":0.001,"queue":0,"dropped":0}
JSON
for args in "bench b.csv b.png" "ratio b.csv r.png" "ratio b.csv r2.png mpi" "trace t.json t.png"; do
  "$plot" $args > out.txt 2> err.txt || fail "$args exited $?: $(tail -2 err.txt)"
  set -- $args
  [[ -s $3 ]] || fail "$args wrote no $3"
done

# bad ARGS... -- MESSAGE: exit 1 and that one line on stderr, no traceback.
bad() {
  local args=() ; while [[ $1 != -- ]]; do args+=("$1"); shift; done; shift
  "$plot" "${args[@]}" > out.txt 2> err.txt
  local rc=$?
  ((rc == 1)) && grep -qF -- "$1" err.txt && ! grep -q Traceback err.txt ||
    fail "${args[*]}: exit $rc, $(tail -2 err.txt)"
}
bad bench nosuch.csv x.png -- "plot.py: nosuch.csv: No such file or directory"
bad bench t.json x.png -- "plot.py: t.json is not cpl-bench --csv output (no field 'shape')"
bad trace b.csv x.png -- "plot.py: b.csv is not a CPL_TRACE file (JSON Lines or chrome:)"
bad ratio b.csv x.png nosuch -- "plot.py: baseline nosuch is not in b.csv (algorithms: fc, mpi)"
bad model ./no-cpl-model x.png -- "plot.py: ./no-cpl-model: No such file or directory"
((fails == 0)) && echo "plot: ok"
exit $((fails > 0))
