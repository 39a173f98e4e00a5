/*
 * Context, Output and Input objects over cpl_context, cpl_output and
 * cpl_input. Blocking calls (init, finalize, begin/try/end step, close,
 * get) run with the GIL released. Arrays put in a step are referenced
 * until end_step returns, so NumPy's memory is handed to Coupler without
 * a copy and cannot be freed under it.
 *
 * cpl_finalize closes ports left open, so a port keeps its context alive
 * and, once the context is finalized, counts as closed. Nothing collective
 * runs from a destructor: ranks collect garbage at different times.
 */
#include "module.h"

#include <string.h>

typedef struct {
  PyObject_HEAD cpl_context *ctx;
  int finalized;
  int busy;       /* calls on its ports running without the GIL (UNLOCKED) */
  int collective; /* of them, collective ones (COLL_UNLOCKED) */
} ContextObj;

typedef struct {
  PyObject_HEAD ContextObj *owner;
  cpl_output *out;
  PyObject *keep; /* arrays of the open step */
  int busy;       /* its calls running without the GIL (PORT_UNLOCKED) */
  char port[256];
} OutputObj;

typedef struct {
  PyObject_HEAD ContextObj *owner;
  cpl_input *in;
  int ended;
  long step; /* the open step, or -1 */
  int busy;  /* as OutputObj's */
  char port[256];
} InputObj;

/* --------------------------------------------------------------- helpers */

/* A blocking call on a port of context c, run without the GIL. c counts
 * them: finalize frees every port, so it refuses while one runs in
 * another thread (a daemon thread at exit would use freed memory). */
#define UNLOCKED(c, stmt)                                                                          \
  do {                                                                                             \
    (c)->busy++;                                                                                   \
    Py_BEGIN_ALLOW_THREADS stmt;                                                                   \
    Py_END_ALLOW_THREADS;                                                                          \
    (c)->busy--;                                                                                   \
  } while (0)

#define CALL(c, what, expr)                                                                        \
  do {                                                                                             \
    int rc_;                                                                                       \
    UNLOCKED(c, rc_ = (expr));                                                                     \
    if (rc_ != CPL_OK) return cplpy_raise(rc_, what);                                              \
  } while (0)

/* The same for a call on port p (an OutputObj or InputObj), which p
 * counts too: one port is used by one thread at a time, and a second
 * thread's call on it (a close under a begin_step) would free or change
 * what the running one uses, so live_output/live_input refuse it. */
#define PORT_UNLOCKED(p, stmt)                                                                     \
  do {                                                                                             \
    (p)->busy++;                                                                                   \
    UNLOCKED((p)->owner, stmt);                                                                    \
    (p)->busy--;                                                                                   \
  } while (0)

/* A collective call on port p (open, begin/try/end step, close): the
 * component's ports share its communicator, so one such call runs at a
 * time in the process; a second thread's (two threads each iterating its
 * own input) mixed their messages (corrupt descriptions, a segfault).
 * collective_busy refuses it before it starts. */
#define COLL_UNLOCKED(p, stmt)                                                                     \
  do {                                                                                             \
    (p)->owner->collective++;                                                                      \
    PORT_UNLOCKED(p, stmt);                                                                        \
    (p)->owner->collective--;                                                                      \
  } while (0)

#define COLL_CALL(p, what, expr)                                                                   \
  do {                                                                                             \
    int rc_;                                                                                       \
    COLL_UNLOCKED(p, rc_ = (expr));                                                                \
    if (rc_ != CPL_OK) return cplpy_raise(rc_, what);                                              \
  } while (0)

static int collective_busy(ContextObj *c, const char *call) {
  if (!c->collective) return 0;
  PyErr_Format(PyExc_RuntimeError,
               "%s: another thread is in a collective call of this component (open, "
               "begin/try/end step, close): one at a time, even on different ports, as they "
               "share the component's communicator (README, \"Blocking calls release the GIL\")",
               call);
  return 1;
}

/* Quick local calls keep the GIL. */
#define LOCAL(what, expr)                                                                          \
  do {                                                                                             \
    int rc_ = (expr);                                                                              \
    if (rc_ != CPL_OK) return cplpy_raise(rc_, what);                                              \
  } while (0)

static int live_context(ContextObj *c) {
  if (c->ctx && !c->finalized) return 1;
  PyErr_SetString(PyExc_ValueError, "the Coupler context is finalized");
  return 0;
}

/* The open port, for reading its counters and links (allowed in a
 * signal handler that runs inside a wait)... */
static cpl_output *open_output(OutputObj *o) {
  if (o->out && !o->owner->finalized) return o->out;
  PyErr_SetString(PyExc_ValueError, "the output port is closed");
  return NULL;
}

static cpl_input *open_input(InputObj *i) {
  if (i->in && !i->owner->finalized) return i->in;
  PyErr_SetString(PyExc_ValueError, "the input port is closed");
  return NULL;
}

/* A call of another thread still runs on the port: RuntimeError. */
static int port_busy(int busy, const char *kind, const char *port) {
  if (!busy) return 0;
  PyErr_Format(PyExc_RuntimeError,
               "%s port \"%s\": a call on it is still running in another thread; one port is "
               "used by one thread at a time (README, \"Blocking calls release the GIL\")",
               kind, port);
  return 1;
}

/* ...and for every other call, which such a handler may not make, nor
 * another thread while one runs. */
static cpl_output *live_output(OutputObj *o) {
  return cplpy_reentered() || port_busy(o->busy, "output", o->port) ? NULL : open_output(o);
}

static cpl_input *live_input(InputObj *i) {
  return cplpy_reentered() || port_busy(i->busy, "input", i->port) ? NULL : open_input(i);
}

/* "link P.p->C.c, step S, dataset "name"": where a get failed, as
 * Coupler's own messages say it, for the checks made here. */
static const char *input_where(InputObj *i, const char *name, char *buf, size_t n) {
  cpl_link_end le;
  int index;
  const char *me;
  if (cpl_input_link(i->in, &le) != CPL_OK ||
      cpl_context_component(i->owner->ctx, &index, &me) != CPL_OK)
    snprintf(buf, n, "dataset \"%s\"", name);
  else
    snprintf(buf, n, "link %s.%s->%s.%s, step %ld, dataset \"%s\"", le.peer_component, le.peer_port,
             me, le.port, i->step, name);
  return buf;
}

/* A str argument or None (NULL); on error NULL with an exception set. */
static const char *opt_str(PyObject *o, const char *what) {
  if (o == Py_None) return NULL;
  if (!PyUnicode_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str or None, not %.100s", what,
                 Py_TYPE(o)->tp_name);
    return NULL;
  }
  return PyUnicode_AsUTF8(o);
}

/* Dataset and attribute names are bytes to Coupler, UTF-8 in Python's
 * view; one a C program gave in another encoding (Latin-1) comes out
 * with surrogates, as os.fsdecode does, and goes back in as the same
 * bytes. name_in's bytes live in *keep: declare it CPLPY_KEEP. */
static PyObject *name_out(const char *s) {
  return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

static const char *name_in(PyObject *o, const char *what, PyObject **keep) {
  if (o == Py_None) return NULL;
  if (!PyUnicode_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str or None, not %.100s", what,
                 Py_TYPE(o)->tp_name);
    return NULL;
  }
  Py_ssize_t n;
  const char *s = PyUnicode_AsUTF8AndSize(o, &n); /* cached by the str */
  if (!s) {
    PyErr_Clear();
    *keep = PyUnicode_AsEncodedString(o, "utf-8", "surrogateescape");
    if (!*keep) return NULL;
    s = PyBytes_AS_STRING(*keep);
    n = PyBytes_GET_SIZE(*keep);
  }
  if ((size_t)n != strlen(s)) {
    PyErr_Format(PyExc_ValueError, "%s contains a NUL character", what);
    return NULL;
  }
  return s;
}

/* The exception set, its message prefixed with where it happened (the
 * dtype checks of types.c know the dtype, not the dataset). NULL. */
static PyObject *raised_at(const char *where) {
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyErr_NormalizeException(&t, &v, &tb);
  PyObject *msg = v ? PyObject_Str(v) : NULL;
  if (!msg) {
    PyErr_Restore(t, v, tb);
    return NULL;
  }
  PyErr_Format(t, "%s: %U", where, msg);
  Py_DECREF(msg);
  Py_XDECREF(t);
  Py_XDECREF(v);
  Py_XDECREF(tb);
  return NULL;
}

/* 'attribute "name"' or 'attribute "name" of dataset "d"', for raised_at. */
static const char *attr_where(char *buf, size_t n, const char *name, const char *dataset) {
  snprintf(buf, n, "attribute \"%s\"%s%s%s", name, dataset ? " of dataset \"" : "",
           dataset ? dataset : "", dataset ? "\"" : "");
  return buf;
}

static inline void drop_ref(PyObject **o) { Py_XDECREF(*o); }
#define CPLPY_KEEP __attribute__((cleanup(drop_ref))) PyObject *

/* A sequence of n non-negative integers (dims, start, count) given for
 * `name`; `n_is` says what n counts, for the message. */
static int hsizes(PyObject *seq, int n, hsize_t *out, const char *what, const char *name,
                  const char *n_is) {
  PyObject *f = PySequence_Check(seq) ? PySequence_Fast(seq, what) : NULL;
  if (!f) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError, "%s: %s must be a sequence of %d integer%s, not %.100s", name,
                   what, n, n == 1 ? "" : "s", Py_TYPE(seq)->tp_name);
    return -1;
  }
  if (PySequence_Fast_GET_SIZE(f) != n) {
    PyErr_Format(PyExc_ValueError, "%s: %s has %zd entries, but %s %d dimension%s", name, what,
                 PySequence_Fast_GET_SIZE(f), n_is, n, n == 1 ? "" : "s");
    Py_DECREF(f);
    return -1;
  }
  for (int k = 0; k < n; k++) {
    PyObject *item = PySequence_Fast_GET_ITEM(f, k);
    long long v = PyIndex_Check(item) ? PyLong_AsLongLong(item) : -1;
    if (v < 0) {
      if (!PyIndex_Check(item))
        PyErr_Format(PyExc_TypeError, "%s: %s[%d] must be an integer, not %.100s", name, what, k,
                     Py_TYPE(item)->tp_name);
      else if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "%s: %s[%d] is negative", name, what, k);
      Py_DECREF(f);
      return -1;
    }
    out[k] = (hsize_t)v;
  }
  Py_DECREF(f);
  return 0;
}

static PyObject *hsize_tuple(const hsize_t *v, int n) {
  PyObject *t = PyTuple_New(n);
  for (int k = 0; t && k < n; k++) PyTuple_SET_ITEM(t, k, PyLong_FromUnsignedLongLong(v[k]));
  return t;
}

static PyObject *link_dict(const cpl_link_end *le) {
  return Py_BuildValue("{sisssssssssi}", "link", le->link, "role",
                       le->role == CPL_SENDER ? "sender" : "receiver", "port", le->port,
                       "peer_component", le->peer_component, "peer_port", le->peer_port,
                       "remote_size", le->remote_size);
}

/* --------------------------------------------------------------- Context */

static int Context_init(ContextObj *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"comm", "workflow", "component", NULL};
  PyObject *h, *wf = Py_None, *comp = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO", kwlist, &h, &wf, &comp) || cplpy_reentered())
    return -1;
  if (self->ctx) {
    PyErr_SetString(PyExc_ValueError, "context already initialised");
    return -1;
  }
  MPI_Comm world = cplpy_comm_arg(h);
  if (world == MPI_COMM_NULL) return -1;
  /* The workflow is a file name: str, bytes or os.PathLike, as open() takes. */
  PyObject *path_b = NULL;
  if (wf != Py_None && !PyUnicode_FSConverter(wf, &path_b)) return -1;
  const char *path = path_b ? PyBytes_AS_STRING(path_b) : NULL, *name = opt_str(comp, "component");
  if (PyErr_Occurred()) {
    Py_XDECREF(path_b);
    return -1;
  }
  int rc;
  cpl_context *ctx = NULL;
  Py_BEGIN_ALLOW_THREADS;
  rc = cpl_init(world, path, name, &ctx);
  Py_END_ALLOW_THREADS;
  Py_XDECREF(path_b);
  if (rc != CPL_OK) {
    cplpy_raise(rc, "cpl_init");
    return -1;
  }
  self->ctx = ctx;
  return 0;
}

static void Context_dealloc(ContextObj *self) {
  /* Not finalized: left to the job's end (cpl_finalize is collective). */
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Context_finalize(ContextObj *self, PyObject *noarg) {
  (void)noarg;
  if (cplpy_reentered()) return NULL;
  if (!self->ctx || self->finalized) Py_RETURN_NONE;
  if (self->busy)
    return PyErr_Format(PyExc_RuntimeError,
                        "finalize: %d call%s on this context's ports still running in other "
                        "threads (finalize would free those ports): end them first",
                        self->busy, self->busy == 1 ? " is" : "s are");
  self->finalized = 1; /* even on failure: the ports are gone */
  CALL(self, "cpl_finalize", cpl_finalize(self->ctx));
  Py_RETURN_NONE;
}

static PyObject *Context_comm(ContextObj *self, PyObject *noarg) {
  (void)noarg;
  if (!live_context(self)) return NULL;
  MPI_Comm c;
  LOCAL("cpl_component_comm", cpl_component_comm(self->ctx, &c));
  return PyLong_FromLong((long)MPI_Comm_c2f(c));
}

static PyObject *Context_component(ContextObj *self, PyObject *noarg) {
  (void)noarg;
  if (!live_context(self)) return NULL;
  int index;
  const char *name;
  LOCAL("cpl_context_component", cpl_context_component(self->ctx, &index, &name));
  const cpl_workflow *wf = cpl_context_workflow(self->ctx);
  /* The path as os.fsdecode gives it: it need not be UTF-8. */
  return Py_BuildValue("(issN)", index, name, cpl_workflow_name(wf),
                       PyUnicode_DecodeFSDefault(cpl_workflow_path(wf)));
}

static PyObject *Context_links(ContextObj *self, PyObject *noarg) {
  (void)noarg;
  if (!live_context(self)) return NULL;
  int n;
  LOCAL("cpl_context_link_count", cpl_context_link_count(self->ctx, &n));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    cpl_link_end le;
    int rc = cpl_context_link(self->ctx, i, &le);
    if (rc != CPL_OK) {
      Py_DECREF(l);
      return cplpy_raise(rc, "cpl_context_link");
    }
    PyList_SET_ITEM(l, i, link_dict(&le));
  }
  return l;
}

static PyObject *Context_finalized(ContextObj *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(!self->ctx || self->finalized);
}

static PyMethodDef Context_methods[] = {
    {"finalize", (PyCFunction)Context_finalize, METH_NOARGS, "cpl_finalize"},
    {"comm", (PyCFunction)Context_comm, METH_NOARGS, "handle of the component communicator"},
    {"component", (PyCFunction)Context_component, METH_NOARGS,
     "(index, name, workflow name, workflow path)"},
    {"links", (PyCFunction)Context_links, METH_NOARGS, "links of this component"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Context_getset[] = {
    {"finalized", (getter)Context_finalized, NULL, "finalize() was called", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject cplpy_ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "coupler._core.Context",
    .tp_basicsize = sizeof(ContextObj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Context(comm_handle, workflow=None, component=None): cpl_init",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Context_init,
    .tp_dealloc = (destructor)Context_dealloc,
    .tp_methods = Context_methods,
    .tp_getset = Context_getset,
};

/* ---------------------------------------------------------------- Output */

static int Output_init(OutputObj *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"context", "port", NULL};
  ContextObj *c;
  const char *port;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!s", kwlist, &cplpy_ContextType, &c, &port))
    return -1;
  if (cplpy_reentered()) return -1;
  if (self->out || !live_context(c)) {
    if (self->out) PyErr_SetString(PyExc_ValueError, "port already open");
    return -1;
  }
  if (collective_busy(c, "cpl_output_open")) return -1;
  int rc;
  c->collective++;
  UNLOCKED(c, rc = cpl_output_open(c->ctx, port, &self->out));
  c->collective--;
  if (rc != CPL_OK) {
    self->out = NULL;
    cplpy_raise(rc, "cpl_output_open");
    return -1;
  }
  Py_INCREF(c);
  self->owner = c;
  snprintf(self->port, sizeof self->port, "%s", port);
  self->keep = PyList_New(0);
  return self->keep ? 0 : -1;
}

static void Output_dealloc(OutputObj *self) {
  Py_XDECREF(self->keep);
  Py_XDECREF(self->owner);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Output_begin_step(OutputObj *self, PyObject *args) {
  long step = -1;
  if (!PyArg_ParseTuple(args, "|l", &step)) return NULL;
  cpl_output *o = live_output(self);
  if (!o || collective_busy(self->owner, "cpl_output_begin_step")) return NULL;
  COLL_CALL(self, "cpl_output_begin_step", cpl_output_begin_step(o, step));
  Py_RETURN_NONE;
}

/* put(name, array, dims, start): the array is the block (count = shape),
 * C-contiguous in its own dtype; referenced until end_step. */
static PyObject *Output_put(OutputObj *self, PyObject *args) {
  PyObject *name_o, *dims_o, *start_o;
  PyArrayObject *a;
  if (!PyArg_ParseTuple(args, "UO!OO", &name_o, &PyArray_Type, &a, &dims_o, &start_o)) return NULL;
  cpl_output *o = live_output(self);
  if (!o) return NULL;
  CPLPY_KEEP keep = NULL;
  const char *name = name_in(name_o, "name", &keep);
  if (!name) return NULL;
  int rank = PyArray_NDIM(a);
  if (rank < 1 || rank > CPL_MAX_RANK)
    return PyErr_Format(PyExc_ValueError, "dataset %s: %d dims (1 to %d)", name, rank,
                        CPL_MAX_RANK);
  if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a))
    return PyErr_Format(PyExc_ValueError,
                        "dataset %s: the block must be "
                        "C-contiguous and aligned",
                        name);
  hsize_t dims[CPL_MAX_RANK], start[CPL_MAX_RANK], count[CPL_MAX_RANK];
  char what[300];
  snprintf(what, sizeof what, "dataset \"%s\"", name);
  /* the array is the block: its shape is the count */
  if (hsizes(dims_o, rank, dims, "dims", what, "the array put has") < 0 ||
      hsizes(start_o, rank, start, "start", what, "the array put has") < 0)
    return NULL;
  for (int k = 0; k < rank; k++) count[k] = (hsize_t)PyArray_DIM(a, k);
  int owned;
  hid_t t = cplpy_h5type_shared(PyArray_DESCR(a), &owned);
  if (t < 0) return raised_at(what);
  int rc;
  const void *data = PyArray_SIZE(a) ? PyArray_DATA(a) : NULL;
  /* without the GIL: it takes the HDF5 lock (module.h) */
  PORT_UNLOCKED(self, rc = cpl_output_put(o, name, t, rank, dims, start, count, data));
  if (owned) cplpy_h5close(t);
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_output_put");
  if (PyList_Append(self->keep, (PyObject *)a) < 0) return NULL;
  Py_RETURN_NONE;
}

/* attr(dataset or None, name, array): n = array.size elements. */
static PyObject *Output_attr(OutputObj *self, PyObject *args) {
  PyObject *ds, *name_o;
  PyArrayObject *a;
  if (!PyArg_ParseTuple(args, "OUO!", &ds, &name_o, &PyArray_Type, &a)) return NULL;
  cpl_output *o = live_output(self);
  if (!o) return NULL;
  CPLPY_KEEP keep_ds = NULL;
  CPLPY_KEEP keep = NULL;
  const char *dataset = name_in(ds, "dataset", &keep_ds), *name = NULL;
  if (!PyErr_Occurred()) name = name_in(name_o, "name", &keep);
  if (PyErr_Occurred()) return NULL;
  if (!PyArray_IS_C_CONTIGUOUS(a))
    return PyErr_Format(PyExc_ValueError, "attribute %s: contiguous array", name);
  hid_t t = cplpy_h5type(PyArray_DESCR(a));
  char where[600];
  if (t < 0) return raised_at(attr_where(where, sizeof where, name, dataset));
  int rc;
  size_t n = (size_t)PyArray_SIZE(a);
  const void *value = PyArray_DATA(a);
  PORT_UNLOCKED(self, rc = cpl_output_attr(o, dataset, name, t, n, value));
  cplpy_h5close(t);
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_output_attr");
  Py_RETURN_NONE;
}

static void release_step(OutputObj *self) {
  PyList_SetSlice(self->keep, 0, PyList_GET_SIZE(self->keep), NULL);
}

static PyObject *Output_end_step(OutputObj *self, PyObject *noarg) {
  (void)noarg;
  cpl_output *o = live_output(self);
  if (!o || collective_busy(self->owner, "cpl_output_end_step")) return NULL;
  int rc;
  COLL_UNLOCKED(self, rc = cpl_output_end_step(o));
  release_step(self); /* Coupler holds its own copy, or failed */
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_output_end_step");
  Py_RETURN_NONE;
}

static PyObject *Output_close(OutputObj *self, PyObject *noarg) {
  (void)noarg;
  if (cplpy_reentered() || port_busy(self->busy, "output", self->port)) return NULL;
  if (!self->out || self->owner->finalized) Py_RETURN_NONE;
  if (collective_busy(self->owner, "cpl_output_close")) return NULL;
  cpl_output *o = self->out;
  self->out = NULL; /* the port is freed even when close fails */
  int rc;
  COLL_UNLOCKED(self, rc = cpl_output_close(o));
  release_step(self);
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_output_close");
  Py_RETURN_NONE;
}

static PyObject *Output_stats(OutputObj *self, PyObject *args) {
  int link = -1;
  if (!PyArg_ParseTuple(args, "|i", &link)) return NULL;
  cpl_output *o = open_output(self);
  if (!o) return NULL;
  cpl_output_stats st;
  LOCAL("cpl_output_stats_get", cpl_output_stats_get(o, link, &st));
  return Py_BuildValue("{slslslslslsisnsd}", "steps", st.steps, "delivered", st.delivered,
                       "dropped", st.dropped, "skipped", st.skipped, "undelivered", st.undelivered,
                       "queue_max", st.queue_max, "bytes_max", (Py_ssize_t)st.bytes_max, "wait_s",
                       st.wait_s);
}

static PyObject *Output_links(OutputObj *self, PyObject *noarg) {
  (void)noarg;
  cpl_output *o = open_output(self);
  if (!o) return NULL;
  int n;
  LOCAL("cpl_output_link_count", cpl_output_link_count(o, &n));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    cpl_link_end le;
    int rc = cpl_output_link(o, i, &le);
    if (rc != CPL_OK) {
      Py_DECREF(l);
      return cplpy_raise(rc, "cpl_output_link");
    }
    /* "index": what stats() takes; "link" is the workflow's number */
    PyObject *d = link_dict(&le), *index = PyLong_FromLong(i);
    if (!d || !index || PyDict_SetItemString(d, "index", index) < 0) {
      Py_XDECREF(d);
      Py_XDECREF(index);
      Py_DECREF(l);
      return NULL;
    }
    Py_DECREF(index);
    PyList_SET_ITEM(l, i, d);
  }
  return l;
}

static PyObject *Output_closed(OutputObj *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(!self->out || !self->owner || self->owner->finalized);
}

static PyMethodDef Output_methods[] = {
    {"begin_step", (PyCFunction)Output_begin_step, METH_VARARGS, NULL},
    {"put", (PyCFunction)Output_put, METH_VARARGS, NULL},
    {"attr", (PyCFunction)Output_attr, METH_VARARGS, NULL},
    {"end_step", (PyCFunction)Output_end_step, METH_NOARGS, NULL},
    {"close", (PyCFunction)Output_close, METH_NOARGS, NULL},
    {"stats", (PyCFunction)Output_stats, METH_VARARGS, NULL},
    {"links", (PyCFunction)Output_links, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Output_getset[] = {
    {"closed", (getter)Output_closed, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject cplpy_OutputType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "coupler._core.Output",
    .tp_basicsize = sizeof(OutputObj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Output(context, port): cpl_output_open",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Output_init,
    .tp_dealloc = (destructor)Output_dealloc,
    .tp_methods = Output_methods,
    .tp_getset = Output_getset,
};

/* ----------------------------------------------------------------- Input */

static int Input_init(InputObj *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"context", "port", "peer", NULL};
  ContextObj *c;
  const char *port;
  PyObject *peer_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!s|O", kwlist, &cplpy_ContextType, &c, &port,
                                   &peer_o))
    return -1;
  if (cplpy_reentered()) return -1;
  if (self->in || !live_context(c)) {
    if (self->in) PyErr_SetString(PyExc_ValueError, "port already open");
    return -1;
  }
  const char *peer = opt_str(peer_o, "peer");
  if (PyErr_Occurred()) return -1;
  if (collective_busy(c, "cpl_input_open")) return -1;
  int rc;
  c->collective++;
  UNLOCKED(c, rc = cpl_input_open(c->ctx, port, peer, &self->in));
  c->collective--;
  if (rc != CPL_OK) {
    self->in = NULL;
    cplpy_raise(rc, "cpl_input_open");
    return -1;
  }
  Py_INCREF(c);
  self->owner = c;
  snprintf(self->port, sizeof self->port, "%s", port);
  self->step = -1;
  return 0;
}

static void Input_dealloc(InputObj *self) {
  Py_XDECREF(self->owner);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* begin_step(): the step number, or None at end of stream. */
static PyObject *Input_begin_step(InputObj *self, PyObject *noarg) {
  (void)noarg;
  cpl_input *in = live_input(self);
  if (!in || collective_busy(self->owner, "cpl_input_begin_step")) return NULL;
  long step = -1;
  int rc;
  COLL_UNLOCKED(self, rc = cpl_input_begin_step(in, &step));
  if (rc == CPL_END_OF_STREAM) {
    self->ended = 1;
    Py_RETURN_NONE;
  }
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_input_begin_step");
  self->step = step;
  return PyLong_FromLong(step);
}

/* try_step(seconds): the step number, None if none came in time or at
 * end of stream (then .ended is True). */
static PyObject *Input_try_step(InputObj *self, PyObject *args) {
  double seconds;
  if (!PyArg_ParseTuple(args, "d", &seconds)) return NULL;
  cpl_input *in = live_input(self);
  if (!in || collective_busy(self->owner, "cpl_input_try_step")) return NULL;
  long step = -1;
  int rc;
  COLL_UNLOCKED(self, rc = cpl_input_try_step(in, seconds, &step));
  if (rc == CPL_END_OF_STREAM) self->ended = 1;
  if (rc == CPL_END_OF_STREAM || rc == CPL_ERR_TIMEOUT) Py_RETURN_NONE;
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_input_try_step");
  self->step = step;
  return PyLong_FromLong(step);
}

/* begin_step_at(want): as begin_step, for CPL_STEP_NEXT (-1),
 * CPL_STEP_LATEST (-2) or a step number; None at end of stream. */
static PyObject *Input_begin_step_at(InputObj *self, PyObject *args) {
  long want;
  if (!PyArg_ParseTuple(args, "l", &want)) return NULL;
  cpl_input *in = live_input(self);
  if (!in || collective_busy(self->owner, "cpl_input_begin_step_at")) return NULL;
  long step = -1;
  int rc;
  COLL_UNLOCKED(self, rc = cpl_input_begin_step_at(in, want, &step));
  if (rc == CPL_END_OF_STREAM) {
    self->ended = 1;
    Py_RETURN_NONE;
  }
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_input_begin_step_at");
  self->step = step;
  return PyLong_FromLong(step);
}

/* select(dataset or None, ndims, [(start, count), ...]) */
static PyObject *Input_select(InputObj *self, PyObject *args) {
  PyObject *name_o, *boxes;
  int ndims;
  if (!PyArg_ParseTuple(args, "OiO", &name_o, &ndims, &boxes)) return NULL;
  cpl_input *in = live_input(self);
  if (!in) return NULL;
  CPLPY_KEEP keep = NULL;
  const char *name = name_in(name_o, "dataset", &keep);
  if (PyErr_Occurred()) return NULL;
  if (ndims < 1 || ndims > CPL_MAX_RANK)
    return PyErr_Format(PyExc_ValueError, "ndims %d is not in 1..%d", ndims, CPL_MAX_RANK);
  PyObject *f = PySequence_Fast(boxes, "boxes must be a sequence of (start, count)");
  if (!f) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
  hsize_t *v = PyMem_Malloc((size_t)(2 * n * ndims + 1) * sizeof *v);
  int bad = !v;
  for (Py_ssize_t b = 0; !bad && b < n; b++) {
    PyObject *box = PySequence_Fast_GET_ITEM(f, b);
    char what[320];
    snprintf(what, sizeof what, "select, box %zd of %s%s%s", b,
             name ? "dataset \"" : "the default selection (dataset None)", name ? name : "",
             name ? "\"" : "");
    PyObject *sc = PySequence_Fast(box, "a box is (start, count)");
    bad = !sc || PySequence_Fast_GET_SIZE(sc) != 2;
    if (sc && bad) PyErr_SetString(PyExc_ValueError, "a box is (start, count)");
    if (!bad)
      bad = hsizes(PySequence_Fast_GET_ITEM(sc, 0), ndims, v + b * ndims, "start", what,
                   "the boxes have") < 0 ||
            hsizes(PySequence_Fast_GET_ITEM(sc, 1), ndims, v + (n + b) * ndims, "count", what,
                   "the boxes have") < 0;
    Py_XDECREF(sc);
  }
  Py_DECREF(f);
  if (bad) {
    PyMem_Free(v);
    return v ? NULL : PyErr_NoMemory();
  }
  int rc = cpl_input_select(in, name, ndims, (int)n, v, v + n * ndims);
  PyMem_Free(v);
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_input_select");
  Py_RETURN_NONE;
}

/* select_rows(dataset or None, part, nparts) */
static PyObject *Input_select_rows(InputObj *self, PyObject *args) {
  PyObject *name_o;
  int part, nparts;
  if (!PyArg_ParseTuple(args, "Oii", &name_o, &part, &nparts)) return NULL;
  cpl_input *in = live_input(self);
  if (!in) return NULL;
  CPLPY_KEEP keep = NULL;
  const char *name = name_in(name_o, "dataset", &keep);
  if (PyErr_Occurred()) return NULL;
  int rc = cpl_input_select_rows(in, name, part, nparts);
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_input_select_rows");
  Py_RETURN_NONE;
}

static PyObject *Input_select_clear(InputObj *self, PyObject *noarg) {
  (void)noarg;
  cpl_input *in = live_input(self);
  if (!in) return NULL;
  int rc = cpl_input_select_clear(in);
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_input_select_clear");
  Py_RETURN_NONE;
}

static PyObject *Input_stats(InputObj *self, PyObject *noarg) {
  (void)noarg;
  cpl_input *in = open_input(self);
  if (!in) return NULL;
  cpl_input_stats st;
  int rc = cpl_input_stats_get(in, &st);
  if (rc != CPL_OK) return cplpy_raise(rc, "cpl_input_stats_get");
  return Py_BuildValue("{slslsnsnsnsl}", "steps", st.steps, "selective", st.selective, "bytes",
                       (Py_ssize_t)st.bytes, "bytes_held", (Py_ssize_t)st.bytes_held, "bytes_max",
                       (Py_ssize_t)st.bytes_max, "selections", st.selections);
}

/* (name, dtype or None, dims, bytes, nattrs) */
static PyObject *info_tuple(const cpl_dataset_info *info) {
  PyObject *dt = (PyObject *)cplpy_dtype(info->type);
  if (!dt) {
    PyErr_Clear(); /* listed all the same; get() with a dtype still works */
    dt = Py_NewRef(Py_None);
  }
  return Py_BuildValue("(NNNni)", name_out(info->name), dt, hsize_tuple(info->dims, info->rank),
                       (Py_ssize_t)info->bytes, info->nattrs);
}

static PyObject *Input_datasets(InputObj *self, PyObject *noarg) {
  (void)noarg;
  cpl_input *in = live_input(self);
  if (!in) return NULL;
  int n;
  LOCAL("cpl_input_dataset_count", cpl_input_dataset_count(in, &n));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    cpl_dataset_info info;
    int rc = cpl_input_dataset(in, i, &info);
    PyObject *t = rc == CPL_OK ? info_tuple(&info) : NULL;
    if (!t) {
      Py_DECREF(l);
      return rc == CPL_OK ? NULL : cplpy_raise(rc, "cpl_input_dataset");
    }
    PyList_SET_ITEM(l, i, t);
  }
  return l;
}

static PyObject *Input_inquire(InputObj *self, PyObject *args) {
  PyObject *name_o;
  if (!PyArg_ParseTuple(args, "U", &name_o)) return NULL;
  cpl_input *in = live_input(self);
  if (!in) return NULL;
  CPLPY_KEEP keep = NULL;
  const char *name = name_in(name_o, "name", &keep);
  if (!name) return NULL;
  cpl_dataset_info info;
  LOCAL("cpl_input_inquire", cpl_input_inquire(in, name, &info));
  return info_tuple(&info);
}

/* get(name, out, dtype, start, count): into `out` (C-contiguous, writable,
 * as many elements as the box) or a new array of shape count in `dtype`
 * (None: the stored type's). start/count None: the whole array. */
static PyObject *Input_get(InputObj *self, PyObject *args) {
  PyObject *name_o, *out_o, *dtype_o, *start_o, *count_o;
  if (!PyArg_ParseTuple(args, "UOOOO", &name_o, &out_o, &dtype_o, &start_o, &count_o)) return NULL;
  cpl_input *in = live_input(self);
  if (!in) return NULL;
  CPLPY_KEEP keep = NULL;
  const char *name = name_in(name_o, "name", &keep);
  if (!name) return NULL;
  cpl_dataset_info info;
  LOCAL("cpl_input_inquire", cpl_input_inquire(in, name, &info));
  int rank = info.rank;
  hsize_t start[CPL_MAX_RANK], count[CPL_MAX_RANK];
  /* where, for the messages: made only when needed (not per get) */
  char what[800];
#define WHERE input_where(self, name, what, sizeof what)
  if ((start_o == Py_None) != (count_o == Py_None))
    return PyErr_Format(PyExc_ValueError,
                        "%s: give both start and count, or "
                        "neither (the whole array)",
                        WHERE);
  if (start_o == Py_None) {
    for (int k = 0; k < rank; k++) {
      start[k] = 0;
      count[k] = info.dims[k];
    }
  } else {
    WHERE; /* for hsizes' messages */
    if (hsizes(start_o, rank, start, "start", what, "the dataset has") < 0 ||
        hsizes(count_o, rank, count, "count", what, "the dataset has") < 0)
      return NULL;
  }
  /* A box outside the array is Coupler's error (link, step, box), raised
   * before the result is allocated: sized by the box, that allocation
   * failed first (MemoryError for 8 TiB) or overflowed. */
  for (int k = 0; k < rank; k++)
    if (start[k] > info.dims[k] || count[k] > info.dims[k] - start[k]) {
      int rc = cpl_input_get(in, name, info.type, start, count, NULL);
      return cplpy_raise(rc != CPL_OK ? rc : CPL_ERR_INTERNAL, "cpl_input_get");
    }
  npy_intp n = 1, shape[CPL_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    shape[k] = (npy_intp)count[k];
    n *= shape[k];
  }
  PyArrayObject *out;
  PyArray_Descr *d;
  if (out_o != Py_None) {
    if (!PyArray_Check(out_o))
      return PyErr_Format(PyExc_TypeError, "%s: out must be a NumPy array, not %.100s", WHERE,
                          Py_TYPE(out_o)->tp_name);
    out = (PyArrayObject *)out_o;
    const char *bad = !PyArray_IS_C_CONTIGUOUS(out) ? "is not C-contiguous"
                      : !PyArray_ISWRITEABLE(out)   ? "is read-only"
                      : !PyArray_ISALIGNED(out)     ? "is not aligned"
                                                    : NULL;
    if (bad) return PyErr_Format(PyExc_ValueError, "%s: out %s", WHERE, bad);
    if (PyArray_SIZE(out) != n)
      return PyErr_Format(PyExc_ValueError, "%s: out has %zd elements, the box %zd", WHERE,
                          (Py_ssize_t)PyArray_SIZE(out), (Py_ssize_t)n);
    Py_INCREF(out);
    d = PyArray_DESCR(out);
    Py_INCREF(d);
  } else {
    if (dtype_o != Py_None) {
      if (!PyArray_DescrConverter(dtype_o, &d)) return NULL;
    } else if (!(d = cplpy_dtype(info.type))) {
      return raised_at(WHERE);
    }
    Py_INCREF(d); /* NewFromDescr steals one */
    out = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, d, rank, shape, NULL, NULL, 0, NULL);
    if (!out) {
      Py_DECREF(d);
      return NULL;
    }
  }
  int owned;
  hid_t memtype = cplpy_memtype(info.type, d, &owned);
  Py_DECREF(d);
  if (memtype < 0) {
    Py_DECREF(out);
    return raised_at(WHERE);
  }
  int rc;
  void *buf = PyArray_DATA(out);
  const hsize_t *s = start_o == Py_None ? NULL : start;
  const hsize_t *c = start_o == Py_None ? NULL : count;
  PORT_UNLOCKED(self, rc = cpl_input_get(in, name, memtype, s, c, buf));
  if (owned) cplpy_h5close(memtype);
  if (rc != CPL_OK) {
    Py_DECREF(out);
    return cplpy_raise(rc, "cpl_input_get");
  }
  return (PyObject *)out;
#undef WHERE
}

/* attrs(dataset or None): [(name, dtype or None, n)] */
static PyObject *Input_attrs(InputObj *self, PyObject *args) {
  PyObject *ds;
  if (!PyArg_ParseTuple(args, "O", &ds)) return NULL;
  cpl_input *in = live_input(self);
  if (!in) return NULL;
  CPLPY_KEEP keep = NULL;
  const char *dataset = name_in(ds, "dataset", &keep);
  if (PyErr_Occurred()) return NULL;
  int n;
  LOCAL("cpl_input_attr_count", cpl_input_attr_count(in, dataset, &n));
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    cpl_attr_info ai;
    int rc = cpl_input_attr(in, dataset, i, &ai);
    if (rc != CPL_OK) {
      Py_DECREF(l);
      return cplpy_raise(rc, "cpl_input_attr");
    }
    PyObject *dt = (PyObject *)cplpy_dtype(ai.type);
    if (!dt) {
      PyErr_Clear();
      dt = Py_NewRef(Py_None);
    }
    PyObject *t = Py_BuildValue("(NNn)", name_out(ai.name), dt, (Py_ssize_t)ai.n);
    if (!t) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, i, t);
  }
  return l;
}

/* attr_get(dataset or None, name, dtype or None): 1-D array of n. */
static PyObject *Input_attr_get(InputObj *self, PyObject *args) {
  PyObject *ds, *name_o, *dtype_o;
  if (!PyArg_ParseTuple(args, "OUO", &ds, &name_o, &dtype_o)) return NULL;
  cpl_input *in = live_input(self);
  if (!in) return NULL;
  CPLPY_KEEP keep_ds = NULL;
  CPLPY_KEEP keep = NULL;
  const char *dataset = name_in(ds, "dataset", &keep_ds), *name = NULL;
  if (!PyErr_Occurred()) name = name_in(name_o, "name", &keep);
  if (PyErr_Occurred()) return NULL;
  cpl_attr_info ai;
  LOCAL("cpl_input_attr_inquire", cpl_input_attr_inquire(in, dataset, name, &ai));
  PyArray_Descr *d;
  char where[600];
  if (dtype_o != Py_None) {
    if (!PyArray_DescrConverter(dtype_o, &d)) return NULL;
  } else if (!(d = cplpy_dtype(ai.type))) {
    return raised_at(attr_where(where, sizeof where, name, dataset));
  }
  int owned;
  hid_t memtype = cplpy_memtype(ai.type, d, &owned);
  if (memtype < 0) {
    Py_DECREF(d);
    return raised_at(attr_where(where, sizeof where, name, dataset));
  }
  npy_intp shape[1] = {(npy_intp)ai.n};
  PyArrayObject *a = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, d, 1, shape, NULL, NULL,
                                                           0, NULL); /* steals d */
  if (!a) {
    if (owned) cplpy_h5close(memtype);
    return NULL;
  }
  int rc;
  void *buf = PyArray_DATA(a);
  PORT_UNLOCKED(self, rc = cpl_input_attr_get(in, dataset, name, memtype, ai.n, buf));
  if (owned) cplpy_h5close(memtype);
  if (rc != CPL_OK) {
    Py_DECREF(a);
    return cplpy_raise(rc, "cpl_input_attr_get");
  }
  return (PyObject *)a;
}

static PyObject *Input_end_step(InputObj *self, PyObject *noarg) {
  (void)noarg;
  cpl_input *in = live_input(self);
  if (!in || collective_busy(self->owner, "cpl_input_end_step")) return NULL;
  self->step = -1; /* closed even when end_step fails */
  COLL_CALL(self, "cpl_input_end_step", cpl_input_end_step(in));
  Py_RETURN_NONE;
}

static PyObject *Input_close(InputObj *self, PyObject *noarg) {
  (void)noarg;
  if (cplpy_reentered() || port_busy(self->busy, "input", self->port)) return NULL;
  if (!self->in || self->owner->finalized) Py_RETURN_NONE;
  if (collective_busy(self->owner, "cpl_input_close")) return NULL;
  cpl_input *in = self->in;
  self->in = NULL;
  self->step = -1;
  COLL_CALL(self, "cpl_input_close", cpl_input_close(in));
  Py_RETURN_NONE;
}

static PyObject *Input_link(InputObj *self, PyObject *noarg) {
  (void)noarg;
  cpl_input *in = open_input(self);
  if (!in) return NULL;
  cpl_link_end le;
  LOCAL("cpl_input_link", cpl_input_link(in, &le));
  return link_dict(&le);
}

static PyObject *Input_closed(InputObj *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(!self->in || !self->owner || self->owner->finalized);
}

static PyObject *Input_ended(InputObj *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(self->ended);
}

/* The open step's number, kept here rather than by the Python layer: an
 * exception raised as a begin call returns (KeyboardInterrupt) would
 * otherwise lose a step Coupler holds open. */
static PyObject *Input_step(InputObj *self, void *unused) {
  (void)unused;
  if (self->step < 0 || !self->in || self->owner->finalized) Py_RETURN_NONE;
  return PyLong_FromLong(self->step);
}

static PyMethodDef Input_methods[] = {
    {"begin_step", (PyCFunction)Input_begin_step, METH_NOARGS, NULL},
    {"try_step", (PyCFunction)Input_try_step, METH_VARARGS, NULL},
    {"begin_step_at", (PyCFunction)Input_begin_step_at, METH_VARARGS, NULL},
    {"select", (PyCFunction)Input_select, METH_VARARGS, NULL},
    {"select_rows", (PyCFunction)Input_select_rows, METH_VARARGS, NULL},
    {"select_clear", (PyCFunction)Input_select_clear, METH_NOARGS, NULL},
    {"stats", (PyCFunction)Input_stats, METH_NOARGS, NULL},
    {"datasets", (PyCFunction)Input_datasets, METH_NOARGS, NULL},
    {"inquire", (PyCFunction)Input_inquire, METH_VARARGS, NULL},
    {"get", (PyCFunction)Input_get, METH_VARARGS, NULL},
    {"attrs", (PyCFunction)Input_attrs, METH_VARARGS, NULL},
    {"attr_get", (PyCFunction)Input_attr_get, METH_VARARGS, NULL},
    {"end_step", (PyCFunction)Input_end_step, METH_NOARGS, NULL},
    {"close", (PyCFunction)Input_close, METH_NOARGS, NULL},
    {"link", (PyCFunction)Input_link, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Input_getset[] = {
    {"closed", (getter)Input_closed, NULL, NULL, NULL},
    {"ended", (getter)Input_ended, NULL, "end of stream seen", NULL},
    {"step", (getter)Input_step, NULL, "number of the open step, None between steps", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject cplpy_InputType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "coupler._core.Input",
    .tp_basicsize = sizeof(InputObj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Input(context, port, peer=None): cpl_input_open",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Input_init,
    .tp_dealloc = (destructor)Input_dealloc,
    .tp_methods = Input_methods,
    .tp_getset = Input_getset,
};

int cplpy_ports_init(PyObject *m) {
  PyTypeObject *types[] = {&cplpy_ContextType, &cplpy_OutputType, &cplpy_InputType};
  const char *names[] = {"Context", "Output", "Input"};
  for (int i = 0; i < 3; i++)
    if (PyType_Ready(types[i]) < 0 || PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0)
      return -1;
  return 0;
}
