#!/usr/bin/python3
"""gray-scott analysis in Python: what analysis.c does, with NumPy and
matplotlib (configs/gray_scott_python.yaml runs it with the C simulation).

    analysis.py [--out DIR] [--image-every M|-1] [--image-size PX]
                [--threshold X] [--dataset NAME] [--port NAME]

Every step, each rank reads a slab of rows of V (converted to float32 by
Coupler, straight into a preallocated NumPy array), the ranks reduce min,
max, mean, standard deviation and the fraction of cells above the
threshold, and rank 0 appends them to DIR/stats.csv (the C analysis's
format). Rank 0 also reads the whole field to draw DIR/V_<step>.png with
matplotlib every M-th step and at the last (M -1: no pictures, and
rank 0 reads only its rows).

The ranks talk through mpi4py when an mpi4py built on Coupler's MPI is
installed, else through coupler.Comm; the numbers are the same.
"""

import argparse
import os
import sys

try:
    import coupler
except ImportError:
    # Not installed and no PYTHONPATH: the default build tree, build/ at
    # the top of the repository (where configs/gray_scott_python.yaml
    # finds the simulation too).
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "build", "python"))
    try:
        import coupler
    except ImportError as e:
        sys.exit(f"analysis.py: cannot import the coupler package ({e}); "
                 "set PYTHONPATH to <build>/python or to the installed "
                 "site-packages (README, 'Python components')")
import numpy as np


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="out")
    p.add_argument("--image-every", type=int, default=4, metavar="M",
                   help="picture every M steps and of the last (0: only "
                   "the last, -1: no pictures)")
    p.add_argument("--image-size", type=int, default=512, metavar="PX",
                   help="pictures at least PX pixels along the longer side "
                   "(1 to 8192)")
    p.add_argument("--threshold", type=float, default=0.25,
                   help="threshold of the frac_above column")
    p.add_argument("--dataset", default="V")
    p.add_argument("--port", default="fields")
    o = p.parse_args(argv)
    # The C analysis's ranges: -1 was taken for "only the last picture".
    if o.image_every < -1:
        p.error(f"--image-every must be -1 or more, got {o.image_every}")
    if not 1 <= o.image_size <= 8192:
        p.error(f"--image-size must be 1 to 8192, got {o.image_size}")
    return o


class Reducer:
    """min/max/sum over the component's ranks: mpi4py if it can be used
    with Coupler's MPI, else coupler's own helper."""

    def __init__(self, ctx):
        if coupler.mpi4py_usable():
            from mpi4py import MPI
            comm = ctx.comm
            self.rank, self.size = comm.Get_rank(), comm.Get_size()
            ops = {"sum": MPI.SUM, "min": MPI.MIN, "max": MPI.MAX}
            self.reduce = lambda x, op: comm.allreduce(float(x), op=ops[op])
            self.via = "mpi4py"
        else:
            comm = ctx.ccomm
            self.rank, self.size = comm.rank, comm.size
            self.reduce = lambda x, op: float(comm.allreduce(np.float64(x), op))
            self.via = "coupler.Comm"


def my_rows(ny, rank, size):
    """Rows [r0, r0 + nr) of ny split near-equally, as analysis.c does."""
    r0 = rank * (ny // size) + min(rank, ny % size)
    return r0, ny // size + (rank < ny % size)


def stats(red, slab, total, threshold):
    x = slab.astype(np.float64).ravel()
    lo = red.reduce(x.min() if x.size else np.inf, "min")
    hi = red.reduce(x.max() if x.size else -np.inf, "max")
    mean = red.reduce(x.sum(), "sum") / total
    above = red.reduce(np.count_nonzero(x > threshold), "sum") / total
    # Second pass around the global mean: no cancellation in the variance.
    std = np.sqrt(red.reduce(((x - mean) ** 2).sum(), "sum") / total)
    return lo, hi, mean, std, above


def picture(path, field, lo, hi, min_px):
    """field as a viridis PNG, scaled to [lo, hi], upscaled by an integer
    factor to at least min_px pixels along its longer side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    longer = max(field.shape)
    scale = 1 if longer >= min_px else -(-min_px // longer)
    big = np.kron(field, np.ones((scale, scale), dtype=field.dtype))
    plt.imsave(path, big, cmap="viridis", vmin=lo, vmax=hi if hi > lo else lo + 1)


def main(argv):
    if "-h" in argv or "--help" in argv:
        parse(argv)  # prints the help, exits
    ctx = coupler.init()
    red = Reducer(ctx)
    try:
        o = parse(argv)
    except SystemExit:  # a bad option: end the whole job at once, loudly
        ctx.ccomm.abort(2)
    csv = None
    if red.rank == 0:
        os.makedirs(o.out, exist_ok=True)
        csv = open(os.path.join(o.out, "stats.csv"), "w")
        csv.write("step,iteration,t,min,max,mean,std,frac_above\n")
    pictures = o.image_every >= 0
    slab = whole = None
    last = last_image = -1
    with ctx.input(o.port) as inp:
        for step in inp:
            info = step.inquire(o.dataset)
            if len(info.shape) != 2:
                raise ValueError(f"dataset {o.dataset} is not 2-D: {info}")
            ny, nx = info.shape
            if slab is None:
                dims = (ny, nx)
                r0, nr = my_rows(ny, red.rank, red.size)
                slab = np.empty((nr, nx), dtype=np.float32)
                if red.rank == 0 and pictures:
                    whole = np.empty((ny, nx), dtype=np.float32)
            elif (ny, nx) != dims:
                raise ValueError(f"dataset {o.dataset} changed its dims")
            # Each rank its rows, as float32, into the same array each step.
            step.get(o.dataset, out=slab, start=(r0, 0), count=(nr, nx))
            lo, hi, mean, std, above = stats(red, slab, ny * nx, o.threshold)
            n = step.number
            if red.rank == 0:
                t = float(step.attr("t"))
                iteration = int(step.attr("iteration"))
                csv.write(f"{n},{iteration},{t!r},{lo!r},{hi!r},{mean!r},"
                          f"{std!r},{above!r}\n")
                csv.flush()  # readable while the run goes on
                if pictures:  # the whole field, for a picture now or at the end
                    step.get(o.dataset, out=whole)
                image = o.image_every > 0 and n % o.image_every == 0
                if image:
                    picture(os.path.join(o.out, f"{o.dataset}_{n:04d}.png"),
                            whole, lo, hi, o.image_size)
                    last_image = n
                print(f"analysis.py: step {n:3d}  t {t:7.0f}  {o.dataset} min "
                      f"{lo:.3f} max {hi:.3f} mean {mean:.4f} std {std:.4f}  "
                      f"{100 * above:4.1f}% > {o.threshold:g}"
                      f"{'  (picture)' if image else ''}", flush=True)
            last = n
    if red.rank == 0:
        if pictures and last >= 0 and last_image != last:  # the final state
            picture(os.path.join(o.out, f"{o.dataset}_{last:04d}.png"),
                    whole, lo, hi, o.image_size)
        csv.close()
        print(f"analysis.py: end of stream after step {last} (ranks talk "
              f"through {red.via}); statistics in {o.out}/stats.csv, "
              f"pictures {o.out}/{o.dataset}_*.png", flush=True)
    ctx.finalize()


if __name__ == "__main__":
    main(sys.argv[1:])
