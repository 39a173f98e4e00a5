/*
 * Files for the source's conversions, written with serial HDF5:
 *
 *   oddgen in OUT.h5        what a source may meet: step groups named
 *                           step_9, step_10 (no `step` attribute: the
 *                           number is in the name) and step_x (attribute
 *                           step = 20); a scalar dataset, a big-endian
 *                           one, variable-length UTF-8 string attributes
 *                           (as h5py writes str), a subgroup and a stray
 *                           root dataset (both skipped with a warning)
 *   oddgen expected OUT.h5  what a sink must write after the replay:
 *                           steps 9, 10, 20; the scalar as 1-D of one
 *                           element, native byte order, fixed-length
 *                           strings
 */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what) {
  fprintf(stderr, "oddgen: %s failed\n", what);
  exit(1);
}

/* A string attribute: variable-length in the input, fixed in the output. */
static void note(hid_t obj, const char *text, int vlen) {
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(t, vlen ? H5T_VARIABLE : strlen(text) + 1);
  H5Tset_cset(t, H5T_CSET_UTF8);
  hid_t a = H5Acreate2(obj, "note", t, sp, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0 || H5Awrite(a, t, vlen ? (const void *)&text : text) < 0) die("note");
  H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
}

static void dataset(hid_t g, const char *name, hid_t ftype, int rank, hsize_t n, const int32_t *v) {
  hid_t sp = rank ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
  hid_t d = H5Dcreate2(g, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d < 0 || H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) die(name);
  H5Dclose(d);
  H5Sclose(sp);
}

static void step(hid_t parent, const char *gname, long num, int in, int step_attr) {
  hid_t g = H5Gcreate2(parent, gname, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) die(gname);
  if (step_attr) { /* int32 in the input; the sink writes int64 */
    int64_t v = num;
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a =
        H5Acreate2(g, "step", in ? H5T_STD_I32LE : H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &v) < 0) die("step");
    H5Aclose(a);
    H5Sclose(sp);
  }
  char text[64];
  snprintf(text, sizeof text, "Schritt %ld, \xc3\xa4\xc3\xb6\xc3\xbc", num);
  note(g, text, in);
  int32_t one = (int32_t)(num * 7), v[5];
  for (int i = 0; i < 5; i++) v[i] = (int32_t)(num * 100 + i - 2);
  dataset(g, "s0", H5T_STD_I32LE, in ? 0 : 1, 1, &one);
  dataset(g, "be", in ? H5T_STD_I32BE : H5T_STD_I32LE, 1, 5, v);
  hid_t d = H5Dopen2(g, "be", H5P_DEFAULT);
  note(d, "big-endian in the input", in);
  H5Dclose(d);
  if (in) {
    hid_t sub = H5Gcreate2(g, "sub", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    dataset(sub, "hidden", H5T_STD_I32LE, 1, 1, &one);
    H5Gclose(sub);
  }
  H5Gclose(g);
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "in") && strcmp(argv[1], "expected"))) {
    fprintf(stderr, "usage: oddgen in|expected OUT.h5\n");
    return 2;
  }
  const int in = !strcmp(argv[1], "in");
  hid_t f = H5Fcreate(argv[2], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) die("H5Fcreate");
  if (in) {
    step(f, "step_10", 10, 1, 0);
    step(f, "step_9", 9, 1, 0);
    step(f, "step_x", 20, 1, 1);
    int32_t z = 1;
    dataset(f, "stray", H5T_STD_I32LE, 1, 1, &z);
  } else {
    step(f, "step_000009", 9, 0, 1);
    step(f, "step_000010", 10, 0, 1);
    step(f, "step_000020", 20, 0, 1);
  }
  if (H5Fclose(f) < 0) die("H5Fclose");
  return 0;
}
