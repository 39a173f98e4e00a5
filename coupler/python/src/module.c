/* Module coupler._core: exception classes per cpl_status, module init. */
#define CPLPY_IMPORT_ARRAY
#include "module.h"

#include <string.h>

/* One class per status; TimeoutError and MemoryError also derive from the
 * built-ins, so `except TimeoutError` works as a Python user expects. */
static const struct {
  int status;
  const char *name;
} error_names[] = {
    {CPL_ERR_ARG, "ArgumentError"},
    {CPL_ERR_COMM, "CommError"},
    {CPL_ERR_MPI, "MPIError"},
    {CPL_ERR_NOMEM, "NoMemoryError"},
    {CPL_ERR_ENV, "EnvironmentError"},
    {CPL_ERR_PARSE, "ParseError"},
    {CPL_ERR_CONFIG, "ConfigError"},
    {CPL_ERR_MISMATCH, "MismatchError"},
    {CPL_ERR_TIMEOUT, "TimeoutError"},
    {CPL_ERR_IO, "IOError"},
    {CPL_ERR_HDF5, "HDF5Error"},
    {CPL_ERR_STATE, "StateError"},
    {CPL_ERR_UNSUPPORTED, "UnsupportedError"},
    {CPL_ERR_NOT_FOUND, "NotFoundError"},
    {CPL_ERR_TYPE, "TypeMismatchError"},
    {CPL_ERR_SHAPE, "ShapeError"},
    {CPL_ERR_INTERNAL, "InternalError"},
    {CPL_ERR_INTERRUPTED, "InterruptedError"},
};
#define N_ERRORS (sizeof error_names / sizeof error_names[0])

static PyObject *error_base; /* coupler.Error */
static PyObject *error_class[CPL_STATUS_COUNT];

PyObject *cplpy_raise(int status, const char *what) {
  /* A signal handler raised in a wait (check_signals): its exception,
   * KeyboardInterrupt for Ctrl-C, is the one the call raises. */
  if (PyErr_Occurred()) return NULL;
  /* Rank 0 was interrupted while this rank waited in a broadcast, which
   * is not interrupted (core/wait.h): Ctrl-C reached this rank too, most
   * likely, and is its KeyboardInterrupt; else InterruptedError. */
  if (status == CPL_ERR_INTERRUPTED && PyErr_CheckSignals() < 0) return NULL;
  PyObject *cls = status > 0 && status < CPL_STATUS_COUNT && error_class[status]
                      ? error_class[status]
                      : error_base;
  const char *msg = cpl_last_error();
  if (!msg || !*msg) msg = cpl_strerror(status);
  /* str(e) is Coupler's message; .status and .call say which code/call.
   * It may quote a file name that is not UTF-8: escaped, not a
   * UnicodeDecodeError in place of the error. */
  PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
  if (!text) return NULL;
  PyObject *exc = PyObject_CallOneArg(cls, text);
  Py_DECREF(text);
  if (!exc) return NULL;
  PyObject *st = PyLong_FromLong(status);
  PyObject *call = PyUnicode_FromString(what);
  if (st && call && PyObject_SetAttrString(exc, "status", st) == 0 &&
      PyObject_SetAttrString(exc, "call", call) == 0)
    PyErr_SetObject(cls, exc);
  Py_XDECREF(st);
  Py_XDECREF(call);
  Py_DECREF(exc);
  return NULL;
}

int cplpy_errors_init(PyObject *m) {
  error_base = PyErr_NewExceptionWithDoc(
      "coupler.Error",
      "A Coupler call failed. str() is Coupler's message (cpl_last_error);\n"
      ".status is the cpl_status code, .call the C function.",
      NULL, NULL);
  if (!error_base || PyModule_AddObjectRef(m, "Error", error_base) < 0) return -1;
  for (size_t i = 0; i < N_ERRORS; i++) {
    char qual[96];
    snprintf(qual, sizeof qual, "coupler.%s", error_names[i].name);
    PyObject *bases;
    if (error_names[i].status == CPL_ERR_TIMEOUT)
      bases = PyTuple_Pack(2, error_base, PyExc_TimeoutError);
    else if (error_names[i].status == CPL_ERR_NOMEM)
      bases = PyTuple_Pack(2, error_base, PyExc_MemoryError);
    else bases = PyTuple_Pack(1, error_base);
    if (!bases) return -1;
    PyObject *cls = PyErr_NewException(qual, bases, NULL);
    Py_DECREF(bases);
    if (!cls || PyModule_AddObjectRef(m, error_names[i].name, cls) < 0) return -1;
    error_class[error_names[i].status] = cls;
  }
  return 0;
}

/* Coupler's waits call this every 50 ms or so of waiting
 * (cpl_set_interrupt_check): Python's C-level signal handler only sets a
 * flag, and the call releasing the GIL would raise KeyboardInterrupt only
 * when it returns, after the wait. Python handlers run in the main thread
 * only, so other threads' waits return at once, without the GIL. */
static unsigned long main_ident;

/* Set while the handlers run inside a wait: the Coupler call that waits
 * is still on this thread's stack, and Coupler is not reentrant (a
 * handler closing the port freed it under the wait: a segfault). */
static _Thread_local int in_wait_handler;

int cplpy_reentered(void) {
  if (!in_wait_handler) return 0;
  PyErr_SetString(PyExc_RuntimeError,
                  "a Coupler call from a signal handler that runs inside a Coupler wait "
                  "(Coupler is not reentrant): raise an exception in the handler, which ends "
                  "the wait and which the waiting call raises, or set a flag and act on it "
                  "after that call returns");
  return 1;
}

static int check_signals(void *arg) {
  (void)arg;
  if (PyThread_get_thread_ident() != main_ident || !Py_IsInitialized()) return 0;
  PyGILState_STATE g = PyGILState_Ensure();
  /* Set already: a handler raised in an earlier wait of this call, whose
   * later waits (the failure's own) end too, or Ctrl-C would wait them
   * out. */
  int stop = PyErr_Occurred() != NULL;
  if (!stop) {
    in_wait_handler = 1;
    stop = PyErr_CheckSignals() < 0;
    in_wait_handler = 0;
  }
  PyGILState_Release(g);
  return stop;
}

static int interrupts_init(void) {
  PyObject *threading = PyImport_ImportModule("threading");
  PyObject *main = threading ? PyObject_CallMethod(threading, "main_thread", NULL) : NULL;
  PyObject *ident = main ? PyObject_GetAttrString(main, "ident") : NULL;
  Py_XDECREF(threading);
  Py_XDECREF(main);
  if (!ident) return -1;
  main_ident = PyLong_AsUnsignedLong(ident);
  Py_DECREF(ident);
  if (PyErr_Occurred()) return -1;
  cpl_set_interrupt_check(check_signals, NULL);
  return 0;
}

static PyObject *py_strerror(PyObject *self, PyObject *arg) {
  (void)self;
  long s = PyLong_AsLong(arg);
  if (s == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(cpl_strerror((int)s));
}

/* dtype -> the HDF5 type's description, for tests and error messages. */
static PyObject *py_h5type_str(PyObject *self, PyObject *arg) {
  CPLPY_H5_HELD;
  (void)self;
  PyArray_Descr *d = NULL;
  if (!PyArray_DescrConverter(arg, &d)) return NULL;
  hid_t t = cplpy_h5type(d);
  Py_DECREF(d);
  if (t < 0) return NULL;
  /* Round trip: the dtype Coupler reports for data stored in this type. */
  PyArray_Descr *back = cplpy_dtype(t);
  size_t size = H5Tget_size(t);
  cplpy_h5close(t);
  if (!back) return NULL;
  return Py_BuildValue("(Nn)", (PyObject *)back, (Py_ssize_t)size);
}

static PyMethodDef module_methods[] = {
    {"strerror", py_strerror, METH_O, "cpl_strerror(status)"},
    {"h5type_roundtrip", py_h5type_str, METH_O,
     "(dtype read back, HDF5 size) of the HDF5 type a dtype maps to"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "coupler._core",
    "Coupler's C API for Python (use the package `coupler`).",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__core(void) {
  import_array();
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (PyModule_AddFunctions(m, cplpy_comm_methods) < 0 || cplpy_errors_init(m) < 0 ||
      cplpy_ports_init(m) < 0 || cplpy_comm_init(m) < 0 || interrupts_init() < 0 ||
      PyModule_AddIntConstant(m, "END_OF_STREAM", CPL_END_OF_STREAM) < 0 ||
      PyModule_AddIntConstant(m, "STEP_NEXT", CPL_STEP_NEXT) < 0 ||
      PyModule_AddIntConstant(m, "STEP_LATEST", CPL_STEP_LATEST) < 0 ||
      PyModule_AddStringConstant(m, "VERSION", CPL_VERSION_STRING) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
