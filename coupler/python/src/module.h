/*
 * coupler._core: the C extension under the Python package `coupler`.
 * Only the public API of coupler.h; the Python layer (the .py files of coupler/) adds
 * iteration, communicator conversion and defaults.
 */
#ifndef CPLPY_MODULE_H
#define CPLPY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL cplpy_ARRAY_API
#ifndef CPLPY_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <coupler.h>

/* Raise the exception class of `status` with cpl_last_error()'s message;
 * `what` names the call. Returns NULL for `return cplpy_raise(...)`. */
PyObject *cplpy_raise(int status, const char *what);
int cplpy_errors_init(PyObject *module);

/* 1 with RuntimeError set when called from a Python signal handler that
 * runs inside a Coupler wait (cpl_set_interrupt_check), where no call
 * may change Coupler's state. */
int cplpy_reentered(void);

/* HDF5 is not thread-safe, and Coupler calls it in threads that released
 * the GIL: every HDF5 call of the extension holds cpl_hdf5_lock().
 * CPLPY_H5_HELD; as a function's first statement holds it until the
 * function returns. The lock is taken with the GIL released: its holder
 * may run Python code (a garbage collection in an allocation runs
 * finalizers, and the interpreter then switches threads), so a thread
 * waiting for it while holding the GIL would wait for ever. For the same
 * reason the C calls that take it (put, attr, get) run without the GIL. */
static inline void cplpy_h5_release(int *held) {
  if (*held) cpl_hdf5_unlock();
}
static inline int cplpy_h5_acquire(void) {
  Py_BEGIN_ALLOW_THREADS;
  cpl_hdf5_lock();
  Py_END_ALLOW_THREADS;
  return 1;
}
#define CPLPY_H5_HELD                                                                              \
  __attribute__((cleanup(cplpy_h5_release))) int cplpy_h5_held_ = cplpy_h5_acquire()
void cplpy_h5close(hid_t t); /* H5Tclose under the lock */

/* NumPy dtype <-> HDF5 datatype (types.c). */
hid_t cplpy_h5type(PyArray_Descr *d); /* new hid_t, or -1 + error */
/* The same, shared for built-in native types: close it only if *owned. */
hid_t cplpy_h5type_shared(PyArray_Descr *d, int *owned);
/* The memory type reading `stored` into dtype d (bitfields: see types.c). */
hid_t cplpy_memtype(hid_t stored, PyArray_Descr *d, int *owned);
PyArray_Descr *cplpy_dtype(hid_t type); /* new reference, or NULL   */

/* Objects (ports.c, comm.c). */
extern PyTypeObject cplpy_ContextType, cplpy_OutputType, cplpy_InputType;
int cplpy_ports_init(PyObject *module);
int cplpy_comm_init(PyObject *module);
extern PyMethodDef cplpy_comm_methods[];

/* A communicator handle as Python sees it: MPI_Comm_c2f's integer, the
 * form mpi4py's py2f()/f2py() use too. */
MPI_Comm cplpy_comm_arg(PyObject *o); /* MPI_COMM_NULL + error    */

#endif
