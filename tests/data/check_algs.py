#!/usr/bin/python3
"""Run a workflow of data_e2e's algs scenario (tests/data/data_e2e.c:
datasets of 64 B and 1 MiB per producer rank, 3 steps, declared in the
workflow) and check that the progress lines of both ends and every trace
record name the inter-group algorithms the engine ran, and that cpl-run's
dry run foretold the same.

What ran is worked out with cpl-model under the same fixed cost model: auto
chooses for a nominal 64 KiB block with several producer ranks (both groups
must agree, and senders do not know each other's sizes), by each dataset's
real block with one. The old progress line guessed from the largest
dataset's real size; the test refuses shapes where that guess would be
right, so it keeps telling the two apart.

With SIZES (float64 per producer rank, one per dataset; default 8 and
131072) the datasets of at most 64 KiB move together (the batch,
coupler/data/README.md), in one allgather, chosen for the batch's size:
the test then refuses sizes where a forecast of one allgather per dataset
would be right, so it tells the batch's forecast from that one.

usage: check_algs.py CPL_MODEL DATA_E2E P Q DIR [SIZES...] -- CPL_RUN [-- MPIEXEC_ARGS...]
(DIR: where the workflow and the trace go)
"""
import json
import os
import re
import subprocess
import sys

model, exe, p, q, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
dash = sys.argv.index("--")
given = [int(n) for n in sys.argv[6:dash]]
rest = sys.argv[dash + 1:]
cpl_run, launcher = rest[0], rest[1:]  # launcher: "--" and mpiexec's options, if any
STEPS, NOMINAL, BATCH_DATASET_MAX = 3, 64 * 1024, 64 * 1024
sizes = [n * 8 for n in given or [8, 131072]]  # bytes per producer rank, in dataset order
names = [f"d{k}" for k in range(len(sizes))] if given else ["small", "big"]
os.makedirs(out, exist_ok=True)
trace, wf = f"{out}/trace.jsonl", f"{out}/algs.yaml"
with open(wf, "w") as f:
    f.write(f"""name: algs_{p}x{q}
components:
  - name: prod
    nprocs: {p}
    command: ["{exe}", algs{"".join(f", {n}" for n in given)}]
    outputs:
      - name: out
        datasets:
{"".join(f"          - {{name: {k}, type: float64, dims: [{b // 8 * p}]}}{chr(10)}" for k, b in zip(names, sizes))}  - {{name: cons, nprocs: {q}, command: ["{exe}", algs{"".join(f", {n}" for n in given)}], inputs: [in]}}
links:
  - {{from: prod.out, to: cons.in, timeout: 30}}
""")

env = dict(os.environ)
for var in ("CPL_INTER_ALGORITHM", "CPL_INTRA_ALGORITHM"):
    env.pop(var, None)
env.update(CPL_ALPHA="5e-6", CPL_BETA="1e-10", CPL_TUNING_FILE="",
           XDG_CONFIG_HOME=f"{os.path.abspath(out)}/no-config",
           CPL_PROGRESS="1", CPL_TRACE=trace)


def auto(block):
    """What auto takes for p blocks of `block` bytes (cpl-model's column)."""
    out = subprocess.run([model, "--size", str(block), "--shapes", f"{p}:{q}",
                          "--max", str(max(p, q, 2))], env=env, check=True,
                          capture_output=True, text=True).stdout
    rows = [l.split() for l in out.split("Shapes:")[1].splitlines()]
    return [r[-1] for r in rows if r[:2] == [str(p), str(q)]][0]


def joined(blocks):
    """The algorithms of allgathers of these blocks (bytes per rank), in order."""
    ran = []
    for b in blocks:
        a = auto(b if p == 1 else NOMINAL)
        if a not in ran:
            ran.append(a)
    return "+".join(ran)


# The batch: the datasets of at most 64 KiB in all, if two or more.
small = [b for b in sizes if b * p <= BATCH_DATASET_MAX]
if len(small) < 2:
    small = []
want = joined(([sum(small)] if small else []) + [b for b in sizes if b not in small])
if given:
    old_guess = joined(sizes)
    if want == old_guess:
        sys.exit(f"{p}:{q}: auto runs {want}, as one allgather per dataset would: choose sizes "
                 "or a shape where the batch's differs")
else:
    old_guess = auto(max(sizes))
    if want == old_guess:
        sys.exit(f"{p}:{q}: auto runs {want}, which the largest dataset's size also "
                 "gives: choose sizes or a shape where they differ")

dry = subprocess.run([cpl_run, "--dry-run", wf], env=env, capture_output=True, text=True)
sys.stdout.write(dry.stdout)
foretold = re.search(r"^prod\.out->cons\.in +\S+ +auto -> (\S+) for", dry.stdout, re.M)
proc = subprocess.run(["timeout", "-k", "5", "90", cpl_run, wf] + launcher, env=env,
                      capture_output=True, text=True)
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr)
if proc.returncode:
    sys.exit(f"the workflow failed ({proc.returncode})")

bad = []
if dry.returncode or not foretold or foretold.group(1) != want:
    bad.append(f"cpl-run --dry-run foretold {foretold and foretold.group(1)}, want {want}")
lines = []
for comp, verb in (("prod", "sent"), ("cons", "received")):
    mine = re.findall(rf"^\[{comp}\] prod\.out->cons\.in: step \d+ {verb}, .*$", proc.stdout,
                      re.M)
    if not mine:
        bad.append(f"no progress line of {comp}")
    lines += mine
for l in lines:
    if f"(allgather {want})" not in l:
        bad.append(f"progress line names another algorithm than {want}: {l}")

seen = set()
for n, line in enumerate(open(trace).read().splitlines(), 1):
    r = json.loads(line)
    if r["ev"] in ("sent", "received"):
        seen.add((r["comp"], r["rank"], r["ev"], r["step"]))
        if r["mode"] != "allgather" or r["alg"] != want:
            bad.append(f"trace line {n}: mode {r['mode']}, alg {r['alg']!r}, want {want!r}")
expect = {("prod", r, "sent", s) for r in range(p) for s in range(STEPS)}
expect |= {("cons", r, "received", s) for r in range(q) for s in range(STEPS)}
if expect - seen:
    bad.append(f"trace records missing: {sorted(expect - seen)[:3]}")
if bad:
    sys.exit("\n".join(bad[:10]))
print(f"{p}:{q}: dry run, progress ({len(lines)} lines) and trace name {want} "
      f"(the other guess gives {old_guess})")
