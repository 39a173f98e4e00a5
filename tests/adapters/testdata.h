/*
 * The known content of the adapters tests, shared by the producer, the
 * checking consumer and the reference-file generator: datasets (1-D, 2-D,
 * 3-D, empty, compound), their values as a function of (dataset, global
 * element index, step, seed), and dataset and step attributes.
 */
#ifndef TD_TESTDATA_H
#define TD_TESTDATA_H

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { TD_I32, TD_F64, TD_U16, TD_F32, TD_PAIR } td_kind;

/* Compound element: a point id and its value. */
typedef struct td_pair {
  int32_t id;
  double v;
} td_pair;

typedef struct td_dataset {
  const char *name;
  td_kind kind;
  int rank;
  hsize_t dims[3];
  int split; /* the producer splits this dimension among its ranks */
} td_dataset;

/* c3 has 2 rows: with 3 sink or stage ranks one rank owns none. */
static const td_dataset td_datasets[] = {
    {"a1", TD_I32, 1, {23}, 0}, {"b2", TD_F64, 2, {7, 5}, 1}, {"c3", TD_U16, 3, {2, 3, 4}, 2},
    {"e0", TD_F32, 1, {0}, 0},  {"e2", TD_F64, 2, {3, 0}, 0}, {"p1", TD_PAIR, 1, {6}, 0},
};
#define TD_NDS ((int)(sizeof td_datasets / sizeof td_datasets[0]))

/* The memory type of a kind (caller closes it). */
static inline hid_t td_type(td_kind k) {
  switch (k) {
  case TD_I32: return H5Tcopy(H5T_NATIVE_INT32);
  case TD_F64: return H5Tcopy(H5T_NATIVE_DOUBLE);
  case TD_U16: return H5Tcopy(H5T_NATIVE_UINT16);
  case TD_F32: return H5Tcopy(H5T_NATIVE_FLOAT);
  case TD_PAIR: {
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(td_pair));
    H5Tinsert(t, "id", HOFFSET(td_pair, id), H5T_NATIVE_INT32);
    H5Tinsert(t, "v", HOFFSET(td_pair, v), H5T_NATIVE_DOUBLE);
    return t;
  }
  }
  return -1;
}

static inline size_t td_size(td_kind k) {
  switch (k) {
  case TD_I32: return 4;
  case TD_F64: return 8;
  case TD_U16: return 2;
  case TD_F32: return 4;
  case TD_PAIR: return sizeof(td_pair);
  }
  return 0;
}

/* Store the value of element `g` (row-major global index) at `dst`. */
static inline void td_value(const td_dataset *d, hsize_t g, long step, int seed, void *dst) {
  const double x = (double)step * 1000.0 + (double)g + seed * 100000.0;
  switch (d->kind) {
  case TD_I32: {
    int32_t v = (int32_t)x;
    memcpy(dst, &v, 4);
    break;
  }
  case TD_F64: {
    double v = x + 0.25;
    memcpy(dst, &v, 8);
    break;
  }
  case TD_U16: {
    uint16_t v = (uint16_t)((long)x % 65536);
    memcpy(dst, &v, 2);
    break;
  }
  case TD_F32: {
    float v = (float)x;
    memcpy(dst, &v, 4);
    break;
  }
  case TD_PAIR: {
    td_pair v = {(int32_t)g, x + 0.5};
    memcpy(dst, &v, sizeof v);
    break;
  }
  }
}

/* Fill buf with the block start/count of dataset d (row-major). */
static inline void td_fill(const td_dataset *d, const hsize_t start[], const hsize_t count[],
                           long step, int seed, void *buf) {
  hsize_t n = 1, idx[3] = {0, 0, 0};
  for (int k = 0; k < d->rank; k++) n *= count[k];
  for (hsize_t e = 0; e < n; e++) {
    hsize_t g = 0, r = e;
    for (int k = d->rank - 1; k >= 0; k--) {
      idx[k] = r % count[k];
      r /= count[k];
    }
    for (int k = 0; k < d->rank; k++) g = g * d->dims[k] + start[k] + idx[k];
    td_value(d, g, step, seed, (char *)buf + e * td_size(d->kind));
  }
}

/* ------------------------------------------------------------ attributes */

/* One attribute: name, type (caller closes), n elements, value in buf
 * (at most 64 bytes). Dataset attributes: i < TD_NDATTRS; step: TD_NSATTRS. */
#define TD_NDATTRS 3
#define TD_NSATTRS 3
typedef struct td_attr {
  char name[16];
  hid_t type;
  size_t n;
  unsigned char buf[64];
} td_attr;

static inline hid_t td_str(size_t len) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, len);
  return t;
}

static inline void td_dataset_attr(const td_dataset *d, int i, long step, int seed, td_attr *a) {
  memset(a, 0, sizeof *a);
  if (i == 0) { /* a fixed-length string */
    snprintf(a->name, sizeof a->name, "units");
    snprintf((char *)a->buf, sizeof a->buf, "%s-m/s", d->name);
    a->type = td_str(strlen((char *)a->buf) + 1);
    a->n = 1;
  } else if (i == 1) { /* an array */
    double v[3] = {1.5, (double)seed, (double)step};
    snprintf(a->name, sizeof a->name, "scale");
    a->type = H5Tcopy(H5T_NATIVE_DOUBLE);
    a->n = 3;
    memcpy(a->buf, v, sizeof v);
  } else { /* a scalar */
    int64_t v = 42 + step + d->rank;
    snprintf(a->name, sizeof a->name, "origin");
    a->type = H5Tcopy(H5T_NATIVE_INT64);
    a->n = 1;
    memcpy(a->buf, &v, sizeof v);
  }
}

static inline void td_step_attr(int i, long step, int seed, td_attr *a) {
  memset(a, 0, sizeof *a);
  if (i == 0) {
    double v = (double)step * 0.5 + seed;
    snprintf(a->name, sizeof a->name, "time");
    a->type = H5Tcopy(H5T_NATIVE_DOUBLE);
    a->n = 1;
    memcpy(a->buf, &v, sizeof v);
  } else if (i == 1) {
    int32_t v[2] = {(int32_t)step, -(int32_t)step - seed};
    snprintf(a->name, sizeof a->name, "tag");
    a->type = H5Tcopy(H5T_NATIVE_INT32);
    a->n = 2;
    memcpy(a->buf, v, sizeof v);
  } else {
    snprintf(a->name, sizeof a->name, "label");
    snprintf((char *)a->buf, sizeof a->buf, "seed %d step %ld", seed, step);
    a->type = td_str(strlen((char *)a->buf) + 1);
    a->n = 1;
  }
}

/* Rows [start, start+count) of n that rank r of p owns, weighted r+1: an
 * irregular split where low ranks may own nothing. */
static inline void td_split(hsize_t n, int r, int p, hsize_t *start, hsize_t *count) {
  const hsize_t w = (hsize_t)p * (hsize_t)(p + 1) / 2;
  const hsize_t c0 = (hsize_t)r * (hsize_t)(r + 1) / 2;
  const hsize_t c1 = (hsize_t)(r + 1) * (hsize_t)(r + 2) / 2;
  *start = n * c0 / w;
  *count = n * c1 / w - *start;
}

/* "seed,nsteps,first,stride" -> the i-th step number is first + i*stride. */
typedef struct td_stream {
  int seed, nsteps;
  long first, stride;
} td_stream;

static inline int td_parse_stream(const char *s, td_stream *out) {
  return sscanf(s, "%d,%d,%ld,%ld", &out->seed, &out->nsteps, &out->first, &out->stride) == 4 ? 0
                                                                                              : -1;
}

#endif
