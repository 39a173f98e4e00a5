/*
 * The small MPI helper behind coupler.Comm: MPI start-up and shut-down,
 * and the few collectives an analysis needs, on communicator handles
 * (MPI_Comm_c2f integers, what mpi4py's py2f()/f2py() exchange). It lets
 * a Python component run without mpi4py, and is what mpi4py interop
 * converts through.
 */
#define _GNU_SOURCE /* dladdr */
#include "module.h"

#include <dlfcn.h>
#include <string.h>

static int we_initialized;

MPI_Comm cplpy_comm_arg(PyObject *o) {
  long h = PyLong_AsLong(o);
  if (h == -1 && PyErr_Occurred()) return MPI_COMM_NULL;
  MPI_Comm c = MPI_Comm_f2c((MPI_Fint)h);
  if (c == MPI_COMM_NULL) PyErr_SetString(PyExc_ValueError, "MPI_COMM_NULL");
  return c;
}

static PyObject *mpi_fail(int rc, const char *what) {
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "?");
  PyErr_Format(PyExc_RuntimeError, "%s failed: %s", what, s);
  return NULL;
}

static int mpi_ready(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) return 1;
  PyErr_SetString(PyExc_RuntimeError, fin ? "MPI is already finalized"
                                          : "MPI is not initialized (coupler.init() or "
                                            "coupler.mpi_init() starts it)");
  return 0;
}

static PyObject *py_mpi_init(PyObject *self, PyObject *args) {
  (void)self;
  int required = MPI_THREAD_MULTIPLE, provided = 0, init = 0, fin = 0;
  if (!PyArg_ParseTuple(args, "|i", &required)) return NULL;
  MPI_Finalized(&fin);
  if (fin) return PyErr_Format(PyExc_RuntimeError, "MPI is already finalized");
  MPI_Initialized(&init);
  if (init) {
    MPI_Query_thread(&provided);
    return Py_BuildValue("(Oi)", Py_False, provided);
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = MPI_Init_thread(NULL, NULL, required, &provided);
  Py_END_ALLOW_THREADS if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Init_thread");
  /* Failures come back as codes, turned into exceptions, not aborts. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  we_initialized = 1;
  return Py_BuildValue("(Oi)", Py_True, provided);
}

static PyObject *py_mpi_finalize(PyObject *self, PyObject *noarg) {
  (void)self;
  (void)noarg;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (we_initialized && init && !fin) {
    Py_BEGIN_ALLOW_THREADS MPI_Finalize();
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}

static PyObject *py_mpi_state(PyObject *self, PyObject *noarg) {
  (void)self;
  (void)noarg;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return Py_BuildValue("(iii)", init, fin, we_initialized);
}

/* Which MPI library this process runs: its version string and the path
 * of the shared object MPI_Init comes from (mpi4py interop checks it). */
static PyObject *py_mpi_library(PyObject *self, PyObject *noarg) {
  (void)self;
  (void)noarg;
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int n = 0;
  MPI_Get_library_version(v, &n);
  Dl_info info;
  const char *path = dladdr((void *)&MPI_Init, &info) && info.dli_fname ? info.dli_fname : "";
  return Py_BuildValue("(ss)", v, path);
}

static PyObject *py_wtime(PyObject *self, PyObject *noarg) {
  (void)self;
  (void)noarg;
  return PyFloat_FromDouble(MPI_Wtime());
}

static PyObject *py_world(PyObject *self, PyObject *noarg) {
  (void)self;
  (void)noarg;
  return PyLong_FromLong((long)MPI_Comm_c2f(MPI_COMM_WORLD));
}

static PyObject *py_rank_size(PyObject *self, PyObject *arg) {
  (void)self;
  if (!mpi_ready()) return NULL;
  MPI_Comm c = cplpy_comm_arg(arg);
  if (c == MPI_COMM_NULL) return NULL;
  int r = 0, s = 0, rc = MPI_Comm_rank(c, &r);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(c, &s);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_rank/size");
  return Py_BuildValue("(ii)", r, s);
}

static PyObject *py_barrier(PyObject *self, PyObject *arg) {
  (void)self;
  if (!mpi_ready()) return NULL;
  MPI_Comm c = cplpy_comm_arg(arg);
  if (c == MPI_COMM_NULL) return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = MPI_Barrier(c);
  Py_END_ALLOW_THREADS if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Barrier");
  Py_RETURN_NONE;
}

static PyObject *py_dup(PyObject *self, PyObject *arg) {
  (void)self;
  if (!mpi_ready()) return NULL;
  MPI_Comm c = cplpy_comm_arg(arg), d;
  if (c == MPI_COMM_NULL) return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = MPI_Comm_dup(c, &d);
  Py_END_ALLOW_THREADS if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_dup");
  return PyLong_FromLong((long)MPI_Comm_c2f(d));
}

static PyObject *py_free(PyObject *self, PyObject *arg) {
  (void)self;
  if (!mpi_ready()) return NULL;
  MPI_Comm c = cplpy_comm_arg(arg);
  if (c == MPI_COMM_NULL) return NULL;
  int rc = MPI_Comm_free(&c);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_free");
  Py_RETURN_NONE;
}

/* By C type, as NumPy numbers its types, so a Python rank's reduction
 * matches a C rank's MPI_INT, MPI_DOUBLE, ... exactly. */
static MPI_Datatype mpi_type(int npy) {
  switch (npy) {
  case NPY_BYTE: return MPI_SIGNED_CHAR;
  case NPY_UBYTE: return MPI_UNSIGNED_CHAR;
  case NPY_SHORT: return MPI_SHORT;
  case NPY_USHORT: return MPI_UNSIGNED_SHORT;
  case NPY_INT: return MPI_INT;
  case NPY_UINT: return MPI_UNSIGNED;
  case NPY_LONG: return MPI_LONG;
  case NPY_ULONG: return MPI_UNSIGNED_LONG;
  case NPY_LONGLONG: return MPI_LONG_LONG;
  case NPY_ULONGLONG: return MPI_UNSIGNED_LONG_LONG;
  case NPY_FLOAT: return MPI_FLOAT;
  case NPY_DOUBLE: return MPI_DOUBLE;
  case NPY_BOOL: return MPI_C_BOOL;
  }
  return MPI_DATATYPE_NULL;
}

/* allreduce(handle, send, recv, op): send and recv contiguous, same dtype
 * and size; op "sum", "min", "max". */
static PyObject *py_allreduce(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *h;
  PyArrayObject *in, *out;
  const char *opname;
  if (!PyArg_ParseTuple(args, "OO!O!s", &h, &PyArray_Type, &in, &PyArray_Type, &out, &opname))
    return NULL;
  if (!mpi_ready()) return NULL;
  MPI_Comm c = cplpy_comm_arg(h);
  if (c == MPI_COMM_NULL) return NULL;
  MPI_Op op = !strcmp(opname, "sum")   ? MPI_SUM
              : !strcmp(opname, "min") ? MPI_MIN
              : !strcmp(opname, "max") ? MPI_MAX
                                       : MPI_OP_NULL;
  if (op == MPI_OP_NULL)
    return PyErr_Format(PyExc_ValueError, "op %s: expected sum, min or max", opname);
  MPI_Datatype t = mpi_type(PyArray_TYPE(in));
  /* MPI defines only the logical reductions on C booleans: any is max,
   * all is min, and a sum of truth values has no bool result. */
  if (t == MPI_C_BOOL) {
    if (op == MPI_SUM)
      return PyErr_Format(PyExc_TypeError, "allreduce: sum of bool values: "
                                           "reduce an integer array (astype(int)) instead");
    op = op == MPI_MAX ? MPI_LOR : MPI_LAND;
  }
  if (t == MPI_DATATYPE_NULL || PyArray_TYPE(in) != PyArray_TYPE(out) ||
      !PyArray_ISNOTSWAPPED(in) || !PyArray_ISNOTSWAPPED(out))
    return PyErr_Format(PyExc_TypeError, "allreduce takes native integers, "
                                         "float32/64 or bool, both arrays alike");
  if (!PyArray_IS_C_CONTIGUOUS(in) || !PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISWRITEABLE(out) ||
      PyArray_SIZE(in) != PyArray_SIZE(out) || PyArray_SIZE(in) > INT_MAX)
    return PyErr_Format(PyExc_ValueError, "allreduce: contiguous arrays of "
                                          "the same size, the result writable");
  int n = (int)PyArray_SIZE(in), rc;
  void *s = PyArray_DATA(in), *r = PyArray_DATA(out);
  Py_BEGIN_ALLOW_THREADS rc = MPI_Allreduce(s, r, n, t, op, c);
  Py_END_ALLOW_THREADS if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Allreduce");
  Py_RETURN_NONE;
}

/* bcast(handle, array, root): the array's bytes, in place. Only the
 * receivers' arrays must be writable: root's is only read, and refusing a
 * read-only one there raised on root alone, while the other ranks went
 * into MPI_Bcast and took root's next collective for this one. */
static PyObject *py_bcast(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *h;
  PyArrayObject *a;
  int root, me = 0;
  if (!PyArg_ParseTuple(args, "OO!i", &h, &PyArray_Type, &a, &root)) return NULL;
  if (!mpi_ready()) return NULL;
  MPI_Comm c = cplpy_comm_arg(h);
  if (c == MPI_COMM_NULL) return NULL;
  int rc = MPI_Comm_rank(c, &me);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_rank");
  if (!PyArray_IS_C_CONTIGUOUS(a) || (me != root && !PyArray_ISWRITEABLE(a)) ||
      PyArray_NBYTES(a) > INT_MAX)
    return PyErr_Format(PyExc_ValueError,
                        "bcast: rank %d: a contiguous array (writable on the ranks other than "
                        "root %d), at most 2 GiB",
                        me, root);
  int n = (int)PyArray_NBYTES(a);
  void *p = PyArray_DATA(a);
  Py_BEGIN_ALLOW_THREADS rc = MPI_Bcast(p, n, MPI_BYTE, root, c);
  Py_END_ALLOW_THREADS if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Bcast");
  Py_RETURN_NONE;
}

static PyObject *py_abort(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *h;
  int code;
  if (!PyArg_ParseTuple(args, "Oi", &h, &code)) return NULL;
  MPI_Comm c = cplpy_comm_arg(h);
  if (c == MPI_COMM_NULL) return NULL;
  fflush(NULL);
  MPI_Abort(c, code);
  Py_RETURN_NONE;
}

PyMethodDef cplpy_comm_methods[] = {
    {"mpi_init", py_mpi_init, METH_VARARGS,
     "MPI_Init_thread unless MPI is running: (started here?, provided)"},
    {"mpi_finalize", py_mpi_finalize, METH_NOARGS, "MPI_Finalize, only if mpi_init started MPI"},
    {"mpi_state", py_mpi_state, METH_NOARGS, "(initialized, finalized, started by coupler)"},
    {"mpi_library", py_mpi_library, METH_NOARGS,
     "(MPI_Get_library_version, path of the MPI shared library)"},
    {"comm_world", py_world, METH_NOARGS, "handle of MPI_COMM_WORLD"},
    {"wtime", py_wtime, METH_NOARGS, "MPI_Wtime()"},
    {"comm_rank_size", py_rank_size, METH_O, "(rank, size)"},
    {"comm_barrier", py_barrier, METH_O, "MPI_Barrier"},
    {"comm_dup", py_dup, METH_O, "MPI_Comm_dup: new handle"},
    {"comm_free", py_free, METH_O, "MPI_Comm_free"},
    {"comm_allreduce", py_allreduce, METH_VARARGS, "MPI_Allreduce"},
    {"comm_bcast", py_bcast, METH_VARARGS, "MPI_Bcast of an array's bytes"},
    {"comm_abort", py_abort, METH_VARARGS, "MPI_Abort"},
    {NULL, NULL, 0, NULL},
};

int cplpy_comm_init(PyObject *m) {
  return PyModule_AddIntConstant(m, "THREAD_SINGLE", MPI_THREAD_SINGLE) ||
         PyModule_AddIntConstant(m, "THREAD_FUNNELED", MPI_THREAD_FUNNELED) ||
         PyModule_AddIntConstant(m, "THREAD_SERIALIZED", MPI_THREAD_SERIALIZED) ||
         PyModule_AddIntConstant(m, "THREAD_MULTIPLE", MPI_THREAD_MULTIPLE);
}
