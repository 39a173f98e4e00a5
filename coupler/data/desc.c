#include "data/desc.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"
#include "core/error.h"
#include "data/slab.h"

#define DESC_MAGIC 0x44504c43u  /* "CLPD" */
#define ATTRS_MAGIC 0x41504c43u /* "CLPA" */
#define MAX_DATASETS CPLI_DATASETS_MAX

int cpli_name_ok(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n > 255 || !strcmp(name, ".")) return 0;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    if (*c < 0x20 || *c == 0x7f || *c == '/') return 0;
  return 1;
}

/* ----------------------------------------------------------- HDF5 lock */

static pthread_mutex_t h5_lock;
static pthread_once_t h5_lock_once = PTHREAD_ONCE_INIT;

static void h5_lock_init(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&h5_lock, &a);
  pthread_mutexattr_destroy(&a);
}

void cpl_hdf5_lock(void) {
  pthread_once(&h5_lock_once, h5_lock_init);
  pthread_mutex_lock(&h5_lock);
}

void cpl_hdf5_unlock(void) { pthread_mutex_unlock(&h5_lock); }

/* ------------------------------------------------------------- types */

int cpli_type_check(hid_t type, const char *what) {
  CPLI_H5_HELD;
  /* A bad id is the caller's error, not HDF5's: asked first (H5Iget_type
   * reports nothing), which costs far less than silencing HDF5 around the
   * calls below, once per put. */
  htri_t vl = -1, ref = -1, vs = -1;
  if (H5Iget_type(type) == H5I_DATATYPE) {
    vl = H5Tdetect_class(type, H5T_VLEN);
    ref = H5Tdetect_class(type, H5T_REFERENCE);
    vs = H5Tis_variable_str(type);
  }
  if (vl < 0 || ref < 0 || vs < 0 || H5Tget_size(type) == 0)
    return cpli_fail(CPL_ERR_ARG, "%s%snot a valid HDF5 datatype", what ? what : "",
                     what ? ": " : "");
  if (vl > 0 || ref > 0 || vs > 0)
    return cpli_fail(CPL_ERR_UNSUPPORTED,
                     "%s%svariable-length and reference types hold pointers and cannot travel; "
                     "use fixed-size types",
                     what ? what : "", what ? ": " : "");
  return CPL_OK;
}

int cpli_type_convertible(hid_t src, hid_t dst) {
  CPLI_H5_HELD;
  H5T_cdata_t *cdata = NULL;
  H5T_conv_t f;
  H5E_BEGIN_TRY { f = H5Tfind(src, dst, &cdata); }
  H5E_END_TRY;
  return f != NULL;
}

const char *cpli_type_str(hid_t type, char *buf, size_t n) {
  CPLI_H5_HELD;
  size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
  case H5T_INTEGER:
    snprintf(buf, n, "%sint%zu", H5Tget_sign(type) == H5T_SGN_NONE ? "u" : "", size * 8);
    break;
  case H5T_FLOAT: snprintf(buf, n, "float%zu", size * 8); break;
  case H5T_STRING: snprintf(buf, n, "string(%zu)", size); break;
  case H5T_COMPOUND: snprintf(buf, n, "compound(%zu B)", size); break;
  case H5T_ARRAY: snprintf(buf, n, "array(%zu B)", size); break;
  case H5T_ENUM: snprintf(buf, n, "enum(%zu B)", size); break;
  case H5T_OPAQUE: snprintf(buf, n, "opaque(%zu B)", size); break;
  default: snprintf(buf, n, "type(%zu B)", size); break;
  }
  return buf;
}

hid_t cpli_yaml_type(const char *name) {
  CPLI_H5_HELD;
  H5open(); /* the *_g globals are set when the library initialises */
  const hid_t native[CPLI_DT_COUNT] = {
      [CPLI_DT_INT8] = H5T_NATIVE_INT8_g,     [CPLI_DT_INT16] = H5T_NATIVE_INT16_g,
      [CPLI_DT_INT32] = H5T_NATIVE_INT32_g,   [CPLI_DT_INT64] = H5T_NATIVE_INT64_g,
      [CPLI_DT_UINT8] = H5T_NATIVE_UINT8_g,   [CPLI_DT_UINT16] = H5T_NATIVE_UINT16_g,
      [CPLI_DT_UINT32] = H5T_NATIVE_UINT32_g, [CPLI_DT_UINT64] = H5T_NATIVE_UINT64_g,
      [CPLI_DT_FLOAT32] = H5T_NATIVE_FLOAT_g, [CPLI_DT_FLOAT64] = H5T_NATIVE_DOUBLE_g,
      [CPLI_DT_CHAR] = H5T_NATIVE_SCHAR_g,    [CPLI_DT_BYTE] = H5T_NATIVE_UCHAR_g,
  };
  const int i = cpli_dtype_find(name); /* the vocabulary: workflow/model.h */
  return i < 0 ? H5I_INVALID_HID : native[i];
}

/* Same class, size and sign: what a declared `type` fixes. */
static int same_kind(hid_t a, hid_t b) {
  CPLI_H5_HELD;
  if (H5Tget_class(a) != H5Tget_class(b) || H5Tget_size(a) != H5Tget_size(b)) return 0;
  return H5Tget_class(a) != H5T_INTEGER || H5Tget_sign(a) == H5Tget_sign(b);
}

/* The last type encode_type encoded, and its bytes: the datasets and
 * attributes of a step mostly share a few types, each its own copy, and
 * H5Tencode (two calls, a dozen allocations) was a fifth of the
 * producer's instructions in a step of many small datasets. Only atomic
 * types are remembered: two of them H5Tequal calls equal encode alike,
 * whereas it calls compound and enum types equal whose members were
 * inserted in another order, which H5Tencode keeps. */
typedef struct enc_memo {
  hid_t t; /* not owned; H5I_INVALID_HID: none yet */
  unsigned char *p;
  size_t n;
} enc_memo;

static int encode_type(hid_t type, cpli_wbuf *w, enc_memo *m) {
  CPLI_H5_HELD;
  if (m->t >= 0 && (m->t == type || H5Tequal(m->t, type) > 0)) {
    cpli_w_u32(w, (uint32_t)m->n);
    cpli_w_bytes(w, m->p, m->n);
    return CPL_OK;
  }
  size_t n = 0;
  if (H5Tencode(type, NULL, &n) < 0 || n > UINT32_MAX)
    return cpli_fail(CPL_ERR_HDF5, "H5Tencode failed");
  unsigned char *buf = malloc(n);
  if (!buf) return cpli_fail(CPL_ERR_NOMEM, "out of memory encoding a type");
  if (H5Tencode(type, buf, &n) < 0) {
    free(buf);
    return cpli_fail(CPL_ERR_HDF5, "H5Tencode failed");
  }
  cpli_w_u32(w, (uint32_t)n);
  cpli_w_bytes(w, buf, n);
  const H5T_class_t c = H5Tget_class(type);
  if (c != H5T_INTEGER && c != H5T_FLOAT && c != H5T_STRING && c != H5T_BITFIELD) {
    free(buf);
    return CPL_OK;
  }
  free(m->p);
  *m = (enc_memo){.t = type, .p = buf, .n = n};
  return CPL_OK;
}

/*
 * H5Tdecode takes no length: it trusts the counts and strings inside the
 * bytes. So a type received from a peer is first walked here, with bounds
 * checks, in the layout HDF5 1.10's H5Tencode writes (two bytes, then the
 * datatype message of the file format, with nested types for compound,
 * enum and array members). Only bytes that pass reach H5Tdecode; besides
 * the layout, every size must be positive and every member lie inside its
 * parent (HDF5 divides by these sizes when it copies types).
 */
#define TYPE_MAX_DEPTH 8
#define TYPE_MAX_MEMBERS 4096 /* of a compound type */

typedef struct tcur {
  const unsigned char *p, *end;
} tcur;

static int take(tcur *c, size_t n, const unsigned char **at) {
  if ((size_t)(c->end - c->p) < n) return 0;
  if (at) *at = c->p;
  c->p += n;
  return 1;
}

static uint32_t le(const unsigned char *p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* A NUL-terminated name, padded to 8 bytes before version 3. */
static int take_name(tcur *c, int version) {
  const unsigned char *nul = memchr(c->p, '\0', (size_t)(c->end - c->p));
  if (!nul || nul == c->p) return 0;
  size_t len = (size_t)(nul - c->p);
  return take(c, version >= 3 ? len + 1 : (len + 8) / 8 * 8, NULL);
}

/* Walk one datatype message; its size goes to *size. */
static int type_ok(tcur *c, int depth, uint32_t *size) {
  const unsigned char *h;
  if (depth > TYPE_MAX_DEPTH || !take(c, 8, &h)) return 0;
  int cls = h[0] & 0x0f, version = h[0] >> 4;
  uint32_t flags = le(h + 1, 3);
  *size = le(h + 4, 4);
  if (version < 1 || version > 3 || *size == 0) return 0;
  const unsigned char *q;
  switch (cls) {
  case H5T_INTEGER:
  case H5T_BITFIELD: {
    if (!take(c, 4, &q)) return 0;
    uint32_t off = le(q, 2), prec = le(q + 2, 2);
    return prec > 0 && (uint64_t)off + prec <= 8ull * *size;
  }
  case H5T_FLOAT: {
    if (!take(c, 12, &q)) return 0;
    uint32_t off = le(q, 2), prec = le(q + 2, 2);
    uint32_t epos = q[4], esize = q[5], mpos = q[6], msize = q[7];
    uint32_t norm = (flags >> 4) & 3, sign = (flags >> 8) & 0xff;
    /* no VAX order (bit 6), a known normalization, the sign inside */
    return !(flags & 0x40) && norm <= 2 && sign < prec && prec > 0 &&
           (uint64_t)off + prec <= 8ull * *size && esize > 0 && msize > 0 && epos + esize <= prec &&
           mpos + msize <= prec && esize <= 32;
  }
  case H5T_STRING: return 1;
  case H5T_OPAQUE: { /* tag of (flags & 0xff) bytes, NUL inside; none: no tag */
    size_t n = flags & 0xff;
    return take(c, n, &q) && (n == 0 || memchr(q, '\0', n));
  }
  case H5T_COMPOUND: {
    uint32_t nm = flags & 0xffff;
    if (nm == 0 || nm > TYPE_MAX_MEMBERS) return 0;
    int offbytes = 1; /* version 3: as many bytes as the size needs */
    for (uint32_t v = *size >> 8; v; v >>= 8) offbytes++;
    uint32_t(*memb)[2] = malloc(nm * sizeof *memb), end = 0;
    int ok = memb != NULL;
    for (uint32_t i = 0; ok && i < nm; i++) {
      int ob = version >= 3 ? offbytes : 4;
      ok = take_name(c, version) && take(c, (size_t)ob, &q);
      uint32_t off = ok ? le(q, ob) : 0, msize = 0;
      if (ok && version == 1)              /* old-style array member: dims follow */
        ok = take(c, 28, &q) && q[0] == 0; /* scalar only */
      ok = ok && type_ok(c, depth + 1, &msize) && off <= *size && msize <= *size - off;
      /* HDF5 refuses members that overlap an earlier one */
      for (uint32_t j = 0; ok && off < end && j < i; j++)
        ok = !(off >= memb[j][0] && off < memb[j][0] + memb[j][1]);
      if (ok) {
        memb[i][0] = off;
        memb[i][1] = msize;
        if (off + msize > end) end = off + msize;
      }
    }
    free(memb);
    return ok;
  }
  case H5T_ENUM: {
    uint32_t nm = flags & 0xffff, psize;
    const unsigned char *base = c->p;
    if (nm == 0 || !type_ok(c, depth + 1, &psize) || psize != *size ||
        (base[0] & 0x0f) != H5T_INTEGER)
      return 0;
    for (uint32_t i = 0; i < nm; i++)
      if (!take_name(c, version)) return 0;
    return take(c, (size_t)nm * psize, NULL);
  }
  case H5T_ARRAY: {
    if (version < 2 || !take(c, 1, &q)) return 0;
    uint32_t nd = q[0], psize;
    if (nd < 1 || nd > H5S_MAX_RANK) return 0;
    if (version < 3 && !take(c, 3, NULL)) return 0;
    if (!take(c, 4 * (size_t)nd, &q)) return 0;
    uint64_t n = 1;
    for (uint32_t d = 0; d < nd; d++) {
      uint32_t dim = le(q + 4 * d, 4);
      if (dim == 0 || (n *= dim) > UINT32_MAX) return 0;
    }
    if (version < 3 && !take(c, 4 * (size_t)nd, NULL)) return 0;
    return type_ok(c, depth + 1, &psize) && n * psize == *size;
  }
  default: /* time, references, variable length: cannot travel */ return 0;
  }
}

/* Does type t encode to exactly the n bytes at p? */
static int encodes_as(hid_t t, const unsigned char *p, size_t n) {
  CPLI_H5_HELD;
  size_t m = 0;
  unsigned char *again = NULL;
  int same = 0;
  H5E_BEGIN_TRY {
    if (H5Tencode(t, NULL, &m) >= 0 && m == n && (again = malloc(m)) &&
        H5Tencode(t, again, &m) >= 0)
      same = memcmp(again, p, n) == 0;
  }
  H5E_END_TRY;
  free(again);
  return same;
}

static hid_t decode_type(cpli_rbuf *r) {
  CPLI_H5_HELD;
  uint32_t n = cpli_r_u32(r);
  const unsigned char *p = cpli_r_bytes(r, n);
  /* H5Tencode's prefix: the datatype message id (3), encoding version 0. */
  if (!p || n < 2 || p[0] != 3 || p[1] != 0) return H5I_INVALID_HID;
  tcur c = {p + 2, p + n};
  uint32_t size;
  if (!type_ok(&c, 0, &size) || c.p != c.end) return H5I_INVALID_HID;
  hid_t t;
  H5E_BEGIN_TRY { t = H5Tdecode(p); }
  H5E_END_TRY;
  if (t < 0) return t;
  /* HDF5 repairs some inconsistent types as it decodes them (a compound
   * shrinks), and others as it copies them (found by fuzz_attrs: a
   * 16-byte compound whose copy has 12 bytes and does not decode): only a
   * type that, and whose copy (what the data layer keeps), encode back to
   * the same bytes is the one the peer sent. */
  int same = encodes_as(t, p, n);
  if (same) {
    hid_t c;
    H5E_BEGIN_TRY { c = H5Tcopy(t); }
    H5E_END_TRY;
    same = c >= 0 && encodes_as(c, p, n);
    if (c >= 0) H5Tclose(c);
  }
  if (!same || cpli_type_check(t, "a received type") != CPL_OK) {
    H5Tclose(t);
    return H5I_INVALID_HID;
  }
  return t;
}

/* The last type decode_memo decoded, and its bytes: the datasets and
 * attributes of a step mostly share a few types, and walking, decoding and
 * checking one costs far more than comparing its bytes. */
typedef struct type_memo {
  const unsigned char *p;
  uint32_t n;
  hid_t t; /* owned; H5I_INVALID_HID: none yet */
} type_memo;

/* decode_type, the same bytes as the last call's giving the same type,
 * owned by the memo: the caller does not close it. */
static hid_t decode_memo(cpli_rbuf *r, type_memo *m) {
  CPLI_H5_HELD;
  const size_t at = r->pos;
  uint32_t n = cpli_r_u32(r);
  const unsigned char *p = cpli_r_bytes(r, n);
  if (p && m->t >= 0 && n == m->n && !memcmp(p, m->p, n)) return m->t;
  r->pos = at;
  if (m->t >= 0) H5Tclose(m->t);
  *m = (type_memo){.p = p, .n = n, .t = decode_type(r)};
  return m->t;
}

static void memo_free(type_memo *m) {
  CPLI_H5_HELD;
  if (m->t >= 0) H5Tclose(m->t);
  m->t = H5I_INVALID_HID;
}

/* ------------------------------------------------------ descriptions */

cpli_desc *cpli_desc_new(int nblocks) {
  cpli_desc *d = calloc(1, sizeof *d);
  if (d) {
    d->refs = 1;
    d->nblocks = nblocks;
  }
  return d;
}

static void dset_free(cpli_dset *s) {
  CPLI_H5_HELD;
  free(s->name);
  if (s->type > 0) H5Tclose(s->type);
  free(s->start);
  free(s->count);
  free(s->bytes);
  free(s->offset);
}

void cpli_desc_unref(cpli_desc *desc) {
  if (!desc || --desc->refs > 0) return;
  for (int i = 0; i < desc->nd; i++) dset_free(&desc->d[i]);
  free(desc->d);
  cpli_index_free(&desc->names);
  free(desc->batch_bytes);
  free(desc);
}

int cpli_desc_find(const cpli_desc *desc, const char *name) {
  const uint64_t h = cpli_name_hash(name);
  size_t probe = 0;
  for (int k; (k = cpli_index_next(&desc->names, h, &probe)) >= 0;)
    if (!strcmp(desc->d[k].name, name)) return k;
  return -1;
}

int cpli_desc_add(cpli_desc *desc, const char *name, hid_t type, int rank, const hsize_t *dims) {
  CPLI_H5_HELD;
  if (desc->nd >= MAX_DATASETS) return CPLI_DESC_FULL;
  if (desc->nd == desc->cap) {
    int cap = desc->cap ? 2 * desc->cap : 4;
    cpli_dset *v = realloc(desc->d, (size_t)cap * sizeof *v);
    if (!v) return CPLI_DESC_NOMEM;
    desc->d = v;
    desc->cap = cap;
  }
  cpli_dset *s = &desc->d[desc->nd];
  *s = (cpli_dset){.rank = rank, .type = H5I_INVALID_HID};
  size_t nb = (size_t)desc->nblocks;
  s->name = strdup(name);
  s->start = calloc(nb * (size_t)rank, sizeof *s->start);
  s->count = calloc(nb * (size_t)rank, sizeof *s->count);
  s->bytes = calloc(nb, sizeof *s->bytes);
  s->offset = calloc(nb, sizeof *s->offset);
  /* H5Tcopy and its H5Tclose were a fifth of what a put cost */
  s->type = H5Iinc_ref(type) > 0 ? type : H5I_INVALID_HID;
  if (!s->name || !s->start || !s->count || !s->bytes || !s->offset || s->type < 0 ||
      cpli_index_add(&desc->names, cpli_name_hash(name), desc->nd) < 0) {
    dset_free(s);
    return CPLI_DESC_NOMEM;
  }
  s->esize = H5Tget_size(type);
  memcpy(s->dims, dims, (size_t)rank * sizeof *dims);
  return desc->nd++;
}

int cpli_desc_encode(const cpli_desc *desc, cpli_wbuf *w) {
  enc_memo m = {.t = H5I_INVALID_HID};
  int rc = CPL_OK;
  cpli_w_u32(w, DESC_MAGIC);
  cpli_w_u32(w, (uint32_t)desc->nblocks);
  cpli_w_u32(w, (uint32_t)desc->nd);
  for (int i = 0; i < desc->nd; i++) {
    const cpli_dset *s = &desc->d[i];
    cpli_w_str(w, s->name);
    cpli_w_u32(w, (uint32_t)s->rank);
    cpli_w_bytes(w, s->dims, (size_t)s->rank * sizeof *s->dims);
    if ((rc = encode_type(s->type, w, &m)) != CPL_OK) break;
    size_t n = (size_t)desc->nblocks * (size_t)s->rank * sizeof(hsize_t);
    cpli_w_bytes(w, s->start, n);
    cpli_w_bytes(w, s->count, n);
  }
  free(m.p);
  if (rc != CPL_OK) return rc;
  return w->oom ? cpli_fail(CPL_ERR_NOMEM, "out of memory encoding a "
                                           "description")
                : CPL_OK;
}

int cpli_desc_decode(const void *data, size_t len, const char *where, cpli_desc **out) {
  CPLI_H5_HELD;
  *out = NULL;
  cpli_rbuf r = cpli_r_init(data, len);
  uint32_t magic = cpli_r_u32(&r), nb = cpli_r_u32(&r), nd = cpli_r_u32(&r);
  if (magic != DESC_MAGIC || nb == 0 || nb > (1u << 24) || nd > MAX_DATASETS)
    return cpli_fail(CPL_ERR_INTERNAL, "%s: corrupt dataset description", where);
  cpli_desc *desc = cpli_desc_new((int)nb);
  if (!desc) return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  int rc = CPL_OK;
  type_memo memo = {.t = H5I_INVALID_HID};
  for (uint32_t i = 0; i < nd && rc == CPL_OK; i++) {
    const char *name = cpli_r_str(&r);
    uint32_t rank = cpli_r_u32(&r);
    if (r.bad || rank < 1 || rank > CPL_MAX_RANK || !cpli_name_ok(name)) {
      rc = cpli_fail(CPL_ERR_INTERNAL, "%s: corrupt dataset description", where);
      break;
    }
    const void *dims = cpli_r_bytes(&r, rank * sizeof(hsize_t));
    hid_t type = decode_memo(&r, &memo);
    size_t n = (size_t)nb * rank * sizeof(hsize_t);
    const void *start = cpli_r_bytes(&r, n), *count = cpli_r_bytes(&r, n);
    hsize_t d[CPL_MAX_RANK];
    if (dims) memcpy(d, dims, rank * sizeof(hsize_t));
    int k = (!dims || type < 0 || !start || !count) ? -1
                                                    : cpli_desc_add(desc, name, type, (int)rank, d);
    if (k < 0) {
      rc = r.bad || type < 0 ? cpli_fail(CPL_ERR_INTERNAL,
                                         "%s: corrupt dataset "
                                         "description",
                                         where)
                             : cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
      break;
    }
    memcpy(desc->d[k].start, start, n);
    memcpy(desc->d[k].count, count, n);
  }
  memo_free(&memo);
  if (rc == CPL_OK && r.pos != r.len)
    rc = cpli_fail(CPL_ERR_INTERNAL, "%s: corrupt dataset description", where);
  if (rc != CPL_OK) {
    cpli_desc_unref(desc);
    return rc;
  }
  *out = desc;
  return CPL_OK;
}

/* Does a dataset of `total` bytes join a batch of `batch` bytes so far? */
static int batch_joins(size_t total, size_t batch) {
  return total > 0 && total <= CPLI_BATCH_DATASET_MAX && batch + total <= CPLI_BATCH_MAX;
}

/* Which datasets the batch holds, and every block's part of it. */
static int batch_plan(cpli_desc *desc, const char *where) {
  const int p = desc->nblocks;
  free(desc->batch_bytes);
  desc->batch_bytes = calloc(2 * (size_t)(p ? p : 1), sizeof *desc->batch_bytes);
  desc->batch_offset = desc->batch_bytes ? desc->batch_bytes + p : NULL;
  desc->nbatched = 0;
  desc->batch_total = 0;
  if (!desc->batch_bytes) return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  for (int k = 0; k < desc->nd; k++) {
    cpli_dset *s = &desc->d[k];
    s->batched = batch_joins(s->total, desc->batch_total);
    if (s->batched) desc->nbatched++, desc->batch_total += s->total;
  }
  if (desc->nbatched < 2) { /* one transfer either way */
    for (int k = 0; k < desc->nd; k++) desc->d[k].batched = 0;
    desc->nbatched = 0;
    desc->batch_total = 0;
    return CPL_OK;
  }
  for (int k = 0; k < desc->nd; k++)
    for (int b = 0; desc->d[k].batched && b < p; b++) desc->batch_bytes[b] += desc->d[k].bytes[b];
  for (int b = 1; b < p; b++)
    desc->batch_offset[b] = desc->batch_offset[b - 1] + desc->batch_bytes[b - 1];
  return CPL_OK;
}

void cpli_batch_pack(const cpli_desc *desc, int b, const void *const *blocks, char *out) {
  for (int k = 0; k < desc->nd; k++) {
    const cpli_dset *s = &desc->d[k];
    if (!s->batched || !s->bytes[b]) continue;
    memcpy(out, blocks[k], s->bytes[b]);
    out += s->bytes[b];
  }
}

void cpli_batch_unpack(const cpli_desc *desc, const char *batch, char *const *buf) {
  for (int b = 0; b < desc->nblocks; b++) {
    const char *in = batch + desc->batch_offset[b];
    for (int k = 0; k < desc->nd; k++) {
      const cpli_dset *s = &desc->d[k];
      if (!s->batched || !s->bytes[b]) continue;
      memcpy(buf[k] + s->offset[b], in, s->bytes[b]);
      in += s->bytes[b];
    }
  }
}

int cpli_port_algs_add(int p, int q, const cpli_port *port, char algs[CPLI_ALGS_LEN]) {
  size_t batch = 0;
  int n = 0;
  for (int d = 0; d < port->ndatasets; d++) {
    const size_t b = cpli_dataset_bytes(&port->datasets[d]);
    if (batch_joins(b, batch)) batch += b, n++;
  }
  if (n >= 2) CPLI_TRY(cpli_inter_dataset_algs_add(p, q, batch, NULL, algs));
  size_t joined = 0; /* the same walk: who joined */
  for (int d = 0; d < port->ndatasets; d++) {
    const size_t b = cpli_dataset_bytes(&port->datasets[d]);
    if (n >= 2 && batch_joins(b, joined)) joined += b;
    else if (b) CPLI_TRY(cpli_inter_dataset_algs_add(p, q, b, NULL, algs));
  }
  return CPL_OK;
}

const char *cpli_batch_str(const cpli_desc *desc, char *buf, size_t n) {
  int first = -1, last = -1;
  for (int k = 0; k < desc->nd; k++)
    if (desc->d[k].batched) {
      if (first < 0) first = k;
      last = k;
    }
  if (first < 0) snprintf(buf, n, "no datasets moved together");
  else
    snprintf(buf, n, "the %d datasets \"%.100s\" .. \"%.100s\" of at most %zu KiB, moved together",
             desc->nbatched, desc->d[first].name, desc->d[last].name, CPLI_BATCH_DATASET_MAX >> 10);
  return buf;
}

int cpli_desc_finish(cpli_desc *desc, const char *where) {
  char msg[600], tb[64];
  for (int i = 0; i < desc->nd; i++) {
    cpli_dset *s = &desc->d[i];
    if (!cpli_tiling_check(s->rank, s->dims, desc->nblocks, s->start, s->count, msg, sizeof msg))
      return cpli_fail(CPL_ERR_SHAPE, "%s: dataset \"%s\" (%s): %s", where, s->name,
                       cpli_type_str(s->type, tb, sizeof tb), msg);
    size_t off = 0;
    for (int b = 0; b < desc->nblocks; b++) {
      uint64_t v = 0;
      if (s->esize == 0 || cpli_box_volume(s->rank, s->count + (size_t)b * s->rank, &v) != 0 ||
          v > CPLI_DATASET_MAX_BYTES / s->esize)
        return cpli_fail(CPL_ERR_UNSUPPORTED,
                         "%s: dataset \"%s\": the block of rank %d, %s elements of %zu "
                         "bytes, is more than the %llu bytes (64 TiB) a dataset may have",
                         where, s->name, b,
                         cpli_dims_str(s->rank, s->count + (size_t)b * s->rank, msg, sizeof msg),
                         s->esize, (unsigned long long)CPLI_DATASET_MAX_BYTES);
      s->bytes[b] = (size_t)v * s->esize;
      s->offset[b] = off;
      off += s->bytes[b];
      if (off > CPLI_DATASET_MAX_BYTES)
        return cpli_fail(CPL_ERR_UNSUPPORTED,
                         "%s: dataset \"%s\" is more than the %llu bytes (64 TiB) a "
                         "dataset may have",
                         where, s->name, (unsigned long long)CPLI_DATASET_MAX_BYTES);
    }
    s->total = off;
  }
  return batch_plan(desc, where);
}

int cpli_desc_merge(int p, const unsigned char *const *blobs, const size_t *lens, const char *where,
                    cpli_desc **out) {
  CPLI_H5_HELD;
  *out = NULL;
  /* Names are found in m's index: a linear search per name made merging
   * 65536 datasets take seconds. */
  cpli_desc *m = cpli_desc_new(p);
  int *first = NULL; /* rank that first put each dataset */
  if (!m) return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  int rc = CPL_OK;
  char t1[64], t2[64];
  for (int r = 0; r < p && rc == CPL_OK; r++) {
    cpli_desc *one;
    rc = cpli_desc_decode(blobs[r], lens[r], where, &one);
    if (rc != CPL_OK) break;
    for (int i = 0; i < one->nd && rc == CPL_OK; i++) {
      const cpli_dset *s = &one->d[i];
      int k = cpli_desc_find(m, s->name);
      if (k < 0) {
        k = cpli_desc_add(m, s->name, s->type, s->rank, s->dims);
        if (k == CPLI_DESC_FULL) { /* each rank within the limit, not their union */
          rc = cpli_fail(CPL_ERR_UNSUPPORTED,
                         "%s: a step carries at most %d datasets, and the puts of ranks 0..%d "
                         "name more",
                         where, MAX_DATASETS, r);
          break;
        }
        int *f = k < 0 ? NULL : realloc(first, (size_t)m->cap * sizeof *f); /* grows as m->d */
        if (!f) {
          rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
          break;
        }
        first = f;
        first[k] = r;
      }
      cpli_dset *t = &m->d[k];
      if (t->rank != s->rank || memcmp(t->dims, s->dims, (size_t)s->rank * sizeof *s->dims) ||
          H5Tequal(t->type, s->type) <= 0) {
        char b1[160], b2[160];
        rc = cpli_fail(CPL_ERR_MISMATCH,
                       "%s: dataset \"%s\": rank %d puts "
                       "%s %s but rank %d puts %s %s",
                       where, s->name, first[k], cpli_type_str(t->type, t1, sizeof t1),
                       cpli_dims_str(t->rank, t->dims, b1, sizeof b1), r,
                       cpli_type_str(s->type, t2, sizeof t2),
                       cpli_dims_str(s->rank, s->dims, b2, sizeof b2));
        break;
      }
      size_t n = (size_t)s->rank * sizeof(hsize_t);
      memcpy(t->start + (size_t)r * s->rank, s->start, n);
      memcpy(t->count + (size_t)r * s->rank, s->count, n);
    }
    cpli_desc_unref(one);
  }
  free(first);
  if (rc == CPL_OK) rc = cpli_desc_finish(m, where);
  if (rc != CPL_OK) {
    cpli_desc_unref(m);
    return rc;
  }
  *out = m;
  return CPL_OK;
}

static int check_decls(const cpli_desc *desc, const cpli_component *comp, const cpli_port *port,
                       const cpli_index *decls, int producer_side, const char *where) {
  char t1[64], t2[64];
  for (int i = 0; i < desc->nd; i++) {
    const cpli_dset *s = &desc->d[i];
    const cpli_dataset *decl = NULL;
    const uint64_t h = cpli_name_hash(s->name);
    size_t probe = 0;
    for (int j; !decl && (j = cpli_index_next(decls, h, &probe)) >= 0;)
      if (!strcmp(port->datasets[j].name, s->name)) decl = &port->datasets[j];
    if (!decl)
      return cpli_fail(CPL_ERR_MISMATCH,
                       "%s: dataset \"%s\" is not among "
                       "the datasets port %s.%s declares (line %d)",
                       where, s->name, comp->name, port->name, port->pos.line);
    if (decl->ndims >= 0) {
      int same = decl->ndims == s->rank;
      for (int d = 0; same && d < s->rank; d++) same = (hsize_t)decl->dims[d] == s->dims[d];
      if (!same) {
        char b1[160], dd[160];
        size_t o = 0;
        dd[0] = '\0';
        for (int d = 0; d < decl->ndims && o < sizeof dd; d++)
          o += (size_t)snprintf(dd + o, sizeof dd - o, "%s%lld", d ? ", " : "", decl->dims[d]);
        return cpli_fail(CPL_ERR_SHAPE,
                         "%s: dataset \"%s\" has dims %s "
                         "but port %s.%s declares [%s] (line %d)",
                         where, s->name, cpli_dims_str(s->rank, s->dims, b1, sizeof b1), comp->name,
                         port->name, dd, decl->pos.line);
      }
    }
    if (decl->type) {
      hid_t want = cpli_yaml_type(decl->type);
      int ok = want >= 0 &&
               (producer_side ? same_kind(s->type, want) : cpli_type_convertible(s->type, want));
      if (!ok) {
        /* The word of the file, and what it means where that is another
         * (char: int8, byte: uint8, which are no strings). */
        char said[96];
        cpli_type_str(want, t2, sizeof t2);
        if (strcmp(decl->type, t2)) snprintf(said, sizeof said, "%s (%s)", decl->type, t2);
        else snprintf(said, sizeof said, "%s", t2);
        return cpli_fail(CPL_ERR_TYPE,
                         "%s: dataset \"%s\" is %s but port "
                         "%s.%s declares %s (line %d)%s",
                         where, s->name, cpli_type_str(s->type, t1, sizeof t1), comp->name,
                         port->name, said, decl->pos.line,
                         producer_side ? "" : ", and HDF5 cannot convert it");
      }
    }
  }
  return CPL_OK;
}

int cpli_desc_check_port(const cpli_desc *desc, const cpli_component *comp, const cpli_port *port,
                         int producer_side, const char *where) {
  if (port->ndatasets == 0) return CPL_OK; /* nothing declared */
  cpli_index decls = {0};                  /* the declarations by name */
  for (int j = 0; j < port->ndatasets; j++)
    if (cpli_index_add(&decls, cpli_name_hash(port->datasets[j].name), j) < 0) {
      cpli_index_free(&decls);
      return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
    }
  int rc = check_decls(desc, comp, port, &decls, producer_side, where);
  cpli_index_free(&decls);
  return rc;
}

/* ------------------------------------------------------------ attributes */

static void attr_free(cpli_attr *a) {
  CPLI_H5_HELD;
  free(a->dataset);
  free(a->name);
  free(a->value);
  if (a->type > 0) H5Tclose(a->type);
}

void cpli_attrs_clear(cpli_attrs *a) {
  for (int i = 0; i < a->n; i++) attr_free(&a->v[i]);
  free(a->v);
  cpli_index_free(&a->names);
  *a = (cpli_attrs){0};
}

int cpli_attrs_find(const cpli_attrs *a, const char *dataset, const char *name) {
  const uint64_t h = cpli_name_hash2(dataset, name);
  size_t probe = 0;
  for (int k; (k = cpli_index_next(&a->names, h, &probe)) >= 0;)
    if (!strcmp(a->v[k].name, name) && !strcmp(a->v[k].dataset, dataset)) return k;
  return -1;
}

/* cpli_attrs_set; share: keep a reference to `type` instead of a copy
 * (a decoded type, which nothing changes). */
static int attrs_put(cpli_attrs *a, const char *dataset, const char *name, hid_t type, int share,
                     size_t n, const void *value) {
  CPLI_H5_HELD;
  size_t esize = H5Tget_size(type);
  if (esize == 0 || n > CPLI_ATTR_MAX_BYTES / esize)
    return cpli_fail(CPL_ERR_ARG,
                     "attribute \"%s\": %zu elements of %zu "
                     "bytes exceed the %d-byte limit of an attribute",
                     name, n, esize, CPLI_ATTR_MAX_BYTES);
  size_t bytes = n * esize;
  int k = cpli_attrs_find(a, dataset, name);
  if (k < 0) k = a->n;
  size_t others = a->bytes - (k < a->n ? a->v[k].bytes : 0);
  if (others + bytes > CPLI_ATTRS_MAX_BYTES)
    return cpli_fail(CPL_ERR_ARG,
                     "attribute \"%s\": the step's attributes "
                     "would exceed %d bytes",
                     name, CPLI_ATTRS_MAX_BYTES);
  cpli_attr v = {.n = n,
                 .bytes = bytes,
                 .type = !share                 ? H5Tcopy(type)
                         : H5Iinc_ref(type) > 0 ? type
                                                : H5I_INVALID_HID,
                 .dataset = strdup(dataset),
                 .name = strdup(name),
                 .value = malloc(bytes ? bytes : 1)};
  if (v.type < 0 || !v.dataset || !v.name || !v.value) {
    attr_free(&v);
    return cpli_fail(CPL_ERR_NOMEM, "attribute \"%s\": out of memory", name);
  }
  if (bytes) memcpy(v.value, value, bytes);
  if (k == a->n && a->n == a->cap) {
    int cap = a->cap ? 2 * a->cap : 8;
    cpli_attr *nv = realloc(a->v, (size_t)cap * sizeof *nv);
    if (nv) {
      a->v = nv;
      a->cap = cap;
    }
  }
  /* A new attribute needs room in v and a place in the index. */
  if (k == a->n &&
      (a->n == a->cap || cpli_index_add(&a->names, cpli_name_hash2(dataset, name), k) < 0)) {
    attr_free(&v);
    return cpli_fail(CPL_ERR_NOMEM, "attribute \"%s\": out of memory", name);
  }
  if (k < a->n) attr_free(&a->v[k]);
  else a->n++;
  a->v[k] = v;
  a->bytes = others + bytes;
  return CPL_OK;
}

int cpli_attrs_set(cpli_attrs *a, const char *dataset, const char *name, hid_t type, size_t n,
                   const void *value) {
  return attrs_put(a, dataset, name, type, 0, n, value);
}

int cpli_attrs_encode(const cpli_attrs *a, cpli_wbuf *w) {
  enc_memo m = {.t = H5I_INVALID_HID};
  int rc = CPL_OK;
  cpli_w_u32(w, ATTRS_MAGIC);
  cpli_w_u32(w, (uint32_t)a->n);
  for (int i = 0; i < a->n; i++) {
    const cpli_attr *v = &a->v[i];
    cpli_w_str(w, v->dataset);
    cpli_w_str(w, v->name);
    if ((rc = encode_type(v->type, w, &m)) != CPL_OK) break;
    cpli_w_u64(w, v->n);
    cpli_w_bytes(w, v->value, v->bytes);
  }
  free(m.p);
  if (rc != CPL_OK) return rc;
  return w->oom ? cpli_fail(CPL_ERR_NOMEM, "out of memory encoding "
                                           "attributes")
                : CPL_OK;
}

int cpli_attrs_decode(const void *data, size_t len, const char *where, cpli_attrs *out) {
  CPLI_H5_HELD;
  cpli_attrs_clear(out);
  cpli_rbuf r = cpli_r_init(data, len);
  uint32_t magic = cpli_r_u32(&r), n = cpli_r_u32(&r);
  int rc = magic == ATTRS_MAGIC ? CPL_OK : CPL_ERR_INTERNAL;
  type_memo memo = {.t = H5I_INVALID_HID};
  for (uint32_t i = 0; i < n && rc == CPL_OK; i++) {
    const char *ds = cpli_r_str(&r), *name = cpli_r_str(&r);
    hid_t type = decode_memo(&r, &memo);
    uint64_t cnt = cpli_r_u64(&r);
    size_t es = type >= 0 ? H5Tget_size(type) : 0;
    const void *val =
        es && cnt <= CPLI_ATTR_MAX_BYTES / es ? cpli_r_bytes(&r, (size_t)cnt * es) : NULL;
    if (r.bad || !val) rc = CPL_ERR_INTERNAL;
    else rc = attrs_put(out, ds, name, type, 1, (size_t)cnt, val);
  }
  memo_free(&memo);
  if (rc == CPL_OK && r.pos != r.len) rc = CPL_ERR_INTERNAL;
  if (rc == CPL_ERR_INTERNAL) rc = cpli_fail(rc, "%s: corrupt attributes", where);
  if (rc != CPL_OK) cpli_attrs_clear(out);
  return rc;
}
