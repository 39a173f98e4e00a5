"""End-to-end test of the Python package, one program for every Python
component of a workflow launched by cpl-run (tests/python/*.yaml.in):
    python3 e2e.py SCENARIO
The component name says the role: prod* publish, cons* consume. Scenarios
shared with tests/data/data_e2e.c (shapes, overlap, timeout_consumer)
produce and check exactly what the C program does, so either side of a
link may be C or Python. Like data_e2e, every process ends with a sum of
failures over MPI_COMM_WORLD, and exits 1 if any.
"""

import os
import signal
import sys
import threading
import time

import numpy as np

import coupler

failures = 0
name = "?"
wrank = 0


def check(cond, msg):
    global failures
    if not cond:
        print(f"FAIL {name} rank {wrank}: {msg}", file=sys.stderr, flush=True)
        failures += 1


# ------------------------------------------------- data_e2e's datasets

def val(step, ds_id, idx):
    """Element idx (row-major global index) of dataset ds_id at step."""
    return float(step * 100003 + ds_id * 7919) + np.asarray(idx, dtype=np.float64)


def split(n, parts, i, skip):
    """data_e2e's irregular split: part k weighs k+1, `skip` gets nothing."""
    w = before = mine = 0
    for k in range(parts):
        wk = 0 if k == skip else k + 1
        if k < i:
            before += wk
        if k == i:
            mine = wk
        w += wk
    start = n * before // w
    return start, n * (before + mine) // w - start


# name, id, dims, dtype (a1 int32, b2 float64, c3 uint16, late float64)
DSETS = [("a1", 0, (37,), np.int32), ("b2", 1, (13, 11), np.float64),
         ("c3", 2, (4, 7, 5), np.uint16), ("late", 3, (5,), np.float64)]


def blocks(ds, r, p, step):
    _, i, dims, _ = ds
    start, count = [0] * len(dims), list(dims)
    if i == 0:
        if step >= 3:
            start[0], count[0] = split(dims[0], p, p - 1 - r, -1)
        else:
            start[0], count[0] = split(dims[0], p, r, p - 1 if p > 1 else -1)
    elif i == 1:
        pr = max(k for k in range(1, p + 1) if k * k <= p and p % k == 0)
        pc = p // pr
        start[0], count[0] = split(dims[0], pr, r // pc, -1)
        start[1], count[1] = split(dims[1], pc, r % pc, -1)
    elif i == 2:
        start[1], count[1] = split(dims[1], p, r, -1)
    elif r != 0:
        count[0] = 0
    return start, count


def expected(ds, step):
    """The whole global array of a dataset at a step, in its dtype."""
    _, i, dims, dt = ds
    v = val(step, i, np.arange(int(np.prod(dims)))).reshape(dims)
    if dt == np.uint16:
        return (v.astype(np.int64) & 0xFFFF).astype(dt)
    return v.astype(dt)


def publish(out, step, r, p):
    with out.step():
        for ds in DSETS[:4 if step >= 3 else 3]:
            start, count = blocks(ds, r, p, step)
            whole = expected(ds, step)
            box = tuple(slice(s, s + c) for s, c in zip(start, count))
            # A view of the whole array: not contiguous for most blocks, so
            # both the zero-copy and the copying path of put() run.
            out.put(ds[0], whole[box], dims=ds[2], start=start)
        out.attr("time", 0.5 * step)
        out.attr("units", np.array(b"kelvin", dtype="S6"), dataset="b2")
        # Interleaved, one set again (as data_e2e.c): a dataset's
        # attributes keep the order in which they were first set.
        out.attr("y", np.int32(1), dataset="a1")
        out.attr("scale", np.int32(2), dataset="b2")
        out.attr("x", np.int32(1), dataset="a1")
        out.attr("y", np.int32(2), dataset="a1")


def check_step(inp, step):
    infos = inp.datasets()
    check(len(infos) == (4 if step >= 3 else 3), f"step {step}: {len(infos)} datasets")
    for ds in DSETS[:len(infos)]:
        info = inp.inquire(ds[0])
        check(info.shape == ds[2] and info.dtype == np.dtype(ds[3]),
              f"{ds[0]}: {info}")
        want = expected(ds, step)
        whole = inp.get(ds[0], dtype=np.float64)
        check(np.array_equal(whole, want.astype(np.float64)),
              f"step {step} {ds[0]}: whole array as float64")
        native = inp.get(ds[0])  # stored type
        check(native.dtype == np.dtype(ds[3]) and np.array_equal(native, want),
              f"step {step} {ds[0]}: stored type")
        s = [d // 3 for d in ds[2]]
        c = [d - d // 3 - d // 4 for d in ds[2]]
        sub = inp.get(ds[0], start=s, count=c)
        box = tuple(slice(a, a + b) for a, b in zip(s, c))
        check(sub.shape == tuple(c) and np.array_equal(sub, want[box]),
              f"step {step} {ds[0]}: sub-box")
    f = np.empty((13, 11), dtype=np.float32)
    got = inp.get("b2", out=f)  # into a given array, converted
    check(got is f and np.array_equal(f, expected(DSETS[1], step).astype(np.float32)),
          "float32 conversion into out")
    ro = np.empty((13, 11), dtype=np.float32)
    ro.flags.writeable = False
    for bad, says in ((ro, "read-only"), (np.empty((13, 22), np.float32)[:, ::2], "C-contiguous"),
                      (np.empty(12, np.float32), "out has 12 elements, the box 143")):
        try:
            inp.get("b2", out=bad)
            check(False, f"get into an out that {says}: no error")
        except ValueError as e:  # where, as Coupler's own messages say it
            check(says in str(e) and f'link prod.out->cons.in, step {step}, dataset "b2"'
                  in str(e), f"get into an out that {says}: {e}")
    check(inp.attr("time") == 0.5 * step, f"step {step}: time")
    check([a.name for a in inp.attrs("b2")] == ["units", "scale"], "b2 attributes")
    check([a.name for a in inp.attrs("a1")] == ["y", "x"] and inp.attr("y", dataset="a1") == 2,
          "a1 attributes")
    check(inp.attr("units", dataset="b2") == b"kelvin", "units")
    check(inp.attrs()[0].size == 1 and inp.attrs()[0].dtype == np.float64,
          "time attribute info")


# --------------------------------------------------------- scenarios

def shapes(ctx, producer, r, p):
    if producer:
        with ctx.output("out") as out:
            for s in range(5):
                publish(out, s, r, p)
    else:
        seen = []
        prev = None
        with ctx.input("in") as inp:
            for step in inp:
                seen.append(step.number)
                check_step(step, step.number)
                if prev is not None:  # a Step kept past its step reads nothing
                    try:
                        prev.get("a1")
                        check(False, f"step {prev.number} read during step {step.number}")
                    except ValueError as e:
                        check(f"step {prev.number} is over" in str(e), str(e))
                prev = step
            check(inp.ended and inp.begin_step() is None, "end of stream sticks")
        check(seen == [0, 1, 2, 3, 4], f"steps {seen}")


def wrong_order(ctx, producer, r, p):
    """A begin call inside a step (a StateError, caught; or a TypeError)
    takes no step: iteration goes on to the next step (it yielded the
    open step again, forever). The consumer's side; the producer runs
    shapes."""
    seen = []
    with ctx.input("in") as inp:
        for step in inp:
            seen.append(step.number)
            if len(seen) > 5:
                break
            for call in (lambda: inp.try_step(0), inp.begin_step,
                         lambda: inp.begin_step(coupler.STEP_LATEST)):
                try:
                    call()
                    check(False, f"step {step.number}: a begin call in a step")
                except coupler.StateError as e:
                    check("still open" in str(e), f"begin in a step: {e}")
            try:  # any other exception of a begin call alike
                inp.begin_step("latest")
                check(False, "begin_step('latest') accepted")
            except TypeError:
                pass
    check(seen == [0, 1, 2, 3, 4], f"steps {seen}")


def stats_index(ctx, producer, r, p):
    """Output.stats(link) takes the link's position in links() (its
    "index"), not the workflow's link number ("link"): with the port's
    links numbered 1 and 2, stats(l["link"]) read the other link's
    counters or failed. fanout.yaml.in: link 2 offers every 2nd step."""
    if producer:
        ctx.output("other").close()
        with ctx.output("out") as out:
            for s in range(4):
                with out.step():
                    out.put("x", np.full(2, float(s)))
            links = out.links()
            check([(l["index"], l["link"], l["peer_port"]) for l in links] ==
                  [(0, 1, "in1"), (1, 2, "in2")], f"links {links}")
            skipped = {l["peer_port"]: out.stats(l["index"])["skipped"] for l in links}
            check(skipped == {"in1": 0, "in2": 2}, f"skipped by link {skipped}")
        return
    ins = {port: ctx.input(port) for port in ("in0", "in1", "in2")}
    # each link's steps, then each one's end (the producer's close drains
    # every link before it ends the streams)
    for port, want in (("in0", []), ("in1", [0, 1, 2, 3]), ("in2", [0, 2])):
        seen = []
        for _ in want:
            seen.append(ins[port].begin_step())
            ins[port].end_step()
        check(seen == want, f"{port}: steps {seen}")
    for port, inp in ins.items():
        check(inp.begin_step() is None, f"{port}: end of stream")
        inp.close()


def overlap(ctx, producer, r, p):
    """Overlapping blocks: an exception on both sides, Coupler's message."""
    if producer:
        out = ctx.output("out")
        out.begin_step()
        out.put("x", np.zeros(6), dims=(10,), start=(0 if r == 0 else 4,))
        try:
            out.end_step()
            check(False, "end_step accepted overlapping blocks")
        except coupler.ShapeError as e:
            check('port prod.out, step 0: dataset "x"' in str(e) and
                  "rank 0, [0:6], and rank 1, [4:10], overlap" in str(e),
                  f"message: {e}")
            check(type(e) is coupler.ShapeError and e.call == "cpl_output_end_step",
                  f"status {e.status} call {e.call}")
            if r == 0:
                print(f"producer: {e}")
        out.close()
    else:
        inp = ctx.input("in")
        for attempt in range(2):  # the failure is sticky
            try:
                inp.begin_step()
                check(False, "begin_step after a producer failure")
            except coupler.ShapeError as e:
                check("producer: port prod.out, step 0" in str(e), f"consumer: {e}")
                if r == 0 and attempt == 0:
                    print(f"consumer: {e}")
        inp.close()


def timeout_consumer(ctx, producer, r, p):
    """C producer late by 3 s, link timeout 1 s: TimeoutError (also the
    built-in TimeoutError) naming link, rank and step; a retry succeeds."""
    inp = ctx.input("in")
    timeouts = 0
    while True:
        try:
            step = inp.begin_step()
            break
        except TimeoutError as e:
            check(isinstance(e, coupler.TimeoutError), "class")
            if timeouts == 0 and r == 0:
                m = str(e)
                check("link prod.out->cons.in" in m and "receiver 0" in m and
                      "step after -1" in m and "within 1 s" in m, f"message: {m}")
                print(f"consumer timed out as expected: {m}")
            timeouts += 1
    check(step == 0 and timeouts >= 1, f"step {step} after {timeouts} timeouts")
    n = 0
    while step is not None:
        x = inp.get("x")
        check(np.array_equal(x, val(step, 9, np.arange(x.size))), f"x of step {step}")
        n += 1
        inp.end_step()
        step = inp.begin_step()
    check(n == 12, f"{n} steps")
    inp.close()


# Every dtype with an HDF5 equivalent, through a link and back, exactly.
DTYPES = ["i1", "u1", "i2", "u2", "<i4", ">i4", "u4", "i8", ">u8", "f2", "f4",
          ">f8", "g", "c8", ">c16", "?", "S7", "V5",
          [("a", "<i4"), ("b", "<f8", (3,)), ("c", "S2")],
          np.dtype([("x", "u1"), ("y", "<f4")], align=True)]


def typed(i, dt, n, step):
    """Deterministic values of dtype dt: n elements."""
    dt = np.dtype(dt)
    raw = (np.arange(n * dt.itemsize, dtype=np.int64) * 7 + i * 13 + step) % 251
    a = raw.astype(np.uint8).view(dt) if dt.kind in "VS" else None
    if dt.kind == "b":
        return (np.arange(n) + step) % 3 == 0
    if dt.kind in "iu":
        return (np.arange(n) * 37 + step + i).astype(dt)
    if dt.kind in "fc":
        v = np.arange(n) * 0.25 - 3 + step
        return (v + 1j * v if dt.kind == "c" else v).astype(dt)
    if dt.fields:
        a = np.zeros(n, dtype=dt)
        for k, f in enumerate(dt.names):
            sub = dt.fields[f][0]
            base = sub.base if sub.subdtype else sub
            shape = (n,) + sub.shape
            cnt = int(np.prod(shape))
            a[f] = typed(i * 10 + k, base, cnt, step).reshape(shape)
        return a
    return a


def dtypes(ctx, producer, r, p):
    n = 6
    if producer:
        with ctx.output("out") as out:
            for s in range(2):
                with out.step():
                    for i, dt in enumerate(DTYPES):
                        a = typed(i, dt, n * p, s)[r * n:(r + 1) * n]
                        out.put(f"d{i}", a, dims=(n * p,), start=(r * n,))
                    out.attr("vec", np.arange(5, dtype=">i2"))
                    out.attr("note", "ünïcode as UTF-8")
                    out.attr("z", np.complex64(1 - 2j), dataset="d0")
    else:
        with ctx.input("in") as inp:
            for step in inp:
                s = step.number
                for i, dt in enumerate(DTYPES):
                    want = typed(i, dt, n * p, s)
                    info = inp.inquire(f"d{i}")
                    got = inp.get(f"d{i}")
                    check(info.dtype == want.dtype and got.dtype == want.dtype,
                          f"d{i}: dtype {info.dtype} / {got.dtype}, want {want.dtype}")
                    check(got.tobytes() == want.tobytes(), f"d{i} {dt}: values")
                # Conversions HDF5 does: int -> float, big -> little endian.
                check(np.array_equal(inp.get("d2", dtype="f8"), typed(2, "i2", n * p, s)),
                      "int16 -> float64")
                check(np.array_equal(inp.get("d11", dtype="<f4"),
                                     typed(11, ">f8", n * p, s).astype("f4")),
                      "big-endian float64 -> float32")
                check(np.array_equal(inp.attr("vec"), np.arange(5)), "vec")
                check(inp.attr("note").decode() == "ünïcode as UTF-8", "note")
                check(inp.attr("z", dataset="d0") == np.complex64(1 - 2j), "complex attr")
                try:
                    inp.get("d16", dtype="f8")  # bytes -> float: no conversion
                    check(False, "S7 -> float64 accepted")
                except coupler.TypeMismatchError as e:
                    check("d16" in str(e), f"conversion message: {e}")
                try:
                    inp.get("nope")
                    check(False, "unknown dataset")
                except coupler.Error as e:
                    check("nope" in str(e), f"unknown dataset: {e}")
                try:  # it was "TypeError: start"
                    inp.get("d0", start=0, count=5)
                    check(False, "start=0 accepted")
                except TypeError as e:
                    check('dataset "d0": start must be a sequence of 1 integer, not int'
                          in str(e), f"start=0: {e}")
                # A box outside the array: Coupler's error, not the
                # allocation of a result that size (it was MemoryError).
                try:
                    inp.get("d0", start=(0,), count=(10**12,))
                    check(False, "box outside the array accepted")
                except coupler.ArgumentError as e:
                    check("lies outside" in str(e) and "step %d" % s in str(e),
                          f"box outside: {e}")
                except Exception as e:  # noqa: BLE001 - report the wrong class
                    check(False, f"box outside: {type(e).__name__}: {e}")
                try:
                    inp.get("d1", out=np.empty(3, dtype="u1"))
                    check(False, "small out accepted")
                except ValueError as e:
                    check("elements" in str(e), f"out size: {e}")


def uncaught(ctx, producer, r, p):
    """An exception nobody catches, in one consumer rank: coupler's hook
    aborts the job at once instead of leaving the rest waiting."""
    with ctx.input("in") as inp:
        for step in inp:
            if r == 0:
                raise RuntimeError("deliberate failure in the consumer")
    check(False, "the job went on after an uncaught exception")


def select(ctx, producer, r, p):
    """Each consumer rank reads only its rows of every dataset (step 0-1),
    then two overlapping boxes of b2 (step 2), then asks for the latest
    step; outside its boxes is an error; bytes received are its rows."""
    if producer:
        with ctx.output("out") as out:
            for s in range(5):
                publish(out, s, r, p)
        return
    inp = ctx.input("in")
    # one box not in a list: a message that says what select takes (it
    # was "object of type 'int' has no len()")
    try:
        inp.select(((0, 0), (2, 3)))
        check(False, "select of a box not in a list accepted")
    except TypeError as e:
        check("select: boxes is a list of (start, count) pairs" in str(e), f"select: {e}")
    inp.select_rows(r, p)
    for s in range(2):
        check(inp.begin_step() == s, f"step {s}")
        for ds in DSETS[:3]:
            n = ds[2][0]
            lo, c = n // p * r + min(r, n % p), n // p + (r < n % p)
            start, count = [lo] + [0] * (len(ds[2]) - 1), [c] + list(ds[2][1:])
            if c:
                got = inp.get(ds[0], start=start, count=count)
                check(np.array_equal(got, expected(ds, s)[lo:lo + c]),
                      f"step {s} {ds[0]}: rows {lo}:{lo + c}")
        if r > 0:
            try:
                inp.get("b2", start=(0, 0), count=(1, 1))
                check(False, "a get outside the selected rows was accepted")
            except coupler.ArgumentError as e:
                check("not inside the boxes this rank selected" in str(e), str(e))
        inp.end_step()
    inp.select([((r, 2), (6, 6)), ((r + 3, 0), (6, 4))], dataset="b2")
    inp.select([], dataset="c3", ndims=3)  # none of it: no box to tell the dims
    check(inp.begin_step() == 2, "step 2")
    try:
        inp.get("c3", start=(0, 0, 0), count=(1, 1, 1))
        check(False, "a get of c3, selected empty, was accepted")
    except coupler.ArgumentError as e:
        check("not inside the boxes this rank selected (0 pieces" in str(e), str(e))
    b2 = expected(DSETS[1], 2)
    check(np.array_equal(inp.get("b2", start=(r, 2), count=(6, 6)), b2[r:r + 6, 2:8]),
          "first box of b2")
    check(np.array_equal(inp.get("b2", start=(r + 3, 0), count=(6, 4)), b2[r + 3:r + 9, 0:4]),
          "second box of b2")
    inp.end_step()
    st = inp.stats()
    # selections went twice: the rows before step 0, the boxes before step 2
    check(st["steps"] == 3 and st["bytes"] > 0 and st["selections"] == 2, f"stats {st}")
    step = inp.begin_step(want=coupler.STEP_LATEST)
    check(step is not None and step >= 3, f"latest: {step}")
    inp.end_step()
    inp.close()


def interrupted(ctx, producer, r, p):
    """Ctrl-C (KeyboardInterrupt) while the consumer waits in begin_step
    takes effect as the wait returns with a step: that step must not be
    lost, whether the iterator or the program called begin_step: a new
    `for` loop starts with it."""
    if producer:
        with ctx.output("out") as out:
            for s in range(4):
                if s < 2:
                    time.sleep(2.0)  # the consumer waits; its signal comes at 0.3 s
                with out.step():
                    out.put("x", np.full(3, float(s)))
        return

    def ctrl_c_soon():
        threading.Timer(0.3, signal.pthread_kill, (threading.get_ident(), signal.SIGINT)).start()

    inp = ctx.input("in")
    seen = []
    ctrl_c_soon()
    try:
        for step in inp:  # waits for step 0
            seen.append(step.number)
        check(False, "no KeyboardInterrupt in the for loop")
    except KeyboardInterrupt:
        pass
    for step in inp:
        seen.append(step.number)
        break
    inp.end_step()
    ctrl_c_soon()
    try:
        inp.begin_step()  # waits for step 1
        check(False, "no KeyboardInterrupt in begin_step")
    except KeyboardInterrupt:
        pass
    for step in inp:
        check(step.get("x")[0] == step.number, f"step {step.number}: data")
        seen.append(step.number)
    check(seen == [0, 1, 2, 3], f"steps {seen}: one lost to the interrupt")
    inp.close()


def three_late_steps(ctx):
    """Steps 0, 1, 2, the first 3 s late: the consumer waits in
    begin_step meanwhile."""
    with ctx.output("out") as out:
        for s in range(3):
            if s == 0:
                time.sleep(3)
            with out.step():
                out.put("x", np.full(3, float(s)))


def thread_close(ctx, producer, r, p):
    """Another thread closes the input while begin_step waits on it: a
    RuntimeError in that thread (one port, one thread at a time), not the
    port freed under the wait; the wait goes on to its step."""
    if producer:
        return three_late_steps(ctx)
    inp = ctx.input("in")
    said = []

    def close_soon():
        time.sleep(0.3)
        try:
            inp.close()
            said.append("closed")
        except RuntimeError as e:
            said.append(str(e))

    threading.Thread(target=close_soon).start()
    seen = [s.number for s in inp]
    check(said == ['input port "in": a call on it is still running in another thread; one '
                   'port is used by one thread at a time (README, "Blocking calls release '
                   'the GIL")'], f"close in another thread during a wait: {said}")
    check(seen == [0, 1, 2], f"steps {seen}")
    inp.close()


def handler_close(ctx, producer, r, p):
    """A signal handler that closes the input (graceful shutdown) runs
    inside begin_step's wait, which still uses the port: the close must
    raise, not free the port under the wait (a segfault), and the wait
    goes on to its step."""
    if producer:
        return three_late_steps(ctx)
    inp = ctx.input("in")
    said = []

    def close_now(signum, frame):
        try:
            inp.close()
            said.append("closed")
        except RuntimeError as e:
            said.append(str(e))

    signal.signal(signal.SIGUSR1, close_now)
    threading.Timer(0.3, signal.pthread_kill, (threading.get_ident(), signal.SIGUSR1)).start()
    seen = [s.number for s in inp]
    check(len(said) == 1 and "signal handler that runs inside a Coupler wait" in said[0],
          f"close in a handler during a wait: {said}")
    check(seen == [0, 1, 2], f"steps {seen}")
    inp.close()


def interrupt_wait(ctx, producer, r, p):
    """Ctrl-C 1 s into a begin_step whose producer is silent for 30 s
    (link timeout 60 s) is a KeyboardInterrupt within a second or so, not
    when the step comes or the wait times out; no step is open after it.
    Uncaught, it aborts the job at once (no peer waits for its timeout)."""
    if producer:
        out = ctx.output("out")
        time.sleep(30)  # the consumer's Ctrl-C comes 1 s into its wait
        with out.step():
            out.put("x", np.zeros(3))
        out.close()
        return
    inp = ctx.input("in")
    threading.Timer(1.0, signal.pthread_kill, (threading.get_ident(), signal.SIGINT)).start()
    t0 = time.monotonic()
    try:
        inp.begin_step()
    except KeyboardInterrupt:
        t = time.monotonic() - t0
        check(t < 10, f"KeyboardInterrupt {t:.1f} s into the wait (Ctrl-C at 1 s)")
        check(inp.step is None, f"step {inp.step} open after the interrupt")
        print(f"interrupt_wait: KeyboardInterrupt {t:.1f} s into the wait", flush=True)
        raise
    check(False, "no KeyboardInterrupt in begin_step")


def uncaught_thread(ctx, producer, r, p):
    """An exception nobody catches in a thread aborts the job too, rather
    than let it end with status 0 and the thread's work missing."""
    with ctx.input("in") as inp:
        def work():
            for step in inp:
                step.get("no such dataset")
        t = threading.Thread(target=work)
        t.start()
        t.join()
    print("FAILED: the job went on after an uncaught exception in a thread", flush=True)


def latin1_names(ctx, producer, r, p):
    """Dataset and attribute names that are not UTF-8 (a C producer's
    Latin-1 "temp\xe9rature"): listed with surrogates, as os.fsdecode
    does, and read back by those names; here the producer is Python and
    writes them with surrogates."""
    name, unit = b"temp\xe9rature".decode(errors="surrogateescape"), "unit\udce9"
    if producer:
        with ctx.output("out") as out:
            with out.step():
                out.put(name, np.arange(3.0))
                out.put("ok", np.arange(2.0))
                out.attr(unit, 1.5)
                out.attr(unit, 2.5, dataset=name)
                out.attr("file", "/data/caf\udce9.nc")  # os.fsdecode'd text
        return
    with ctx.input("in") as inp:
        for step in inp:
            names = [d.name for d in step.datasets()]
            check(names == [name, "ok"], f"datasets {names}")
            check(np.array_equal(step.get(name), np.arange(3.0)), "get by the Latin-1 name")
            check(step.inquire(name).shape == (3,), "inquire")
            check([a.name for a in step.attrs()] == [unit, "file"] and step.attr(unit) == 1.5,
                  "attrs")
            check(step.attr("file") == b"/data/caf\xe9.nc", f"file {step.attr('file')!r}")
            check(step.attr(unit, dataset=name) == 2.5, "dataset attribute")


def thread_at_exit(ctx, producer, r, p):
    """The consumer's main thread ends while another thread still waits
    in begin_step: the finalize at exit cannot free that port, and MPI
    must not be finalized under the waiting thread either: the job is
    aborted, saying why."""
    if producer:
        with ctx.output("out") as out:
            time.sleep(20)  # the consumer is gone by then
            with out.step():
                out.put("x", np.zeros(3))
        return
    inp = ctx.input("in")
    threading.Thread(target=inp.begin_step, daemon=True).start()
    time.sleep(0.3)
    sys.exit(0)  # main() would finalize; a script that simply ends does not


def c_types(ctx, producer, r, p):
    """A C producer's HDF5 types with no exact NumPy match (c_types_prod.c):
    bitfields read as the unsigned integers datasets() names, fixed
    strings of character set UTF-8 as the bytes."""
    with ctx.input("in") as inp:
        for step in inp:
            info = step.inquire("flags")
            check(info.dtype == np.dtype("u2"), f"flags: {info}")
            check(step.inquire("names").dtype == np.dtype("S6"), "names dtype")
            for name, dt, want in (("flags", None, [1, 2, 0xFFFF]), ("flags", "u2", [1, 2, 0xFFFF]),
                                   ("flags", ">u2", [1, 2, 0xFFFF]),
                                   ("names", None, ["caf\u00e9".encode(), b"abcde"]),
                                   ("names", "S3", [b"caf", b"abc"])):
                try:
                    got = step.get(name, dtype=dt)
                    check(list(got) == want, f"{name} as {dt}: {got}")
                except coupler.Error as e:
                    check(False, f"{name} as {dt}: {e}")
            for name, want in (("mask", 0x81), ("unit", "caf\u00e9".encode())):
                try:
                    check(step.attr(name) == want, f"{name} {step.attr(name)!r}")
                except coupler.Error as e:
                    check(False, f"{name}: {e}")

class CtrlCAgain:
    """stderr that sends this process SIGINT once the abort hook says it
    aborts: Ctrl-C arrives more than once (terminal, hydra, cpl-exec)."""

    def __init__(self, f):
        self.f = f

    def write(self, s):
        n = self.f.write(s)
        if "aborting the MPI job" in s:
            self.f.flush()
            signal.raise_signal(signal.SIGINT)
        return n

    def __getattr__(self, k):
        return getattr(self.f, k)


def ctrl_c_twice(ctx, producer, r, p):
    """A producer stopped by Ctrl-C whose abort hook gets a second SIGINT
    must still abort the job: its consumer must not see a normal end of
    stream (what the exit's finalize would send)."""
    if producer:
        out = ctx.output("out")
        with out.step():
            out.put("x", np.zeros(3))
        sys.stderr = CtrlCAgain(sys.stderr)
        signal.raise_signal(signal.SIGINT)  # uncaught KeyboardInterrupt
    with ctx.input("in") as inp:
        for step in inp:
            pass
    print("FAILED: the consumer saw a clean end of stream", flush=True)
    os._exit(1)  # the producer is not coming to main's allreduce


def main():
    global name, wrank
    scenario = sys.argv[1]
    world = coupler.Comm.world()
    wrank = world.rank
    ctx = coupler.init()
    name = ctx.name
    comm = ctx.ccomm
    producer = name.startswith("prod")
    globals()[scenario](ctx, producer, comm.rank, comm.size)
    ctx.finalize()
    total = world.allreduce(np.array(failures, dtype=np.intc))
    if wrank == 0:
        print(f"{scenario}: {'FAILED' if total else 'passed'} ({total} failures)")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
