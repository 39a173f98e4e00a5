/* HDF5 helpers of the built-in sink and source. */
#include "h5util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/path.h"

typedef struct h5msg {
  char inner[512]; /* the most specific message            */
  char api[64];    /* the public call the error came out of */
} h5msg;

static herr_t walk(unsigned n, const H5E_error2_t *e, void *data) {
  h5msg *m = data;
  if (n == 0 && e->desc) snprintf(m->inner, sizeof m->inner, "%s", e->desc);
  /* One line: MPI-IO's error strings hold newlines ("error stack:\n...") */
  for (char *c = m->inner; n == 0 && *c; c++)
    if (*c == '\n') *c = ' ';
  if (e->func_name) snprintf(m->api, sizeof m->api, "%s", e->func_name);
  return 0;
}

int cpli_h5_fail(const char *fmt, ...) {
  char ctx[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx, sizeof ctx, fmt, ap);
  va_end(ap);
  h5msg m = {"", ""};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk, &m);
  H5Eclear2(H5E_DEFAULT);
  if (!m.inner[0]) return cpli_fail(CPL_ERR_HDF5, "%s", ctx);
  return cpli_fail(CPL_ERR_HDF5, "%s: %s (HDF5, in %s)", ctx, m.inner, m.api);
}

/* File access list for parallel HDF5 (MPI-IO) on comm; < 0 on failure. */
static hid_t file_access(MPI_Comm comm) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return -1;
  /* No data sieving on writes. HDF5 flushes a step's metadata as one
   * write of scattered pieces (the root group's index near the start of
   * the file, the new objects at its end); with sieving, ROMIO reads and
   * rewrites everything in between in 512 KiB buffers: megabytes per step
   * and a long window in which a killed sink leaves the index torn. */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_ds_write", "disable");
  /* Metadata collective too: every rank makes the same calls anyway, and
   * it saves each rank from reading the same metadata on its own. */
  herr_t rc = H5Pset_fapl_mpio(fapl, comm, info); /* keeps a copy */
  MPI_Info_free(&info);
  if (rc < 0 || H5Pset_all_coll_metadata_ops(fapl, 1) < 0 ||
      H5Pset_coll_metadata_write(fapl, 1) < 0) {
    H5Pclose(fapl);
    return -1;
  }
  return fapl;
}

/* Transfer list for collective dataset reads and writes; < 0 on failure. */
static hid_t collective_transfer(void) {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  if (dxpl >= 0 && H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) < 0) {
    H5Pclose(dxpl);
    return -1;
  }
  return dxpl;
}

int cpli_h5_file(const char *path, MPI_Comm comm, int create, hid_t *file, hid_t *dxpl) {
  *file = *dxpl = -1;
  const hid_t fapl = file_access(comm);
  if (fapl < 0) return cpli_h5_fail("MPI-IO file access");
  /* ROMIO reads a name with a ':' as "<file system>:<path>" and refuses
   * one it does not know ("*iofstypeunsupported"): "run_12:00.h5" gets
   * "ufs:" (plain POSIX) in front. A prefix the user wrote is kept; the
   * checks below look at the path without it. */
  const size_t pre = cpli_path_fs_prefix(path);
  /* A new file goes where its directories were made (cpli_h5_make_parent_dirs):
   * at the name as resolved, so "a/../b/run.h5" needs no directory a. */
  char *abs = create ? cpli_path_resolve(NULL, path) : NULL;
  const char *name = abs ? abs : path + pre;
  const size_t n = strlen(path) + strlen(name) + 8;
  char *io = malloc(n);
  if (!io) {
    free(abs);
    H5Pclose(fapl);
    return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  }
  snprintf(io, n, "%.*s%s%s", (int)pre, path, !pre && strchr(name, ':') ? "ufs:" : "", name);
  path += pre;
  *file =
      create ? H5Fcreate(io, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : H5Fopen(io, H5F_ACC_RDONLY, fapl);
  free(io);
  /* HDF5's reason, kept: the next API call (H5Pclose) clears the stack. */
  const hid_t why = *file < 0 ? H5Eget_current_stack() : -1;
  H5Pclose(fapl);
  if (*file < 0) {
    /* Say why in the user's terms where we can; else HDF5's reason. */
    const char *checked = abs ? abs : path;
    char *dir = malloc(strlen(checked) + 2), what[4200] = "";
    if (dir) snprintf(dir, strlen(checked) + 2, "%s", checked);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    else if (dir) snprintf(dir, strlen(checked) + 2, ".");
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
      snprintf(what, sizeof what, "it is a directory");
    else if (create && dir && stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
      snprintf(what, sizeof what, "%s is not a directory", dir);
    else if (create && dir && access(dir, W_OK) != 0)
      snprintf(what, sizeof what, "directory %s: %s", dir, strerror(errno));
    else if (!create && access(path, R_OK) != 0) snprintf(what, sizeof what, "%s", strerror(errno));
    htri_t h5 = 1;
    if (!what[0] && !create) {
      H5E_BEGIN_TRY { h5 = H5Fis_hdf5(path); }
      H5E_END_TRY;
    }
    free(dir);
    free(abs);
    if (why >= 0) H5Eset_current_stack(why); /* closes `why` */
    if (what[0]) {
      H5Eclear2(H5E_DEFAULT);
      return cpli_h5_fail("cannot %s the file: %s", create ? "create" : "open", what);
    }
    return cpli_h5_fail(h5 > 0 ? "cannot %s the file"
                               : "cannot %s the file: not an HDF5 file, or truncated or damaged",
                        create ? "create" : "open");
  }
  free(abs);
  /* A new file is flushed at once: until then its superblock and root
   * group live in HDF5's cache only, and a run stopped before its first
   * step (Ctrl-C, a killed peer) left a file no tool could open. */
  if (create && H5Fflush(*file, H5F_SCOPE_GLOBAL) < 0)
    return cpli_h5_fail("H5Fflush of the new file failed");
  if ((*dxpl = collective_transfer()) < 0) return cpli_h5_fail("collective transfer list");
  return CPL_OK;
}

int cpli_h5_write_attr(hid_t obj, const char *name, hid_t type, size_t n, const void *buf) {
  hsize_t dim = n;
  /* No element: a null dataspace, HDF5's attribute without a value (what
   * h5py writes for Empty, and what a source sends as 0 elements); a
   * 0-element 1-D one read back "not comparable" in h5diff. */
  hid_t space = n == 1   ? H5Screate(H5S_SCALAR)
                : n == 0 ? H5Screate(H5S_NULL)
                         : H5Screate_simple(1, &dim, NULL);
  if (space < 0) return cpli_h5_fail("attribute \"%s\": dataspace of %zu", name, n);
  hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Sclose(space);
  if (a < 0) return cpli_h5_fail("attribute \"%s\": H5Acreate2 failed", name);
  herr_t w = H5Awrite(a, type, buf);
  H5Aclose(a);
  if (w < 0) return cpli_h5_fail("attribute \"%s\": H5Awrite failed", name);
  return CPL_OK;
}

int cpli_h5_mark(hid_t file, long long steps) {
  if (steps < 0) return cpli_h5_write_attr(file, CPLI_SINK_MARK, H5T_NATIVE_LLONG, 1, &steps);
  hid_t a = H5Aopen(file, CPLI_SINK_MARK, H5P_DEFAULT);
  const herr_t w = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_LLONG, &steps);
  if (a >= 0) H5Aclose(a);
  return w < 0 ? cpli_h5_fail("marking the file finished (attribute \"%s\")", CPLI_SINK_MARK)
               : CPL_OK;
}

void cpli_h5_describe_path(const char *path, char *out, size_t size) {
  char cwd[1024];
  if (path[cpli_path_fs_prefix(path)] != '/' && getcwd(cwd, sizeof cwd))
    snprintf(out, size, "\"%s\" (in %s)", path, cwd);
  else snprintf(out, size, "\"%s\"", path);
}
