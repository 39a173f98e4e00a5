#!/usr/bin/env bash
# Install the build tree into a scratch prefix, then build and run a
# consumer through find_package(coupler) and through pkg-config.
set -euo pipefail
build=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" > /dev/null
cmake -S "$src/consumer" -B "$scratch/cmake" -DCMAKE_PREFIX_PATH="$scratch/prefix" > /dev/null
cmake --build "$scratch/cmake" > /dev/null
"$scratch/cmake/consumer"
pc="$scratch/prefix/lib/pkgconfig"
[[ -d $pc ]] || pc=$(dirname "$(find "$scratch/prefix" -name coupler.pc)")
export PKG_CONFIG_PATH=$pc
mpicc "$src/consumer/main.c" $(pkg-config --cflags --libs coupler) \
  -Wl,-rpath,"$(pkg-config --variable=libdir coupler)" -o "$scratch/pc-consumer"
"$scratch/pc-consumer"
echo "install: find_package and pkg-config consumers work"
