"""Python overhead per step against C: the same workflow (producers ->
consumers, one float64 dataset per step) run with C components
(tests/bench/step_bench) and Python components (steps.py), and mixed.

    bench_overhead.py BUILD_DIR [--sizes 4K,4M] [--shape 1:1] [--reps 5]
                      [--steps N] [--no-yield]

Variants take turns within each repetition (machine noise hits them
alike). Two measures: the pipeline's time per step as consumer rank 0
sees it (after warm-up steps), which includes the transfer and is at the
mercy of the machine's load; and the calls' own cost, timed alone in the
same runs (steps on a port with no link; repeated gets of one step), from
which Python's own cost per step follows with little noise.
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
    n = m and int(m.group(1)) * {"": 1, "K": 1024, "M": 1 << 20}[m.group(2)]
    if not n or n < 8:  # one float64 at least
        raise argparse.ArgumentTypeError(f"bad size {s!r} (bytes, K or M, at least 8)")
    return n


def shape(s):
    m = re.fullmatch(r"([1-9]\d*):([1-9]\d*)", s)
    if not m:
        raise argparse.ArgumentTypeError(f"bad shape {s!r} (P:Q, producer and consumer ranks)")
    return s


def sizes(s):
    return [size(x) for x in s.split(",")]


def run_once(o, run, pre, env, tmp, prod, cons, nbytes, steps, warm, calls):
    """One workflow run: {per_step_us, solo_step_us, get_us}."""
    p, q = map(int, o.shape.split(":"))
    args = f"{nbytes}, {steps}, {warm}, {calls}"
    yml = os.path.join(tmp, "bench.yaml")
    with open(yml, "w") as f:
        f.write(f"""name: pybench
components:
  - {{name: prod, nprocs: {p}, command: [{', '.join(map(repr, prod))}, {args}], outputs: [out, solo]}}
  - {{name: cons, nprocs: {q}, command: [{', '.join(map(repr, cons))}, {args}], inputs: [in]}}
links:
  - {{from: prod.out, to: cons.in, policy: all, depth: 2, timeout: 120}}
""")
    r = subprocess.run([run, yml, "--"] + pre, env=env, cwd=tmp,
                       capture_output=True, text=True, timeout=600)
    got = dict((k, float(v)) for k, v in re.findall(r"steps: (\w+)=([0-9.]+)", r.stdout))
    if r.returncode or "per_step_us" not in got:
        sys.exit(f"bench_overhead: run failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return got


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("build")
    # Checked here: a bad value ended in a traceback after the header.
    a.add_argument("--sizes", type=sizes, default="4K,4M")
    a.add_argument("--shape", type=shape, default="1:1")
    a.add_argument("--reps", type=int, default=5)
    a.add_argument("--steps", type=int, default=0,
                   help="steps per run, more than the warm-up's max(5, N/10) "
                   "(default: about 32 MiB moved, 100..2000)")
    a.add_argument("--no-yield", action="store_true",
                   help="without the cpl_yield shim (idle ranks busy-poll)")
    o = a.parse_args()
    # Every run times the steps after its warm-up; with none left the
    # consumers divided by zero ("per_step_us=inf", "run failed (0)").
    if o.steps and o.steps <= 5:
        a.error(f"--steps must be more than the 5 warm-up steps, got {o.steps}")
    if o.reps < 1:
        a.error(f"--reps must be at least 1, got {o.reps}")
    build = os.path.abspath(o.build)
    run = os.path.join(build, "coupler", "tools", "cpl-run")
    if not os.access(run, os.X_OK):  # FileNotFoundError from subprocess
        a.error(f"{run} not found: give the build directory of Coupler")
    sides = {"C": [os.path.join(build, "tests", "bench", "step_bench")],
             "Py": [sys.executable, os.path.join(HERE, "steps.py")]}
    shim = os.path.join(build, "scripts", "libcpl_yield.so")
    pre = [] if o.no_yield or not os.path.exists(shim) else ["-genv", "LD_PRELOAD", shim]
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    tmp = tempfile.mkdtemp(prefix="cpl-py-bench-")
    variants = [("C", "C"), ("Py", "Py"), ("Py", "C"), ("C", "Py")]
    print(f"shape {o.shape}, {o.reps} reps, variants in turns"
          f"{'' if pre else ', no yield shim'}; load average "
          f"{os.getloadavg()[0]:.1f} at the start")
    print("pipeline: time per step at the consumer (median, min over reps)")
    print("calls: one step on a port with no link (begin, put, end) and one "
          "get of the whole array, alone (us; median and best over reps)")
    print(f"{'bytes':>8} {'steps':>5} {'variant':>7} {'step us':>9} {'min':>8} "
          f"{'vs C':>7} | {'solo med':>8} {'best':>8} {'get med':>9} {'best':>9}")
    for nbytes in o.sizes:
        steps = o.steps or max(100, min(2000, (32 << 20) // nbytes))
        warm = max(5, steps // 10)
        calls = max(50, min(2000, (64 << 20) // nbytes))
        res = {v: [] for v in variants}
        for _ in range(o.reps):
            for v in variants:
                res[v].append(run_once(o, run, pre, env, tmp, sides[v[0]],
                                       sides[v[1]], nbytes, steps, warm, calls))
        med = {v: {k: statistics.median(r[k] for r in res[v]) for k in res[v][0]}
               for v in variants}
        # Alone, a call's best time is its cost without the other jobs of
        # the machine in the way; the median shows how much they were.
        best = {v: {k: min(r[k] for r in res[v]) for k in res[v][0]} for v in variants}
        base = med[("C", "C")]["per_step_us"]
        for v in variants:
            m = med[v]
            print(f"{nbytes:>8} {steps:>5} {v[0] + '->' + v[1]:>7} "
                  f"{m['per_step_us']:>9.1f} {min(r['per_step_us'] for r in res[v]):>8.1f} "
                  f"{100 * (m['per_step_us'] - base) / base:>+6.1f}% | "
                  f"{m['solo_step_us']:>8.2f} {best[v]['solo_step_us']:>8.2f} "
                  f"{m['get_us']:>9.2f} {best[v]['get_us']:>9.2f}")
        for name, t in (("median", med), ("best", best)):
            c, py = t[("C", "C")], t[("Py", "Py")]
            extra = (py["solo_step_us"] - c["solo_step_us"]) + (py["get_us"] - c["get_us"])
            ref = t[("C", "C")]["per_step_us"]
            print(f"{nbytes:>8}: Python's own cost per step ({name}s; producer step "
                  f"+ consumer get, Py - C): {extra:+.2f} us = {100 * extra / ref:+.2f}% "
                  f"of the C pipeline's step ({ref:.1f} us)")


if __name__ == "__main__":
    main()
