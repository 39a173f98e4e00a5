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
DEFAULT_ALGS="fc,root,native"

usage() {
  cat <<USAGE
usage: $(basename "$0") [options] [-- COMMAND TEMPLATE...]

For every shape PxQ, run COMMAND with P+Q ranks (one per namespace, through
run.sh) and gather what it produces into one CSV.

options:
  -o, --out FILE      CSV to write (default sweep-<date>.csv in the current directory)
  -s, --shapes LIST   shapes "PxQ ..." (default "$DEFAULT_SHAPES")
  -z, --sizes LIST    sizes, "32K..4M" (powers of two) or "32K,1M,4M" (default $DEFAULT_SIZES)
  -a, --algs LIST     algorithms for the default command (default $DEFAULT_ALGS)
  -r, --repeat R      run every shape R times (default 1)
  -t, --timeout S     timeout of one run, seconds (default 300)
  --setup             create a testbed of max(P+Q) nodes if none exists (RATE from
                      --rate, default 400mbit) and tear it down at the end
  --rate RATE         link rate for --setup (default 400mbit)
  -n, --dry-run       print the commands only
  -h, --help          this text

COMMAND TEMPLATE (default: the cpl-bench interface below) may use placeholders:
  {P} {Q} {N}=P+Q   group sizes        {ALGS}   the --algs list
  {SIZES}           the --sizes list as given (one run per shape)
  {SIZE}            one size in bytes (one run per shape and size)
  {CSV}             a file the command writes its CSV to (header + rows);
                    without {CSV}, lines of the command's stdout that contain a
                    comma are taken as CSV (the first such line as header)
Every output row gets three leading columns: p,q,run (header: sweep_p,sweep_q,sweep_run).

Default command (cpl-bench, written separately; the interface assumed here):
  cpl-bench --inter {ALGS} --p {P} --q {Q} --sizes {SIZES} --csv {CSV}
  - started as one SPMD job of P+Q ranks; ranks 0..P-1 form group A, the rest group B
  - --inter: comma list of inter-group allgather algorithms to time
  - --sizes: bytes per rank, "32K..4M" = 32K,64K,...,4M; K/M suffixes are 2^10/2^20
  - --csv FILE: rank 0 writes a header line and one row per (algorithm, size),
    at least: alg,p,q,bytes,reps,t_min_s,t_med_s,t_max_s
Found as \$CPL_BENCH, else cpl-bench on PATH, else under $REPO/build*/.
USAGE
}

out="sweep-$(date +%Y%m%d-%H%M%S).csv"
shapes=$DEFAULT_SHAPES
sizes=$DEFAULT_SIZES
algs=$DEFAULT_ALGS
repeat=1
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
    -r|--repeat) repeat=$2; shift 2 ;;
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
    [[ -n $bench ]] || bench=$(find "$REPO" -path "$REPO/.git" -prune -o -type f -name cpl-bench -perm -u+x -print 2>/dev/null | head -n1)
  fi
  [[ -n $bench ]] || (( dry )) || cpl_die "cpl-bench not found (set CPL_BENCH, or give a command after --)"
  set -- "${bench:-cpl-bench}" --inter "{ALGS}" --p "{P}" --q "{Q}" --sizes "{SIZES}" --csv "{CSV}"
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
    echo "sweep_p,sweep_q,sweep_run,$(head -n1 "$f")" >> "$work/all.csv"
    header_done=1
  fi
  tail -n +2 "$f" | awk -v pre="$p,$q,$run," 'NF { print pre $0 }' >> "$work/all.csv"
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
        w=${w//\{ALGS\}/$algs}; w=${w//\{SIZES\}/$sizes}; w=${w//\{SIZE\}/$sz}; w=${w//\{CSV\}/$csv}
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
      if (( rc != 0 )); then
        fails=$((fails + 1))
        cpl_log "run failed (exit $rc); last lines of its stderr:"
        tail -n 5 "$work/stderr" >&2
      fi
      if (( ! wants_csv )); then
        grep ',' "$work/stdout" > "$csv" || true
        # repeated header lines (one per run with {SIZE}) are dropped by append_csv
      fi
      if (( header_done )) && [[ -s $csv ]]; then
        # drop the header, keep rows
        sed -i '1{/^[A-Za-z_]/!q}' "$csv"
      fi
      append_csv "$csv" "$p" "$q" "$run"
    done
  done
done
(( dry )) && exit 0
cp "$work/all.csv" "$out"
cpl_log "wrote $(($(wc -l < "$out") - 1)) rows to $out in $((SECONDS - t_start)) s ($fails failed runs)"
(( fails == 0 ))
