/*
 * gray-scott-sim: 2-D Gray-Scott reaction-diffusion on a periodic grid,
 * block-decomposed over the ranks of its component, publishing the fields
 * U and V every K iterations as one step on its Coupler output port.
 *
 *   gray-scott-sim [--size N | --nx N --ny N] [--iterations N] [--every K]
 *                  [--F f] [--k k] [--Du d] [--Dv d] [--dt t] [--seed s]
 *                  [--port NAME]
 *
 * Run it inside a workflow (configs/gray_scott.yaml); cpl_init reads the
 * component name and the workflow file from the environment cpl-run sets.
 */
#include "gs_model.h"

#include <coupler.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options {
  int nx, ny, iterations, every;
  gs_params p;
  const char *port;
} options;

static MPI_Comm comm = MPI_COMM_NULL; /* where MPI_Abort goes */

/* Loud failure: what failed, Coupler's message, then abort the whole job
 * (the other components would otherwise wait for their timeouts). */
static void check(int rc, const char *what) {
  if (rc == CPL_OK) return;
  fprintf(stderr, "gray-scott-sim: %s: %s: %s\n", what, cpl_strerror(rc), cpl_last_error());
  MPI_Abort(comm != MPI_COMM_NULL ? comm : MPI_COMM_WORLD, 1);
}
#define CHECK(call) check((call), #call)

static void usage(FILE *f) {
  fprintf(f, "usage: gray-scott-sim [--size N | --nx N --ny N] [--iterations N]\n"
             "                      [--every K] [--F f] [--k k] [--Du d] [--Dv d]\n"
             "                      [--dt t] [--seed s] [--port NAME]\n"
             "Publishes U and V (float64, [ny, nx]) every K iterations on port\n"
             "NAME (default fields). Defaults: 256 x 256, 20000 iterations, K 1000,\n"
             "F 0.0367, k 0.0649, Du 0.16, Dv 0.08, dt 1, seed 42.\n");
}

/* Options are parsed after cpl_init, so that a bad one can abort the whole
 * job (the other components would otherwise wait in cpl_init). On error a
 * message goes to err and parse returns -1. */
static int parse(int argc, char **argv, options *o, char *err, size_t errsize) {
  gs_params_default(&o->p);
  o->port = "fields";
  double size = 0, nx = 256, ny = 256, iterations = 20000, every = 1000;
  double seed = (double)o->p.seed;
  int nx_given = 0, ny_given = 0;
  const struct {
    const char *name;
    double lo, hi, *dst;
    int integer;
  } spec[] = {{"--size", 1, 65536, &size, 1}, {"--nx", 1, 65536, &nx, 1},
              {"--ny", 1, 65536, &ny, 1},     {"--iterations", 0, 1e9, &iterations, 1},
              {"--every", 1, 1e9, &every, 1}, {"--F", 0, 1, &o->p.F, 0},
              {"--k", 0, 1, &o->p.k, 0},      {"--Du", 0, 1, &o->p.Du, 0},
              {"--Dv", 0, 1, &o->p.Dv, 0},    {"--dt", 1e-6, 10, &o->p.dt, 0},
              {"--seed", 0, 0x1p53, &seed, 1}};
  const int nspec = (int)(sizeof spec / sizeof spec[0]);
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--port") && v) {
      o->port = v;
      continue;
    }
    int k = 0;
    while (k < nspec && strcmp(a, spec[k].name)) k++;
    if (k == nspec) {
      snprintf(err, errsize, "unknown option %s (--help lists them)", a);
      return -1;
    }
    char *end = NULL;
    double x = v ? strtod(v, &end) : NAN;
    if (!v || !*v || *end || !(x >= spec[k].lo && x <= spec[k].hi) ||
        (spec[k].integer && x != floor(x))) {
      snprintf(err, errsize, "%s needs %s in [%g, %g], got %s", a,
               spec[k].integer ? "an integer" : "a number", spec[k].lo, spec[k].hi,
               v ? v : "nothing");
      return -1;
    }
    *spec[k].dst = x;
    nx_given |= spec[k].dst == &nx;
    ny_given |= spec[k].dst == &ny;
  }
  /* --size was taken over --nx/--ny given with it, in any order. */
  if (size > 0 && (nx_given || ny_given)) {
    snprintf(err, errsize, "--size N is --nx N --ny N: give one or the other");
    return -1;
  }
  if (size > 0) nx = ny = size;
  o->nx = (int)nx;
  o->ny = (int)ny;
  o->iterations = (int)iterations;
  o->every = (int)every;
  o->p.seed = (uint64_t)seed;
  /* Explicit Euler blows up past this; say so instead of publishing NaNs. */
  double dmax = o->p.Du > o->p.Dv ? o->p.Du : o->p.Dv;
  if (4 * o->p.dt * dmax > 1) {
    snprintf(err, errsize, "unstable: 4 dt max(Du, Dv) = %g > 1", 4 * o->p.dt * dmax);
    return -1;
  }
  return 0;
}

/* Start and length of part r of n cells split into p near-equal parts. */
static void split(int n, int p, int r, int *start, int *len) {
  *start = r * (n / p) + (r < n % p ? r : n % p);
  *len = n / p + (r < n % p);
}

/* This rank's place in the process grid and the halo exchange it does. */
typedef struct block {
  MPI_Comm cart;
  int dims[2], coords[2];
  int y0, x0, bny, bnx; /* interior: rows y0.., columns x0..      */
  long cells;           /* (bny + 2) * (bnx + 2), one field      */
  int north, south, west, east;
  MPI_Datatype row, col; /* one row / column of U and V together  */
} block;

static void block_create(MPI_Comm parent, const options *o, block *b) {
  int size;
  MPI_Comm_size(parent, &size);
  b->dims[0] = b->dims[1] = 0;
  MPI_Dims_create(size, 2, b->dims); /* dims[0] >= dims[1] */
  if (o->nx > o->ny) {               /* more ranks along the longer side */
    int t = b->dims[0];
    b->dims[0] = b->dims[1];
    b->dims[1] = t;
  }
  int periods[2] = {1, 1}, rank;
  MPI_Comm_rank(parent, &rank);
  /* Every rank needs a cell in each direction to pass halos on. */
  if (b->dims[0] > o->ny || b->dims[1] > o->nx) {
    if (rank == 0)
      fprintf(stderr,
              "gray-scott-sim: a %d x %d grid is too small for %d x "
              "%d ranks\n",
              o->ny, o->nx, b->dims[0], b->dims[1]);
    MPI_Abort(parent, 2);
  }
  MPI_Cart_create(parent, 2, b->dims, periods, 0, &b->cart);
  MPI_Comm_rank(b->cart, &rank);
  MPI_Cart_coords(b->cart, rank, 2, b->coords);
  split(o->ny, b->dims[0], b->coords[0], &b->y0, &b->bny);
  split(o->nx, b->dims[1], b->coords[1], &b->x0, &b->bnx);
  b->cells = (long)(b->bny + 2) * (b->bnx + 2);
  MPI_Cart_shift(b->cart, 0, 1, &b->north, &b->south);
  MPI_Cart_shift(b->cart, 1, 1, &b->west, &b->east);

  /* U and V live one after the other in one buffer, so one message per
   * direction carries both: an hvector of 2 with the field size as stride. */
  MPI_Aint field = (MPI_Aint)(b->cells * sizeof(double));
  MPI_Datatype col1;
  MPI_Type_create_hvector(2, b->bnx, field, MPI_DOUBLE, &b->row);
  MPI_Type_vector(b->bny, 1, b->bnx + 2, MPI_DOUBLE, &col1);
  MPI_Type_create_hvector(2, 1, field, col1, &b->col);
  MPI_Type_free(&col1);
  MPI_Type_commit(&b->row);
  MPI_Type_commit(&b->col);
}

static void block_free(block *b) {
  MPI_Type_free(&b->row);
  MPI_Type_free(&b->col);
  MPI_Comm_free(&b->cart);
}

/* Fill the one-cell halos of U and V (both at f) from the four neighbours.
 * The 5-point stencil needs no corners. */
static void halo_exchange(const block *b, double *f) {
  const int nx = b->bnx, ny = b->bny;
  MPI_Sendrecv(f + gs_at(nx, ny, 1), 1, b->row, b->south, 0, f + gs_at(nx, 0, 1), 1, b->row,
               b->north, 0, b->cart, MPI_STATUS_IGNORE);
  MPI_Sendrecv(f + gs_at(nx, 1, 1), 1, b->row, b->north, 1, f + gs_at(nx, ny + 1, 1), 1, b->row,
               b->south, 1, b->cart, MPI_STATUS_IGNORE);
  MPI_Sendrecv(f + gs_at(nx, 1, nx), 1, b->col, b->east, 2, f + gs_at(nx, 1, 0), 1, b->col, b->west,
               2, b->cart, MPI_STATUS_IGNORE);
  MPI_Sendrecv(f + gs_at(nx, 1, 1), 1, b->col, b->west, 3, f + gs_at(nx, 1, nx + 1), 1, b->col,
               b->east, 3, b->cart, MPI_STATUS_IGNORE);
}

/* Copy the interior of a halo'd field into a contiguous bny x bnx block,
 * the layout cpl_output_put wants. */
static void interior(const block *b, const double *f, double *out) {
  for (int i = 0; i < b->bny; i++)
    memcpy(out + (size_t)i * b->bnx, f + gs_at(b->bnx, i + 1, 1), (size_t)b->bnx * sizeof(double));
}

static void publish(cpl_output *out, const options *o, const block *b, const double *f,
                    double *sendu, double *sendv, int it) {
  const hsize_t dims[2] = {(hsize_t)o->ny, (hsize_t)o->nx};
  const hsize_t start[2] = {(hsize_t)b->y0, (hsize_t)b->x0};
  const hsize_t count[2] = {(hsize_t)b->bny, (hsize_t)b->bnx};
  interior(b, f, sendu);
  interior(b, f + b->cells, sendv);
  double t = it * o->p.dt;
  int64_t iteration = it;
  uint64_t seed = o->p.seed;

  CHECK(cpl_output_begin_step(out, -1)); /* steps 0, 1, 2, ... */
  CHECK(cpl_output_put(out, "U", H5T_NATIVE_DOUBLE, 2, dims, start, count, sendu));
  CHECK(cpl_output_put(out, "V", H5T_NATIVE_DOUBLE, 2, dims, start, count, sendv));
  /* Everything needed to reproduce the step travels with it. */
  CHECK(cpl_output_attr(out, NULL, "t", H5T_NATIVE_DOUBLE, 1, &t));
  CHECK(cpl_output_attr(out, NULL, "iteration", H5T_NATIVE_INT64, 1, &iteration));
  CHECK(cpl_output_attr(out, NULL, "F", H5T_NATIVE_DOUBLE, 1, &o->p.F));
  CHECK(cpl_output_attr(out, NULL, "k", H5T_NATIVE_DOUBLE, 1, &o->p.k));
  CHECK(cpl_output_attr(out, NULL, "Du", H5T_NATIVE_DOUBLE, 1, &o->p.Du));
  CHECK(cpl_output_attr(out, NULL, "Dv", H5T_NATIVE_DOUBLE, 1, &o->p.Dv));
  CHECK(cpl_output_attr(out, NULL, "dt", H5T_NATIVE_DOUBLE, 1, &o->p.dt));
  CHECK(cpl_output_attr(out, NULL, "seed", H5T_NATIVE_UINT64, 1, &seed));
  CHECK(cpl_output_end_step(out));
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
  int rank;
  MPI_Comm_rank(comm, &rank);

  options o;
  char err[256];
  if (parse(argc, argv, &o, err, sizeof err)) {
    if (rank == 0) fprintf(stderr, "gray-scott-sim: %s\n", err);
    MPI_Abort(comm, 2);
  }

  block b;
  block_create(comm, &o, &b);
  /* Two buffers, each U then V with halos: step from one into the other. */
  double *cur = calloc((size_t)(2 * b.cells), sizeof(double));
  double *nxt = calloc((size_t)(2 * b.cells), sizeof(double));
  double *sendu = malloc((size_t)b.bny * b.bnx * sizeof(double));
  double *sendv = malloc((size_t)b.bny * b.bnx * sizeof(double));
  if (!cur || !nxt || !sendu || !sendv) {
    fprintf(stderr, "gray-scott-sim: out of memory\n");
    MPI_Abort(comm, 1);
  }
  gs_init(&o.p, o.ny, o.nx, b.y0, b.x0, b.bny, b.bnx, cur, cur + b.cells);

  cpl_output *out;
  CHECK(cpl_output_open(ctx, o.port, &out));
  if (rank == 0)
    printf("sim: %d x %d grid on %d x %d ranks, %d iterations, a step every "
           "%d (F %g, k %g, Du %g, Dv %g)\n",
           o.ny, o.nx, b.dims[0], b.dims[1], o.iterations, o.every, o.p.F, o.p.k, o.p.Du, o.p.Dv);

  double t0 = MPI_Wtime();
  for (int it = 1; it <= o.iterations; it++) {
    halo_exchange(&b, cur);
    gs_step(&o.p, b.bny, b.bnx, cur, cur + b.cells, nxt, nxt + b.cells);
    double *tmp = cur;
    cur = nxt;
    nxt = tmp;
    if (it % o.every == 0) publish(out, &o, &b, cur, sendu, sendv, it);
  }

  cpl_output_stats st;
  CHECK(cpl_output_stats_get(out, -1, &st));
  CHECK(cpl_output_close(out)); /* end of stream for every consumer */
  if (rank == 0)
    printf("sim: done in %.1f s, %ld steps published, %.1f s of it waiting "
           "for consumers\n",
           MPI_Wtime() - t0, st.steps, st.wait_s);

  free(cur);
  free(nxt);
  free(sendu);
  free(sendv);
  block_free(&b);
  CHECK(cpl_finalize(ctx));
  MPI_Finalize();
  return 0;
}
