#!/usr/bin/python3
"""Check a CPL_TRACE file: every line parses, and every rank of both sides
of the link recorded every step (sent / received, or the Chrome spans).

usage: check_trace.py FILE STEPS PRODUCER_RANKS CONSUMER_RANKS
"""
import json
import sys

path, steps, p, q = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
text = open(path).read()
seen = set()
if text.startswith("["):
    events = json.loads(text.rstrip().rstrip(",") + "]")
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M"
             and e["name"] == "process_name"}
    for e in events:
        if e.get("ph") == "X" and e["name"].split()[0] in ("send", "receive"):
            role = "sent" if e["name"].startswith("send") else "received"
            assert e["dur"] >= 0 and e["args"]["bytes"] >= 0, e
            seen.add((names[e["pid"]], e["tid"], role, e["args"]["step"]))
else:
    for n, line in enumerate(text.splitlines(), 1):
        r = json.loads(line)  # raises on a torn or malformed line
        if r["ev"] in ("sent", "received"):
            assert r["wait_s"] >= 0 and r["transfer_s"] >= 0, f"line {n}: {r}"
            assert r["mode"] in ("allgather", "select"), f"line {n}: {r}"
            seen.add((r["comp"], r["rank"], r["ev"], r["step"]))
want = {("prod", r, "sent", s) for r in range(p) for s in range(steps)}
want |= {("cons", r, "received", s) for r in range(q) for s in range(steps)}
missing = sorted(want - seen)
if missing:
    sys.exit(f"{path}: {len(missing)} records missing, e.g. {missing[:3]}")
print(f"{path}: {len(seen)} step records, all {len(want)} expected present")
