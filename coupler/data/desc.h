/*
 * Dataset descriptions and attributes, and their wire form.
 *
 * A description lists the datasets of a step: name, HDF5 type, global
 * dims, and one block (hyperslab) per producer rank. A producer rank
 * encodes its own blocks (a description with one block per dataset); the
 * producer group merges the p of them into the port's description, checks
 * it, and sends it to consumers with the first step and whenever it
 * changes. Blocks travel concatenated in rank order, so block b of a
 * dataset sits at offset[b] of the consumer's buffer.
 */
#ifndef CPLI_DATA_DESC_H
#define CPLI_DATA_DESC_H

#include <limits.h>
#include <stdint.h>

#include "coll/select.h"
#include "core/index.h"
#include "coupler.h"
#include "data/wire.h"
#include "workflow/model.h"

/* CPLI_H5_HELD; as a function's first statement holds cpl_hdf5_lock()
 * until the function returns, whichever way: every function of the data
 * layer that calls HDF5 starts with it (none of them waits). */
static inline void cpli_h5_release(int *held) {
  if (*held) cpl_hdf5_unlock();
}
#define CPLI_H5_HELD                                                                               \
  __attribute__((cleanup(cpli_h5_release))) int cpli_h5_held_ = (cpl_hdf5_lock(), 1)

typedef struct cpli_dset {
  char *name;
  hid_t type;   /* owned                                         */
  size_t esize; /* H5Tget_size(type)                             */
  int rank;
  hsize_t dims[CPL_MAX_RANK];
  hsize_t *start, *count; /* nblocks x rank                              */
  size_t *bytes;          /* per block                                     */
  size_t *offset;         /* per block, in the concatenated blocks         */
  size_t total;           /* bytes of the global array                     */
  int batched;            /* moves in the step's batch (below)             */
} cpli_dset;

typedef struct cpli_desc {
  int refs;     /* queued steps share their description          */
  long version; /* changes when the description does             */
  int nblocks;
  int nd, cap;
  cpli_dset *d;
  cpli_index names; /* d by name                                   */
  /* The batch: the datasets flagged `batched` move together, in one
   * transfer per step, as every block's batched parts concatenated in
   * dataset order, blocks in rank order (block b's part at batch_offset[b],
   * batch_bytes[b] long). Decided by cpli_desc_finish from the
   * description alone, so every rank of both groups decides alike. */
  int nbatched;
  size_t *batch_bytes, *batch_offset; /* per block                          */
  size_t batch_total;
} cpli_desc;

/* An empty description with room for nd datasets of nblocks blocks. */
cpli_desc *cpli_desc_new(int nblocks);
void cpli_desc_unref(cpli_desc *desc);
/* The index of dataset `name`, or -1. */
int cpli_desc_find(const cpli_desc *desc, const char *name);

/* Append a dataset (blocks zeroed). It shares `type` (a reference, not a
 * copy): the library's own types only, which nothing changes once made
 * (a put's copy, a decoded type). Returns its index, or
 * CPLI_DESC_NOMEM, or CPLI_DESC_FULL when it holds CPLI_DATASETS_MAX. The
 * caller makes sure `name` is not there yet. */
#define CPLI_DESC_NOMEM (-1)
#define CPLI_DESC_FULL (-2)
int cpli_desc_add(cpli_desc *desc, const char *name, hid_t type, int rank, const hsize_t *dims);

int cpli_desc_encode(const cpli_desc *desc, cpli_wbuf *w);
/* Decode; `where` prefixes error messages. */
int cpli_desc_decode(const void *data, size_t len, const char *where, cpli_desc **out);

/*
 * Merge the p one-block descriptions of the producer ranks (encoded, in
 * rank order) into one p-block description: datasets in order of first
 * appearance (rank 0's first); a rank that did not put a dataset has an
 * empty block; ranks must agree on each dataset's type and dims. Then
 * cpli_desc_finish. Deterministic: every producer rank gets the same.
 */
int cpli_desc_merge(int p, const unsigned char *const *blobs, const size_t *lens, const char *where,
                    cpli_desc **out);

/* Block sizes and offsets, and the batch; checks that every dataset's
 * blocks tile it and that the sizes fit the transfer limits. */
int cpli_desc_finish(cpli_desc *desc, const char *where);

/* The batch. Every dataset of at most CPLI_BATCH_DATASET_MAX bytes (not
 * empty) joins it, in description order while the batch stays within
 * CPLI_BATCH_MAX; with fewer than two such datasets there is none. A step
 * of thousands of small datasets then costs one transfer, not thousands
 * (MPI's and the engine's costs per transfer are tens of microseconds
 * there); a larger dataset keeps a transfer of its own, where the
 * engine's algorithms matter more than the copy in and out of the batch
 * that a small one pays. */
#define CPLI_BATCH_DATASET_MAX ((size_t)64 << 10)
#define CPLI_BATCH_MAX ((size_t)64 << 20)
/* Producer rank b: its blocks of the batched datasets (blocks[k], its
 * block of dataset k), one after another into out (batch_bytes[b]). */
void cpli_batch_pack(const cpli_desc *desc, int b, const void *const *blocks, char *out);
/* Consumer: every rank's part of the batch into the whole-array buffers
 * buf[k] (at the description's offsets). */
void cpli_batch_unpack(const cpli_desc *desc, const char *batch, char *const *buf);
/* What the allgathers of a step of a port's declared datasets run (each
 * declared with type and dims: cpli_port_bytes > 0), for the tools'
 * forecasts: the batch in one allgather, every other dataset in its own;
 * added to algs as cpli_inter_dataset_algs_add does. */
int cpli_port_algs_add(int p, int q, const cpli_port *port, char algs[CPLI_ALGS_LEN]);
/* The batch in words, for messages: 'the 4000 datasets "a" .. "z" of at
 * most 64 KiB, moved together'. */
const char *cpli_batch_str(const cpli_desc *desc, char *buf, size_t n);

/* Check the description against a port's declared datasets (YAML `type`,
 * `dims`). On the producer's own port the type must be the declared one;
 * on a consumer's port it must convert to it. */
int cpli_desc_check_port(const cpli_desc *desc, const cpli_component *comp, const cpli_port *port,
                         int producer_side, const char *where);

/* Can this type travel as bytes (no pointers inside)? what: the context
 * the message starts with (NULL: none, the caller adds it). */
int cpli_type_check(hid_t type, const char *what);
/* Can HDF5 convert src to dst? */
int cpli_type_convertible(hid_t src, hid_t dst);
/* Short name of a type for messages: "float64", "int32", "compound(24 B)" */
const char *cpli_type_str(hid_t type, char *buf, size_t n);
/* The native type of a YAML type name, or H5I_INVALID_HID. */
hid_t cpli_yaml_type(const char *name);

/* ------------------------------------------------------------ attributes */

typedef struct cpli_attr {
  char *dataset; /* "" for a step attribute */
  char *name;
  hid_t type; /* owned */
  size_t n, bytes;
  void *value;
} cpli_attr;

typedef struct cpli_attrs {
  cpli_attr *v;
  int n, cap;
  size_t bytes;     /* total value bytes, for the size limit */
  cpli_index names; /* v by (dataset, name)                  */
} cpli_attrs;

#define CPLI_ATTR_MAX_BYTES 65536      /* one attribute's value        */
#define CPLI_ATTRS_MAX_BYTES (1 << 20) /* all of a step's attributes   */

/* One dataset's global size (so also one rank's block; cpli_desc_finish),
 * and the datasets of one step. Blocks and datasets move as bytes of any
 * size (large-count MPI calls); the bound only keeps absurd sizes a clear
 * error and every sum of a step's sizes (65536 datasets) inside 63 bits.
 * The HDF5 source checks the limits from a file's metadata before reading. */
#define CPLI_DATASET_MAX_BYTES ((uint64_t)1 << 46) /* 64 TiB */
#define CPLI_DATASETS_MAX (1 << 16)

/* Set (or replace, in its place) an attribute; value copied. */
int cpli_attrs_set(cpli_attrs *a, const char *dataset, const char *name, hid_t type, size_t n,
                   const void *value);
/* The index in a->v of attribute `name` of `dataset` ("": the step), or -1. */
int cpli_attrs_find(const cpli_attrs *a, const char *dataset, const char *name);
void cpli_attrs_clear(cpli_attrs *a);
int cpli_attrs_encode(const cpli_attrs *a, cpli_wbuf *w);
int cpli_attrs_decode(const void *data, size_t len, const char *where, cpli_attrs *out);

/* Dataset and attribute names: 1..255 bytes, printable, no '/'; not "." */
int cpli_name_ok(const char *name);
/* What cpli_name_ok asks, for messages. */
#define CPLI_NAME_RULE "(1-255 printable bytes, no '/', not \".\")"

#endif
