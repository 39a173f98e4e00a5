/*
 * The built-in HDF5 sink (kind: sink): receives every step of every input
 * link and writes it to one file with parallel HDF5.
 *
 *   /step_000000/          one group per step (step number, 6+ digits)
 *       @step              int64 step number (unless the producer set one)
 *       @...               the step's attributes
 *       dataset            global dims, the producer's type, its attributes
 *
 * With several input links (fan-in) the step groups of each link sit under
 * a group "<producer component>.<producer port>". Each sink rank writes a
 * disjoint slab of dim 0 with a collective H5Dwrite; the file is flushed
 * after every step so a crash leaves every finished step readable.
 *
 * After a failure no further collective HDF5 call is made (closes
 * included): the failing rank returns at once and cpl-component aborts the
 * job, instead of ranks waiting in different collectives.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adapters.h"
#include "core/error.h"
#include "h5util.h"
#include "builtin.h"

typedef struct sink_link {
  cpl_input *in;
  char label[300]; /* "prod.port->sink.port", for messages      */
  char group[200]; /* group of this link's steps; "" is the root */
  hid_t parent;    /* where the step groups go                   */
  int done;
} sink_link;

typedef struct sink {
  const char *name;
  int rank, size;
  char where[1200]; /* the file, for messages */
  hid_t file, dxpl;
  sink_link *links;
  int nlinks;
  int warned_step_attr;
} sink;

/* Write one attribute of the input step (dataset NULL: a step attribute). */
static int write_attr(sink_link *l, const char *dataset, int i, hid_t obj,
                      int *is_step) {
  cpl_attr_info a;
  CPLI_TRY(cpl_input_attr(l->in, dataset, i, &a));
  if (is_step) *is_step = strcmp(a.name, "step") == 0;
  size_t bytes = H5Tget_size(a.type) * a.n;
  void *buf = malloc(bytes ? bytes : 1);
  if (!buf) return cpli_fail(CPL_ERR_NOMEM, "attribute \"%s\": out of memory "
                             "(%zu bytes)", a.name, bytes);
  int rc = cpl_input_attr_get(l->in, dataset, a.name, a.type, a.n, buf);
  if (rc == CPL_OK) rc = cpli_h5_write_attr(obj, a.name, a.type, a.n, buf);
  else cpli_error_prefix("attribute \"%s\": ", a.name);
  free(buf);
  return rc;
}

/* Every rank holds the whole array after begin_step; each writes its own
 * rows, so the writes are disjoint and together cover the dataset. */
static int write_data(sink *s, sink_link *l, hid_t dset,
                      const cpl_dataset_info *d) {
  hsize_t start[CPL_MAX_RANK] = {0}, count[CPL_MAX_RANK];
  memcpy(count, d->dims, (size_t)d->rank * sizeof *count);
  cpli_split_rows(d->dims[0], s->rank, s->size, &start[0], &count[0]);
  size_t bytes;
  CPLI_TRY(cpli_block_bytes(d->rank, count, H5Tget_size(d->type), d->name,
                            &bytes));
  void *buf = malloc(bytes ? bytes : 1);
  if (!buf) return cpli_fail(CPL_ERR_NOMEM, "out of memory (%zu bytes)", bytes);
  int rc = bytes ? cpl_input_get(l->in, d->name, d->type, start, count, buf)
                 : CPL_OK;
  hid_t fspace = H5Dget_space(dset);
  hid_t mspace = H5Screate_simple(d->rank, count, NULL);
  if (rc == CPL_OK && (fspace < 0 || mspace < 0))
    rc = cpli_h5_fail("dataspaces for the write");
  if (rc == CPL_OK) {
    /* A rank without rows still joins the collective write, selecting
     * nothing. */
    herr_t sel = bytes ? H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start,
                                             NULL, count, NULL)
                       : H5Sselect_none(fspace);
    if (sel < 0 || (!bytes && H5Sselect_none(mspace) < 0))
      rc = cpli_h5_fail("selecting rows %llu..%llu",
                        (unsigned long long)start[0],
                        (unsigned long long)(start[0] + count[0]));
  }
  if (rc == CPL_OK &&
      H5Dwrite(dset, d->type, mspace, fspace, s->dxpl, buf) < 0)
    rc = cpli_h5_fail("H5Dwrite of rows %llu..%llu failed",
                      (unsigned long long)start[0],
                      (unsigned long long)(start[0] + count[0]));
  if (fspace >= 0) H5Sclose(fspace);
  if (mspace >= 0) H5Sclose(mspace);
  free(buf);
  return rc;
}

static int write_dataset(sink *s, sink_link *l, hid_t group, int i) {
  cpl_dataset_info d;
  CPLI_TRY(cpl_input_dataset(l->in, i, &d));
  hid_t space = H5Screate_simple(d.rank, d.dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  /* Every element is written below: no need to write fill values first. */
  if (dcpl >= 0) H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
  hid_t dset = space < 0 || dcpl < 0 ? -1
               : H5Dcreate2(group, d.name, d.type, space, H5P_DEFAULT, dcpl,
                            H5P_DEFAULT);
  int rc = dset < 0 ? cpli_h5_fail("cannot create the dataset (%d dims)",
                                   d.rank)
                    : CPL_OK;
  int empty = 0; /* a zero extent: nothing to write, the shape says it all */
  for (int k = 0; k < d.rank; k++) empty |= d.dims[k] == 0;
  if (rc == CPL_OK && !empty) rc = write_data(s, l, dset, &d);
  int nattrs = 0;
  if (rc == CPL_OK) rc = cpl_input_attr_count(l->in, d.name, &nattrs);
  for (int a = 0; rc == CPL_OK && a < nattrs; a++)
    rc = write_attr(l, d.name, a, dset, NULL);
  if (rc == CPL_OK && H5Dclose(dset) < 0) rc = cpli_h5_fail("closing it");
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  if (rc != CPL_OK) cpli_error_prefix("dataset \"%s\": ", d.name);
  return rc;
}

static int write_step(sink *s, sink_link *l, long step) {
  char name[32];
  snprintf(name, sizeof name, "step_%06ld", step);
  hid_t g = H5Gcreate2(l->parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) return cpli_h5_fail("cannot create group \"%s%s%s\"", l->group,
                                 l->group[0] ? "/" : "", name);
  int nattrs = 0, nds = 0, has_step = 0;
  int rc = cpl_input_attr_count(l->in, NULL, &nattrs);
  for (int a = 0; rc == CPL_OK && a < nattrs; a++) {
    int is_step = 0;
    rc = write_attr(l, NULL, a, g, &is_step);
    has_step |= is_step;
  }
  if (rc == CPL_OK && has_step && s->rank == 0 && !s->warned_step_attr++)
    fprintf(stderr, "cpl-component[%s]: warning: link %s sets a step "
            "attribute \"step\" itself; it is written as is, instead of the "
            "step number\n", s->name, l->label);
  if (rc == CPL_OK && !has_step) {
    const int64_t v = step;
    rc = cpli_h5_write_attr(g, "step", H5T_NATIVE_INT64, 1, &v);
  }
  if (rc == CPL_OK) rc = cpl_input_dataset_count(l->in, &nds);
  for (int i = 0; rc == CPL_OK && i < nds; i++) rc = write_dataset(s, l, g, i);
  if (rc == CPL_OK && H5Gclose(g) < 0)
    rc = cpli_h5_fail("closing group \"%s\"", name);
  /* Flush: a crash later leaves this step readable. Collective. */
  if (rc == CPL_OK && H5Fflush(s->file, H5F_SCOPE_GLOBAL) < 0)
    rc = cpli_h5_fail("H5Fflush after the step failed");
  return rc;
}

static int open_links(cpl_context *ctx, sink *s) {
  int n = 0;
  CPLI_TRY(cpl_context_link_count(ctx, &n));
  s->links = calloc((size_t)(n ? n : 1), sizeof *s->links);
  if (!s->links) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  for (int i = 0; i < n; i++) {
    cpl_link_end e;
    CPLI_TRY(cpl_context_link(ctx, i, &e));
    if (e.role != CPL_RECEIVER) continue;
    sink_link *l = &s->links[s->nlinks++];
    snprintf(l->label, sizeof l->label, "%s.%s->%s.%s", e.peer_component,
             e.peer_port, s->name, e.port);
    snprintf(l->group, sizeof l->group, "%s.%s", e.peer_component,
             e.peer_port);
    char peer[200];
    snprintf(peer, sizeof peer, "%s.%s", e.peer_component, e.peer_port);
    int rc = cpl_input_open(ctx, e.port, peer, &l->in);
    if (rc != CPL_OK) {
      cpli_error_prefix("link %s: ", l->label);
      return rc;
    }
  }
  return CPL_OK;
}

/* One link: its steps in the root. Fan-in: one group per producer port
 * (the same producer port linked to two of our ports: group names get
 * ":<our port>" so they stay apart). */
static int make_link_groups(sink *s) {
  for (int i = 0; i < s->nlinks; i++) {
    sink_link *l = &s->links[i];
    if (s->nlinks == 1) {
      l->group[0] = '\0';
      l->parent = s->file;
      continue;
    }
    for (int j = 0; j < s->nlinks; j++)
      if (j != i && strcmp(s->links[j].group, l->group) == 0) {
        const char *port = strrchr(l->label, '.') + 1;
        size_t len = strlen(l->group);
        snprintf(l->group + len, sizeof l->group - len, ":%s", port);
        break;
      }
    l->parent = H5Gcreate2(s->file, l->group, H5P_DEFAULT, H5P_DEFAULT,
                           H5P_DEFAULT);
    if (l->parent < 0)
      return cpli_h5_fail("cannot create group \"%s\" for link %s", l->group,
                          l->label);
  }
  return CPL_OK;
}

/* Round robin over the links still open, one step each, so no producer
 * starves; all sink ranks take the same turns (calls are collective). */
static int receive_all(sink *s) {
  int open = s->nlinks;
  while (open > 0) {
    for (int i = 0; i < s->nlinks; i++) {
      sink_link *l = &s->links[i];
      if (l->done) continue;
      long step = -1;
      int rc = cpl_input_begin_step(l->in, &step);
      if (rc == CPL_END_OF_STREAM) {
        l->done = 1;
        open--;
        rc = cpl_input_close(l->in);
        l->in = NULL;
        if (rc != CPL_OK) cpli_error_prefix("link %s: closing: ", l->label);
        if (rc != CPL_OK) return rc;
        continue;
      }
      if (rc != CPL_OK) {
        cpli_error_prefix("link %s: waiting for the next step: ", l->label);
        return rc;
      }
      rc = write_step(s, l, step);
      if (rc == CPL_OK) rc = cpl_input_end_step(l->in);
      if (rc != CPL_OK) {
        cpli_error_prefix("link %s: step %ld: ", l->label, step);
        return rc;
      }
    }
  }
  return CPL_OK;
}

/* mkdir -p of the file's directory, so `file: out/run.h5` works in a
 * fresh directory. Rank 0 creates, everyone learns the outcome. */
static int make_parent_dirs(const char *path, MPI_Comm comm, int rank) {
  char dir[4096], msg[4200] = "";
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (rank == 0 && slash && slash != dir) {
    *slash = '\0';
    /* Each prefix ending before a '/', then the whole directory. */
    for (char *p = dir + 1;; p++) {
      if (*p != '/' && *p != '\0') continue;
      char c = *p;
      *p = '\0';
      if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(msg, sizeof msg, "cannot create directory %s: %s", dir,
                 strerror(errno));
        break;
      }
      *p = c;
      if (c == '\0') break;
    }
  }
  MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, 0, comm);
  return msg[0] ? cpli_fail(CPL_ERR_IO, "%s", msg) : CPL_OK;
}

int cpli_hdf5_sink_run(cpl_context *ctx, const char *path) {
  sink s = {.file = -1, .dxpl = -1};
  MPI_Comm comm;
  cpli_whoami(ctx, &s.name, &s.rank);
  CPLI_TRY(cpl_component_comm(ctx, &comm));
  MPI_Comm_size(comm, &s.size);
  cpli_h5_describe_path(path, s.where, sizeof s.where);
  int rc = open_links(ctx, &s);
  if (rc == CPL_OK) rc = make_parent_dirs(path, comm, s.rank);
  if (rc == CPL_OK) rc = cpli_h5_file(path, comm, 1, &s.file, &s.dxpl);
  if (rc == CPL_OK && s.nlinks == 0 && s.rank == 0)
    fprintf(stderr, "cpl-component[%s]: warning: sink has no input link; "
            "file %s stays empty\n", s.name, s.where);
  if (rc == CPL_OK) rc = make_link_groups(&s);
  if (rc == CPL_OK) rc = receive_all(&s);
  for (int i = 0; rc == CPL_OK && s.nlinks > 1 && i < s.nlinks; i++)
    if (H5Gclose(s.links[i].parent) < 0)
      rc = cpli_h5_fail("closing group \"%s\"", s.links[i].group);
  if (s.dxpl >= 0) H5Pclose(s.dxpl);
  if (rc == CPL_OK && H5Fclose(s.file) < 0)
    rc = cpli_h5_fail("closing the file");
  free(s.links); /* on failure ports stay open: the job is aborted */
  if (rc != CPL_OK)
    cpli_error_prefix("hdf5 sink \"%s\": file %s: ", s.name, s.where);
  return rc;
}
