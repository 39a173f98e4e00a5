"""Ports used from several threads at once (coupler/python/README.md).

The producer publishes one step with a float64 array and a structured
array. The consumer reads them from two input ports (a fan-out of the same
port), each in its own thread, converting the structured array with HDF5
on every get, while its main thread builds HDF5 types from dtypes. HDF5 is
not thread-safe: before Coupler serialized its HDF5 calls this crashed
within a second (segfault in H5Tequal). Every value is checked.

First, finalize, which frees every port, must refuse while another
thread is blocked in a call on one (a daemon thread at exit would use
freed memory): a thread waits in begin_step for the producer, which
publishes 1.5 s late.
"""
import sys
import threading
import time

import numpy as np

import coupler

S = np.dtype([("a", "<i4"), ("b", ">f8"), ("c", "<f4", (3,))])
T = np.dtype([("b", "<f4"), ("a", ">i8")])  # a compound conversion of S
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0

ctx = coupler.init()
if ctx.name == "prod":
    A = np.arange(64, dtype=np.float64)
    B = np.zeros(16, dtype=S)
    B["a"] = np.arange(16)
    B["b"] = 0.5 * np.arange(16)
    B["c"] = 1.0
    with ctx.output("out") as out:
        time.sleep(1.5)
        with out.step():
            out.put("A", A)
            out.put("B", B)
    ctx.finalize()
    sys.exit(0)

ports = [ctx.input("in1"), ctx.input("in2")]
results = {}
blocked = threading.Thread(target=ports[0].begin_step)  # the producer is late
blocked.start()
time.sleep(0.2)
try:
    ctx.finalize()
    results["finalize"] = (0, "finalize did not refuse while a thread was in begin_step")
except RuntimeError as e:
    results["finalize"] = (1, None if "still running in other threads" in str(e) else str(e))
# Nor may another port's collective call start meanwhile (the ports share
# the component's communicator): it ran, mixing the two ports' messages.
try:
    ports[1].begin_step()
    results["collective"] = (0, "begin_step on in2 ran while a thread was in in1's")
except RuntimeError as e:
    results["collective"] = (1, None if "another thread is in a collective call" in str(e)
                             else str(e))
blocked.join()
ports[1].begin_step()


def reader(inp, tag):
    a, b = np.empty(64), np.empty(16, T)
    n, bad = 0, None
    end = time.monotonic() + SECONDS
    while time.monotonic() < end and bad is None:
        inp.get("A", out=a)
        inp.get("B", out=b)
        if not (np.array_equal(a, np.arange(64)) and np.array_equal(b["a"], np.arange(16))
                and np.array_equal(b["b"], 0.5 * np.arange(16))):
            bad = f"wrong data after {n} gets"
        n += 1
    results[tag] = (n, bad)


threads = [threading.Thread(target=reader, args=(p, f"in{i + 1}")) for i, p in enumerate(ports)]
for t in threads:
    t.start()
made = 0
while any(t.is_alive() for t in threads):  # HDF5 types built with the GIL held
    dt, size = coupler._core.h5type_roundtrip(np.dtype([("x", ">f8"), ("y", "<i2", (2,))]))
    made += 1
for t in threads:
    t.join()
for p in ports:
    p.end_step()
    assert p.begin_step() is None  # end of stream
    p.close()
ctx.finalize()
failed = [f"{tag}: {bad}" for tag, (n, bad) in results.items() if bad or n == 0]
print(f"threads: {results}, {made} types built in the main thread:",
      "FAILED " + "; ".join(failed) if failed else "passed", flush=True)
sys.exit(1 if failed else 0)
