"""Checks one run of the Gray-Scott workflow with the Python analysis
(tests/python/gray_scott_small.yaml.in), reading the HDF5 sink's file with
h5py (Debian's serial python3-h5py):
    check_gray_scott.py OUTDIR STEPS IMAGE_EVERY IMAGE_SIZE THRESHOLD
1. OUTDIR/stats.csv has the C analysis's header and one line per step
   whose statistics match those recomputed from V of that step in
   OUTDIR/gray_scott.h5 (as float32, as the analysis reads it), with the
   step's iteration and t attributes.
2. OUTDIR/V_<step>.png exist for steps 0, M, 2M, ... and the last (M 0:
   the last only; M -1: none), no others; each is at least IMAGE_SIZE pixels along its longer side and is
   the viridis picture of that step's V (not another step's).
"""

import csv
import os
import sys

import h5py
import numpy as np
from matplotlib import cm
from matplotlib.image import imread

out, steps, every, size, threshold = sys.argv[1], *map(int, sys.argv[2:5]), float(sys.argv[5])
failures = []

with h5py.File(os.path.join(out, "gray_scott.h5"), "r") as f:
    groups = sorted(g for g in f if g.startswith("step_"))
    if groups != [f"step_{s:06d}" for s in range(steps)]:
        failures.append(f"sink groups {groups}")
    fields = {s: f[f"step_{s:06d}/V"][()].astype(np.float32) for s in range(steps)}
    attrs = {s: (int(f[f"step_{s:06d}"].attrs["iteration"]),
                 float(f[f"step_{s:06d}"].attrs["t"])) for s in range(steps)}

with open(os.path.join(out, "stats.csv")) as c:
    rows = list(csv.reader(c))
if rows[0] != "step,iteration,t,min,max,mean,std,frac_above".split(","):
    failures.append(f"header {rows[0]}")
if len(rows) != steps + 1:
    failures.append(f"{len(rows) - 1} lines for {steps} steps")
for row in rows[1:]:
    s, it, t, lo, hi, mean, std, above = map(float, row)
    v = fields[int(s)].astype(np.float64)
    want = [attrs[int(s)][0], attrs[int(s)][1], v.min(), v.max(), v.mean(),
            v.std(), np.count_nonzero(v > threshold) / v.size]
    if not np.allclose([it, t, lo, hi, mean, std, above], want, rtol=1e-9, atol=1e-12):
        failures.append(f"step {int(s)}: {row} != {want}")

# every M-th step and the last; M 0: the last only; M -1: none
want_pics = [] if every < 0 else sorted(set(range(0, steps, every or steps)) | {steps - 1})
pics = sorted(int(p[2:6]) for p in os.listdir(out) if p.startswith("V_") and p.endswith(".png"))
if pics != want_pics:
    failures.append(f"pictures of steps {pics}, want {want_pics}")
for s in pics:
    img = imread(os.path.join(out, f"V_{s:04d}.png"))[..., :3]
    v = fields[s]
    scale = img.shape[0] // v.shape[0]
    if max(img.shape[:2]) < size or img.shape[:2] != (v.shape[0] * scale, v.shape[1] * scale):
        failures.append(f"V_{s:04d}.png is {img.shape}")
        continue
    lo, hi = v.min(), v.max()
    want = cm.viridis((v - lo) / (hi - lo))[..., :3]
    got = img[::scale, ::scale]
    # Matches its own step to colour quantisation, and not the step before.
    err = np.abs(got - want).max()
    if err > 2 / 255:
        failures.append(f"V_{s:04d}.png differs from step {s}'s V by {err:.3f}")
    if s > 0:
        w0 = cm.viridis((fields[s - 1] - fields[s - 1].min()) /
                        (fields[s - 1].max() - fields[s - 1].min()))[..., :3]
        if np.abs(got - w0).max() <= 2 / 255:
            failures.append(f"V_{s:04d}.png also matches step {s - 1}")

for m in failures:
    print(f"check_gray_scott.py: FAIL: {m}", file=sys.stderr)
print(f"check_gray_scott.py: {steps} steps, {len(pics)} pictures: "
      f"{'FAILED' if failures else 'stats.csv and pictures match the HDF5 file'}")
sys.exit(1 if failures else 0)
