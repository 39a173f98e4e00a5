"""Python overhead per step against C: the same workflow (producers ->
consumers, one float64 dataset per step) run with C components
(cpl-py-bench-steps) and Python components (steps.py), and mixed.

    bench_overhead.py BUILD_DIR [--sizes 4K,4M] [--shape 1:1] [--reps 5]
                      [--steps N] [--no-yield]

Variants take turns within each repetition (machine noise hits them
alike); the table gives the median time per step as consumer rank 0
measures it (after warm-up steps) and the overhead against C -> C.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def size(s):
    m = re.fullmatch(r"(\d+)([KM]?)", s)
    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1 << 20}[m.group(2)]


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("build")
    a.add_argument("--sizes", default="4K,4M")
    a.add_argument("--shape", default="1:1")
    a.add_argument("--reps", type=int, default=5)
    a.add_argument("--steps", type=int, default=0,
                   help="steps per run (default: about 64 MiB moved, 100..3000)")
    a.add_argument("--no-yield", action="store_true",
                   help="without the cpl_yield shim (idle ranks busy-poll)")
    o = a.parse_args()
    build = os.path.abspath(o.build)
    run = os.path.join(build, "coupler", "tools", "cpl-run")
    cexe = os.path.join(build, "coupler", "python", "cpl-py-bench-steps")
    py = [sys.executable, os.path.join(HERE, "steps.py")]
    shim = os.path.join(build, "scripts", "libcpl_yield.so")
    pre = [] if o.no_yield or not os.path.exists(shim) else ["-genv", "LD_PRELOAD", shim]
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    p, q = map(int, o.shape.split(":"))
    sides = {"C": [cexe], "Py": py}
    variants = [("C", "C"), ("Py", "Py"), ("Py", "C"), ("C", "Py")]
    tmp = tempfile.mkdtemp(prefix="cpl-py-bench-")
    print(f"shape {p}:{q}, {o.reps} reps, MPI ranks {p + q}"
          f"{'' if pre else ', no yield shim'}")
    print(f"{'bytes/step':>10} {'steps':>6} {'prod->cons':>10} {'median us':>10} "
          f"{'min us':>9} {'vs C->C':>8}")
    for s in o.sizes.split(","):
        nbytes = size(s)
        steps = o.steps or max(100, min(3000, (64 << 20) // nbytes))
        warm = max(5, steps // 10)
        times = {v: [] for v in variants}
        for _ in range(o.reps):
            for v in variants:
                yml = os.path.join(tmp, "bench.yaml")
                args = f"{nbytes}, {steps}, {warm}"
                with open(yml, "w") as f:
                    f.write(f"""name: pybench
components:
  - {{name: prod, nprocs: {p}, command: [{', '.join(map(repr, sides[v[0]]))}, {args}], outputs: [out]}}
  - {{name: cons, nprocs: {q}, command: [{', '.join(map(repr, sides[v[1]]))}, {args}], inputs: [in]}}
links:
  - {{from: prod.out, to: cons.in, policy: all, depth: 2, timeout: 120}}
""")
                r = subprocess.run([run, yml, "--"] + pre, env=env, cwd=tmp,
                                   capture_output=True, text=True, timeout=600)
                m = re.search(r"per_step_us=([0-9.]+)", r.stdout)
                if r.returncode or not m:
                    sys.exit(f"bench_overhead: {v} failed ({r.returncode}):\n"
                             f"{r.stdout}{r.stderr}")
                times[v].append(float(m.group(1)))
        base = statistics.median(times[("C", "C")])
        for v in variants:
            med = statistics.median(times[v])
            print(f"{nbytes:>10} {steps:>6} {v[0] + '->' + v[1]:>10} {med:>10.1f} "
                  f"{min(times[v]):>9.1f} {100 * (med - base) / base:>+7.1f}%")


if __name__ == "__main__":
    main()
