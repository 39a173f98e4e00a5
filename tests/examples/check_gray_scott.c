/*
 * check_gray_scott: checks the outputs of one run of configs/gray_scott.yaml
 * (small size) against each other and against a serial reference.
 *
 *   check_gray_scott OUTDIR STEPS IMAGE_EVERY IMAGE_SIZE THRESHOLD
 *
 * 1. OUTDIR/gray_scott.h5 (the HDF5 sink) holds exactly the groups
 *    step_000000 .. step_<STEPS-1>, each with U and V (float64, 2-D) and
 *    the step attributes of the simulation.
 * 2. U and V equal, bit for bit, a serial run of the same numerics
 *    (gs_model.c) with the parameters stored in the attributes: the halo
 *    exchange, the irregular decomposition and the transport lose nothing.
 * 3. OUTDIR/stats.csv has a header and one line per step whose statistics
 *    match those recomputed from V in the file (read as float32, as the
 *    analysis reads it).
 * 4. OUTDIR/V_<step>.png exist for steps 0, M, 2M, ... and the last, no
 *    others; each is a valid PNG of the expected size whose pixels are the
 *    picture of that step's V.
 * Prints every failure; exit status 1 if any.
 */
#include "gs_model.h"
#include "image.h"

#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "check_gray_scott: FAIL: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  failures++;
}

/* Fatal: later checks would only repeat the same failure. */
static void die(const char *what) {
  fail("%s", what);
  exit(1);
}

static double attr_double(hid_t obj, const char *name) {
  double x = NAN;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &x) < 0)
    fail("step attribute %s missing or unreadable", name);
  if (a >= 0) H5Aclose(a);
  return x;
}

static long long attr_ll(hid_t obj, const char *name) {
  long long x = -1;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0 || H5Aread(a, H5T_NATIVE_LLONG, &x) < 0)
    fail("step attribute %s missing or unreadable", name);
  if (a >= 0) H5Aclose(a);
  return x;
}

/* Read 2-D dataset `name` of group g, converted to memtype; checks that it
 * is stored as float64 with dims ny x nx. */
static int read2d(hid_t g, const char *step, const char *name, hid_t memtype, int ny, int nx,
                  void *buf) {
  hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
  if (d < 0) {
    fail("%s/%s: no such dataset", step, name);
    return -1;
  }
  hid_t space = H5Dget_space(d), type = H5Dget_type(d);
  hsize_t dims[2] = {0, 0};
  int ok = H5Sget_simple_extent_ndims(space) == 2 &&
           H5Sget_simple_extent_dims(space, dims, NULL) == 2 && dims[0] == (hsize_t)ny &&
           dims[1] == (hsize_t)nx;
  if (!ok) fail("%s/%s: dims are not [%d, %d]", step, name, ny, nx);
  if (H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != 8) {
    fail("%s/%s: not stored as float64", step, name);
    ok = 0;
  }
  if (ok && H5Dread(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
    fail("%s/%s: H5Dread failed", step, name);
    ok = 0;
  }
  H5Tclose(type);
  H5Sclose(space);
  H5Dclose(d);
  return ok ? 0 : -1;
}

/* Interior of a halo'd serial field against a dense ny x nx array. */
static void compare_reference(const char *step, const char *name, const double *ref,
                              const double *got, int ny, int nx) {
  long bad = 0;
  double maxdiff = 0;
  for (int i = 0; i < ny; i++)
    for (int j = 0; j < nx; j++) {
      double d = fabs(ref[gs_at(nx, i + 1, j + 1)] - got[(long)i * nx + j]);
      if (d != 0) bad++;
      if (d > maxdiff || isnan(d)) maxdiff = d;
    }
  if (bad)
    fail("%s/%s: %ld cells differ from the serial reference (max |diff| %g)", step, name, bad,
         maxdiff);
}

typedef struct stats {
  long long step, iteration;
  double t, min, max, mean, std, frac;
} stats;

/* The analysis's definitions, from float32 values. */
static stats compute_stats(const float *v, long n, double threshold) {
  stats s = {.min = INFINITY, .max = -INFINITY};
  double sum = 0, above = 0, sq = 0;
  for (long i = 0; i < n; i++) {
    if (v[i] < s.min) s.min = v[i];
    if (v[i] > s.max) s.max = v[i];
    sum += v[i];
    above += v[i] > threshold;
  }
  s.mean = sum / n;
  for (long i = 0; i < n; i++) sq += (v[i] - s.mean) * (v[i] - s.mean);
  s.std = sqrt(sq / n);
  s.frac = above / n;
  return s;
}

/* Relative agreement; the sums are reduced in another order. */
static int close_to(double a, double b) { return fabs(a - b) <= 1e-9 * fabs(b) + 1e-12; }

static void check_csv_line(const char *line, int step, const stats *want) {
  stats s;
  if (sscanf(line, "%lld,%lld,%lf,%lf,%lf,%lf,%lf,%lf", &s.step, &s.iteration, &s.t, &s.min, &s.max,
             &s.mean, &s.std, &s.frac) != 8) {
    fail("stats.csv line of step %d is not 8 numbers: %s", step, line);
    return;
  }
  if (s.step != step || s.iteration != want->iteration || s.t != want->t)
    fail("stats.csv step %d: step/iteration/t are %lld/%lld/%g, the file has "
         "%d/%lld/%g",
         step, s.step, s.iteration, s.t, step, want->iteration, want->t);
  if (s.min != want->min || s.max != want->max || !close_to(s.mean, want->mean) ||
      !close_to(s.std, want->std) || !close_to(s.frac, want->frac))
    fail("stats.csv step %d: min %.17g max %.17g mean %.17g std %.17g frac "
         "%.17g, but V in the HDF5 file gives %.17g %.17g %.17g %.17g %.17g",
         step, s.min, s.max, s.mean, s.std, s.frac, want->min, want->max, want->mean, want->std,
         want->frac);
}

/* Decode a PNG to RGB; returns NULL (after fail) if it is not valid. */
static unsigned char *read_png(const char *path, int *w, int *h) {
  unsigned char sig[8];
  FILE *f = fopen(path, "rb");
  int sig_ok = f && fread(sig, 1, 8, f) == 8 && png_sig_cmp(sig, 0, 8) == 0;
  if (f) fclose(f);
  if (!sig_ok) {
    fail("%s: missing or no PNG signature", path);
    return NULL;
  }
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path)) {
    fail("%s: %s", path, img.message);
    return NULL;
  }
  img.format = PNG_FORMAT_RGB;
  unsigned char *rgb = malloc(PNG_IMAGE_SIZE(img));
  if (!rgb || !png_image_finish_read(&img, NULL, rgb, 0, NULL)) {
    fail("%s: cannot decode: %s", path, img.message);
    free(rgb);
    png_image_free(&img);
    return NULL;
  }
  *w = (int)img.width;
  *h = (int)img.height;
  return rgb;
}

/* The picture of step `step` must be the one image.c draws of v. */
static void check_png(const char *dir, int step, const float *v, int ny, int nx, const stats *s,
                      int image_size) {
  char path[4096], ref[4200], err[4400];
  snprintf(path, sizeof path, "%s/V_%04d.png", dir, step);
  snprintf(ref, sizeof ref, "%s/.reference.png", dir);
  int scale = image_scale(ny, nx, image_size), w, h, rw, rh;
  unsigned char *got = read_png(path, &w, &h);
  if (!got) return;
  if (w != nx * scale || h != ny * scale || (w < image_size && h < image_size))
    fail("%s: %d x %d pixels, expected %d x %d", path, w, h, nx * scale, ny * scale);
  else if (image_write_png(ref, v, ny, nx, s->min, s->max, scale, err, sizeof err)) fail("%s", err);
  else {
    unsigned char *want = read_png(ref, &rw, &rh);
    if (want && memcmp(got, want, (size_t)w * h * 3) != 0)
      fail("%s: pixels are not the picture of step %d's V", path, step);
    free(want);
    remove(ref);
  }
  free(got);
}

/* Exactly the expected pictures, no stale or extra ones. */
static void check_png_set(const char *dir, int steps, int every) {
  DIR *d = opendir(dir);
  if (!d) die("cannot list the output directory");
  int found = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    int s;
    char tail[8];
    if (sscanf(e->d_name, "V_%d.%7s", &s, tail) != 2 || strcmp(tail, "png")) continue;
    int want = s >= 0 && s < steps && ((every > 0 && s % every == 0) || s == steps - 1);
    if (!want) fail("%s/%s: not expected", dir, e->d_name);
    found++;
  }
  closedir(d);
  int expected = 0;
  for (int s = 0; s < steps; s++) expected += (every > 0 && s % every == 0) || s == steps - 1;
  if (found != expected) fail("%d pictures V_*.png, expected %d", found, expected);
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: check_gray_scott OUTDIR STEPS IMAGE_EVERY "
                    "IMAGE_SIZE THRESHOLD\n");
    return 2;
  }
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are reported below */
  const char *dir = argv[1];
  int steps = atoi(argv[2]), every = atoi(argv[3]), image_size = atoi(argv[4]);
  double threshold = atof(argv[5]);
  char path[4096];

  snprintf(path, sizeof path, "%s/gray_scott.h5", dir);
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) die("cannot open the HDF5 file");
  H5G_info_t gi;
  if (H5Gget_info(file, &gi) < 0 || gi.nlinks != (hsize_t)steps)
    fail("%s: %llu objects in /, expected %d step groups", path, (unsigned long long)gi.nlinks,
         steps);

  snprintf(path, sizeof path, "%s/stats.csv", dir);
  FILE *csv = fopen(path, "r");
  if (!csv) die("cannot open stats.csv");
  char line[1024];
  if (!fgets(line, sizeof line, csv) ||
      strcmp(line, "step,iteration,t,min,max,mean,std,frac_above\n"))
    fail("stats.csv: wrong header");

  gs_params p;
  int ny = 0, nx = 0;
  long long done = 0; /* iterations the reference has run */
  double *u = NULL, *v = NULL, *un = NULL, *vn = NULL, *hu = NULL, *hv = NULL;
  float *vf = NULL;
  for (int step = 0; step < steps; step++) {
    char name[32];
    snprintf(name, sizeof name, "step_%06d", step);
    hid_t g = H5Gopen2(file, name, H5P_DEFAULT);
    if (g < 0) {
      fail("no group /%s", name);
      continue;
    }
    if (!u) { /* the first step fixes size and parameters */
      hid_t d = H5Dopen2(g, "V", H5P_DEFAULT);
      hid_t sp = d < 0 ? -1 : H5Dget_space(d);
      hsize_t dims[2];
      if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 2) die("step_000000/V is not 2-D");
      H5Sget_simple_extent_dims(sp, dims, NULL);
      H5Sclose(sp);
      H5Dclose(d);
      ny = (int)dims[0];
      nx = (int)dims[1];
      p.F = attr_double(g, "F");
      p.k = attr_double(g, "k");
      p.Du = attr_double(g, "Du");
      p.Dv = attr_double(g, "Dv");
      p.dt = attr_double(g, "dt");
      p.seed = (uint64_t)attr_ll(g, "seed");
      size_t halo = (size_t)(ny + 2) * (nx + 2), n = (size_t)ny * nx;
      u = calloc(halo, 8), v = calloc(halo, 8), un = calloc(halo, 8);
      vn = calloc(halo, 8), hu = malloc(n * 8), hv = malloc(n * 8);
      vf = malloc(n * sizeof(float));
      if (!u || !v || !un || !vn || !hu || !hv || !vf) die("out of memory");
      gs_init(&p, ny, nx, 0, 0, ny, nx, u, v);
    }
    stats want = {.step = step};
    want.iteration = attr_ll(g, "iteration");
    want.t = attr_double(g, "t");
    if (attr_ll(g, "step") != step) fail("%s: attribute step is not %d", name, step);
    if (want.iteration < done) die("iterations do not increase");
    for (; done < want.iteration; done++) { /* serial reference run */
      gs_fill_periodic(ny, nx, u);
      gs_fill_periodic(ny, nx, v);
      gs_step(&p, ny, nx, u, v, un, vn);
      double *tmp = u;
      u = un;
      un = tmp;
      tmp = v;
      v = vn;
      vn = tmp;
    }
    if (read2d(g, name, "U", H5T_NATIVE_DOUBLE, ny, nx, hu) == 0)
      compare_reference(name, "U", u, hu, ny, nx);
    if (read2d(g, name, "V", H5T_NATIVE_DOUBLE, ny, nx, hv) == 0)
      compare_reference(name, "V", v, hv, ny, nx);

    if (read2d(g, name, "V", H5T_NATIVE_FLOAT, ny, nx, vf) == 0) {
      stats s = compute_stats(vf, (long)ny * nx, threshold);
      s.step = step;
      s.iteration = want.iteration;
      s.t = want.t;
      if (!fgets(line, sizeof line, csv)) fail("stats.csv: no line for step %d", step);
      else check_csv_line(line, step, &s);
      if ((every > 0 && step % every == 0) || step == steps - 1)
        check_png(dir, step, vf, ny, nx, &s, image_size);
    }
    H5Gclose(g);
  }
  if (fgets(line, sizeof line, csv)) fail("stats.csv: more lines than steps");
  fclose(csv);
  H5Fclose(file);
  check_png_set(dir, steps, every);
  free(u), free(v), free(un), free(vn), free(hu), free(hv), free(vf);
  if (failures) return 1;
  printf("check_gray_scott: OK: %d steps of a %d x %d grid; HDF5 data equal "
         "to the serial reference; stats.csv and pictures match it\n",
         steps, ny, nx);
  return 0;
}
