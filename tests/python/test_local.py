"""One-process checks of the Python package, under mpiexec -n 1:
    python3 test_local.py FAKE_OPENMPI_DIR
errors of init and of calls out of order as exceptions carrying Coupler's
message; the NumPy dtype <-> HDF5 map; the Comm helper; mpi4py checks
with two stand-ins (FAKE_OPENMPI_DIR: an extension linked to Open MPI's
soname, which must be refused without being loaded; and a pure-Python
module reporting MPICH, to check the handle conversions both ways).
Prints 'N passed, N failed'.
"""

import gc
import os
import pathlib
import sys
import tempfile
import textwrap
import threading
import time

import numpy as np

import coupler

passed = failed = 0


def check(cond, msg):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {msg}", file=sys.stderr, flush=True)


def raises(cls, fn, *substrings):
    try:
        fn()
    except cls as e:
        check(all(s in str(e) for s in substrings), f"{cls.__name__}: {e}")
        return e
    except Exception as e:  # noqa: BLE001 - report the wrong class
        check(False, f"expected {cls.__name__}, got {type(e).__name__}: {e}")
        return None
    check(False, f"expected {cls.__name__}, nothing raised")
    return None


def workflow(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(textwrap.dedent(text))
    f.close()
    return f.name


def test_init_errors():
    e = raises(coupler.IOError, lambda: coupler.init(workflow="/nonexistent/w.yaml"),
               "/nonexistent/w.yaml")
    check(e is not None and e.status == 10 and e.call == "cpl_init" and
          isinstance(e, coupler.Error), "IOError attributes")
    bad = workflow("""\
        name: w
        components:
          - {name: a, nprocs: 1, command: x, colour: red}
        """)
    raises(coupler.ConfigError, lambda: coupler.init(workflow=bad, component="a"),
           bad + ":3:", "colour")
    two = workflow("""\
        name: w
        components:
          - {name: a, nprocs: 2, command: x}
        """)
    raises(coupler.MismatchError, lambda: coupler.init(workflow=two, component="a"))
    os.environ.pop("CPL_WORKFLOW", None)
    raises(coupler.Error, lambda: coupler.init(), "CPL_WORKFLOW")
    raises(TypeError, lambda: coupler.init(comm="world"), "str")


def test_ports():
    wf = workflow("""\
        name: solo
        components:
          - {name: a, nprocs: 1, command: x, outputs: [o]}
        """)
    # a path as pathlib gives it, or as bytes (a name that is not UTF-8)
    for path in (pathlib.Path(wf), os.fsencode(wf)):
        with coupler.init(workflow=path, component="a") as ctx:
            check(ctx.name == "a", f"workflow={path!r}")
    raises(TypeError, lambda: coupler.init(workflow=wf, component=1), "component", "int")
    # a workflow whose path is not UTF-8 (as cpl-run passes it in CPL_WORKFLOW)
    latin = os.path.join(os.fsencode(tempfile.mkdtemp()), b"caf\xe9.yaml")
    with open(wf, "rb") as f, open(latin, "wb") as g:
        g.write(f.read())
    with coupler.init(workflow=latin, component="a") as ctx:
        check(ctx.name == "a" and "solo" in repr(ctx), "a workflow path that is not UTF-8")
    # Coupler's message quotes a path that is not UTF-8: still its exception
    raises(coupler.IOError, lambda: coupler.init(workflow=b"/nonexistent/caf\xe9.yaml"),
           "/nonexistent/caf\\xe9.yaml")
    with coupler.init(workflow=wf, component="a") as ctx:
        check(ctx.name == "a" and ctx.workflow_name == "solo", repr(ctx))
        check(ctx.ccomm.size == 1 and ctx.ccomm.rank == 0, "component comm")
        raises(coupler.Error, lambda: ctx.output("nope"), "nope")
        out = ctx.output("o")
        raises(coupler.StateError, lambda: out.put("x", np.zeros(3)))
        raises(coupler.StateError, lambda: out.end_step())
        out.begin_step()
        raises(TypeError, lambda: out.put("u", np.array(["a"])),
               'dataset "u": dtype', "no HDF5 equivalent")
        raises(TypeError, lambda: out.attr("big", 2**70), 'attribute "big": dtype', "HDF5")
        raises(ValueError, lambda: out.put("s", np.float64(1), dims=(1, 1)), "dims")
        # a row of a 2-D dataset put as a 1-D array: the array is the block
        raises(ValueError, lambda: out.put("row", np.zeros(4), dims=(3, 4), start=(1, 0)),
               'dataset "row": dims has 2 entries, but the array put has 1 dimension')
        raises(ValueError, lambda: out.put("neg", np.zeros(2), dims=(4,), start=(-2,)),
               'dataset "neg": start[0] is negative')
        # what was wrong, for which dataset (it was "'int' object is not
        # iterable", and a get's "TypeError: start")
        raises(TypeError, lambda: out.put("int", np.zeros(2), dims=4),
               'dataset "int": dims must be a sequence of 1 integer, not int')
        raises(TypeError, lambda: out.put("flt", np.zeros(2), dims=(2.0,)),
               'dataset "flt": dims[0] must be an integer, not float')
        out.put("arr", np.zeros(2), dims=np.array([2]), start=[0])  # any sequence
        raises(coupler.Error, lambda: out.put("big", np.zeros(4), dims=(3,)))
        out.put("x", np.arange(3.0))
        unaligned = np.frombuffer(b"\0" + np.arange(3.0).tobytes(), dtype="f8", offset=1)
        check(unaligned.flags.c_contiguous and not unaligned.flags.aligned, "unaligned array")
        out.put("unaligned", unaligned)  # copied once, as any other array
        out.attr("t", 1.5)
        out.end_step()  # no links: nothing waits
        check(out.stats()["steps"] == 1, f"stats {out.stats()}")
        out.close()
        check(out.closed, "closed")
        raises(ValueError, lambda: out.begin_step(), "closed")
    check(ctx.finalized, "finalized by with")
    raises(ValueError, lambda: ctx.output("o"), "finalized")


DTYPES = ["i1", "u1", "i2", "<u2", ">i4", "u4", "i8", ">u8", "f2", "f4", ">f8",
          "g", "c8", ">c16", "G", "?", "S1", "S9", "V3",
          [("a", "<i4"), ("b", ">f8", (2, 3)), ("c", "S2")],
          np.dtype([("x", "u1"), ("y", "<f4")], align=True)]


def test_dtypes():
    for dt in DTYPES:
        back, size = coupler._core.h5type_roundtrip(dt)
        check(back == np.dtype(dt) and size == np.dtype(dt).itemsize,
              f"{dt}: back {back}, HDF5 size {size}")
    for dt in ["U3", "O", "M8[s]", "m8[s]"]:
        raises(TypeError, lambda: coupler._core.h5type_roundtrip(dt), "no HDF5 equivalent")
    # dtypes HDF5 itself refuses: a TypeError, and no HDF5 error stack on stderr
    union = np.dtype({"names": ["a", "b"], "formats": ["<i4", "<f4"], "offsets": [0, 0]})
    empty_field = np.dtype([("a", "<i4", (0,))])
    with tempfile.TemporaryFile() as err:
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            for dt in [union, empty_field]:
                raises(TypeError, lambda: coupler._core.h5type_roundtrip(dt),
                       "no HDF5 equivalent")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        said = err.read().decode(errors="replace")
    check("HDF5-DIAG" not in said, f"HDF5's error stack on stderr: {said[:200]}")


class _SlowFinalizer:
    """Cyclic garbage whose finalizer lets other threads run."""
    started = None

    def __init__(self):
        self.me = self

    def __del__(self):
        _SlowFinalizer.started.set()
        time.sleep(0.05)  # gives the GIL away


def test_gc_under_hdf5_lock():
    """The extension holds Coupler's HDF5 lock while it builds dtypes; a
    garbage collection there runs finalizers, which let another thread
    take the GIL. That thread must not then wait for the HDF5 lock while
    holding the GIL: both would wait for ever."""
    dt = np.dtype([("x", ">f8"), ("y", "<i2", (2,)), ("z", [("a", "u1"), ("b", "f4")])])
    _SlowFinalizer.started = started = threading.Event()
    threshold = gc.get_threshold()
    gc.set_threshold(1, 1, 1)  # the next allocation collects
    try:
        for _ in range(5):
            started.clear()
            other = threading.Thread(
                target=lambda: (started.wait(), coupler._core.h5type_roundtrip(dt)))
            other.start()
            gc.disable()
            _SlowFinalizer()
            gc.enable()
            coupler._core.h5type_roundtrip(dt)  # collects inside, under the lock
            started.set()
            other.join()
    finally:
        gc.set_threshold(*threshold)
    check(True, "no deadlock")


def test_comm():
    w = coupler.Comm.world()
    check(w.rank == 0 and w.size == 1, "world")
    r = w.allreduce(3)
    check(r == 3 and np.ndim(r) == 0 and not isinstance(r, np.ndarray), f"scalar allreduce {r!r}")
    check(w.allreduce(2.5, "max") == 2.5, "scalar allreduce max")
    m = w.allreduce(np.array([True, False]), "max")
    check(m.dtype == np.bool_ and list(m) == [True, False], f"bool allreduce (any) {m}")
    check(w.allreduce(True, "min") is np.True_, "bool scalar allreduce (all)")
    raises(TypeError, lambda: w.allreduce(np.array([True]), "sum"), "astype(int)")
    a = w.allreduce(np.array([1, 5], dtype=">i4"), "min")
    check(np.array_equal(a, [1, 5]), f"array allreduce {a}")
    raises(ValueError, lambda: w.allreduce(1, "prod"), "sum, min or max")
    d = w.dup()
    check(d.size == 1 and d.handle != w.handle, "dup")
    d.barrier()
    d.free()
    b = w.bcast(np.arange(4))
    check(np.array_equal(b, np.arange(4)), "bcast")
    # root's array is only read: read-only or a view is fine there (it
    # raised on root alone, and the other ranks' bcast took root's next
    # collective)
    ro = np.arange(4)
    ro.flags.writeable = False
    check(w.bcast(ro) is ro, "bcast of a read-only array from root")
    check(w.bcast(np.arange(8)[::2]).tolist() == [0, 2, 4, 6], "bcast of a view from root")
    version, path = coupler.mpi_library()
    check("MPICH" in version and "mpich" in path, f"library {path}")


def test_openmpi_mpi4py(fake_dir):
    """Debian's python3-mpi4py links libmpi.so.40 (Open MPI): refused,
    with a message that says why, before its module is loaded."""
    sys.path.insert(0, fake_dir)
    try:
        check(not coupler.mpi4py_usable(), "Open MPI mpi4py taken as usable")
        wf = workflow("""\
            name: solo
            components:
              - {name: a, nprocs: 1, command: x}
            """)
        with coupler.init(workflow=wf, component="a") as ctx:
            raises(coupler.MPI4PyError, lambda: ctx.comm, "libmpi.so.40",
                   "libmpich.so.12", "two MPI libraries")
            check(isinstance(ctx.ccomm, coupler.Comm), "ccomm without mpi4py")
        check("mpi4py.MPI" not in sys.modules, "the Open MPI module was loaded")
    finally:
        sys.path.remove(fake_dir)
        for m in [m for m in sys.modules if m.startswith("mpi4py")]:
            del sys.modules[m]


STANDIN = '''\
"""Stand-in for an mpi4py built on MPICH: the API coupler uses."""
from coupler import _core
def Get_library_version():
    return _core.mpi_library()[0]
class Comm:
    def __init__(self, h): self.h = h
    @classmethod
    def f2py(cls, h): return cls(h)
    def py2f(self): return self.h
    def Get_size(self): return _core.comm_rank_size(self.h)[1]
COMM_WORLD = Comm(_core.comm_world())
'''


def test_mpich_mpi4py():
    d = tempfile.mkdtemp()
    os.makedirs(os.path.join(d, "mpi4py"))
    open(os.path.join(d, "mpi4py", "__init__.py"), "w").close()
    with open(os.path.join(d, "mpi4py", "MPI.py"), "w") as f:
        f.write(STANDIN)
    sys.path.insert(0, d)
    try:
        check(coupler.mpi4py_usable(), "MPICH stand-in refused")
        from mpi4py import MPI
        wf = workflow("""\
            name: solo
            components:
              - {name: a, nprocs: 1, command: x}
            """)
        with coupler.init(MPI.COMM_WORLD, workflow=wf, component="a") as ctx:
            c = ctx.comm
            check(isinstance(c, MPI.Comm) and c.py2f() == ctx.ccomm.handle and
                  c.Get_size() == 1, "component comm as mpi4py Comm")
            check(ctx.ccomm.to_mpi4py().py2f() == ctx.ccomm.handle, "to_mpi4py")
    finally:
        sys.path.remove(d)


def test_wrong_interpreter():
    """An interpreter without NumPy (a workflow's `command: python3 ...`
    finding a pyenv python3 first on PATH) is told which one it is and
    which one to use."""
    import subprocess
    r = subprocess.run([sys.executable, "-c", "import sys; sys.modules['numpy'] = None; "
                        "import coupler"], capture_output=True, text=True)
    check(r.returncode != 0 and sys.executable in r.stderr and "Python3_EXECUTABLE" in r.stderr,
          f"import without NumPy: {r.stderr.strip().splitlines()[-1:]}")


def test_star_import():
    """`from coupler import *` must leave the built-in exception names
    alone: `except IOError` around open() would stop catching OSError."""
    ns = {}
    exec("from coupler import *", ns)
    shadowed = [n for n in ("IOError", "EnvironmentError", "TimeoutError") if n in ns]
    check(not shadowed, f"from coupler import * replaces the built-ins {shadowed}")
    check("ArgumentError" in ns and "init" in ns, "star import exports")


def main():
    coupler.mpi_init()
    test_star_import()
    test_wrong_interpreter()
    test_init_errors()
    test_ports()
    test_dtypes()
    test_gc_under_hdf5_lock()
    test_comm()
    test_openmpi_mpi4py(sys.argv[1])
    test_mpich_mpi4py()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
