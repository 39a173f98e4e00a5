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

usage: check_algs.py CPL_MODEL DATA_E2E P Q DIR -- CPL_RUN [-- MPIEXEC_ARGS...]
(DIR: where the workflow and the trace go)
"""
import json
import os
import re
import subprocess
import sys

model, exe, p, q, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rest = sys.argv[sys.argv.index("--") + 1:]
cpl_run, launcher = rest[0], rest[1:]  # launcher: "--" and mpiexec's options, if any
STEPS, NOMINAL = 3, 64 * 1024
sizes = [8 * 8, 131072 * 8]  # bytes per producer rank, in dataset order (float64)
os.makedirs(out, exist_ok=True)
trace, wf = f"{out}/trace.jsonl", f"{out}/algs.yaml"
with open(wf, "w") as f:
    f.write(f"""name: algs_{p}x{q}
components:
  - name: prod
    nprocs: {p}
    command: ["{exe}", algs]
    outputs:
      - name: out
        datasets:
          - {{name: small, type: float64, dims: [{sizes[0] // 8 * p}]}}
          - {{name: big, type: float64, dims: [{sizes[1] // 8 * p}]}}
  - {{name: cons, nprocs: {q}, command: ["{exe}", algs], inputs: [in]}}
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


ran = []
for b in sizes:
    a = auto(b if p == 1 else NOMINAL)
    if a not in ran:
        ran.append(a)
want = "+".join(ran)
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
      f"(the largest dataset alone gives {old_guess})")
