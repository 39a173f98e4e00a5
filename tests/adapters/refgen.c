/*
 * Writes, with serial HDF5 and no Coupler code, the file the HDF5 sink
 * should produce for the test producer's streams (testdata.h), for h5diff;
 * also the input files of the source tests.
 *
 *   refgen OUT.h5 [GROUP=]SEED,NSTEPS,FIRST,STRIDE ...   sink layout
 *   refgen --flat OUT.h5 SEED,1,FIRST,STRIDE              one plain step
 *
 * Sink layout: step_%06ld groups with an int64 `step` attribute and the
 * step attributes; under GROUP when given (fan-in). Attributes of one
 * element are scalar, others 1-D. --flat: datasets and step attributes in
 * the root, no step groups.
 */
#include "testdata.h"

static void die(const char *what) {
  fprintf(stderr, "refgen: %s failed\n", what);
  exit(1);
}

static void attr(hid_t obj, const td_attr *a) {
  hsize_t n = a->n;
  hid_t sp = n == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, NULL);
  hid_t at = H5Acreate2(obj, a->name, a->type, sp, H5P_DEFAULT, H5P_DEFAULT);
  if (at < 0 || H5Awrite(at, a->type, a->buf) < 0) die(a->name);
  H5Aclose(at);
  H5Sclose(sp);
  H5Tclose(a->type);
}

/* The datasets and step attributes of one step into group g. */
static void step_content(hid_t g, long step, int seed) {
  for (int k = 0; k < TD_NDS; k++) {
    const td_dataset *d = &td_datasets[k];
    hsize_t n = 1, zero[3] = {0, 0, 0};
    for (int j = 0; j < d->rank; j++) n *= d->dims[j];
    void *buf = calloc(n + 1, td_size(d->kind));
    td_fill(d, zero, d->dims, step, seed, buf);
    hid_t t = td_type(d->kind), sp = H5Screate_simple(d->rank, d->dims, NULL);
    hid_t ds = H5Dcreate2(g, d->name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ds < 0 || (n && H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)) die(d->name);
    for (int a = 0; a < TD_NDATTRS; a++) {
      td_attr at;
      td_dataset_attr(d, a, step, seed, &at);
      attr(ds, &at);
    }
    H5Dclose(ds);
    H5Sclose(sp);
    H5Tclose(t);
    free(buf);
  }
  for (int a = 0; a < TD_NSATTRS; a++) {
    td_attr at;
    td_step_attr(a, step, seed, &at);
    attr(g, &at);
  }
}

int main(int argc, char **argv) {
  int flat = argc > 1 && !strcmp(argv[1], "--flat");
  if (argc < 3 + flat) {
    fprintf(stderr, "usage: refgen [--flat] OUT.h5 [GROUP=]SEED,NSTEPS,FIRST,STRIDE ...\n");
    return 2;
  }
  hid_t f = H5Fcreate(argv[1 + flat], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) die("H5Fcreate");
  for (int i = 2 + flat; i < argc; i++) {
    char group[128] = "";
    const char *spec = argv[i], *eq = strchr(spec, '=');
    if (eq) {
      snprintf(group, sizeof group, "%.*s", (int)(eq - spec), spec);
      spec = eq + 1;
    }
    td_stream st;
    if (td_parse_stream(spec, &st)) die(argv[i]);
    if (flat) {
      step_content(f, st.first, st.seed);
      continue;
    }
    hid_t parent = group[0] ? H5Gcreate2(f, group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : f;
    if (parent < 0) die(group);
    for (int s = 0; s < st.nsteps; s++) {
      long step = st.first + s * st.stride;
      char name[32];
      snprintf(name, sizeof name, "step_%06ld", step);
      hid_t g = H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      if (g < 0) die(name);
      int64_t v = step;
      td_attr sa = {"step", H5Tcopy(H5T_NATIVE_INT64), 1, {0}};
      memcpy(sa.buf, &v, sizeof v);
      attr(g, &sa);
      step_content(g, step, st.seed);
      H5Gclose(g);
    }
    if (group[0]) H5Gclose(parent);
  }
  if (H5Fclose(f) < 0) die("H5Fclose");
  return 0;
}
