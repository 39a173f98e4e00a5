"""The Python side of the overhead benchmark: what steps.c does, with
coupler and NumPy (same arguments, same output):
    steps.py BYTES STEPS WARMUP CALLS"""

import sys

import numpy as np

import coupler


def main():
    nbytes, steps, warmup, calls = map(int, sys.argv[1:5])
    n = nbytes // 8
    ctx = coupler.init()
    c = ctx.ccomm
    r, p = c.rank, c.size
    if ctx.name.startswith("prod"):
        start, stop = n * r // p, n * (r + 1) // p
        block = np.arange(start, stop, dtype=np.float64)
        if calls > 0:  # port `solo` has no link: nothing moves
            with ctx.output("solo") as out:
                t0 = coupler.wtime()
                for _ in range(calls):
                    out.begin_step()
                    out.put("x", block, dims=(n,), start=(start,))
                    out.end_step()
                if r == 0:
                    print(f"steps: solo_step_us={1e6 * (coupler.wtime() - t0) / calls:.3f}",
                          flush=True)
        with ctx.output("out") as out:
            for _ in range(steps):
                out.begin_step()
                out.put("x", block, dims=(n,), start=(start,))
                out.end_step()
    else:
        buf = np.empty(n)
        seen = 0
        with ctx.input("in") as inp:
            for step in inp:
                if seen == 0 and r == 0 and calls > 0:
                    c0 = coupler.wtime()
                    for _ in range(calls):
                        step.get("x", out=buf)
                    print(f"steps: get_us={1e6 * (coupler.wtime() - c0) / calls:.3f}",
                          flush=True)
                step.get("x", out=buf)
                seen += 1
                if seen == warmup:
                    t0 = coupler.wtime()
            t = coupler.wtime() - t0
        if buf[-1] != n - 1:
            raise RuntimeError("wrong data")
        if r == 0:
            print(f"steps: per_step_us={1e6 * t / (seen - warmup):.3f}", flush=True)
    ctx.finalize()


if __name__ == "__main__":
    main()
