#!/usr/bin/env bash
# Install the build tree into a scratch prefix, then use it as a new user
# would, with a clean environment (no LD_LIBRARY_PATH, no build tree):
#  1. every installed program starts (RUNPATH) and does its job: --help and
#     --version of each tool, cpl-validate and cpl-run --dry-run on the
#     installed example config, cpl-sched, cpl-model, cpl-bench on 2 ranks,
#     and a small workflow (installed example simulation -> installed HDF5
#     sink) through cpl-run with the installed yield shim preloaded;
#  2. the documented snippets build and run: find_package(coupler) with
#     coupler::coupler and coupler::coupler_mpi (coupler/dropin/README.md),
#     pkg-config, and the drop-in's mpicc line (README.md);
#  3. coupler.pc prints clean paths, and the prefix still works when moved.
# usage: check_install.sh BUILD_DIR SOURCE_DIR SCRATCH VERSION LIBDIR LIBEXECDIR DATADIR
set -euo pipefail
build=$1 src=$2 scratch=$3 version=$4 libdir=$5 libexecdir=$6 datadir=$7
rm -rf "$scratch" && mkdir -p "$scratch"
P=$scratch/prefix
cmake --install "$build" --prefix "$P" > /dev/null

fail() { echo "install: FAIL: $*" >&2; exit 1; }
# A clean environment: only the system's PATH and a HOME.
clean() { env -i PATH=/usr/bin:/bin HOME="$scratch" "$@"; }

# 1. Installed programs.
tools=(cpl-run cpl-validate cpl-component cpl-bench cpl-sched cpl-model cpl-exec)
for t in "${tools[@]}"; do
  [[ -x $P/bin/$t ]] || fail "$t is not installed in $P/bin"
  out=$(clean "$P/bin/$t" --help) || fail "$t --help exited $?"
  [[ $out == usage:* ]] || fail "$t --help does not start with usage: $out"
  v=$(clean "$P/bin/$t" --version) || fail "$t --version exited $?"
  [[ $v == "$t (Coupler) $version" ]] || fail "$t --version printed '$v'"
done
for e in gray-scott-sim gray-scott-analysis; do
  clean "$P/$libexecdir/coupler/$e" --help > /dev/null || fail "$e --help exited $?"
done
config=$P/$datadir/coupler/configs/gray_scott.yaml
clean "$P/bin/cpl-validate" "$config" > /dev/null || fail "cpl-validate $config"
dry=$(clean "$P/bin/cpl-run" --dry-run "$config")
for prog in "$P/$libexecdir/coupler/gray-scott-sim" "$P/$libexecdir/coupler/gray-scott-analysis" \
            "$P/bin/cpl-component"; do
  [[ $dry == *"$(realpath "$prog")"* ]] || fail "cpl-run --dry-run does not run $prog: $dry"
done
clean "$P/bin/cpl-sched" ring 3 2 --check > /dev/null 2>&1 || fail "cpl-sched ring 3 2 --check"
clean "$P/bin/cpl-model" --max 4 > /dev/null || fail "cpl-model --max 4"
shim=$P/$libdir/libcpl_yield.so
[[ -f $shim ]] || fail "the yield shim is not installed ($shim)"
clean timeout -k 5 60 mpiexec -genv LD_PRELOAD "$shim" -n 2 "$P/bin/cpl-bench" --inter fc \
  --shape 1:1 --sizes 1K --reps 1 --warmup 0 --quiet > /dev/null || fail "cpl-bench on 2 ranks"
mkdir -p "$scratch/run"
sed "s|@PREFIX@|$P|" "$src/tiny.yaml.in" > "$scratch/run/tiny.yaml"
(cd "$scratch/run" && clean timeout -k 5 90 "$P/bin/cpl-run" tiny.yaml -- -genv LD_PRELOAD "$shim") \
  > "$scratch/run/log" 2>&1 || { cat "$scratch/run/log"; fail "cpl-run tiny.yaml"; }
[[ $(h5ls "$scratch/run/out/tiny.h5" | awk '{ print $1 }' | paste -sd ' ') == 'step_000000 step_000001' ]] ||
  fail "out/tiny.h5 does not hold steps 0 and 1: $(h5ls "$scratch/run/out/tiny.h5")"

# The documents: every README of the tree, and every document (.md) or
# source they link to, in its place (the Python README and the pages
# README.md links to were missing, analysis.py of the examples, and
# coupler/coll/algorithms.h, README.md's table of the algorithms).
doc=$P/$datadir/doc/coupler
for f in $(cd "$src/../.." && git ls-files '*README.md' 2> /dev/null); do
  [[ -f $doc/$f ]] || fail "$f is not installed in $doc"
done
while IFS= read -r md; do
  for link in $(grep -oE '\]\([^)#:]+\.(md|c|h|py)[)#]' "$md" | sed -E 's/^\]\(//; s/[)#]$//'); do
    [[ -f $(dirname "$md")/$link ]] || fail "${md#"$doc"/} links to $link, which is not installed"
  done
done < <(find "$doc" -name '*.md')
[[ -f $doc/examples/gray_scott/analysis.py ]] || fail "examples/gray_scott/analysis.py is not installed"

# 2. The documented snippets.
cmake -S "$src/consumer" -B "$scratch/cmake" -DCMAKE_PREFIX_PATH="$P" > /dev/null
cmake --build "$scratch/cmake" > /dev/null
clean "$scratch/cmake/consumer" > /dev/null || fail "find_package consumer"
readelf -d "$scratch/cmake/dropin_app" | awk '/NEEDED/ { print $5 }' > "$scratch/needed"
grep -n coupler_mpi "$scratch/needed" | head -1 | cut -d: -f1 > "$scratch/a"
grep -n 'libmpi' "$scratch/needed" | head -1 | cut -d: -f1 > "$scratch/b"
(($(cat "$scratch/a") < $(cat "$scratch/b"))) || fail "libcoupler_mpi is not NEEDED before MPI"
clean timeout -k 5 60 mpiexec -n 2 "$scratch/cmake/dropin_app" > /dev/null ||
  fail "coupler::coupler_mpi app"
export PKG_CONFIG_PATH=$P/$libdir/pkgconfig
flags=$(pkg-config --cflags --libs coupler)
[[ $flags == *"-I$P/include"* && $flags == *"-L$P/$libdir"* && $flags != */../* ]] ||
  fail "pkg-config paths are not clean: $flags"
mpicc "$src/consumer/main.c" $flags -Wl,-rpath,"$(pkg-config --variable=libdir coupler)" \
  -o "$scratch/pc-consumer"
clean "$scratch/pc-consumer" > /dev/null || fail "pkg-config consumer"
mpicc "$src/consumer/dropin_app.c" -o "$scratch/mpicc-dropin" -L"$P/$libdir" -lcoupler_mpi \
  -Wl,-rpath,"$P/$libdir"
clean timeout -k 5 60 mpiexec -n 2 "$scratch/mpicc-dropin" > /dev/null || fail "mpicc drop-in app"

# 3. A moved prefix: programs still start, pkg-config --define-prefix follows.
mv "$P" "$scratch/moved"
clean "$scratch/moved/bin/cpl-validate" "$scratch/moved/$datadir/coupler/configs/gray_scott.yaml" \
  > /dev/null || fail "cpl-validate from a moved prefix"
moved=$(PKG_CONFIG_PATH=$scratch/moved/$libdir/pkgconfig pkg-config --define-prefix --cflags coupler)
[[ $moved == *"-I$scratch/moved/include"* ]] || fail "pkg-config --define-prefix: $moved"
echo "install: ${#tools[@]} tools, example programs, workflow, CMake, pkg-config and mpicc consumers work"
