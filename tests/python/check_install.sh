#!/usr/bin/env bash
# Install the build tree into a scratch prefix, move the prefix (installs
# relocate), and use the installed Python package from there alone.
#   check_install.sh BUILD PYTHON SITE_DIR MPIEXEC SCRATCH
set -euo pipefail
build=$1 py=$2 site=$3 mpiexec=$4 scratch=$5
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" > /dev/null
mv "$scratch/prefix" "$scratch/moved"
cat > "$scratch/solo.yaml" <<'YAML'
name: solo
components:
  - {name: a, nprocs: 1, command: x, outputs: [o]}
YAML
cd "$scratch"
PYTHONPATH="$scratch/moved/$site" timeout -k 5 60 "$mpiexec" -n 1 "$py" -c '
import sys, numpy as np, coupler
assert coupler.__file__.startswith(sys.argv[1]), coupler.__file__
with coupler.init(workflow="solo.yaml", component="a") as ctx:
    with ctx.output("o") as out:
        with out.step():
            out.put("x", np.arange(4.0))
print("install: coupler", coupler.__version__, "from", coupler.__file__)
' "$scratch/moved/$site" 2> >(grep -v "its steps go nowhere" >&2)
