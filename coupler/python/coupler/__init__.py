"""Coupler for Python: write workflow components in Python.

    import coupler
    with coupler.init() as ctx:                 # CPL_WORKFLOW, CPL_COMPONENT
        comm = ctx.comm                          # mpi4py MPI.Comm (or ctx.ccomm)
        with ctx.output("field") as out:         # producer
            with out.step():
                out.put("T", block, dims=(ny, nx), start=(y0, 0))
        for step in ctx.input("field"):          # consumer
            T = step.get("T", dtype="f4")        # the whole array, as float32

Every call maps to one call of coupler.h (see the README, "Python
components"); failures raise coupler.Error subclasses carrying Coupler's
message.
"""

import signal as _signal
import sys as _sys
import threading as _threading
import time as _time
from collections import namedtuple as _namedtuple
from contextlib import contextmanager as _contextmanager

# Loading Coupler's MPI into a process where another MPI library already
# runs (Debian's mpi4py is built on Open MPI) breaks both: refuse early.
_m = _sys.modules.get("mpi4py.MPI")
if _m is not None and "MPICH" not in _m.Get_library_version():
    raise ImportError(
        "mpi4py.MPI is already loaded and runs %r, but Coupler is built on "
        "MPICH; one process cannot use two MPI libraries (README, 'Python "
        "components')" % _m.Get_library_version().split("\n")[0])
del _m



def _other_python(e):
    """What to say when this interpreter lacks NumPy or the extension: most
    often a workflow's `command: python3 ...` found another python3 first
    on PATH (pyenv, a venv) than the one the package was built for."""
    return ImportError(
        f"coupler: {e} under {_sys.executable} (Python {_sys.version.split()[0]}); "
        "the package runs under the interpreter the build used (CMake's "
        "Python3_EXECUTABLE, Debian's /usr/bin/python3 by default): name it in "
        "the workflow's command, as `python3` is looked up in PATH")


try:
    import numpy as _np
except ImportError as e:
    raise _other_python(e) from e

# MPI's libraries join the global symbol scope, as in a C program: MPICH
# and UCX load plugins that need them, and a preloaded shim (the test
# suite's cpl_yield) must find UCX's symbols with dlsym(RTLD_NEXT).
_flags = _sys.getdlopenflags()
_sys.setdlopenflags(_flags | __import__("os").RTLD_GLOBAL)
try:
    from . import _core
except ImportError as e:
    raise _other_python(e) from e
finally:
    _sys.setdlopenflags(_flags)
del _flags
from ._core import wtime, STEP_NEXT, STEP_LATEST
from ._core import (ArgumentError, CommError, ConfigError, EnvironmentError,
                    Error, HDF5Error, InternalError, InterruptedError,
                    IOError, MismatchError,
                    MPIError, NoMemoryError, NotFoundError, ParseError,
                    ShapeError, StateError, TimeoutError, TypeMismatchError,
                    UnsupportedError)
from .comm import (Comm, MPI4PyError, as_handle, mpi4py_MPI, mpi4py_usable,
                   mpi_init, mpi_library)

__version__ = _core.VERSION

DatasetInfo = _namedtuple("DatasetInfo", "name dtype shape nbytes nattrs")
DatasetInfo.__doc__ = ("A dataset of the current step: dtype is the stored "
                       "type's NumPy dtype (None if it has none), shape the "
                       "global dims.")
AttrInfo = _namedtuple("AttrInfo", "name dtype size")


def init(comm=None, workflow=None, component=None, abort_on_exception=True):
    """Join the workflow (cpl_init), collective over `comm`: every process
    of the job calls it. comm: an mpi4py MPI.Comm, a coupler.Comm, or None
    for MPI_COMM_WORLD (MPI is started if nothing started it). workflow,
    component: None means CPL_WORKFLOW and CPL_COMPONENT.
    abort_on_exception: an uncaught exception (in any thread) prints its
    traceback, then aborts the MPI job (MPI_Abort), rather than leave the
    other ranks and components waiting for this one until their timeouts."""
    if comm is None:
        mpi_init()
    if abort_on_exception:
        _install_abort_hook()
    return Context(comm, workflow, component)


def _install_abort_hook():
    prev, prev_thread = _sys.excepthook, _threading.excepthook
    if getattr(prev, "_coupler", False):
        return

    def abort(show):
        # One Ctrl-C reaches a process more than once (terminal, hydra,
        # cpl-exec): a KeyboardInterrupt in here would skip the abort, and
        # the finalize at exit would then end this component's streams as
        # if it had finished.
        try:
            _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        except ValueError:  # not the main thread
            pass
        try:
            show()
        finally:
            initialized, finalized, _ = _core.mpi_state()
            if initialized and not finalized:
                _abort_job("uncaught exception")

    def hook(etype, value, tb):
        abort(lambda: prev(etype, value, tb))

    # A thread's uncaught exception too: otherwise the job ends with
    # status 0 and the thread's work silently missing.
    def thread_hook(args):
        if args.exc_type is SystemExit:
            return prev_thread(args)
        abort(lambda: prev_thread(args))

    hook._coupler = True
    _sys.excepthook = hook
    _threading.excepthook = thread_hook


_contexts = []


def _who():
    """Which process aborts, as cpl-run names one: MPICH's own line names
    only the job rank, and the launcher kills cpl-exec before it could."""
    try:
        job = _core.comm_rank_size(_core.comm_world())[0]
        for c in reversed(_contexts):
            if not c.finalized:
                return f'component "{c.name}", rank {c.ccomm.rank} (job rank {job}): '
    except Exception:  # whatever failed, the abort must still happen
        return ""
    name = __import__("os").environ.get("CPL_COMPONENT")
    return f'component "{name}", job rank {job}: ' if name else f"job rank {job}: "


def _abort_job(why):
    print(f"coupler: {_who()}{why}, aborting the MPI job", file=_sys.stderr, flush=True)
    # hydra kills the job on MPI_Abort and drops what its proxy has not
    # yet read from this process's stderr: give it the message first
    # (a traceback was seen cut off mid-line under load)
    _time.sleep(0.3)
    _core.comm_abort(_core.comm_world(), 1)


def _finalize_all():
    for c in reversed(_contexts):
        if not c.finalized:
            try:
                c.finalize()
            except RuntimeError as e:
                # Another thread is inside a call on one of its ports: no
                # finalize, and no MPI_Finalize under that thread either.
                _abort_job(f"at exit: {e}")


class Context(_core.Context):
    """This process's component of the workflow (cpl_init). Use as a
    context manager, or call finalize() (collective over the job).
    Contexts left open are finalized at exit, before MPI is."""

    def __init__(self, comm=None, workflow=None, component=None):
        super().__init__(as_handle(comm), workflow, component)
        if not _contexts:
            import atexit
            atexit.register(_finalize_all)  # runs before MPI_Finalize
        _contexts.append(self)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:  # collective: not while an exception unwinds
            self.finalize()   # what may be only some of the ranks

    @property
    def name(self):
        """This component's name."""
        return self.component()[1]

    @property
    def index(self):
        return self.component()[0]

    @property
    def workflow_name(self):
        return self.component()[2]

    @property
    def comm(self):
        """The component communicator as an mpi4py MPI.Comm (owned by the
        context: do not free it). MPI4PyError if mpi4py is missing or built
        on another MPI; `ccomm` needs no mpi4py."""
        return mpi4py_MPI().Comm.f2py(super().comm())

    @property
    def ccomm(self):
        """The component communicator as a coupler.Comm."""
        return Comm(super().comm())

    def output(self, port):
        """Open output port `port` (all of its links)."""
        return Output(self, port)

    def input(self, port, peer=None):
        """Open input port `port`; `peer` ("component" or "component.port")
        picks the link when several end there."""
        return Input(self, port, peer)

    def __repr__(self):
        if self.finalized:
            return "<coupler.Context finalized>"
        i, n, w, _ = self.component()
        return f"<coupler.Context component {n!r} ({i}) of workflow {w!r}>"


def _box(a, dims, start):
    """Normalise put()'s arguments: a contiguous block and its placement."""
    if not isinstance(a, _np.ndarray):
        a = _np.asarray(a)
    if a.ndim == 0:
        a = a.reshape(1)
    if not (a.flags.c_contiguous and a.flags.aligned):
        # the one copy ("CA": ascontiguousarray keeps an unaligned array)
        a = _np.require(a, requirements="CA")
    if dims is None:
        dims = a.shape
    if start is None:
        start = (0,) * a.ndim  # dims must have as many (checked with the message)
    return a, dims, start


class _Port:
    """`with` support: close() on normal exit. On an exception the port is
    left to cpl_finalize: close is collective, and the exception may be
    unwinding only some of the ranks."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.close()

    def __repr__(self):
        return (f"<coupler.{type(self).__name__} "
                f"{'closed' if self.closed else 'open'}>")


class Output(_Port, _core.Output):
    """An output port. Per step: begin_step(), put() datasets, attr(),
    end_step(); or ``with out.step(): ...``. close() ends the stream;
    stats(link=-1) gives a link's counters (-1: all summed)."""

    def stats(self, link=-1):
        """Counters of the port's link `link`: its position in links()
        (the dict's "index", 0..), not the workflow's link number (its
        "link"); -1 sums the port's links."""
        return super().stats(link)

    def step(self, step=-1):
        """Context manager around begin_step/end_step. On an exception the
        step is not ended (nothing of it is sent)."""
        return _step(self, step)

    def put(self, name, array, dims=None, start=None):
        """Add `array` as this rank's block of dataset `name` of global
        `dims` (default: the block's shape), at `start` (default: zeros).
        The dtype is kept (HDF5 equivalent, h5py's conventions). A
        C-contiguous array is used in place: leave it unchanged until
        end_step(); other arrays are copied once."""
        a, dims, start = _box(array, dims, start)
        super().put(name, a, dims, start)

    def attr(self, name, value, dataset=None):
        """Attribute `name` of the step (or of `dataset`, put in this
        step): a number, bytes, str (stored as bytes) or an array (sent
        flattened to 1-D). Only rank 0's attributes are sent: one set on
        another rank alone is lost (README, "attr")."""
        if isinstance(value, str):
            value = value.encode("utf-8", "surrogateescape")  # as names are
        a = _np.ascontiguousarray(_np.atleast_1d(_np.asarray(value)))
        super().attr(dataset, name, a.reshape(-1))



@_contextmanager
def _step(out, step):
    out.begin_step(step)
    yield out
    out.end_step()


def _while_open(inp, number, call):
    """`call` of `inp`, refused once step `number` is over: the input reads
    only its open step, so a kept Step would read another step's data."""
    def stale():
        at = "no step" if inp.step is None else "step %d" % inp.step
        return ValueError(f"step {number} is over (the input is at {at}): a Step reads "
                          "only until the next step; keep what get() returned instead")

    if call == inp.get:  # the hot one: no argument packing
        def get(name, out=None, dtype=None, start=None, count=None):
            if inp.step != number and not inp.closed:
                raise stale()
            return call(name, out, dtype, start, count)
        return get

    def checked(*args, **kw):
        if inp.step != number and not inp.closed:
            raise stale()
        return call(*args, **kw)
    return checked


class Step:
    """One step of an input port, as the iterator yields it: its number
    and the input's reading calls, which raise ValueError once the step
    is over."""

    __slots__ = ("input", "number", "get", "inquire", "datasets", "attr",
                 "attrs")

    def __init__(self, inp, number):
        self.input = inp
        self.number = number
        # Bound once: a lookup through __getattr__ would cost every call.
        self.get, self.inquire, self.datasets, self.attr, self.attrs = (
            _while_open(inp, number, f)
            for f in (inp.get, inp.inquire, inp.datasets, inp.attr, inp.attrs))

    def __int__(self):
        return self.number

    def __index__(self):
        return self.number

    def __eq__(self, other):
        return self.number == other

    def __hash__(self):
        return hash(self.number)

    def __repr__(self):
        return f"<coupler.Step {self.number}>"


class Input(_Port, _core.Input):
    """An input port. ``for step in inp:`` yields each step (ending the
    previous one) until the producer closes; inside, read with
    datasets(), inquire(), get(), attr(), attrs()."""

    def __init__(self, ctx, port, peer=None):
        super().__init__(ctx, port, peer)
        # True from a begin call until its caller has the step: a
        # KeyboardInterrupt raised as the C call returns leaves the step
        # open (`step`, kept by the C side) and unseen; iteration yields
        # it rather than end it.
        self._unseen = False

    def _begin(self, want):
        return self._taking(lambda: super(Input, self).begin_step() if want is None
                            else super(Input, self).begin_step_at(want))

    def _taking(self, call):
        """A begin call, `_unseen` while it runs. When it raises, the step
        stays unseen only if the call took it (the exception came as it
        returned); else the step open before it (a begin in a step is an
        error) was seen, and iteration must end it, not yield it again
        forever."""
        before = self.step
        self._unseen = True
        try:
            return call()
        except BaseException:
            if self.step is None or self.step == before:
                self._unseen = False
            raise

    def begin_step(self, want=None):
        """Wait for the next step (or the one `want` asks for: STEP_LATEST,
        STEP_NEXT or a step number): its number, or None at end of stream.
        A step the producer no longer holds raises NotFoundError."""
        s = self._begin(want)
        self._unseen = False
        return s

    def select(self, boxes, dataset=None, ndims=None):
        """Read only these boxes, [(start, count), ...], of `dataset` (None:
        of every dataset with `ndims` dims and no selection of its own),
        from the next step on; [] reads nothing of it. ndims: the boxes'
        length by default; give it with [] (else 1)."""
        boxes = list(boxes)
        if ndims is None:
            try:
                ndims = len(boxes[0][0]) if boxes else 1
            except TypeError:  # one box not in a list, or a start of ints
                raise TypeError(
                    "select: boxes is a list of (start, count) pairs, start and count a "
                    "sequence each, e.g. [((0, 0), (2, 3))], not %.100r" % (boxes,)) from None
        super().select(dataset, ndims, boxes)

    def select_rows(self, part, nparts, dataset=None):
        """Read only part `part` of `nparts` of dimension 0 (rows split as
        evenly as possible), from the next step on."""
        super().select_rows(dataset, part, nparts)

    def select_clear(self):
        """Read whole datasets again from the next step."""
        super().select_clear()

    def try_step(self, seconds=0.0):
        """As begin_step, waiting at most `seconds`: None if no step came
        in time or at end of stream (then `ended` is True)."""
        s = self._taking(lambda: super(Input, self).try_step(seconds))
        self._unseen = False
        return s

    def end_step(self):
        self._unseen = False
        super().end_step()

    def __iter__(self):
        while True:
            if not (self._unseen and self.step is not None):
                if self.step is not None:
                    self.end_step()
                if self._begin(None) is None:
                    self._unseen = False
                    return
            step = Step(self, self.step)
            self._unseen = False
            yield step

    def datasets(self):
        """DatasetInfo of every dataset of the current step."""
        return [DatasetInfo(*t) for t in super().datasets()]

    def inquire(self, name):
        return DatasetInfo(*super().inquire(name))

    def get(self, name, out=None, dtype=None, start=None, count=None):
        """Read dataset `name`, or the box start/count of it, converted by
        HDF5 to `dtype` (default: the stored type) into a new array of
        shape count; or into `out` (C-contiguous, writable, as many
        elements as the box, its dtype the conversion target)."""
        if out is not None and dtype is not None and _np.dtype(dtype) != out.dtype:
            raise ValueError(f"dataset {name!r}: give out or dtype, not both")
        return super().get(name, out, dtype, start, count)

    def attrs(self, dataset=None):
        """AttrInfo of the attributes of the step (or of `dataset`)."""
        return [AttrInfo(*t) for t in super().attrs(dataset)]

    def attr(self, name, dataset=None, dtype=None):
        """Attribute `name` of the step (or of `dataset`): a NumPy scalar
        (bytes for a string) if it has one element, else a 1-D array."""
        a = super().attr_get(dataset, name, dtype)
        return a[0] if a.size == 1 else a


# Not exported by `from coupler import *`: IOError, EnvironmentError,
# TimeoutError and InterruptedError, which would replace the built-ins of
# the same names (an `except IOError` around open() would then miss
# OSError). Use coupler.IOError etc.
__all__ = [
    "init", "Context", "Output", "Input", "Step", "Comm", "DatasetInfo",
    "AttrInfo", "wtime", "STEP_NEXT", "STEP_LATEST", "mpi_init", "mpi_library",
    "mpi4py_usable", "MPI4PyError", "Error", "ArgumentError", "CommError",
    "MPIError", "NoMemoryError", "ParseError", "ConfigError", "MismatchError",
    "HDF5Error", "StateError", "UnsupportedError", "NotFoundError",
    "TypeMismatchError", "ShapeError", "InternalError",
]
