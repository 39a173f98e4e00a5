"""MPI for Coupler's Python components: start-up, the small `Comm` helper,
and conversion to and from mpi4py communicators.

A communicator crosses between mpi4py and Coupler as its Fortran handle
(``comm.py2f()`` / ``MPI.Comm.f2py()``), which is only meaningful when both
run on the same MPI library. Coupler is built on MPICH; Debian's
python3-mpi4py is built on Open MPI. Loading both into one process breaks
it (two MPI libraries, each taking the other's symbols), so mpi4py is
checked *before* its MPI module is imported: its extension must link the
MPI library this process runs (see the README, "Python components").
"""

import atexit
import importlib.util
import os
import re
import sys

import numpy as np

from . import _core


class MPI4PyError(ImportError):
    """mpi4py is missing or built on another MPI library than Coupler."""


def mpi_init(thread_level=_core.THREAD_MULTIPLE):
    """Start MPI unless it runs (mpi4py or an earlier call started it).
    MPI started here is finalized at exit, after every Coupler context."""
    started, provided = _core.mpi_init(thread_level)
    if started:
        atexit.register(_core.mpi_finalize)
    return provided


def mpi_library():
    """(MPI_Get_library_version string, path of the MPI shared object)."""
    return _core.mpi_library()


class Comm:
    """A communicator handle with what a Python component needs without
    mpi4py: rank, size, barrier, allreduce and bcast of NumPy arrays.
    `handle` is the MPI_Comm_c2f integer (mpi4py's py2f())."""

    __slots__ = ("handle", "_owned")

    def __init__(self, handle, owned=False):
        self.handle = int(handle)
        self._owned = owned

    @classmethod
    def world(cls):
        mpi_init()
        return cls(_core.comm_world())

    @property
    def rank(self):
        return _core.comm_rank_size(self.handle)[0]

    @property
    def size(self):
        return _core.comm_rank_size(self.handle)[1]

    def py2f(self):
        return self.handle

    def barrier(self):
        _core.comm_barrier(self.handle)

    def allreduce(self, value, op="sum"):
        """Element-wise reduction over the ranks; op "sum", "min" or
        "max". A scalar gives a scalar, an array an array of its shape."""
        scalar = np.ndim(value) == 0
        # ascontiguousarray makes a 0-d value 1-d: remember the scalar.
        a = np.ascontiguousarray(value)
        if a.dtype.byteorder not in "=|":
            a = a.astype(a.dtype.newbyteorder("="))
        out = np.empty_like(a)
        _core.comm_allreduce(self.handle, a, out, op)
        return out.reshape(())[()] if scalar else out

    def bcast(self, array, root=0):
        """Broadcast a NumPy array's bytes from root, in place (every rank
        passes an array of the same dtype and shape; root's is only read,
        so it may be read-only or a view, the others' must be C-contiguous
        and writable); returns it."""
        if self.rank == root:  # only read: any layout (a view is copied)
            _core.comm_bcast(self.handle, np.ascontiguousarray(array), root)
        else:
            _core.comm_bcast(self.handle, array, root)
        return array

    def dup(self):
        return Comm(_core.comm_dup(self.handle), owned=True)

    def free(self):
        if self._owned:
            _core.comm_free(self.handle)
            self._owned = False

    def abort(self, code=1):
        _core.comm_abort(self.handle, code)

    def to_mpi4py(self):
        """The same communicator as an mpi4py ``MPI.Comm`` (not a copy)."""
        return mpi4py_MPI().Comm.f2py(self.handle)

    def __repr__(self):
        return f"coupler.Comm(handle={self.handle})"


# ------------------------------------------------------------ mpi4py interop

_SONAME = re.compile(rb"lib(?:mpi|mpich)[A-Za-z0-9_]*\.so(?:\.[0-9]+)*")


def _abi(soname):
    """MPICH's ABI is libmpich.so.12, also installed as libmpi.so.12;
    any other MPI library is told by its soname (Open MPI: libmpi.so.40)."""
    base = os.path.basename(soname)
    return "mpich" if base.startswith("libmpich.so") or base == "libmpi.so.12" else base


def _check_mpi4py_library():
    """Raise MPI4PyError unless mpi4py's MPI extension links the MPI library
    this process uses. Reads the extension's file: never imports it."""
    mod = sys.modules.get("mpi4py.MPI")
    version, ourlib = _core.mpi_library()
    if mod is not None:  # already imported: ask it
        theirs = mod.Get_library_version()
        if theirs.split()[:1] != version.split()[:1]:
            raise MPI4PyError(
                "mpi4py runs %r but Coupler runs %r: two MPI libraries in one "
                "process; use an mpi4py built on Coupler's MPI (README, "
                "'Python components')" % (theirs.split("\n")[0],
                                          version.split("\n")[0]))
        return
    try:
        spec = importlib.util.find_spec("mpi4py.MPI")
    except ImportError as e:  # mpi4py itself missing
        raise MPI4PyError("mpi4py is not installed: %s" % e) from None
    if spec is None or not spec.origin:
        raise MPI4PyError("mpi4py is not installed")
    with open(spec.origin, "rb") as f:
        needed = set(m.group(0).decode() for m in _SONAME.finditer(f.read()))
    if not needed:
        return  # MPI linked statically or loaded another way: trust it
    if _abi(ourlib) not in {_abi(n) for n in needed}:
        raise MPI4PyError(
            "mpi4py at %s is built on %s, but Coupler runs %s (%s). Importing "
            "it would load two MPI libraries into one process. Use an mpi4py "
            "built on Coupler's MPI (README, 'Python components')."
            % (os.path.dirname(spec.origin), ", ".join(sorted(needed)),
               os.path.basename(ourlib), version.split("\n")[0].strip()))


def mpi4py_MPI():
    """mpi4py's MPI module, once it is known to run Coupler's MPI library."""
    mod = sys.modules.get("mpi4py.MPI")
    if mod is None:
        _check_mpi4py_library()
        from mpi4py import MPI as mod
    else:
        _check_mpi4py_library()
    return mod


def mpi4py_usable():
    """True if mpi4py is installed and runs Coupler's MPI library."""
    try:
        _check_mpi4py_library()
        return True
    except MPI4PyError:
        return False


def as_handle(comm):
    """The Fortran handle of a communicator: a coupler.Comm, an mpi4py
    MPI.Comm (checked to run Coupler's MPI), or an int handle."""
    if comm is None:
        return Comm.world().handle
    if isinstance(comm, Comm):
        return comm.handle
    if isinstance(comm, int):
        return comm
    if type(comm).__module__.startswith("mpi4py"):
        _check_mpi4py_library()
    if hasattr(comm, "py2f"):
        return int(comm.py2f())
    raise TypeError("expected an mpi4py MPI.Comm, a coupler.Comm or a handle, "
                    "not %s" % type(comm).__name__)
