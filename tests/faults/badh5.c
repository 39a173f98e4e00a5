/*
 * HDF5 files a source must refuse (or replay as documented), written with
 * serial HDF5 alone:
 *
 *   badh5 CASE OUT.h5
 *
 *   corrupt-dataset  steps 0 and 1 (datasets a, b); the object header of
 *                    /step_000001/b overwritten with garbage
 *   corrupt-group    the same, the header of the group /step_000001
 *   dangling         /step_000000/gone: a soft link to nothing
 *   empty            no object at all
 *   no-steps         only groups, none named step_N (a fan-in sink's file)
 *   step-attr        /step_000001's `step` attribute is a float
 *   vlen-dataset     a variable-length string dataset
 *   ref-dataset      a dataset of object references
 *   big              a 2.4 GB chunked dataset, no chunk written (tiny file)
 *   absurd           dims 2^40 x 2^40 (size overflows 64 bits), chunked
 *   big-attr         an attribute of 65537 bytes (dense attribute storage)
 *   many-attrs       17 attributes of 64 KiB on one step group: 1.06 MiB
 *   ref-attr         an attribute of object references on a dataset
 *   null-dataset     a dataset with a null dataspace (no shape)
 *   step-name        a group step_x: no `step` attribute, no number
 *   step-dup         groups step_1 and step_000001: one step number twice
 *   vstr-attr        step 1: a variable-length string attribute of 100000
 *                    characters (100001 bytes as it travels)
 *   vstr-attrs       step 1: 17 variable-length string attributes of 65535
 *                    characters: 1.06 MiB as they travel
 *   long-name        step 1: a dataset with a 300-byte name
 *   attr-name        step 1: a dataset attribute with a 256-byte name
 *   filter           step 1: a chunked dataset written through filter 32100,
 *                    which only this program has (a filter plugin the
 *                    reader lacks)
 *   external         step 1: a dataset whose raw data is in the external
 *                    file OUT.h5.raw, deleted afterwards
 *   virtual          step 1: a virtual dataset (VDS) mapping step 0's "a"
 *   root-attrs       not bad: steps 0 and 1, and two attributes on the
 *                    root, which are not replayed (a warning names them)
 *   unfinished       steps 0 and 1, marked by their sink as not finished
 *                    (root attribute coupler_steps = -1: a failure cut it)
 *   changed          steps 0 and 1, but coupler_steps = 3: a finished
 *                    sink's file that lost a step since
 *   changing         not bad: a dataset that changes type and shape, then
 *                    is absent, beside one that stays, and a step
 *                    attribute with a null dataspace (in the sink's
 *                    layout, so a sink writes the file back unchanged)
 *   long             not bad: 600 steps of 8 datasets with 3 attributes
 *                    each (33 objects a step: more metadata than HDF5's
 *                    cache holds)
 */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what) {
  fprintf(stderr, "badh5: %s failed\n", what);
  exit(1);
}

static void ints(hid_t g, const char *name) {
  hsize_t n = 4;
  int32_t v[4] = {1, 2, 3, 4};
  hid_t sp = H5Screate_simple(1, &n, NULL);
  hid_t d = H5Dcreate2(g, name, H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d < 0 || H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) die(name);
  H5Dclose(d);
  H5Sclose(sp);
}

static hid_t step(hid_t f, long num) {
  char name[32];
  snprintf(name, sizeof name, "step_%06ld", num);
  hid_t g = H5Gcreate2(f, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) die(name);
  return g;
}

/* An attribute of n zero bytes (over 64 KiB: dense attribute storage). */
static void blob(hid_t obj, const char *name, hsize_t n) {
  unsigned char *v = calloc(n, 1);
  hid_t sp = H5Screate_simple(1, &n, NULL);
  hid_t a = H5Acreate2(obj, name, H5T_STD_U8LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  if (!v || a < 0 || H5Awrite(a, H5T_NATIVE_UCHAR, v) < 0) die(name);
  H5Aclose(a);
  H5Sclose(sp);
  free(v);
}

/* A filter that leaves the data as it is. */
static size_t pass_through(unsigned flags, size_t nparams, const unsigned params[], size_t bytes,
                           size_t *size, void **buf) {
  (void)flags, (void)nparams, (void)params, (void)size, (void)buf;
  return bytes;
}

/* A scalar variable-length string attribute of `len` x's (what h5py
 * writes for str). */
static void vstr(hid_t obj, const char *name, size_t len) {
  char *v = malloc(len + 1);
  if (!v) die("malloc");
  memset(v, 'x', len);
  v[len] = '\0';
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(t, H5T_VARIABLE);
  hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0 || H5Awrite(a, t, &v) < 0) die(name);
  H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
  free(v);
}

/* A chunked dataset of `rank` dims, never written: no chunk is allocated. */
static void unwritten(hid_t g, int rank, const hsize_t *dims, hid_t type) {
  hsize_t chunk[2] = {1024, 1};
  hid_t sp = H5Screate_simple(rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (sp < 0 || H5Pset_chunk(dcpl, rank, chunk) < 0) die("chunked dataspace");
  hid_t d = H5Dcreate2(g, "huge", type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (d < 0) die("chunked dataset");
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(sp);
}

/* Overwrite the first 16 bytes of the object header of `path` in a
 * closed file: the version, message count and sizes become garbage. */
static void corrupt(const char *file, const char *path) {
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  H5O_info_t oi;
  if (f < 0 || H5Oget_info_by_name2(f, path, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
    die("H5Oget_info_by_name");
  H5Fclose(f);
  FILE *fp = fopen(file, "r+b");
  unsigned char junk[16];
  memset(junk, 0xA5, sizeof junk);
  if (!fp || fseek(fp, (long)oi.addr, SEEK_SET) != 0 || fwrite(junk, 1, sizeof junk, fp) != 16 ||
      fclose(fp) != 0)
    die("overwriting the object header");
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: badh5 CASE OUT.h5 (cases: see badh5.c)\n");
    return 2;
  }
  const char *c = argv[1], *out = argv[2];
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (!strcmp(c, "big-attr") || !strcmp(c, "many-attrs") ||
      !strcmp(c, "vstr-attrs")) /* dense attribute storage */
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  hid_t f = H5Fcreate(out, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (f < 0) die("H5Fcreate");
  H5Pclose(fapl);
  int known = 1;
  if (!strcmp(c, "corrupt-dataset") || !strcmp(c, "corrupt-group")) {
    for (long s = 0; s < 2; s++) {
      hid_t g = step(f, s);
      ints(g, "a");
      ints(g, "b");
      H5Gclose(g);
    }
  } else if (!strcmp(c, "dangling")) {
    hid_t g = step(f, 0);
    ints(g, "a");
    if (H5Lcreate_soft("/nowhere", g, "gone", H5P_DEFAULT, H5P_DEFAULT) < 0) die("soft link");
    H5Gclose(g);
  } else if (!strcmp(c, "empty")) {
    /* nothing */
  } else if (!strcmp(c, "no-steps")) {
    hid_t g = H5Gcreate2(f, "sim.out", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s0 = step(g, 0);
    ints(s0, "a");
    H5Gclose(s0);
    H5Gclose(g);
  } else if (!strcmp(c, "step-attr")) {
    for (long s = 0; s < 2; s++) {
      hid_t g = step(f, s);
      ints(g, "a");
      double v = 1.5;
      hid_t sp = H5Screate(H5S_SCALAR);
      hid_t a =
          H5Acreate2(g, "step", s ? H5T_IEEE_F64LE : H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
      if (a < 0 || H5Awrite(a, H5T_NATIVE_DOUBLE, &v) < 0) die("step attribute");
      H5Aclose(a);
      H5Sclose(sp);
      H5Gclose(g);
    }
  } else if (!strcmp(c, "vlen-dataset")) {
    hid_t g = step(f, 0);
    const char *v[2] = {"one", "two"};
    hsize_t n = 2;
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate_simple(1, &n, NULL);
    H5Tset_size(t, H5T_VARIABLE);
    hid_t d = H5Dcreate2(g, "names", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) die("vlen dataset");
    H5Dclose(d);
    H5Sclose(sp);
    H5Tclose(t);
    H5Gclose(g);
  } else if (!strcmp(c, "ref-dataset")) {
    hid_t g = step(f, 0);
    ints(g, "a");
    hobj_ref_t r;
    hsize_t n = 1;
    if (H5Rcreate(&r, g, "a", H5R_OBJECT, -1) < 0) die("H5Rcreate");
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(g, "refs", H5T_STD_REF_OBJ, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, H5T_STD_REF_OBJ, H5S_ALL, H5S_ALL, H5P_DEFAULT, &r) < 0)
      die("reference dataset");
    H5Dclose(d);
    H5Sclose(sp);
    H5Gclose(g);
  } else if (!strcmp(c, "big")) {
    hid_t g = step(f, 0);
    hsize_t dims[1] = {(hsize_t)1 << 44}; /* 8-byte elements: 128 TiB */
    unwritten(g, 1, dims, H5T_IEEE_F64LE);
    H5Gclose(g);
  } else if (!strcmp(c, "absurd")) {
    hid_t g = step(f, 0);
    hsize_t dims[2] = {(hsize_t)1 << 40, (hsize_t)1 << 40};
    unwritten(g, 2, dims, H5T_STD_U8LE);
    H5Gclose(g);
  } else if (!strcmp(c, "big-attr")) {
    hid_t g = step(f, 0);
    ints(g, "a");
    hid_t d = H5Dopen2(g, "a", H5P_DEFAULT);
    blob(d, "blob", 65537);
    H5Dclose(d);
    H5Gclose(g);
  } else if (!strcmp(c, "many-attrs")) {
    hid_t g = step(f, 0);
    ints(g, "a");
    for (int i = 0; i < 17; i++) {
      char name[16];
      snprintf(name, sizeof name, "blob%02d", i);
      blob(g, name, 65536);
    }
    H5Gclose(g);
  } else if (!strcmp(c, "ref-attr")) {
    hid_t g = step(f, 0);
    ints(g, "a");
    hobj_ref_t r;
    hid_t d = H5Dopen2(g, "a", H5P_DEFAULT), sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(d, "link", H5T_STD_REF_OBJ, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (H5Rcreate(&r, g, "a", H5R_OBJECT, -1) < 0 || a < 0 || H5Awrite(a, H5T_STD_REF_OBJ, &r) < 0)
      die("reference attribute");
    H5Aclose(a);
    H5Sclose(sp);
    H5Dclose(d);
    H5Gclose(g);
  } else if (!strcmp(c, "null-dataset")) {
    hid_t g = step(f, 0), sp = H5Screate(H5S_NULL);
    hid_t d = H5Dcreate2(g, "nothing", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0) die("null dataset");
    H5Dclose(d);
    H5Sclose(sp);
    H5Gclose(g);
  } else if (!strcmp(c, "step-name") || !strcmp(c, "step-dup")) {
    const char *names[2] = {"step_1", c[5] == 'n' ? "step_x" : "step_000001"};
    for (int i = 0; i < 2; i++) {
      hid_t g = H5Gcreate2(f, names[i], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      if (g < 0) die(names[i]);
      ints(g, "a");
      H5Gclose(g);
    }
  } else if (!strcmp(c, "vstr-attr") || !strcmp(c, "vstr-attrs") || !strcmp(c, "long-name") ||
             !strcmp(c, "attr-name")) {
    /* step 0 is fine: nothing may go out before the refusal of step 1 */
    hid_t g = step(f, 0);
    ints(g, "a");
    H5Gclose(g);
    g = step(f, 1);
    ints(g, "a");
    char name[301];
    if (!strcmp(c, "vstr-attr")) vstr(g, "note", 100000);
    for (int i = 0; !strcmp(c, "vstr-attrs") && i < 17; i++) {
      snprintf(name, sizeof name, "note%02d", i);
      vstr(g, name, 65535);
    }
    memset(name, c[0] == 'l' ? 'n' : 'q', 300);
    name[c[0] == 'l' ? 300 : 256] = '\0';
    if (c[0] == 'l') ints(g, name);
    if (c[0] == 'a') {
      hid_t d = H5Dopen2(g, "a", H5P_DEFAULT);
      blob(d, name, 4);
      H5Dclose(d);
    }
    H5Gclose(g);
  } else if (!strcmp(c, "filter")) {
    /* Registered here only: whoever reads the file lacks it. */
    const H5Z_class2_t cls = {
        H5Z_CLASS_T_VERS, (H5Z_filter_t)32100, 1, 1, "badh5-filter", NULL, NULL, pass_through};
    hsize_t n = 4, chunk = 2;
    int32_t v[4] = {1, 2, 3, 4};
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp = H5Screate_simple(1, &n, NULL);
    hid_t g0 = step(f, 0), g1 = step(f, 1);
    ints(g0, "a");
    ints(g1, "a");
    if (H5Zregister(&cls) < 0 || H5Pset_chunk(dcpl, 1, &chunk) < 0 ||
        H5Pset_filter(dcpl, 32100, H5Z_FLAG_MANDATORY, 0, NULL) < 0)
      die("filter");
    hid_t d = H5Dcreate2(g1, "packed", H5T_STD_I32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) die("packed");
    H5Dclose(d);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Gclose(g0);
    H5Gclose(g1);
  } else if (!strcmp(c, "external")) {
    char raw[4096];
    snprintf(raw, sizeof raw, "%s.raw", out);
    hsize_t n = 4;
    int32_t v[4] = {1, 2, 3, 4};
    hid_t g0 = step(f, 0), g1 = step(f, 1);
    ints(g0, "a");
    ints(g1, "a");
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp = H5Screate_simple(1, &n, NULL);
    if (H5Pset_external(dcpl, raw, 0, sizeof v) < 0) die("external");
    hid_t d = H5Dcreate2(g1, "outside", H5T_STD_I32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)
      die("outside");
    H5Dclose(d);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Gclose(g0);
    H5Gclose(g1);
    remove(raw);
  } else if (!strcmp(c, "virtual")) {
    hsize_t n = 4;
    hid_t g0 = step(f, 0), g1 = step(f, 1);
    ints(g0, "a");
    ints(g1, "a");
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp = H5Screate_simple(1, &n, NULL);
    if (H5Pset_virtual(dcpl, sp, ".", "/step_000000/a", sp) < 0) die("virtual");
    hid_t d = H5Dcreate2(g1, "view", H5T_STD_I32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0) die("view");
    H5Dclose(d);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Gclose(g0);
    H5Gclose(g1);
  } else if (!strcmp(c, "root-attrs")) {
    for (long i = 0; i < 2; i++) {
      hid_t g = step(f, i);
      ints(g, "a");
      H5Gclose(g);
    }
    blob(f, "title", 8);
    blob(f, "units", 4);
  } else if (!strcmp(c, "unfinished") || !strcmp(c, "changed")) {
    for (long i = 0; i < 2; i++) {
      hid_t g = step(f, i);
      ints(g, "a");
      H5Gclose(g);
    }
    const int64_t mark = c[0] == 'u' ? -1 : 3;
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "coupler_steps", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &mark) < 0) die("coupler_steps");
    H5Aclose(a);
    H5Sclose(sp);
  } else if (!strcmp(c, "changing")) {
    for (long s = 0; s < 3; s++) {
      hid_t g = step(f, s);
      const int64_t num = s;
      hid_t sp = H5Screate(H5S_SCALAR);
      hid_t a = H5Acreate2(g, "step", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
      if (a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &num) < 0) die("step attribute");
      H5Aclose(a);
      H5Sclose(sp);
      if (s == 0) { /* an attribute without value: what h5py writes for Empty */
        hid_t ns = H5Screate(H5S_NULL);
        hid_t e = H5Acreate2(g, "none", H5T_IEEE_F32LE, ns, H5P_DEFAULT, H5P_DEFAULT);
        if (e < 0) die("null attribute");
        H5Aclose(e);
        H5Sclose(ns);
      }
      ints(g, "a");
      if (s < 2) { /* step 0: 3 x 2 int16; step 1: 5 float64; step 2: none */
        hsize_t dims[2] = {3, 2}, n5 = 5;
        double v[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
        hid_t vs = s ? H5Screate_simple(1, &n5, NULL) : H5Screate_simple(2, dims, NULL);
        hid_t d = H5Dcreate2(g, "b", s ? H5T_IEEE_F64LE : H5T_STD_I16LE, vs, H5P_DEFAULT,
                             H5P_DEFAULT, H5P_DEFAULT);
        if (d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) die("b");
        H5Dclose(d);
        H5Sclose(vs);
      }
      H5Gclose(g);
    }
  } else if (!strcmp(c, "long")) {
    for (long s = 0; s < 600; s++) {
      hid_t g = step(f, s);
      for (int k = 0; k < 8; k++) {
        char name[8];
        snprintf(name, sizeof name, "d%d", k);
        ints(g, name);
        hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
        blob(d, "x", 4);
        blob(d, "y", 4);
        blob(d, "z", 4);
        H5Dclose(d);
      }
      H5Gclose(g);
    }
  } else {
    known = 0;
  }
  if (H5Fclose(f) < 0) die("H5Fclose");
  if (!known) {
    fprintf(stderr, "badh5: unknown case %s\n", c);
    return 2;
  }
  if (!strcmp(c, "corrupt-dataset")) corrupt(out, "/step_000001/b");
  if (!strcmp(c, "corrupt-group")) corrupt(out, "/step_000001");
  return 0;
}
