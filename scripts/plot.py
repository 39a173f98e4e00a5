#!/usr/bin/python3
"""Turn Coupler's numbers into PNG figures.

  scripts/plot.py bench RESULTS.csv OUT.png   time against message size, one
                                              panel per shape (like Kang et
                                              al.'s Figure 4), from cpl-bench
                                              --csv output
  scripts/plot.py model CPL_MODEL OUT.png     the model's ratios against p
                                              (root/fc and intra-ring/ring),
                                              running the cpl-model binary
  scripts/plot.py ratio RESULTS.csv OUT.png [BASELINE]
                                              each algorithm's speedup over
                                              BASELINE (default: the CSV's
                                              own baseline) against size
  scripts/plot.py trace TRACE OUT.png         one timeline panel per link
                                              from a CPL_TRACE file (JSON
                                              Lines or chrome:): per
                                              component rank, time waiting
                                              (credit or data), transferring
                                              and, on consumers, computing
  scripts/plot.py fit RESULTS.csv             fit t = a + b k (relative
                                              least squares) per algorithm
                                              whose step and volume counts
                                              are known (lockstep rings,
                                              circulant@step, bruck), print
                                              alpha = a / steps and
                                              beta = b / volume

Rows may carry sweep.sh's leading columns; only the cpl-bench columns are
used.

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


def shape_panels(csv_path):
    """The CSV's rows and one subplot per shape, three to a row."""
    plt = need_matplotlib()
    rows = list(csv.DictReader(open(csv_path)))
    if not rows:
        sys.exit(f"plot.py: {csv_path} has no rows")
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    cols = min(3, len(shapes))
    nrows = (len(shapes) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 4 * nrows), squeeze=False)
    return plt, rows, shapes, fig, axes


def save_panels(fig, axes, used, out):
    """Grid and legend on the used panels, blank the rest, write the PNG."""
    for i, ax in enumerate(axes.flat):
        if i < used:
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        else:
            ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


def bench(csv_path, out):
    plt, rows, shapes, fig, axes = shape_panels(csv_path)
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
    save_panels(fig, axes, len(shapes), out)


def ratio(csv_path, out, baseline=None):
    plt, rows, shapes, fig, axes = shape_panels(csv_path)
    algs = list(dict.fromkeys(r["algorithm"] for r in rows))
    if baseline is not None and baseline not in algs:  # it drew empty panels
        sys.exit(f"plot.py: baseline {baseline} is not in {csv_path} (algorithms: "
                 f"{', '.join(algs)})")
    for ax, shape in zip(axes.flat, shapes):
        t = defaultdict(dict)
        for r in rows:
            if r["shape"] == shape:
                t[r["algorithm"]][int(r["bytes"])] = float(r["median_s"])
        base = baseline
        if base is None:  # the CSV's baseline has ratio 1 everywhere
            base = next((a for a in t if all(abs(float(r["ratio_to_baseline"]) - 1) < 1e-9
                                               for r in rows if r["shape"] == shape
                                               and r["algorithm"] == a)), None)
        if base not in t:
            continue
        for alg, pts in t.items():
            if alg == base:
                continue
            ks = sorted(k for k in pts if k in t[base])
            ax.plot(ks, [t[base][k] / pts[k] for k in ks], marker="o", label=alg)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{shape}: speedup over {base}")
        ax.set_xlabel("bytes per process")
        ax.set_ylabel(f"median({base}) / median(alg)")
    save_panels(fig, axes, len(shapes), out)


def _log2c(n):
    k = 0
    while (1 << k) < n:
        k += 1
    return k


def _counts(kind, alg, p, q):
    """(steps, volume in blocks) of lockstep algorithms, or None."""
    base = alg.split("@")[0]
    step = "@step" in alg
    if kind == "inter":
        pe, qe = p + p % 2, q + q % 2
        if base == "ring-intra":
            return p + q - 1, p + q - 1
        if base == "ring":
            return pe + qe // 2, pe + qe // 2
        if base == "fc" and step and p >= q:
            return 1 + _log2c(p), p
        return None
    if base == "ring":
        return p - 1, p - 1
    if base in ("circulant", "bruck") and (step or base == "bruck"):
        return _log2c(p), p - 1
    return None


def fit(csv_path):
    rows = list(csv.DictReader(open(csv_path)))
    groups = defaultdict(list)
    for r in rows:
        groups[(r["kind"], r["shape"], int(r["p"]), int(r["q"]), r["algorithm"])].append(
            (int(r["bytes"]), float(r["median_s"])))
    alphas, betas = [], []
    print(f"{'kind':6} {'shape':6} {'algorithm':16} {'sizes':>5} {'alpha us':>9} "
          f"{'beta ns/B':>10} {'MB/s':>7}")
    for (kind, shape, p, q, alg), pts in sorted(groups.items()):
        c = _counts(kind, alg, p, q)
        if c is None or len(pts) < 3:
            continue
        n = len(pts)
        # least squares in relative error (weights 1/t^2), so the small
        # sizes, where alpha shows, count as much as the large ones
        w = [1 / (t * t) for _, t in pts]
        sw = sum(w)
        mk = sum(wi * k for wi, (k, _) in zip(w, pts)) / sw
        mt = sum(wi * t for wi, (_, t) in zip(w, pts)) / sw
        sxx = sum(wi * (k - mk) ** 2 for wi, (k, _) in zip(w, pts))
        if sxx == 0:
            continue
        b = sum(wi * (k - mk) * (t - mt) for wi, (k, t) in zip(w, pts)) / sxx
        a = mt - b * mk
        alpha, beta = a / c[0], b / c[1]
        alphas.append(alpha)
        betas.append(beta)
        print(f"{kind:6} {shape:6} {alg:16} {n:5d} {alpha * 1e6:9.1f} {beta * 1e9:10.3f} "
              f"{1e-6 / beta if beta > 0 else float('inf'):7.1f}")
    if not alphas:
        sys.exit("plot.py: no rows of algorithms with known step counts (ring, ring-intra, "
                 "circulant@step, bruck) over 3 or more sizes")
    alphas.sort()
    betas.sort()
    print(f"median: alpha = {alphas[len(alphas) // 2] * 1e6:.1f} us, "
          f"beta = {betas[len(betas) // 2] * 1e9:.3f} ns/B "
          f"({1e-6 / betas[len(betas) // 2]:.1f} MB/s)")


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


def read_trace(path):
    """Spans (link, row, kind, start s, end s, step) from either format."""
    import json
    text = open(path).read().strip()
    spans = []
    if text.startswith("["):  # Chrome trace events, closing bracket optional
        events = json.loads(text.rstrip(",").rstrip("]").rstrip().rstrip(",") + "]")
        names = {e["pid"]: e["args"]["name"] for e in events
                 if e.get("ph") == "M" and e.get("name") == "process_name"}
        for e in events:
            if e.get("ph") != "X":
                continue
            kind = e["name"].split()[0]
            kind = {"send": "transfer", "receive": "transfer"}.get(kind, kind)
            row = f"{names.get(e['pid'], e['pid'])} {e['tid']}"
            spans.append((e["args"]["link"], row, kind, e["ts"] / 1e6,
                          (e["ts"] + e["dur"]) / 1e6, e["args"]["step"]))
        return spans
    for line in text.splitlines():
        r = json.loads(line)
        if r.get("ev") not in ("sent", "received"):
            continue
        t0 = r["ts"] / 1e6
        t1 = t0 + r["wait_s"]
        t2 = t1 + r["transfer_s"]
        row = f"{r['comp']} {r['rank']}"
        spans.append((r["link"], row, "wait", t0, t1, r["step"]))
        spans.append((r["link"], row, "transfer", t1, t2, r["step"]))
        if r.get("compute_s", 0) > 0:
            spans.append((r["link"], row, "compute", t2, t2 + r["compute_s"], r["step"]))
    return spans


def trace(path, out):
    plt = need_matplotlib()
    spans = read_trace(path)
    if not spans:
        sys.exit(f"plot.py: {path} holds no step records")
    t0 = min(s[3] for s in spans)
    links = sorted({s[0] for s in spans})
    colors = {"wait": "#d9d9d9", "transfer": "#1f77b4", "compute": "#2ca02c"}
    fig, axes = plt.subplots(len(links), 1, figsize=(11, 1.2 + 0.45 * 8 * len(links) / 2),
                             squeeze=False)
    for ax, link in zip(axes[:, 0], links):
        mine = [s for s in spans if s[0] == link]
        rows = sorted({s[1] for s in mine})
        for _, row, kind, a, b, _step in mine:
            ax.barh(rows.index(row), b - a, left=a - t0, color=colors.get(kind, "k"),
                    height=0.7, label=kind)
        ax.set_yticks(range(len(rows)), rows)
        ax.set_title(f"link {link}")
        ax.set_xlabel("seconds since the first record")
        handles, labels = ax.get_legend_handles_labels()
        seen = dict(zip(labels, handles))
        ax.legend(seen.values(), seen.keys(), loc="upper right", fontsize=8)
        ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


# What each command reads, for the message when the file is something else.
INPUT = {"bench": "cpl-bench --csv output", "ratio": "cpl-bench --csv output",
         "fit": "cpl-bench --csv output", "trace": "a CPL_TRACE file (JSON Lines or chrome:)",
         "model": "the cpl-model binary"}


def main(cmd):
    if cmd == "bench" and len(sys.argv) == 4:
        bench(sys.argv[2], sys.argv[3])
    elif cmd == "model" and len(sys.argv) == 4:
        model(sys.argv[2], sys.argv[3])
    elif cmd == "ratio" and len(sys.argv) in (4, 5):
        ratio(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
    elif cmd == "trace" and len(sys.argv) == 4:
        trace(sys.argv[2], sys.argv[3])
    elif cmd == "fit" and len(sys.argv) == 3:
        fit(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd in ("-h", "--help"):
        print(__doc__)
        sys.exit(0)
    # A missing file or one of the wrong kind ended in a Python traceback
    # (FileNotFoundError, KeyError: 'shape', JSONDecodeError).
    try:
        main(cmd)
    except OSError as e:
        sys.exit(f"plot.py: {e.filename or sys.argv[2]}: {e.strerror or e}")
    except (KeyError, ValueError) as e:
        what = f"no field {e}" if isinstance(e, KeyError) else str(e)
        sys.exit(f"plot.py: {sys.argv[2]} is not {INPUT.get(cmd, 'what ' + cmd + ' reads')} ({what})")
