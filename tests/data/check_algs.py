#!/usr/bin/python3
"""Run the algs workflow (tests/data/data_e2e.c: datasets of 64 B and 1 MiB
per producer rank, 3 steps) and check that the producer's progress lines and
every trace record name the inter-group algorithms the engine ran.

What ran is worked out with cpl-model under the same fixed cost model: auto
chooses for a nominal 64 KiB block with several producer ranks (both groups
must agree, and senders do not know each other's sizes), by each dataset's
real block with one. The old progress line guessed from the largest
dataset's real size; the test refuses shapes where that guess would be
right, so it keeps telling the two apart.

usage: check_algs.py CPL_MODEL P Q TRACE -- CPL_RUN ARGS...
"""
import json
import os
import re
import subprocess
import sys

model, p, q, trace = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
run = sys.argv[sys.argv.index("--") + 1:]
STEPS, NOMINAL = 3, 64 * 1024
sizes = [8 * 8, 131072 * 8]  # bytes per producer rank, in dataset order

env = dict(os.environ)
for var in ("CPL_INTER_ALGORITHM", "CPL_INTRA_ALGORITHM"):
    env.pop(var, None)
env.update(CPL_ALPHA="5e-6", CPL_BETA="1e-10", CPL_TUNING_FILE="",
           XDG_CONFIG_HOME=os.path.dirname(os.path.abspath(trace)) + "/no-config",
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

proc = subprocess.run(["timeout", "-k", "5", "90"] + run, env=env,
                      capture_output=True, text=True)
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr)
if proc.returncode:
    sys.exit(f"the workflow failed ({proc.returncode})")

bad = []
lines = re.findall(r"^\[prod\] prod\.out->cons\.in: step \d+ sent, .*$", proc.stdout, re.M)
if not lines:
    bad.append("no progress line of the producer")
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
print(f"{p}:{q}: progress ({len(lines)} lines) and trace name {want} "
      f"(the largest dataset alone gives {old_guess})")
