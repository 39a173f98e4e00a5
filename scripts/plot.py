#!/usr/bin/python3
"""Turn Coupler's numbers into PNG figures.

  scripts/plot.py bench RESULTS.csv OUT.png   time against message size, one
                                              panel per shape (like Kang et
                                              al.'s Figure 4), from cpl-bench
                                              --csv output
  scripts/plot.py model CPL_MODEL OUT.png     the model's ratios against p
                                              (root/fc and intra-ring/ring),
                                              running the cpl-model binary

Needs Debian's python3 with matplotlib (apt-get install python3-matplotlib);
run it as scripts/plot.py so /usr/bin/python3 is used.
"""
import csv
import subprocess
import sys
from collections import defaultdict


def need_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        sys.exit("plot.py: matplotlib is missing (apt-get install python3-matplotlib)")


def bench(csv_path, out):
    plt = need_matplotlib()
    rows = list(csv.DictReader(open(csv_path)))
    if not rows:
        sys.exit(f"plot.py: {csv_path} has no rows")
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    cols = min(3, len(shapes))
    nrows = (len(shapes) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 4 * nrows), squeeze=False)
    for ax, shape in zip(axes.flat, shapes):
        series = defaultdict(list)
        bound = {}
        for r in rows:
            if r["shape"] != shape:
                continue
            k = int(r["bytes"])
            series[r["algorithm"]].append((k, float(r["median_s"])))
            if float(r["bound_s"]) > 0:
                bound[k] = float(r["bound_s"])
        for alg, pts in series.items():
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=alg)
        if bound:
            ks = sorted(bound)
            ax.plot(ks, [bound[k] for k in ks], "k--", label="bound p*k/B")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{shape} ({rows[0]['kind']})")
        ax.set_xlabel("bytes per process")
        ax.set_ylabel("median time (s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(shapes):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


def model(binary, out):
    plt = need_matplotlib()
    text = subprocess.run([binary, "--max", "1024"], check=True, capture_output=True,
                          text=True).stdout
    section, t1, t2 = None, defaultdict(list), defaultdict(list)
    for line in text.splitlines():
        if line.startswith("Table I "):
            section = 1
        elif line.startswith("Table II"):
            section = 2
        elif line.startswith("Circulant"):
            section = None
        f = line.split()
        if not f or not f[0].isdigit():
            continue
        p, q = int(f[0]), int(f[1])
        kind = "p = q" if p == q else ("p > q" if p > q else "p < q")
        if section == 1:
            t1[kind].append((p, float(f[8])))
        elif section == 2:
            t2[kind].append((p, float(f[5])))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for kind, pts in t1.items():
        a.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=kind)
    a.set_title("fully connected: root gathering / fc (model, 1 MiB)")
    for kind, pts in t2.items():
        b.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=kind)
    b.set_title("ring: intra-group ring / Kang ring (real step counts)")
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("p (senders)")
        ax.set_ylabel("ratio")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("bench", "model"):
        sys.exit(__doc__)
    (bench if sys.argv[1] == "bench" else model)(sys.argv[2], sys.argv[3])
