/*
 * The built-in HDF5 source (kind: source): replays a file as steps on every
 * linked output port (fan-out is the library's business).
 *
 * Steps: if the root holds groups named "step_*" (the sink's layout), each
 * is one step, numbered by its `step` attribute (else the number in its
 * name), in increasing order; its datasets, their attributes and the
 * group's attributes (but `step`) travel. Otherwise the root's datasets
 * and attributes are one step 0. Each source rank reads a slab of dim 0
 * with a collective H5Dread in the native form of the file type and puts
 * it as its block. Scalar datasets go out as 1-D of one element (the data
 * API has no rank 0); anything skipped is named in a warning.
 *
 * Before the first step goes out, a dry pass opens every object the replay
 * will touch and checks every dataset and attribute from its metadata
 * (name, type, shape, size against the data API's limits; variable-length
 * strings are read to measure them): a file that cannot
 * be replayed whole fails at once, naming the object, and nothing is read
 * or allocated for a dataset that cannot travel. A file its sink did not
 * finish (h5util.h: CPLI_SINK_MARK) is replayed with a warning.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapters.h"
#include "builtin.h"
#include "core/error.h"
#include "data/desc.h"
#include "data/slab.h"
#include "h5util.h"

typedef struct names {
  char **v;
  int n, cap;
} names;

typedef struct source {
  const char *name;
  int rank, size;
  char where[1200];
  const char *path;
  MPI_Comm comm;
  hid_t file, dxpl;
  long opened;     /* objects opened since the file was (re)opened */
  int reopens;     /* times the file was reopened to empty HDF5's cache */
  size_t mdc_peak; /* largest size of HDF5's metadata cache, bytes */
  int mdc_entries; /* its entries then */
  cpl_output **outs;
  const char **ports;
  int nout;
  long steps;        /* sent */
  double bytes;      /* of all datasets sent, whole arrays, once per port */
  int dry;           /* the checking pass: metadata only, nothing sent */
  size_t attr_bytes; /* of the step's fixed-size attributes, in the dry pass */
} source;

typedef struct step_ref {
  char *group;
  long step;
} step_ref;

static int names_add(names *l, const char *s) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    char **v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  size_t len = strlen(s) + 1;
  if (!(l->v[l->n] = malloc(len))) return -1;
  memcpy(l->v[l->n++], s, len);
  return 0;
}

static void names_free(names *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  *l = (names){0};
}

static herr_t add_link(hid_t g, const char *name, const H5L_info_t *info, void *data) {
  (void)g;
  (void)info;
  return names_add(data, name) ? -1 : 0;
}

static herr_t add_attr(hid_t o, const char *name, const H5A_info_t *info, void *data) {
  (void)o;
  (void)info;
  return names_add(data, name) ? -1 : 0;
}

/* add_attr but for the sink's mark, which is not the data's. */
static herr_t add_root_attr(hid_t o, const char *name, const H5A_info_t *info, void *data) {
  return strcmp(name, CPLI_SINK_MARK) ? add_attr(o, name, info, data) : 0;
}

/* A file the sink did not finish (its mark is -1) holds what a failure
 * left: say so, and how many step groups there are; one the sink finished
 * must hold the steps it wrote. Files without the mark are not the
 * sink's, or from before it. */
static int check_sink_mark(source *s, int groups, int *marked) {
  const htri_t has = H5Aexists(s->file, CPLI_SINK_MARK);
  if (has < 0) return cpli_h5_fail("looking for the root attribute \"%s\"", CPLI_SINK_MARK);
  *marked = has > 0;
  if (!has) return CPL_OK;
  long long mark = 0;
  hid_t a = H5Aopen(s->file, CPLI_SINK_MARK, H5P_DEFAULT);
  const herr_t r = a < 0 ? -1 : H5Aread(a, H5T_NATIVE_LLONG, &mark);
  if (a >= 0) H5Aclose(a);
  if (r < 0) return cpli_h5_fail("reading the root attribute \"%s\"", CPLI_SINK_MARK);
  if (s->rank == 0 && mark < 0)
    fprintf(stderr,
            "cpl-component[%s]: warning: file %s was not finished by the sink that wrote it "
            "(%s = %lld): its %d step group%s are what a failure left, later steps are "
            "missing\n",
            s->name, s->where, CPLI_SINK_MARK, mark, groups, groups == 1 ? "" : "s");
  else if (s->rank == 0 && mark != groups)
    fprintf(stderr,
            "cpl-component[%s]: warning: file %s holds %d step group%s, but the sink that "
            "wrote it finished with %lld (%s): changed since\n",
            s->name, s->where, groups, groups == 1 ? "" : "s", mark, CPLI_SINK_MARK);
  return CPL_OK;
}

/* Members of a group by name (the same order on every rank). */
static int list_links(hid_t g, const char *gname, names *out) {
  hsize_t idx = 0;
  if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, add_link, out) < 0)
    return cpli_h5_fail("listing group \"%s\"", gname);
  return CPL_OK;
}

/* " \"a\" \"b\" ..." (the first 10), for messages. */
static const char *names_str(const names *l, char *buf, size_t size) {
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < l->n && i < 10 && o < size; i++)
    o += (size_t)snprintf(buf + o, size - o, " \"%s\"", l->v[i]);
  if (l->n > 10 && o < size) snprintf(buf + o, size - o, " ...");
  return buf;
}

/* *type: H5I_GROUP, H5I_DATASET or H5I_DATATYPE of member `name` of group
 * g (at path gpath). A member that cannot be opened (a damaged object
 * header, a dangling soft or external link) is an error naming its path:
 * nothing is skipped silently. */
static int member_type(hid_t g, const char *gpath, const char *name, H5I_type_t *type) {
  char path[600], target[600] = "";
  snprintf(path, sizeof path, "%s%s/%s", gpath[0] == '/' ? "" : "/",
           strcmp(gpath, "/") ? gpath : "", name);
  H5L_info_t li;
  if (H5Lget_info(g, name, &li, H5P_DEFAULT) < 0)
    return cpli_h5_fail("object \"%s\": cannot read its link", path);
  if (li.type == H5L_TYPE_SOFT && H5Lget_val(g, name, target, sizeof target, H5P_DEFAULT) < 0)
    target[0] = '\0';
  hid_t o = H5Oopen(g, name, H5P_DEFAULT);
  if (o < 0)
    return li.type == H5L_TYPE_SOFT ? cpli_h5_fail("soft link \"%s\" -> \"%s\": cannot open "
                                                   "its target",
                                                   path, target)
           : li.type == H5L_TYPE_EXTERNAL
               ? cpli_h5_fail("external link \"%s\": cannot open its target", path)
               : cpli_h5_fail("object \"%s\": cannot open it (a damaged object header?)", path);
  *type = H5Iget_type(o);
  if (H5Oclose(o) < 0) return cpli_h5_fail("object \"%s\": closing it", path);
  return CPL_OK;
}

/* ------------------------------------------------------------- attributes */

/* Dataset and attribute names travel under the data API's rules. */
static int name_ok(const char *name) {
  if (cpli_name_ok(name)) return CPL_OK;
  return cpli_fail(CPL_ERR_UNSUPPORTED,
                   "its name (%zu bytes) cannot travel: names are 1-255 printable bytes, "
                   "no '/', not \".\"",
                   strlen(name));
}

/* The data API carries at most CPLI_ATTR_MAX_BYTES per attribute. */
static int attr_size_ok(size_t n, size_t esize) {
  if (esize > 0 && n <= CPLI_ATTR_MAX_BYTES / esize) return CPL_OK;
  return cpli_fail(CPL_ERR_UNSUPPORTED,
                   "%zu elements of %zu bytes: more than the %d bytes an attribute "
                   "can carry",
                   n, esize, CPLI_ATTR_MAX_BYTES);
}

/* Read attribute `aname` of obj in a type the data API can carry:
 * native form; a variable-length string becomes a fixed-length one. The
 * type and size are checked before anything is read or allocated; `dry`:
 * only that. */
static int read_attr(hid_t obj, const char *aname, int dry, hid_t *memtype, size_t *n, void **buf) {
  *memtype = -1;
  *n = 0;
  *buf = NULL;
  hid_t a = H5Aopen(obj, aname, H5P_DEFAULT);
  if (a < 0) return cpli_h5_fail("cannot open it");
  hid_t ft = H5Aget_type(a), sp = H5Aget_space(a);
  hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  int rc = ft < 0 || np < 0 ? cpli_h5_fail("type or dataspace") : CPL_OK;
  *n = np > 0 ? (size_t)np : 0;
  const int vstr = rc == CPL_OK && H5Tis_variable_str(ft) > 0;
  if (rc == CPL_OK && !vstr &&
      (H5Tdetect_class(ft, H5T_VLEN) > 0 || H5Tdetect_class(ft, H5T_REFERENCE) > 0)) {
    rc = cpli_fail(CPL_ERR_UNSUPPORTED, "variable-length and reference "
                                        "types cannot be replayed (only their bytes would travel)");
  } else if (rc == CPL_OK && !vstr) {
    *memtype = H5Tget_native_type(ft, H5T_DIR_ASCEND);
    if (*memtype < 0) rc = cpli_h5_fail("no native type for it");
    else rc = attr_size_ok(*n, H5Tget_size(*memtype));
    if (rc == CPL_OK && !dry) {
      if (!(*buf = malloc(*n ? *n * H5Tget_size(*memtype) : 1)))
        rc = cpli_fail(CPL_ERR_NOMEM, "out of memory");
      else if (H5Aread(a, *memtype, *buf) < 0) rc = cpli_h5_fail("H5Aread failed");
    }
  } else if (rc == CPL_OK) { /* at least a NUL each; the size is known once read */
    rc = attr_size_ok(*n, 1);
  }
  /* Read in the dry pass too: only the strings tell the attribute's size. */
  if (rc == CPL_OK && vstr) {
    hid_t vt = H5Tcopy(H5T_C_S1); /* same charset: HDF5 does not convert */
    H5Tset_size(vt, H5T_VARIABLE);
    H5Tset_cset(vt, H5Tget_cset(ft));
    char **s = calloc(*n ? *n : 1, sizeof *s);
    if (!s || H5Aread(a, vt, s) < 0) {
      rc = s ? cpli_h5_fail("H5Aread (variable-length string)")
             : cpli_fail(CPL_ERR_NOMEM, "out of memory");
    } else {
      size_t w = 1; /* fixed width: longest string plus its NUL */
      for (size_t i = 0; i < *n; i++)
        if (s[i] && strlen(s[i]) + 1 > w) w = strlen(s[i]) + 1;
      *memtype = H5Tcopy(H5T_C_S1);
      H5Tset_size(*memtype, w);
      H5Tset_cset(*memtype, H5Tget_cset(ft));
      rc = attr_size_ok(*n, w);
      if (rc == CPL_OK && !dry && !(*buf = calloc(*n ? *n : 1, w)))
        rc = cpli_fail(CPL_ERR_NOMEM, "out of memory");
      for (size_t i = 0; rc == CPL_OK && !dry && i < *n; i++)
        if (s[i]) memcpy((char *)*buf + i * w, s[i], strlen(s[i]));
      H5Dvlen_reclaim(vt, sp, H5P_DEFAULT, s);
    }
    free(s);
    H5Tclose(vt);
  }
  if (ft >= 0) H5Tclose(ft);
  if (sp >= 0) H5Sclose(sp);
  H5Aclose(a);
  return rc;
}

/* Put the attributes of obj on every port, for `dataset` (NULL: the step).
 * `skip` (may be NULL) names one that is not forwarded. */
static int put_attrs(source *s, hid_t obj, const char *dataset, const char *skip) {
  names an = {0};
  hsize_t idx = 0;
  int rc = H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, add_attr, &an) < 0
               ? cpli_h5_fail("listing attributes")
               : CPL_OK;
  s->opened += an.n;
  for (int i = 0; rc == CPL_OK && i < an.n; i++) {
    if (skip && strcmp(an.v[i], skip) == 0) continue;
    hid_t mt = -1;
    size_t n = 0;
    void *buf = NULL;
    rc = s->dry ? name_ok(an.v[i]) : CPL_OK;
    if (rc == CPL_OK) rc = read_attr(obj, an.v[i], s->dry, &mt, &n, &buf);
    if (rc == CPL_OK && mt >= 0) s->attr_bytes += n * H5Tget_size(mt);
    for (int k = 0; rc == CPL_OK && !s->dry && k < s->nout; k++)
      rc = cpl_output_attr(s->outs[k], dataset, an.v[i], mt, n, buf);
    if (mt >= 0) H5Tclose(mt);
    free(buf);
    if (rc != CPL_OK) cpli_error_prefix("attribute \"%s\": ", an.v[i]);
  }
  names_free(&an);
  return rc;
}

/* --------------------------------------------------------------- datasets */

typedef struct slab {
  hid_t memtype;
  void *buf;
} slab;

/* The whole dataset's size from its dims, before anything is read or
 * allocated: absurd dims and datasets over the data API's limit are
 * refused here, alike on every rank. */
static int dataset_size_ok(int rank, const hsize_t dims[], size_t esize) {
  char db[300];
  uint64_t bytes = esize;
  int over = 0;
  for (int k = 0; k < rank; k++) { /* a zero extent does not hide an absurd one */
    if (dims[k] > 0 && bytes > UINT64_MAX / dims[k]) over = 1;
    else if (dims[k] > 0) bytes *= dims[k];
  }
  for (int k = 0; k < rank; k++)
    if (dims[k] == 0) bytes = 0;
  cpli_dims_str(rank, dims, db, sizeof db);
  if (over)
    return cpli_fail(CPL_ERR_UNSUPPORTED,
                     "dims %s of %zu-byte elements: its size does not fit 64 bits; "
                     "nothing was read",
                     db, esize);
  if (bytes > CPLI_DATASET_MAX_BYTES)
    return cpli_fail(CPL_ERR_UNSUPPORTED,
                     "dims %s of %zu-byte elements are %llu bytes, more than the %llu bytes "
                     "(64 TiB) a dataset may have; nothing was read",
                     db, esize, (unsigned long long)bytes,
                     (unsigned long long)CPLI_DATASET_MAX_BYTES);
  return CPL_OK;
}

/* The dataset's storage can be read here, else the read would fail
 * mid-replay: every filter a chunked dataset needs is here (built in, or a
 * plugin HDF5 can load; HDF5's own reason names the plugin directory, not
 * the filter), and it is not virtual (parallel HDF5 before 1.14 refuses to
 * read those). Optional filters are not asked for: chunks they could not
 * handle were stored without them. */
static int storage_ok(const source *s, hid_t d, hid_t memtype, const hsize_t dims[], int rank) {
  hid_t dcpl = H5Dget_create_plist(d);
  int n = dcpl >= 0 ? H5Pget_nfilters(dcpl) : -1, rc = CPL_OK;
  if (n < 0) rc = cpli_h5_fail("its filters");
  /* Raw data in external files is opened only when read: read its first
   * element (every rank, collectively), so a missing file fails here. */
  const int next = rc == CPL_OK ? H5Pget_external_count(dcpl) : 0;
  hsize_t npts = 1, zero[CPL_MAX_RANK] = {0}, one[CPL_MAX_RANK];
  for (int k = 0; k < rank; k++) npts *= dims[k], one[k] = 1;
  if (next > 0 && npts > 0) {
    hid_t fs = H5Dget_space(d), ms = H5Screate(H5S_SCALAR);
    void *e = malloc(H5Tget_size(memtype));
    herr_t r = e && fs >= 0 && ms >= 0 ? 0 : -1;
    if (r >= 0 && rank > 0) r = H5Sselect_hyperslab(fs, H5S_SELECT_SET, zero, NULL, one, NULL);
    if (r >= 0) r = H5Dread(d, memtype, ms, fs, s->dxpl, e);
    char ext[512] = "?", cwd[1024] = "?";
    off_t off;
    hsize_t size;
    if (r < 0) {
      const hid_t why = H5Eget_current_stack(); /* H5Pget_external clears it */
      H5E_BEGIN_TRY { H5Pget_external(dcpl, 0, sizeof ext, ext, &off, &size); }
      H5E_END_TRY;
      if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "?");
      if (why >= 0) H5Eset_current_stack(why);
      rc = cpli_h5_fail("its raw data is in external file%s \"%s\"%s (a relative name is taken "
                        "from the working directory, %s, unless HDF5_EXTFILE_PREFIX says "
                        "otherwise), and reading it failed",
                        next == 1 ? "" : "s", ext, next == 1 ? "" : ", ...", cwd);
    }
    free(e);
    if (fs >= 0) H5Sclose(fs);
    if (ms >= 0) H5Sclose(ms);
  }
#if !H5_VERSION_GE(1, 14, 0)
  if (rc == CPL_OK && H5Pget_layout(dcpl) == H5D_VIRTUAL)
    rc = cpli_fail(CPL_ERR_UNSUPPORTED,
                   "it is a virtual dataset (VDS), which parallel HDF5 %d.%d cannot read; "
                   "h5repack -l <dataset>:CONTI stores it as an ordinary one; nothing was read",
                   H5_VERS_MAJOR, H5_VERS_MINOR);
#endif
  for (int i = 0; rc == CPL_OK && i < n; i++) {
    unsigned flags = 0, conf = 0;
    size_t nv = 0;
    char fname[128] = "";
    H5Z_filter_t id =
        H5Pget_filter2(dcpl, (unsigned)i, &flags, &nv, NULL, sizeof fname, fname, &conf);
    htri_t avail = -1;
    if (id >= 0 && !(flags & H5Z_FLAG_OPTIONAL)) {
      H5E_BEGIN_TRY { avail = H5Zfilter_avail(id); }
      H5E_END_TRY;
    }
    if (id < 0) rc = cpli_h5_fail("its filter %d", i);
    else if (!(flags & H5Z_FLAG_OPTIONAL) && avail <= 0)
      rc = cpli_fail(CPL_ERR_UNSUPPORTED,
                     "it needs HDF5 filter %d (\"%s\"), which is not available here: not "
                     "built into HDF5 and no plugin for it (HDF5_PLUGIN_PATH); nothing was read",
                     (int)id, fname);
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  return rc;
}

/* Read this rank's rows of dataset `dname` in group g and put them; in the
 * dry pass only check them, reading and allocating nothing. */
static int put_dataset(source *s, hid_t g, const char *dname, slab *sl) {
  hid_t d = H5Dopen2(g, dname, H5P_DEFAULT);
  if (d < 0) return cpli_h5_fail("cannot open it");
  hid_t ft = H5Dget_type(d), fs = H5Dget_space(d), ms = -1;
  int rank = fs >= 0 ? H5Sget_simple_extent_ndims(fs) : -1;
  H5S_class_t cls = fs >= 0 ? H5Sget_simple_extent_type(fs) : H5S_NO_CLASS;
  hsize_t dims[CPL_MAX_RANK] = {1}, start[CPL_MAX_RANK] = {0}, count[CPL_MAX_RANK];
  int rc = ft < 0 || rank < 0 ? cpli_h5_fail("type or dataspace") : CPL_OK;
  if (rc == CPL_OK && cls == H5S_NULL)
    rc = cpli_fail(CPL_ERR_UNSUPPORTED, "it has a null dataspace (no shape)");
  else if (rc == CPL_OK && rank > CPL_MAX_RANK)
    rc = cpli_fail(CPL_ERR_UNSUPPORTED, "%d dimensions, at most %d travel", rank, CPL_MAX_RANK);
  else if (rc == CPL_OK && (H5Tdetect_class(ft, H5T_VLEN) > 0 ||
                            H5Tdetect_class(ft, H5T_REFERENCE) > 0 || H5Tis_variable_str(ft) > 0))
    rc = cpli_fail(CPL_ERR_UNSUPPORTED, "variable-length and reference types "
                                        "cannot be replayed (only their pointers would travel)");
  if (rc == CPL_OK && rank > 0) H5Sget_simple_extent_dims(fs, dims, NULL);
  const int prank = rank > 0 ? rank : 1; /* scalar: 1-D of one element */
  sl->memtype = rc == CPL_OK ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
  if (rc == CPL_OK && sl->memtype < 0) rc = cpli_h5_fail("no native type");
  if (rc == CPL_OK) rc = dataset_size_ok(prank, dims, H5Tget_size(sl->memtype));
  if (rc == CPL_OK && s->dry) rc = storage_ok(s, d, sl->memtype, dims, rank);
  if (rc == CPL_OK && s->dry) rc = put_attrs(s, d, dname, NULL);
  if (s->dry) {
    if (ft >= 0) H5Tclose(ft);
    if (fs >= 0) H5Sclose(fs);
    if (rc == CPL_OK && H5Dclose(d) < 0) rc = cpli_h5_fail("closing it");
    return rc;
  }
  memcpy(count, dims, (size_t)prank * sizeof *count);
  cpl_rows_part(dims[0], s->rank, s->size, &start[0], &count[0]);
  size_t bytes = 0;
  if (rc == CPL_OK) rc = cpli_block_bytes(prank, count, H5Tget_size(sl->memtype), dname, &bytes);
  /* At least one element: a scalar is read whole by every rank. */
  size_t alloc = bytes ? bytes : (sl->memtype >= 0 ? H5Tget_size(sl->memtype) : 1);
  if (rc == CPL_OK && !(sl->buf = malloc(alloc)))
    rc = cpli_fail(CPL_ERR_NOMEM, "out of memory (%zu bytes)", bytes);
  if (rc == CPL_OK && rank > 0) {
    ms = H5Screate_simple(rank, count, NULL);
    herr_t sel = bytes ? H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL)
                       : H5Sselect_none(fs);
    if (ms < 0 || sel < 0 || (!bytes && H5Sselect_none(ms) < 0))
      rc = cpli_h5_fail("selecting rows %llu..%llu", (unsigned long long)start[0],
                        (unsigned long long)(start[0] + count[0]));
  }
  int empty = 0; /* a zero extent: all ranks skip the read alike */
  for (int k = 0; k < prank; k++) empty |= dims[k] == 0;
  if (rc == CPL_OK && !empty &&
      H5Dread(d, sl->memtype, rank > 0 ? ms : H5S_ALL, rank > 0 ? fs : H5S_ALL, s->dxpl, sl->buf) <
          0)
    rc = cpli_h5_fail("H5Dread of rows %llu..%llu failed", (unsigned long long)start[0],
                      (unsigned long long)(start[0] + count[0]));
  for (int k = 0; rc == CPL_OK && k < s->nout; k++)
    rc = cpl_output_put(s->outs[k], dname, sl->memtype, prank, dims, start, count, sl->buf);
  if (rc == CPL_OK) rc = put_attrs(s, d, dname, NULL);
  if (rc == CPL_OK) {
    double all = (double)H5Tget_size(sl->memtype);
    for (int k = 0; k < prank; k++) all *= (double)dims[k];
    s->bytes += all;
  }
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  if (ft >= 0) H5Tclose(ft);
  if (rc == CPL_OK && H5Dclose(d) < 0) rc = cpli_h5_fail("closing it");
  return rc;
}

/* ------------------------------------------------------------------ steps */

static void warn_skipped(source *s, const char *where, const char *what, const names *skipped) {
  if (s->rank != 0 || skipped->n == 0) return;
  /* One fprintf, one write: stderr is unbuffered, and other processes'
   * lines (CPL_PROGRESS) landed between the pieces of this one. */
  char list[1200];
  fprintf(stderr, "cpl-component[%s]: warning: file %s: %s: %d %s not replayed:%s\n", s->name,
          s->where, where, skipped->n, what, names_str(skipped, list, sizeof list));
}

/* One step: the datasets of group g and its attributes (but `skip`). */
static int replay_step(source *s, hid_t g, const char *gname, long step, const char *skip) {
  names members = {0}, other = {0};
  slab *slabs = NULL;
  const double before = s->bytes;
  int rc = list_links(g, gname, &members), nds = 0;
  s->attr_bytes = 0;
  s->opened += 1 + members.n;
  if (rc == CPL_OK && !(slabs = calloc((size_t)members.n + 1, sizeof *slabs)))
    rc = cpli_fail(CPL_ERR_NOMEM, "out of memory");
  for (int k = 0; rc == CPL_OK && !s->dry && k < s->nout; k++) {
    rc = cpl_output_begin_step(s->outs[k], step);
    if (rc != CPL_OK) cpli_error_prefix("output port \"%s\": ", s->ports[k]);
  }
  for (int i = 0; rc == CPL_OK && i < members.n; i++) {
    H5I_type_t type = H5I_BADID;
    if ((rc = member_type(g, gname, members.v[i], &type)) != CPL_OK) break;
    if (type != H5I_DATASET) {
      if (names_add(&other, members.v[i])) rc = cpli_fail(CPL_ERR_NOMEM, "out of memory");
      continue;
    }
    slabs[nds] = (slab){-1, NULL};
    rc = s->dry ? name_ok(members.v[i]) : CPL_OK;
    if (rc == CPL_OK) rc = put_dataset(s, g, members.v[i], &slabs[nds++]);
    if (rc != CPL_OK) cpli_error_prefix("dataset \"%s\": ", members.v[i]);
  }
  if (rc == CPL_OK) rc = put_attrs(s, g, NULL, skip);
  /* The data API's limits per step, before anything is read. */
  if (rc == CPL_OK && s->dry && nds > CPLI_DATASETS_MAX)
    rc = cpli_fail(CPL_ERR_UNSUPPORTED, "%d datasets: a step carries at most %d", nds,
                   CPLI_DATASETS_MAX);
  if (rc == CPL_OK && s->dry && s->attr_bytes > CPLI_ATTRS_MAX_BYTES)
    rc = cpli_fail(CPL_ERR_UNSUPPORTED,
                   "its attributes and its datasets' are %zu bytes: a step carries at most %d",
                   s->attr_bytes, CPLI_ATTRS_MAX_BYTES);
  for (int k = 0; rc == CPL_OK && !s->dry && k < s->nout; k++) {
    rc = cpl_output_end_step(s->outs[k]);
    if (rc != CPL_OK) cpli_error_prefix("output port \"%s\": ", s->ports[k]);
  }
  if (rc == CPL_OK && !s->dry) warn_skipped(s, gname, "groups or named types", &other);
  if (rc == CPL_OK && !s->dry) {
    char b[32];
    s->steps++;
    cpli_report(2, s->name, s->rank, "source: step %ld (group \"%s\"): %d dataset%s, %s", step,
                gname, nds, nds == 1 ? "" : "s", cpli_report_bytes(s->bytes - before, b, sizeof b));
  }
  for (int i = 0; slabs && i < nds; i++) {
    if (slabs[i].memtype >= 0) H5Tclose(slabs[i].memtype);
    free(slabs[i].buf);
  }
  free(slabs);
  names_free(&members);
  names_free(&other);
  if (rc != CPL_OK) cpli_error_prefix("group \"%s\" (step %ld): ", gname, step);
  return rc;
}

/* The step number of a step group: its `step` attribute (an integer), else
 * the number in its name ("step_000042" -> 42). */
static int step_number(hid_t file, const char *gname, long *out) {
  hid_t g = H5Gopen2(file, gname, H5P_DEFAULT);
  if (g < 0) return cpli_h5_fail("group \"%s\": cannot open it", gname);
  int rc = CPL_OK, found = 0;
  if (H5Aexists(g, "step") > 0) {
    hid_t a = H5Aopen(g, "step", H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1, sp = a >= 0 ? H5Aget_space(a) : -1;
    long long v = 0;
    char tb[64];
    if (t < 0 || sp < 0) {
      rc = cpli_h5_fail("group \"%s\": attribute \"step\": cannot read its type", gname);
    } else if (H5Tget_class(t) != H5T_INTEGER || H5Sget_simple_extent_npoints(sp) != 1) {
      /* not a number the sink wrote, nor one to fall back from silently */
      rc = cpli_fail(CPL_ERR_CONFIG,
                     "group \"%s\": attribute \"step\" is %s of %lld elements, "
                     "not one integer",
                     gname, cpli_type_str(t, tb, sizeof tb),
                     (long long)H5Sget_simple_extent_npoints(sp));
    } else {
      if (H5Aread(a, H5T_NATIVE_LLONG, &v) < 0)
        rc = cpli_h5_fail("group \"%s\": reading attribute \"step\"", gname);
      *out = (long)v;
      found = 1;
    }
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    if (a >= 0) H5Aclose(a);
  }
  if (rc == CPL_OK && !found) {
    char *end;
    const char *num = gname + strlen("step_");
    errno = 0;
    long v = strtol(num, &end, 10);
    if (*num < '0' || *num > '9' || *end != '\0')
      rc = cpli_fail(CPL_ERR_CONFIG,
                     "group \"%s\": no integer attribute "
                     "\"step\" and no step number in its name",
                     gname);
    else if (errno == ERANGE)
      rc = cpli_fail(CPL_ERR_CONFIG,
                     "group \"%s\": the step number in its "
                     "name does not fit 64 bits",
                     gname);
    *out = v;
  }
  if (rc == CPL_OK && *out < 0)
    rc = cpli_fail(CPL_ERR_CONFIG, "group \"%s\": step number %ld is negative", gname, *out);
  if (rc == CPL_OK && H5Gclose(g) < 0) rc = cpli_h5_fail("closing \"%s\"", gname);
  return rc;
}

/* HDF5 1.10's parallel metadata cache does not evict an entry read
 * collectively (all of them here: H5Pset_all_coll_metadata_ops, and some
 * calls read so regardless) until such entries fill 80% of it, and each
 * insertion into a full cache walks past them all. Once a long file's
 * metadata had filled the cache (a few hundred steps), every object opened
 * cost more than the one before: 20000 steps took minutes to check, and the
 * consumers' link timeout ran out before the first step went out. Closing
 * the file empties the cache, so the file is reopened after every
 * CPLI_H5_REOPEN objects opened, between steps (no object of it open).
 * Every rank opens the same objects, so all reopen at the same point
 * (H5Fclose and H5Fopen are collective). */
#define CPLI_H5_REOPEN 4096
static int cache_check(source *s) {
  size_t max = 0, min_clean = 0, cur = 0;
  int entries = 0;
  if (H5Fget_mdc_size(s->file, &max, &min_clean, &cur, &entries) >= 0 && cur > s->mdc_peak) {
    s->mdc_peak = cur;
    s->mdc_entries = entries;
  }
  if (s->opened < CPLI_H5_REOPEN) return CPL_OK;
  hid_t dxpl = -1;
  s->opened = 0;
  s->reopens++;
  if (H5Fclose(s->file) < 0) {
    s->file = -1;
    return cpli_h5_fail("closing the file to empty HDF5's metadata cache");
  }
  int rc = cpli_h5_file(s->path, s->comm, 0, &s->file, &dxpl);
  if (dxpl >= 0) H5Pclose(dxpl);
  if (rc != CPL_OK) cpli_error_prefix("reopening it (to empty HDF5's metadata cache): ");
  return rc;
}

static int by_step(const void *a, const void *b) {
  const step_ref *x = a, *y = b;
  return (x->step > y->step) - (x->step < y->step);
}

/* The step groups of the root, sorted; *n = 0 if there are none. Other
 * root members are named in a warning. Without step groups the root's
 * datasets are step 0 (*flat = 1); a root with neither is refused if it
 * holds anything else (a fan-in sink's file: steps under one group per
 * link), and replays as no step at all, with a warning, if it is empty. */
static int find_steps(source *s, step_ref **steps, int *n, int *flat) {
  names root = {0}, other = {0};
  int rc = list_links(s->file, "/", &root), k = 0, nds = 0;
  *steps = calloc((size_t)root.n + 1, sizeof **steps);
  if (rc == CPL_OK && !*steps) rc = cpli_fail(CPL_ERR_NOMEM, "out of memory");
  for (int i = 0; rc == CPL_OK && i < root.n; i++) {
    const char *m = root.v[i];
    H5I_type_t type = H5I_BADID;
    rc = member_type(s->file, "/", m, &type);
    nds += type == H5I_DATASET;
    if (rc != CPL_OK) break;
    if (strncmp(m, "step_", 5) == 0 && type == H5I_GROUP) {
      rc = step_number(s->file, m, &(*steps)[k].step);
      (*steps)[k].group = root.v[i];
      root.v[i] = NULL; /* moved */
      k++;
    } else if (names_add(&other, m)) {
      rc = cpli_fail(CPL_ERR_NOMEM, "out of memory");
    }
    s->opened += 2;
    if (rc == CPL_OK) rc = cache_check(s);
  }
  if (rc == CPL_OK) qsort(*steps, (size_t)k, sizeof **steps, by_step);
  for (int i = 1; rc == CPL_OK && i < k; i++)
    if ((*steps)[i].step == (*steps)[i - 1].step)
      rc = cpli_fail(CPL_ERR_CONFIG,
                     "groups \"%s\" and \"%s\" are both step "
                     "%ld",
                     (*steps)[i - 1].group, (*steps)[i].group, (*steps)[i].step);
  int marked = 0; /* a fan-in sink's file (steps in a group per link) is refused below */
  if (rc == CPL_OK && other.n == 0) rc = check_sink_mark(s, k, &marked);
  if (rc == CPL_OK && k > 0) warn_skipped(s, "root", "objects beside the step groups", &other);
  /* A step carries its own group's attributes: the root's (a file's
   * global metadata) would vanish unsaid. */
  names rattrs = {0};
  hsize_t idx = 0;
  if (rc == CPL_OK && k > 0 &&
      H5Aiterate2(s->file, H5_INDEX_NAME, H5_ITER_INC, &idx, add_root_attr, &rattrs) < 0)
    rc = cpli_h5_fail("listing the root's attributes");
  if (rc == CPL_OK && k > 0)
    warn_skipped(s, "root", "attributes (a step carries its group's only)", &rattrs);
  names_free(&rattrs);
  char list[1200];
  if (rc == CPL_OK && k == 0 && nds == 0 && other.n > 0)
    rc = cpli_fail(CPL_ERR_CONFIG,
                   "nothing to replay: no step groups (step_N) and no datasets in the "
                   "root, only %d other object%s:%s (a fan-in sink's file? its steps are "
                   "in a group per link)",
                   other.n, other.n == 1 ? "" : "s", names_str(&other, list, sizeof list));
  H5O_info_t oi = {0};
  if (rc == CPL_OK && k == 0 && nds == 0 && H5Oget_info2(s->file, &oi, H5O_INFO_NUM_ATTRS) < 0)
    rc = cpli_h5_fail("the root's attributes");
  if (rc == CPL_OK && k == 0 && nds == 0 && s->rank == 0)
    fprintf(stderr,
            "cpl-component[%s]: warning: file %s is empty: no step groups (step_N) and "
            "no datasets%s; no step replayed, the streams end at once\n",
            s->name, s->where,
            oi.num_attrs > (hsize_t)marked ? " (its root attributes are not replayed)" : "");
  *n = k;
  *flat = k == 0 && nds > 0;
  names_free(&root);
  names_free(&other);
  return rc;
}

/* A dry pass over every step first (metadata only), then the replay. */
static int replay(source *s) {
  step_ref *steps = NULL;
  int n = 0, flat = 0;
  const double t0 = MPI_Wtime();
  int rc = find_steps(s, &steps, &n, &flat);
  for (s->dry = 1; rc == CPL_OK && s->dry >= 0; s->dry--) {
    if (s->dry == 0)
      cpli_report(2, s->name, s->rank, "source: %d step%s checked (metadata only) in %.1f s",
                  n + flat, n + flat == 1 ? "" : "s", MPI_Wtime() - t0);
    if (flat) rc = replay_step(s, s->file, "/", 0, NULL); /* a plain file: step 0 */
    for (int i = 0; rc == CPL_OK && i < n; i++) {
      hid_t g = H5Gopen2(s->file, steps[i].group, H5P_DEFAULT);
      rc = g < 0 ? cpli_h5_fail("group \"%s\": cannot open it", steps[i].group)
                 : replay_step(s, g, steps[i].group, steps[i].step, "step");
      if (rc == CPL_OK && H5Gclose(g) < 0) rc = cpli_h5_fail("closing \"%s\"", steps[i].group);
      if (rc == CPL_OK) rc = cache_check(s);
    }
  }
  s->dry = 0;
  for (int i = 0; steps && i < n; i++) free(steps[i].group);
  free(steps);
  return rc;
}

static int open_ports(cpl_context *ctx, source *s) {
  CPLI_TRY(cpli_linked_ports(ctx, CPL_SENDER, &s->ports, &s->nout));
  if (s->nout == 0)
    return cpli_fail(CPL_ERR_CONFIG, "no linked output port: nobody to "
                                     "replay the file to");
  if (!(s->outs = calloc((size_t)s->nout, sizeof *s->outs)))
    return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  for (int k = 0; k < s->nout; k++) {
    int rc = cpl_output_open(ctx, s->ports[k], &s->outs[k]);
    if (rc != CPL_OK) {
      cpli_error_prefix("output port \"%s\": ", s->ports[k]);
      return rc;
    }
  }
  return CPL_OK;
}

static int close_ports(source *s) {
  for (int k = 0; k < s->nout; k++) {
    int rc = cpl_output_close(s->outs[k]);
    s->outs[k] = NULL;
    if (rc != CPL_OK) {
      cpli_error_prefix("closing output port \"%s\": ", s->ports[k]);
      return rc;
    }
  }
  return CPL_OK;
}

int cpli_hdf5_source_run(cpl_context *ctx, const char *path) {
  source s = {.file = -1, .dxpl = -1, .path = path};
  MPI_Comm comm;
  cpli_whoami(ctx, &s.name, &s.rank);
  CPLI_TRY(cpl_component_comm(ctx, &comm));
  MPI_Comm_size(comm, &s.size);
  s.comm = comm;
  cpli_h5_describe_path(path, s.where, sizeof s.where);
  int rc = open_ports(ctx, &s);
  if (rc == CPL_OK) rc = cpli_h5_file(path, comm, 0, &s.file, &s.dxpl);
  if (rc == CPL_OK) rc = replay(&s);
  if (rc == CPL_OK) rc = close_ports(&s);
  if (s.dxpl >= 0) H5Pclose(s.dxpl);
  if (rc == CPL_OK && H5Fclose(s.file) < 0) rc = cpli_h5_fail("closing the file");
  if (rc == CPL_OK) {
    char b[32];
    cpli_report(2, s.name, s.rank,
                "source: HDF5 metadata cache at most %s in %d entries (file reopened %d time%s "
                "to empty it)",
                cpli_report_bytes((double)s.mdc_peak, b, sizeof b), s.mdc_entries, s.reopens,
                s.reopens == 1 ? "" : "s");
    cpli_report(1, s.name, s.rank,
                "source: %ld step%s, %s read from %s and sent on %d "
                "port%s in %.1f s",
                s.steps, s.steps == 1 ? "" : "s", cpli_report_bytes(s.bytes, b, sizeof b), s.where,
                s.nout, s.nout == 1 ? "" : "s", cpli_report_elapsed());
  }
  free(s.outs); /* on failure ports stay open: the job is aborted */
  free(s.ports);
  if (rc != CPL_OK) { /* did the consumers get part of the file? */
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", cpl_last_error());
    if (s.steps)
      rc = cpli_fail(rc, "%s; %ld step%s went out before", msg, s.steps, s.steps == 1 ? "" : "s");
    else rc = cpli_fail(rc, "%s; no step went out", msg);
  }
  if (rc != CPL_OK) cpli_error_prefix("hdf5 source \"%s\": file %s: ", s.name, s.where);
  return rc;
}
