/*
 * Steps to HDF5 in the sink's layout, for the sink and the stage's drain.
 * After a failure no further collective HDF5 call is made (closes
 * included): the caller returns and cpl-component aborts the job, instead
 * of ranks waiting in different collectives.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "builtin.h"
#include "core/error.h"
#include "core/path.h"
#include "h5step.h"
#include "h5util.h"

/* Write one attribute of the input step (dataset NULL: a step attribute). */
static int write_attr(cpl_input *in, const char *dataset, int i, hid_t obj, int *is_step) {
  cpl_attr_info a;
  CPLI_TRY(cpl_input_attr(in, dataset, i, &a));
  if (is_step) *is_step = strcmp(a.name, "step") == 0;
  size_t bytes = H5Tget_size(a.type) * a.n;
  void *buf = malloc(bytes ? bytes : 1);
  if (!buf)
    return cpli_fail(CPL_ERR_NOMEM,
                     "attribute \"%s\": out of memory "
                     "(%zu bytes)",
                     a.name, bytes);
  int rc = cpl_input_attr_get(in, dataset, a.name, a.type, a.n, buf);
  if (rc == CPL_OK) rc = cpli_h5_write_attr(obj, a.name, a.type, a.n, buf);
  else cpli_error_prefix("attribute \"%s\": ", a.name);
  free(buf);
  return rc;
}

/* Each rank writes its own rows, so the writes are disjoint and together
 * cover the dataset. `rows`: those rows in memory already, or NULL. */
static int write_data(cpli_h5_steps *s, cpl_input *in, hid_t dset, const cpl_dataset_info *d,
                      const void *rows) {
  hsize_t start[CPL_MAX_RANK] = {0}, count[CPL_MAX_RANK];
  memcpy(count, d->dims, (size_t)d->rank * sizeof *count);
  cpl_rows_part(d->dims[0], s->rank, s->size, &start[0], &count[0]);
  size_t bytes;
  CPLI_TRY(cpli_block_bytes(d->rank, count, H5Tget_size(d->type), d->name, &bytes));
  void *buf = rows ? NULL : malloc(bytes ? bytes : 1);
  if (!rows && !buf) return cpli_fail(CPL_ERR_NOMEM, "out of memory (%zu bytes)", bytes);
  int rc = bytes && !rows ? cpl_input_get(in, d->name, d->type, start, count, buf) : CPL_OK;
  hid_t fspace = H5Dget_space(dset);
  hid_t mspace = H5Screate_simple(d->rank, count, NULL);
  if (rc == CPL_OK && (fspace < 0 || mspace < 0)) rc = cpli_h5_fail("dataspaces for the write");
  if (rc == CPL_OK) {
    /* A rank without rows still joins the collective write, selecting
     * nothing. */
    herr_t sel = bytes ? H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL)
                       : H5Sselect_none(fspace);
    if (sel < 0 || (!bytes && H5Sselect_none(mspace) < 0))
      rc = cpli_h5_fail("selecting rows %llu..%llu", (unsigned long long)start[0],
                        (unsigned long long)(start[0] + count[0]));
  }
  if (rc == CPL_OK && H5Dwrite(dset, d->type, mspace, fspace, s->dxpl, rows ? rows : buf) < 0)
    rc = cpli_h5_fail("H5Dwrite of rows %llu..%llu failed", (unsigned long long)start[0],
                      (unsigned long long)(start[0] + count[0]));
  if (fspace >= 0) H5Sclose(fspace);
  if (mspace >= 0) H5Sclose(mspace);
  free(buf);
  return rc;
}

static int write_dataset(cpli_h5_steps *s, cpl_input *in, hid_t group, int i, const void *rows) {
  cpl_dataset_info d;
  CPLI_TRY(cpl_input_dataset(in, i, &d));
  hid_t space = H5Screate_simple(d.rank, d.dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  /* Every element is written below: no need to write fill values first. */
  if (dcpl >= 0) H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
  hid_t dset = space < 0 || dcpl < 0
                   ? -1
                   : H5Dcreate2(group, d.name, d.type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  int rc = dset < 0 ? cpli_h5_fail("cannot create the dataset (%d dims)", d.rank) : CPL_OK;
  int empty = 0; /* a zero extent: nothing to write, the shape says it all */
  for (int k = 0; k < d.rank; k++) empty |= d.dims[k] == 0;
  if (rc == CPL_OK && !empty) rc = write_data(s, in, dset, &d, rows);
  double bytes = (double)H5Tget_size(d.type);
  for (int k = 0; k < d.rank; k++) bytes *= (double)d.dims[k];
  s->bytes += bytes;
  int nattrs = 0;
  if (rc == CPL_OK) rc = cpl_input_attr_count(in, d.name, &nattrs);
  for (int a = 0; rc == CPL_OK && a < nattrs; a++) rc = write_attr(in, d.name, a, dset, NULL);
  if (rc == CPL_OK && H5Dclose(dset) < 0) rc = cpli_h5_fail("closing it");
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  if (rc != CPL_OK) cpli_error_prefix("dataset \"%s\": ", d.name);
  return rc;
}

int cpli_h5_write_step(cpli_h5_steps *s, hid_t parent, const char *where, const char *label,
                       cpl_input *in, long step, const void *const *rows) {
  char name[32];
  snprintf(name, sizeof name, "step_%06ld", step);
  hid_t g = H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0)
    return cpli_h5_fail("cannot create group \"%s%s%s\"", where, where[0] ? "/" : "", name);
  int nattrs = 0, nds = 0, has_step = 0;
  int rc = cpl_input_attr_count(in, NULL, &nattrs);
  for (int a = 0; rc == CPL_OK && a < nattrs; a++) {
    int is_step = 0;
    rc = write_attr(in, NULL, a, g, &is_step);
    has_step |= is_step;
  }
  if (rc == CPL_OK && has_step && s->rank == 0 && !s->warned_step_attr++)
    fprintf(stderr,
            "cpl-component[%s]: warning: link %s sets a step "
            "attribute \"step\" itself; it is written as is, instead of the "
            "step number\n",
            s->who, label);
  if (rc == CPL_OK && !has_step) {
    const int64_t v = step;
    rc = cpli_h5_write_attr(g, "step", H5T_NATIVE_INT64, 1, &v);
  }
  if (rc == CPL_OK) rc = cpl_input_dataset_count(in, &nds);
  for (int i = 0; rc == CPL_OK && i < nds; i++)
    rc = write_dataset(s, in, g, i, rows ? rows[i] : NULL);
  if (rc == CPL_OK && H5Gclose(g) < 0) rc = cpli_h5_fail("closing group \"%s\"", name);
  /* Flush: a crash later leaves this step readable. Collective. */
  if (rc == CPL_OK && H5Fflush(s->file, H5F_SCOPE_GLOBAL) < 0)
    rc = cpli_h5_fail("H5Fflush after the step failed");
  if (rc == CPL_OK) s->steps++;
  return rc;
}

/* So `file: out/run.h5` works in a fresh directory. The directories are
 * those of the name as resolved (cpli_path_resolve), as the file is then
 * created (cpli_h5_file): "a/../b/run.h5" makes b, not a as well, and a
 * name of any length is used whole. */
int cpli_h5_make_parent_dirs(const char *path, MPI_Comm comm) {
  char msg[4200] = "";
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  char *dir = rank == 0 ? cpli_path_resolve(NULL, path) : NULL;
  if (rank == 0 && !dir)
    snprintf(msg, sizeof msg, "cannot resolve the file's name (working directory: %s)",
             strerror(errno));
  if (dir && strlen(dir) >= PATH_MAX) { /* refused whole: no directory made for a part */
    snprintf(msg, sizeof msg,
             "its name is %zu bytes as resolved, more than the %d the system takes", strlen(dir),
             PATH_MAX - 1);
    free(dir);
    dir = NULL;
  }
  char *slash = dir ? strrchr(dir, '/') : NULL;
  if (slash && slash != dir) {
    *slash = '\0';
    /* Each prefix ending before a '/', then the whole directory. */
    for (char *p = dir + 1;; p++) {
      if (*p != '/' && *p != '\0') continue;
      char c = *p;
      *p = '\0';
      if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(msg, sizeof msg, "cannot create directory %s: %s", dir, strerror(errno));
        break;
      }
      *p = c;
      if (c == '\0') break;
    }
  }
  free(dir);
  MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, 0, comm);
  return msg[0] ? cpli_fail(CPL_ERR_IO, "%s", msg) : CPL_OK;
}
