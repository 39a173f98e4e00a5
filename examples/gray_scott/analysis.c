/*
 * gray-scott-analysis: in-situ statistics and pictures of the Gray-Scott
 * field V, on a different number of ranks than the simulation.
 *
 *   gray-scott-analysis [--out DIR] [--image-every M|-1] [--image-size PX]
 *                       [--threshold X] [--dataset NAME] [--port NAME]
 *                       [--select all|rows]
 *
 * Every step, each rank reads a slab of rows of V (converted to float32 by
 * Coupler), the ranks reduce min, max, mean, standard deviation and the
 * fraction of cells above the threshold, and rank 0 appends them to
 * DIR/stats.csv. Rank 0 also reads the whole field, to draw it to
 * DIR/V_<step>.png every M-th step and at the last.
 *
 * --select rows: each rank declares that it reads only its rows of V
 * (cpl_input_select_rows), so only those reach it (selective delivery) and
 * nothing of the other datasets; rank 0 gathers the rows from the other
 * ranks for a picture. --select all: every rank receives every dataset
 * whole (the default, without the option). With either, every rank prints
 * at the end what it received and held, and its peak RSS.
 */
#include "image.h"

#include <coupler.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

typedef struct options {
  const char *out, *dataset, *port;
  int image_every, image_size;
  double threshold;
  int select_rows, report; /* --select rows; --select given at all */
} options;

static MPI_Comm comm = MPI_COMM_NULL;

/* Loud failure: what failed and Coupler's message, then abort the job. */
static void check(int rc, const char *what) {
  if (rc == CPL_OK) return;
  fprintf(stderr, "gray-scott-analysis: %s: %s: %s\n", what, cpl_strerror(rc), cpl_last_error());
  MPI_Abort(comm != MPI_COMM_NULL ? comm : MPI_COMM_WORLD, 1);
}
#define CHECK(call) check((call), #call)

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gray-scott-analysis: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  MPI_Abort(comm, 1);
}

static void usage(FILE *f) {
  fprintf(f, "usage: gray-scott-analysis [--out DIR] [--image-every M]\n"
             "         [--image-size PX] [--threshold X] [--dataset NAME] [--port NAME]\n"
             "         [--select all|rows]\n"
             "Per-step statistics of DATASET (default V) from input port NAME\n"
             "(default fields) to DIR/stats.csv (default DIR: out); a PNG picture\n"
             "DIR/DATASET_<step>.png every M steps (default 4, 0: only the last) and of\n"
             "the last step (M -1: no pictures), at least PX pixels along the longer\n"
             "side (default 512). X: the threshold of the 'frac_above' column (default\n"
             "0.25).\n"
             "--select rows: each rank receives only its rows of DATASET\n"
             "(selective delivery); --select all: every dataset whole on every\n"
             "rank (the default). Given at all, --select also makes each rank\n"
             "print at the end the bytes it received and held and its peak RSS.\n");
}

/* Parsed after cpl_init so that a bad option aborts the whole job. */
static int parse(int argc, char **argv, options *o, char *err, size_t errsize) {
  *o = (options){.out = "out",
                 .dataset = "V",
                 .port = "fields",
                 .image_every = 4,
                 .image_size = 512,
                 .threshold = 0.25};
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    double x = v ? strtod(v, &end) : NAN;
    int isnum = v && *v && !*end;
    int isint = isnum && x == floor(x); /* 2.5 was taken for 2 */
    if (!v) {
      snprintf(err, errsize, "%s needs a value", a);
      return -1;
    } else if (!strcmp(a, "--out")) {
      o->out = v;
    } else if (!strcmp(a, "--dataset")) {
      o->dataset = v;
    } else if (!strcmp(a, "--port")) {
      o->port = v;
    } else if (!strcmp(a, "--select") && (!strcmp(v, "rows") || !strcmp(v, "all"))) {
      o->select_rows = !strcmp(v, "rows");
      o->report = 1;
    } else if (!strcmp(a, "--image-every") && isint && x >= -1 && x <= 1e9) {
      o->image_every = (int)x;
    } else if (!strcmp(a, "--image-size") && isint && x >= 1 && x <= 8192) {
      o->image_size = (int)x;
    } else if (!strcmp(a, "--threshold") && isnum) {
      o->threshold = x;
    } else {
      snprintf(err, errsize, "bad option or value: %s %s (--help lists them)", a, v);
      return -1;
    }
  }
  return 0;
}

/* Statistics of one step over all analysis ranks (valid on rank 0). */
typedef struct stats {
  double min, max, mean, std, frac_above;
} stats;

/* Rows [r0, r0 + nr) of ny rows split near-equally over the ranks. */
static void my_rows(int ny, int rank, int size, int *r0, int *nr) {
  *r0 = rank * (ny / size) + (rank < ny % size ? rank : ny % size);
  *nr = ny / size + (rank < ny % size);
}

/* Rows are read BLOCK_ROWS at a time: Coupler's conversion to float32
 * then needs a buffer of one block, not of all the rank's rows. */
#define BLOCK_ROWS 32

/* Rows [row, row + n) of the dataset as float32 into buf. */
static void get_rows(cpl_input *in, const char *dataset, int row, int n, int nx, float *buf) {
  hsize_t start[2] = {(hsize_t)row, 0}, count[2] = {(hsize_t)n, (hsize_t)nx};
  if (n > 0) CHECK(cpl_input_get(in, dataset, H5T_NATIVE_FLOAT, start, count, buf));
}

/* Partial sums over v[0..n): {min, -max} and {sum, count above}. */
static void accumulate(const float *v, long n, double threshold, double mm[2], double sums[2]) {
  for (long i = 0; i < n; i++) {
    double x = v[i];
    if (x < mm[0]) mm[0] = x;
    if (-x < mm[1]) mm[1] = -x;
    sums[0] += x;
    sums[1] += x > threshold;
  }
}

/* Adds to *sq in element order, block after block: the same sum as one
 * pass over all the rows. */
static void squares(const float *v, long n, double mean, double *sq) {
  for (long i = 0; i < n; i++) *sq += (v[i] - mean) * (v[i] - mean);
}

/* Statistics of rows [r0, r0 + nr) over all ranks (valid on rank 0). With
 * `slab`, the rows are read into it (kept for a picture); without, block
 * by block into `block` (twice: the variance goes around the global mean,
 * so there is no cancellation). */
static stats step_stats(cpl_input *in, const options *o, int r0, int nr, int nx, long total,
                        float *slab, float *block) {
  double mm[2] = {INFINITY, INFINITY}, sums[2] = {0, 0}, sq = 0;
  for (int b = 0; b < nr; b += BLOCK_ROWS) {
    int n = nr - b < BLOCK_ROWS ? nr - b : BLOCK_ROWS;
    float *v = slab ? slab + (size_t)b * nx : block;
    get_rows(in, o->dataset, r0 + b, n, nx, v);
    accumulate(v, (long)n * nx, o->threshold, mm, sums);
  }
  double gmm[2], gsums[2], gsq = 0;
  MPI_Reduce(mm, gmm, 2, MPI_DOUBLE, MPI_MIN, 0, comm);
  MPI_Allreduce(sums, gsums, 2, MPI_DOUBLE, MPI_SUM, comm);
  double mean = gsums[0] / total;
  if (slab) {
    squares(slab, (long)nr * nx, mean, &sq);
  } else {
    for (int b = 0; b < nr; b += BLOCK_ROWS) {
      int n = nr - b < BLOCK_ROWS ? nr - b : BLOCK_ROWS;
      get_rows(in, o->dataset, r0 + b, n, nx, block);
      squares(block, (long)n * nx, mean, &sq);
    }
  }
  MPI_Reduce(&sq, &gsq, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
  return (stats){gmm[0], -gmm[1], mean, sqrt(gsq / total), gsums[1] / total};
}

/* Read step attribute `name`: one element of memtype. */
static void step_scalar(const cpl_input *in, const char *name, hid_t memtype, void *value) {
  CHECK(cpl_input_attr_get(in, NULL, name, memtype, 1, value));
}

/* --select rows: rank 0 collects the rows of every rank into `whole`. */
static void gather_rows(const float *slab, int nr, int nx, int ny, float *whole, int rank,
                        int size) {
  int *counts = NULL, *displs = NULL;
  if (rank == 0) {
    counts = malloc((size_t)size * sizeof *counts);
    displs = malloc((size_t)size * sizeof *displs);
    if (!counts || !displs) die("out of memory");
    for (int r = 0; r < size; r++) {
      int r0, n;
      my_rows(ny, r, size, &r0, &n);
      counts[r] = n * nx;
      displs[r] = r0 * nx;
    }
  }
  MPI_Gatherv(slab, nr * nx, MPI_FLOAT, whole, counts, displs, MPI_FLOAT, 0, comm);
  free(counts);
  free(displs);
}

/* What this rank received and held, and its peak RSS (one line each). */
static void report_memory(const cpl_input *in, const options *o, int rank, int nr, int ny, int nx,
                          double seconds) {
  cpl_input_stats st;
  struct rusage ru;
  CHECK(cpl_input_stats_get(in, &st));
  getrusage(RUSAGE_SELF, &ru);
  const double mib = 1024.0 * 1024.0;
  printf("analysis rank %d: rows %d of %d (%s), %ld steps (%ld selective): "
         "received %.2f MiB, held at most %.2f MiB, its rows %.2f MiB per "
         "step (float64), peak RSS %.1f MiB, %.3f s per step\n",
         rank, nr, ny, o->select_rows ? "selected" : "whole arrays", st.steps, st.selective,
         st.bytes / mib, st.bytes_max / mib, (double)nr * nx * 8 / mib, ru.ru_maxrss / 1024.0,
         st.steps ? seconds / (double)st.steps : 0.0);
}

/* mkdir -p: --out out/stage works in a fresh directory. */
static int make_dirs(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = dir + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char c = *p;
    *p = '\0';
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return -1;
    if ((*p = c) == '\0') return 0;
  }
}

/* Rank 0: the picture of the whole field of one step. */
static void write_image(const options *o, long step, const float *f, int ny, int nx, double lo,
                        double hi) {
  char path[4096], err[4200];
  snprintf(path, sizeof path, "%s/%s_%04ld.png", o->out, o->dataset, step);
  int scale = image_scale(ny, nx, o->image_size);
  if (image_write_png(path, f, ny, nx, lo, hi, scale, err, sizeof err))
    die("cannot write the picture: %s", err);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    }
  MPI_Init(&argc, &argv);
  cpl_context *ctx;
  CHECK(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx));
  CHECK(cpl_component_comm(ctx, &comm));
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  options o;
  char err[512];
  if (parse(argc, argv, &o, err, sizeof err)) {
    if (rank == 0) fprintf(stderr, "gray-scott-analysis: %s\n", err);
    MPI_Abort(comm, 2);
  }

  FILE *csv = NULL;
  char csvpath[4096];
  if (rank == 0) {
    if (make_dirs(o.out) != 0)
      die("cannot create the output directory %s: %s", o.out, strerror(errno));
    snprintf(csvpath, sizeof csvpath, "%s/stats.csv", o.out);
    csv = fopen(csvpath, "w");
    if (!csv) die("cannot write %s", csvpath);
    fprintf(csv, "step,iteration,t,min,max,mean,std,frac_above\n");
  }

  cpl_input *in;
  CHECK(cpl_input_open(ctx, o.port, NULL, &in));
  const double t_open = MPI_Wtime();
  if (o.select_rows) /* the same split as my_rows: part `rank` of `size` */
    CHECK(cpl_input_select_rows(in, o.dataset, rank, size));
  /* Sized at the first step. slab: this rank's rows as float32, kept only
   * where a picture needs them later (--select rows: rank 0 gathers them);
   * whole: rank 0's field for pictures; block: BLOCK_ROWS rows. */
  float *slab = NULL, *whole = NULL, *block = NULL;
  const int pictures = o.image_every >= 0;
  int ny = 0, nx = 0, r0 = 0, nr = 0;
  long step = -1, last = -1, last_image = -1;
  stats s = {0};
  int rc;
  while ((rc = cpl_input_begin_step(in, &step)) == CPL_OK) {
    cpl_dataset_info info;
    CHECK(cpl_input_inquire(in, o.dataset, &info));
    if (info.rank != 2) die("dataset %s is not 2-D", o.dataset);
    if (!block) {
      ny = (int)info.dims[0];
      nx = (int)info.dims[1];
      my_rows(ny, rank, size, &r0, &nr);
      block = malloc(((size_t)BLOCK_ROWS * nx + 1) * sizeof(float));
      if (pictures && o.select_rows) slab = malloc(((size_t)nr * nx + 1) * sizeof(float));
      if (pictures && rank == 0) whole = malloc((size_t)ny * nx * sizeof(float));
      if (!block || (pictures && ((o.select_rows && !slab) || (rank == 0 && !whole))))
        die("out of memory");
    } else if (info.dims[0] != (hsize_t)ny || info.dims[1] != (hsize_t)nx) {
      die("dataset %s changed its dims", o.dataset);
    }

    /* Each rank reads only its rows, as float32 (Coupler converts). */
    s = step_stats(in, &o, r0, nr, nx, (long)ny * nx, slab, block);

    int image = o.image_every > 0 && step % o.image_every == 0;
    if (o.select_rows && image) /* the other rows are on the other ranks */
      gather_rows(slab, nr, nx, ny, whole, rank, size);
    if (rank == 0) {
      double t = NAN;
      long long iteration = -1;
      step_scalar(in, "t", H5T_NATIVE_DOUBLE, &t);
      step_scalar(in, "iteration", H5T_NATIVE_LLONG, &iteration);
      fprintf(csv, "%ld,%lld,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", step, iteration, t, s.min,
              s.max, s.mean, s.std, s.frac_above);
      fflush(csv); /* readable while the run goes on */
      /* The whole field, for a picture now or at the end. */
      if (pictures && !o.select_rows)
        CHECK(cpl_input_get(in, o.dataset, H5T_NATIVE_FLOAT, NULL, NULL, whole));
      if (image) write_image(&o, step, whole, ny, nx, s.min, s.max);
      printf("analysis: step %3ld  t %7.0f  %s min %.3f max %.3f mean %.4f "
             "std %.4f  %4.1f%% > %g%s\n",
             step, t, o.dataset, s.min, s.max, s.mean, s.std, 100 * s.frac_above, o.threshold,
             image ? "  (picture)" : "");
      fflush(stdout);
    }
    CHECK(cpl_input_end_step(in));
    last = step;
    last_image = image ? step : last_image;
  }
  if (rc != CPL_END_OF_STREAM) check(rc, "cpl_input_begin_step");
  /* The final state is always drawn: with --select rows, the last step's
   * rows are still in each rank's slab. */
  if (pictures && o.select_rows && last >= 0 && last_image != last)
    gather_rows(slab, nr, nx, ny, whole, rank, size);
  if (o.report) report_memory(in, &o, rank, nr, ny, nx, MPI_Wtime() - t_open);

  if (rank == 0) {
    if (pictures && last >= 0 && last_image != last) /* the final state */
      write_image(&o, last, whole, ny, nx, s.min, s.max);
    if (fclose(csv) != 0) die("cannot write %s", csvpath);
    printf("analysis: end of stream after step %ld; statistics in %s, "
           "pictures %s/%s_*.png\n",
           last, csvpath, o.out, o.dataset);
  }
  free(slab);
  free(whole);
  free(block);
  CHECK(cpl_input_close(in));
  CHECK(cpl_finalize(ctx));
  MPI_Finalize();
  return 0;
}
