/*
 * NumPy dtypes <-> HDF5 datatypes, with h5py's conventions so files the
 * HDF5 sink writes read back alike in h5py: bool is an int8 enum
 * {FALSE, TRUE}, complex a compound {r, i}, bytes 'S<n>' a fixed
 * null-padded string, structured dtypes compounds (with their offsets and
 * padding), sub-arrays HDF5 array types, float16 an IEEE half. No HDF5
 * equivalent (unicode 'U', objects, datetimes): TypeError naming the dtype.
 */
#include "module.h"

#include <string.h>

static int is_big(PyArray_Descr *d) {
  char o = d->byteorder;
  if (o == '=') return PyArray_ISNBO('>') && !PyArray_ISNBO('<');
  return o == '>';
}

static hid_t with_order(hid_t base, PyArray_Descr *d) {
  hid_t t = H5Tcopy(base);
  if (t >= 0 && d->elsize > 1 && H5Tset_order(t, is_big(d) ? H5T_ORDER_BE : H5T_ORDER_LE) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

static hid_t unsupported(PyArray_Descr *d, const char *why) {
  PyObject *r = PyObject_Repr((PyObject *)d);
  PyErr_Format(PyExc_TypeError, "dtype %s has no HDF5 equivalent%s%s",
               r ? PyUnicode_AsUTF8(r) : "?", why ? ": " : "", why ? why : "");
  Py_XDECREF(r);
  return -1;
}

static hid_t half_type(PyArray_Descr *d) {
  /* IEEE binary16: sign bit 15, exponent 10..14 (bias 15), mantissa 0..9. */
  hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  if (t < 0) return -1;
  if (H5Tset_fields(t, 15, 10, 5, 0, 10) < 0 || H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, 15) < 0 ||
      H5Tset_precision(t, 16) < 0 || H5Tset_order(t, is_big(d) ? H5T_ORDER_BE : H5T_ORDER_LE) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

static hid_t h5type(PyArray_Descr *d);

static hid_t compound_type(PyArray_Descr *d) {
  hid_t t = H5Tcreate(H5T_COMPOUND, (size_t)d->elsize);
  if (t < 0) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(d->names);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *name = PyTuple_GET_ITEM(d->names, i);
    PyObject *field = PyDict_GetItem(d->fields, name); /* (dtype, offset, ..) */
    PyArray_Descr *fd = (PyArray_Descr *)PyTuple_GET_ITEM(field, 0);
    long off = PyLong_AsLong(PyTuple_GET_ITEM(field, 1));
    hid_t ft = h5type(fd);
    if (ft < 0) {
      H5Tclose(t);
      return -1;
    }
    herr_t e = H5Tinsert(t, PyUnicode_AsUTF8(name), (size_t)off, ft);
    H5Tclose(ft);
    if (e < 0) {
      H5Tclose(t);
      return unsupported(d, "HDF5 refused a field");
    }
  }
  return t;
}

static hid_t h5type(PyArray_Descr *d) {
  if (d->subarray) { /* e.g. ('<f8', (3,)) inside a structured dtype */
    PyObject *shape = d->subarray->shape;
    hsize_t dims[H5S_MAX_RANK];
    int nd = 1;
    if (PyTuple_Check(shape)) {
      nd = (int)PyTuple_GET_SIZE(shape);
      if (nd > H5S_MAX_RANK) return unsupported(d, "too many sub-array dims");
      for (int k = 0; k < nd; k++) dims[k] = (hsize_t)PyLong_AsLong(PyTuple_GET_ITEM(shape, k));
    } else {
      dims[0] = (hsize_t)PyLong_AsLong(shape);
    }
    hid_t base = h5type(d->subarray->base);
    if (base < 0) return -1;
    hid_t t = H5Tarray_create2(base, (unsigned)nd, dims);
    H5Tclose(base);
    return t;
  }
  if (d->names && PyTuple_GET_SIZE(d->names) > 0) return compound_type(d);
  switch (d->kind) {
  case 'b': {
    hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
    signed char f = 0, tr = 1;
    if (t >= 0 && (H5Tenum_insert(t, "FALSE", &f) < 0 || H5Tenum_insert(t, "TRUE", &tr) < 0)) {
      H5Tclose(t);
      return -1;
    }
    return t;
  }
  case 'i':
  case 'u': {
    int s = d->kind == 'i';
    switch (d->elsize) {
    case 1: return with_order(s ? H5T_STD_I8LE : H5T_STD_U8LE, d);
    case 2: return with_order(s ? H5T_STD_I16LE : H5T_STD_U16LE, d);
    case 4: return with_order(s ? H5T_STD_I32LE : H5T_STD_U32LE, d);
    case 8: return with_order(s ? H5T_STD_I64LE : H5T_STD_U64LE, d);
    }
    break;
  }
  case 'f':
    switch (d->elsize) {
    case 2: return half_type(d);
    case 4: return with_order(H5T_IEEE_F32LE, d);
    case 8: return with_order(H5T_IEEE_F64LE, d);
    }
    if (d->elsize == (int)sizeof(long double) && d->byteorder != '>' && d->byteorder != '<')
      return H5Tcopy(H5T_NATIVE_LDOUBLE);
    break;
  case 'c': {
    PyArray_Descr *half = PyArray_DescrNewFromType(d->elsize == 8    ? NPY_FLOAT32
                                                   : d->elsize == 16 ? NPY_FLOAT64
                                                                     : NPY_LONGDOUBLE);
    if (!half) return -1;
    if (d->byteorder == '<' || d->byteorder == '>') half->byteorder = d->byteorder;
    hid_t ft = h5type(half);
    Py_DECREF(half);
    if (ft < 0) return -1;
    size_t fs = H5Tget_size(ft);
    hid_t t = H5Tcreate(H5T_COMPOUND, 2 * fs);
    if (t >= 0 && (H5Tinsert(t, "r", 0, ft) < 0 || H5Tinsert(t, "i", fs, ft) < 0)) {
      H5Tclose(t);
      t = -1;
    }
    H5Tclose(ft);
    return t;
  }
  case 'S': {
    if (d->elsize == 0) return unsupported(d, "a string of size 0");
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 &&
        (H5Tset_size(t, (size_t)d->elsize) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0)) {
      H5Tclose(t);
      return -1;
    }
    return t;
  }
  case 'V':
    if (d->elsize > 0) return H5Tcreate(H5T_OPAQUE, (size_t)d->elsize);
    break;
  case 'U':
    return unsupported(d, "HDF5 has no fixed-size UTF-32 strings; "
                          "encode to bytes ('S') first");
  }
  return unsupported(d, NULL);
}

hid_t cplpy_h5type(PyArray_Descr *d) {
  CPLPY_H5_HELD;
  hid_t t;
  /* A dtype HDF5 refuses (overlapping fields, a zero-size sub-array) is
   * a TypeError here, not HDF5's error stack on stderr. */
  H5E_BEGIN_TRY { t = h5type(d); }
  H5E_END_TRY;
  if (t < 0 && !PyErr_Occurred()) unsupported(d, "HDF5 refused it");
  return t;
}

void cplpy_h5close(hid_t t) {
  CPLPY_H5_HELD;
  H5Tclose(t);
}

/* Built-in dtypes in native order map to one HDF5 type each, made once:
 * a put or get then costs no type construction. The cache is read and
 * written with the GIL held, so a hit takes no lock. */
hid_t cplpy_h5type_shared(PyArray_Descr *d, int *owned) {
  static hid_t cache[NPY_NTYPES];
  int n = d->type_num;
  *owned = 0;
  if (n >= 0 && n < NPY_NTYPES && n != NPY_VOID && n != NPY_STRING && n != NPY_UNICODE &&
      !d->names && !d->subarray && PyArray_ISNBO(d->byteorder)) {
    if (cache[n] > 0) return cache[n];
    hid_t t = cplpy_h5type(d); /* another thread may fill the cache meanwhile */
    if (t < 0 || cache[n] <= 0) return t < 0 ? -1 : (cache[n] = t);
    cplpy_h5close(t);
    return cache[n];
  }
  *owned = 1;
  return cplpy_h5type(d);
}

/* The memory type to read data stored as `stored` into dtype d. HDF5
 * converts no integer to or from a bitfield, which cplpy_dtype gives as
 * the unsigned integer of its size: an integer dtype of that size reads
 * a bitfield as a bitfield in the dtype's byte order, its bits as they
 * are. Nor does it convert strings between character sets: an 'S' dtype
 * reads a fixed string in the stored one (UTF-8 text as its bytes).
 * Close the type only if *owned. */
hid_t cplpy_memtype(hid_t stored, PyArray_Descr *d, int *owned) {
  /* other dtypes need no look at the stored type, nor the lock for it */
  if (d->names || d->subarray || !strchr("uiS", d->kind)) return cplpy_h5type_shared(d, owned);
  CPLPY_H5_HELD;
  H5T_class_t c = H5Tget_class(stored);
  if (c == H5T_BITFIELD && (d->kind == 'u' || d->kind == 'i') &&
      (size_t)d->elsize == H5Tget_size(stored)) {
    *owned = 1;
    hid_t t = with_order(stored, d);
    if (t < 0) unsupported(d, "HDF5 refused a bitfield of its order");
    return t;
  }
  if (c == H5T_STRING && d->kind == 'S' && d->elsize > 0 && H5Tis_variable_str(stored) == 0) {
    hid_t t = cplpy_h5type(d);
    *owned = 1;
    if (t >= 0 && H5Tset_cset(t, H5Tget_cset(stored)) < 0) {
      H5Tclose(t);
      t = unsupported(d, "HDF5 refused the stored character set");
    }
    return t;
  }
  return cplpy_h5type_shared(d, owned);
}

/* ------------------------------------------------------------ HDF5 -> NumPy */

static PyArray_Descr *descr_from(PyObject *spec) {
  PyArray_Descr *d = NULL;
  if (spec) PyArray_DescrConverter(spec, &d);
  Py_XDECREF(spec);
  return d;
}

static PyArray_Descr *simple(char kind, H5T_order_t order, size_t size) {
  char s[32];
  snprintf(s, sizeof s, "%c%c%zu", order == H5T_ORDER_BE ? '>' : '<', kind, size);
  return descr_from(PyUnicode_FromString(s));
}

static PyArray_Descr *no_dtype(hid_t type, const char *what) {
  (void)type;
  PyErr_Format(PyExc_TypeError,
               "the dataset's HDF5 type (%s) has no NumPy equivalent; read it "
               "with an explicit dtype HDF5 can convert it to",
               what);
  return NULL;
}

static int is_complex(hid_t t, hid_t *member) {
  if (H5Tget_nmembers(t) != 2) return 0;
  char *n0 = H5Tget_member_name(t, 0), *n1 = H5Tget_member_name(t, 1);
  hid_t m0 = H5Tget_member_type(t, 0), m1 = H5Tget_member_type(t, 1);
  int yes = n0 && n1 && !strcmp(n0, "r") && !strcmp(n1, "i") && H5Tget_class(m0) == H5T_FLOAT &&
            H5Tequal(m0, m1) > 0 && H5Tget_member_offset(t, 1) == H5Tget_size(m0) &&
            H5Tget_size(t) == 2 * H5Tget_size(m0);
  H5free_memory(n0);
  H5free_memory(n1);
  H5Tclose(m1);
  if (yes) *member = m0;
  else H5Tclose(m0);
  return yes;
}

PyArray_Descr *cplpy_dtype(hid_t t) {
  CPLPY_H5_HELD;
  size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
  case H5T_INTEGER:
    return simple(H5Tget_sign(t) == H5T_SGN_NONE ? 'u' : 'i', H5Tget_order(t), size);
  case H5T_BITFIELD: return simple('u', H5Tget_order(t), size);
  case H5T_FLOAT:
    if (size == 2 || size == 4 || size == 8) return simple('f', H5Tget_order(t), size);
    if (H5Tequal(t, H5T_NATIVE_LDOUBLE) > 0) return PyArray_DescrFromType(NPY_LONGDOUBLE);
    return no_dtype(t, "a float of unusual size");
  case H5T_STRING:
    if (H5Tis_variable_str(t) > 0) return no_dtype(t, "variable-length string");
    return descr_from(PyUnicode_FromFormat("S%zu", size));
  case H5T_OPAQUE: return descr_from(PyUnicode_FromFormat("V%zu", size));
  case H5T_ENUM: {
    hid_t base = H5Tget_super(t);
    int nm = H5Tget_nmembers(t);
    int isbool = 0;
    if (nm == 2 && size == 1) {
      char *a = H5Tget_member_name(t, 0), *b = H5Tget_member_name(t, 1);
      isbool = a && b && !strcmp(a, "FALSE") && !strcmp(b, "TRUE");
      H5free_memory(a);
      H5free_memory(b);
    }
    PyArray_Descr *d = isbool ? PyArray_DescrFromType(NPY_BOOL) : cplpy_dtype(base);
    H5Tclose(base);
    return d;
  }
  case H5T_ARRAY: {
    int nd = H5Tget_array_ndims(t);
    hsize_t dims[H5S_MAX_RANK];
    H5Tget_array_dims2(t, dims);
    hid_t base = H5Tget_super(t);
    PyArray_Descr *bd = cplpy_dtype(base);
    H5Tclose(base);
    if (!bd) return NULL;
    PyObject *shape = PyTuple_New(nd);
    for (int k = 0; k < nd; k++) PyTuple_SET_ITEM(shape, k, PyLong_FromUnsignedLongLong(dims[k]));
    return descr_from(Py_BuildValue("(NN)", (PyObject *)bd, shape));
  }
  case H5T_COMPOUND: {
    hid_t m;
    if (is_complex(t, &m)) {
      size_t ms = H5Tget_size(m);
      H5T_order_t o = H5Tget_order(m);
      H5Tclose(m);
      if (ms == 4 || ms == 8) return simple('c', o, 2 * ms);
      return PyArray_DescrFromType(NPY_CLONGDOUBLE);
    }
    int n = H5Tget_nmembers(t);
    PyObject *names = PyList_New(n), *formats = PyList_New(n), *offsets = PyList_New(n);
    for (int i = 0; i < n; i++) {
      char *nm = H5Tget_member_name(t, (unsigned)i);
      hid_t mt = H5Tget_member_type(t, (unsigned)i);
      PyArray_Descr *md = cplpy_dtype(mt);
      H5Tclose(mt);
      if (!md) {
        H5free_memory(nm);
        Py_DECREF(names);
        Py_DECREF(formats);
        Py_DECREF(offsets);
        return NULL;
      }
      PyList_SET_ITEM(names, i, PyUnicode_FromString(nm));
      PyList_SET_ITEM(formats, i, (PyObject *)md);
      PyList_SET_ITEM(offsets, i, PyLong_FromSize_t(H5Tget_member_offset(t, (unsigned)i)));
      H5free_memory(nm);
    }
    return descr_from(Py_BuildValue("{sNsNsNsn}", "names", names, "formats", formats, "offsets",
                                    offsets, "itemsize", (Py_ssize_t)size));
  }
  default: return no_dtype(t, "reference, variable-length or time");
  }
}
