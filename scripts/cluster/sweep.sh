#!/usr/bin/env bash
# Run a benchmark command on the emulated cluster for a list of group shapes
# (P|Q) and message sizes, and collect one CSV. See README.md, "sweep.sh".
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
source "$HERE/common.sh"

DEFAULT_SHAPES="4x4 2x6 6x2 8x8 4x12 12x4"
DEFAULT_SIZES="32K..4M"
DEFAULT_ALGS="fc,root,native,mpi,ring,ring-intra"
DEFAULT_REPS=5

usage() {
  cat <<USAGE
usage: $(basename "$0") [options] [-- COMMAND TEMPLATE...]

For every shape PxQ, run COMMAND with P+Q ranks (one per namespace, through
run.sh) and gather what it produces into one CSV.

options:
  -o, --out FILE      CSV to write (default sweep-<date>.csv in the current directory)
                      (every run's stdout goes to the same name with .log)
  -s, --shapes LIST   shapes "PxQ ..." (default "$DEFAULT_SHAPES")
  -z, --sizes LIST    sizes, "32K..4M" (powers of two) or "32K,1M,4M" (default $DEFAULT_SIZES)
  -a, --algs LIST     algorithms for the default command (default $DEFAULT_ALGS)
  -b, --baseline ALG  the variant ratios refer to, {BASELINE} (default: the last of --algs)
  -r, --repeat R      run every shape R times (default 1)
  --reps N            measured repetitions inside one run, {REPS} (default $DEFAULT_REPS)
  -t, --timeout S     timeout of one run, seconds (default 300)
  --setup             create a testbed of max(P+Q) nodes if none exists (RATE from
                      --rate, default 400mbit) and tear it down at the end
  --rate RATE         link rate for --setup (default 400mbit)
  -n, --dry-run       print the commands only
  -h, --help          this text

COMMAND TEMPLATE (default: the cpl-bench interface below) may use placeholders:
  {P} {Q} {N}=P+Q   group sizes        {ALGS}   the --algs list
  {REPS}            the --reps value   {RATE_MBPS} link rate of the testbed in MB/s
  {BASELINE}        the --baseline value
  {SIZES}           the --sizes list as given (one run per shape)
  {SIZE}            one size in bytes (one run per shape and size)
  {CSV}             a file the command writes its CSV to (header + rows);
                    without {CSV}, lines of the command's stdout that contain a
                    comma are taken as CSV (the first such line as header)
Every output row gets four leading columns: sweep_p,sweep_q,sweep_run,link_rate.

Default command (coupler/tools/cpl-bench):
  cpl-bench --inter {ALGS} --shape {P}:{Q} --sizes {SIZES} --reps {REPS} --rate {RATE_MBPS}
            --baseline {BASELINE} --csv {CSV} --quiet
  - one SPMD job of P+Q ranks, groups of P and Q ranks
  - --sizes: bytes per rank, "32K..4M" = 32K,64K,...,4M
  - --csv FILE: a header line and one row per (algorithm, size):
    shape,p,q,kind,algorithm,bytes,median_s,min_s,ratio_to_baseline,bound_s,runs
cpl-bench is found as \$CPL_BENCH, else on PATH, else in build/, then other build*/
or another build*/ directory of the repository (coupler/tools/cpl-bench;
sanitizer builds cannot run under the shim). The rate given to cpl-bench is
the TCP payload rate of the links (tbf counts 1514-byte frames carrying 1448
payload bytes: 400mbit -> 47.8 MB/s), so its bound p*k/B is what a link can
really carry.
USAGE
}

out="sweep-$(date +%Y%m%d-%H%M%S).csv"
shapes=$DEFAULT_SHAPES
sizes=$DEFAULT_SIZES
algs=$DEFAULT_ALGS
baseline=""
repeat=1
reps=$DEFAULT_REPS
tmo=300
do_setup=0
rate=400mbit
dry=0
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -o|--out) out=$2; shift 2 ;;
    -s|--shapes) shapes=$2; shift 2 ;;
    -z|--sizes) sizes=$2; shift 2 ;;
    -a|--algs) algs=$2; shift 2 ;;
    -b|--baseline) baseline=$2; shift 2 ;;
    -r|--repeat) repeat=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    -t|--timeout) tmo=$2; shift 2 ;;
    --setup) do_setup=1; shift ;;
    --rate) rate=$2; shift 2 ;;
    -n|--dry-run) dry=1; shift ;;
    --) shift; break ;;
    *) echo "$(basename "$0"): unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || cpl_die "--repeat needs a positive integer"

# "32K" -> 32768
to_bytes() {
  local v=$1 m=1
  case $v in *[kK]) m=1024; v=${v%?} ;; *[mM]) m=1048576; v=${v%?} ;; *[gG]) m=1073741824; v=${v%?} ;; esac
  [[ $v =~ ^[0-9]+$ ]] || cpl_die "bad size '$1'"
  echo $((v * m))
}
expand_sizes() {
  if [[ $1 == *..* ]]; then
    local lo hi s
    lo=$(to_bytes "${1%%..*}"); hi=$(to_bytes "${1##*..}")
    for ((s = lo; s <= hi; s *= 2)); do echo "$s"; done
  else
    local s; for s in ${1//,/ }; do to_bytes "$s"; done
  fi
}

if [[ $# -eq 0 ]]; then
  bench=${CPL_BENCH:-}
  if [[ -z $bench ]]; then
    bench=$(command -v cpl-bench 2>/dev/null || true)
    for c in "$REPO"/build/coupler/tools/cpl-bench \
             "$REPO"/build*/coupler/tools/cpl-bench; do
      [[ -z $bench && -x $c ]] && bench=$c
    done
  fi
  [[ -n $bench ]] || (( dry )) || cpl_die "cpl-bench not found (set CPL_BENCH, or give a command after --)"
  set -- "${bench:-cpl-bench}" --inter "{ALGS}" --shape "{P}:{Q}" --sizes "{SIZES}" --reps "{REPS}" \
    --rate "{RATE_MBPS}" --baseline "{BASELINE}" --csv "{CSV}" --quiet
fi
template=("$@")
per_size=0
[[ " ${template[*]} " == *"{SIZE}"* ]] && per_size=1
wants_csv=0
[[ " ${template[*]} " == *"{CSV}"* ]] && wants_csv=1

# validate shapes, find the largest
maxn=0
for sh in $shapes; do
  [[ $sh =~ ^([1-9][0-9]*)[x|:]([1-9][0-9]*)$ ]] || cpl_die "bad shape '$sh' (want PxQ)"
  n=$((BASH_REMATCH[1] + BASH_REMATCH[2]))
  (( n > maxn )) && maxn=$n
done

# "400mbit" -> 50, "50mbps" (tc: bytes/s) -> 50: MB/s, 1e6 B/s
rate_to_mbps() {
  echo "$1" | awk '{
    v = $0 + 0; u = $0; sub(/^[0-9.]+/, "", u)
    m = 1; if (u ~ /^k/) m = 1e3; else if (u ~ /^m/) m = 1e6; else if (u ~ /^g/) m = 1e9; else if (u ~ /^t/) m = 1e12
    b = (u ~ /bit$/) ? v * m / 8 : v * m
    printf "%g\n", b / 1e6 }'
}

created=0
if (( ! dry )); then
  cpl_need_root
  if [[ ! -e $CPL_STATE ]]; then
    (( do_setup )) || cpl_die "no testbed: run setup.sh $maxn first, or pass --setup"
    "$HERE/setup.sh" "$maxn" "$rate"
    created=1
  fi
  cpl_require_testbed
  (( maxn <= CPL_NNODES )) || cpl_die "shapes need $maxn nodes, the testbed has $CPL_NNODES"
fi
link_rate=$(cpl_state_get rate 2>/dev/null || echo "$rate")
[[ -n $link_rate ]] || link_rate=$rate
rate_mbps=$(rate_to_mbps "$link_rate")
# payload rate: tbf shapes 1514-byte frames that carry 1448 bytes of TCP payload
rate_mbps=$(awk -v r="$rate_mbps" 'BEGIN { printf "%.4g\n", r * 1448 / 1514 }')
[[ -n $baseline ]] || baseline=${algs##*,}
cleanup() {
  rm -rf "${work:-}"
  if (( created )); then "$HERE/teardown.sh" || true; fi
}
work=$(mktemp -d /tmp/cpl-sweep.XXXXXX)
trap cleanup EXIT

header_done=0
: > "$work/all.csv"
# append CSV text (file $1) with the sweep columns p,q,run
append_csv() {
  local f=$1 p=$2 q=$3 run=$4
  [[ -s $f ]] || { cpl_log "warning: no CSV from run p=$p q=$q run=$run"; return 0; }
  if (( ! header_done )); then
    echo "sweep_p,sweep_q,sweep_run,link_rate,$(head -n1 "$f")" >> "$work/all.csv"
    header_done=1
  fi
  tail -n +2 "$f" | awk -v pre="$p,$q,$run,$link_rate," 'NF { print pre $0 }' >> "$work/all.csv"
}

fails=0
t_start=$SECONDS
for ((run = 1; run <= repeat; run++)); do
  for sh in $shapes; do
    [[ $sh =~ ^([0-9]+)[x|:]([0-9]+)$ ]]
    p=${BASH_REMATCH[1]} q=${BASH_REMATCH[2]} n=$((p + q))
    if (( per_size )); then mapfile -t size_list < <(expand_sizes "$sizes"); else size_list=(all); fi
    for sz in "${size_list[@]}"; do
      csv=$work/run-$p-$q-$run-$sz.csv
      cmd=()
      for w in "${template[@]}"; do
        w=${w//\{P\}/$p}; w=${w//\{Q\}/$q}; w=${w//\{N\}/$n}
        w=${w//\{REPS\}/$reps}; w=${w//\{RATE_MBPS\}/$rate_mbps}
        w=${w//\{ALGS\}/$algs}; w=${w//\{SIZES\}/$sizes}; w=${w//\{SIZE\}/$sz}; w=${w//\{CSV\}/$csv}
        w=${w//\{BASELINE\}/$baseline}
        cmd+=("$w")
      done
      if (( dry )); then
        echo "$HERE/run.sh -t $tmo -n $n -- ${cmd[*]}"
        continue
      fi
      cpl_log "shape $p|$q${per_size:+}$( ((per_size)) && echo " size $sz") run $run: ${cmd[*]}"
      set +e
      "$HERE/run.sh" -t "$tmo" -n "$n" -- "${cmd[@]}" > "$work/stdout" 2> "$work/stderr"
      rc=$?
      set -e
      { echo "### shape $p|$q run $run${per_size:+ size $sz}: ${cmd[*]} (exit $rc)"; cat "$work/stdout"; } >> "$work/all.log"
      if (( rc != 0 )); then
        fails=$((fails + 1))
        cpl_log "run failed (exit $rc); last lines of its stderr:"
        tail -n 5 "$work/stderr" >&2
      fi
      if (( ! wants_csv )); then
        grep ',' "$work/stdout" > "$csv" || true
        # repeated header lines (one per run with {SIZE}) are dropped by append_csv
      fi
      append_csv "$csv" "$p" "$q" "$run"
    done
  done
done
(( dry )) && exit 0
cp "$work/all.csv" "$out"
cp "$work/all.log" "${out%.csv}.log"
cpl_log "wrote $(($(wc -l < "$out") - 1)) rows to $out in $((SECONDS - t_start)) s ($fails failed runs)"
(( fails == 0 ))
