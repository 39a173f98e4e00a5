/*
 * A dataset with one block just over 2 GiB through every delivery path of
 * the data layer (label big): producer group of 3 ranks, consumer group of
 * 2, one port per path (tests/data/big.yaml.in):
 *
 *   all     policy all, the inter-group allgather: every consumer rank
 *           holds the whole dataset;
 *   latest  policy latest, the scatter: the producer ranks post their
 *           blocks to one consumer rank each (the big block and a small
 *           one to consumer 0), which shares them in its group;
 *   sel     delivery select: consumer 0 selects [0, BIG + 100), a box
 *           holding the whole big block (one message over 2 GiB) and
 *           crossing into the next block; consumer 1 selects a box across
 *           byte 2^31 of the big block and past its end.
 *
 * One 1-D uint8 dataset: producer rank 0 puts BIG = 2^31 + 17 bytes, rank
 * 1 SMALL1, rank 2 SMALL2. Every consumer reads its whole box back in
 * 64 MiB gets (offsets past 2^31 in the consumer's buffer) and compares
 * every byte with the pattern, a function of (port, global index).
 *
 * With argv[1] "h5" (data.big_h5): the producer's step goes to the HDF5
 * sink (one rank: one write of the whole), and from the file the HDF5
 * source (one rank: one read of the whole) sends it to a consumer that
 * checks every byte, so both built-ins move a 2 GiB + 5 KiB dataset whole.
 *
 * Memory: a producer rank 0 block (2.1 GB), its queued copy under latest
 * (2.1 GB), and 2.1 GB per consumer rank on the paths that deliver whole
 * arrays: at most about 8.6 GB at once, for a moment on `latest` (8.3 GB
 * measured, the ranks' RSS summed; data.big_h5 8.0 GB, the producer and the
 * sink, whose rows buffer is a second copy).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <coupler.h>

#define SMALL1 ((size_t)4099)
#define SMALL2 ((size_t)1000)
#define TOTAL (BIG + SMALL1 + SMALL2)
#define PERIOD 4093 /* prime: a shifted block shows at once */
#define CHUNK ((size_t)64 << 20)

/* argv[1], if given: another size of the big block (the same paths with
 * small data, for a fast test); CROSS: where consumer 1's box starts. */
static size_t BIG = ((size_t)1 << 31) + 17, CROSS = ((size_t)1 << 31) - 5000;
/* argv[1] "h5": one port each way, to or from the HDF5 built-ins (which
 * do not join the barrier of consume()). */
static int h5_mode;

static int failures;
static const char *who = "?";
static unsigned char base[PERIOD + 4096];

#define OK(call)                                                                                   \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != CPL_OK) {                                                                           \
      fprintf(stderr, "FAIL %s %s:%d: %s -> %s: %s\n", who, __FILE__, __LINE__, #call,             \
              cpl_strerror(rc_), cpl_last_error());                                                \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                                \
    }                                                                                              \
  } while (0)

/* Bytes [at, at + n) of the dataset of port `seed`: base shifted by the
 * seed, each 4 KiB page xored with bits of its number. */
static void pattern(unsigned char *b, size_t at, size_t n, int seed) {
  for (size_t i = 0; i < n;) {
    const size_t g = at + i, page_end = (g | 4095) + 1;
    const size_t len = page_end - g < n - i ? page_end - g : n - i;
    memcpy(b + i, base + (g + (size_t)seed * 977) % PERIOD, len);
    const unsigned char x = (unsigned char)((g >> 12) ^ (g >> 20) ^ (g >> 28));
    for (size_t j = 0; j < len; j++) b[i + j] ^= x;
    i += len;
  }
}

static size_t block_start(int r) { return r == 0 ? 0 : r == 1 ? BIG : BIG + SMALL1; }
static size_t block_len(int r) { return r == 0 ? BIG : r == 1 ? SMALL1 : SMALL2; }

static void produce(cpl_context *ctx, int r, const char *port, int seed) {
  cpl_output *out;
  OK(cpl_output_open(ctx, port, &out));
  const hsize_t dims[1] = {TOTAL}, start[1] = {block_start(r)}, count[1] = {block_len(r)};
  unsigned char *b = malloc(block_len(r));
  if (!b) {
    fprintf(stderr, "FAIL %s: out of memory for the block\n", who);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  pattern(b, start[0], count[0], seed);
  OK(cpl_output_begin_step(out, -1));
  OK(cpl_output_put(out, "x", H5T_NATIVE_UINT8, 1, dims, start, count, b));
  if (!h5_mode) MPI_Barrier(MPI_COMM_WORLD); /* the consumer's request is here: see consume */
  OK(cpl_output_end_step(out));
  free(b); /* a step still queued or in flight has its own copy */
  OK(cpl_output_close(out));
}

/* Read [lo, hi) back in chunks and compare every byte. */
static void check_box(cpl_input *in, size_t lo, size_t hi, int seed, const char *port,
                      unsigned char *got, unsigned char *want) {
  size_t bad = 0, first = 0;
  for (size_t at = lo; at < hi; at += CHUNK) {
    const size_t n = hi - at < CHUNK ? hi - at : CHUNK;
    const hsize_t start[1] = {at}, count[1] = {n};
    OK(cpl_input_get(in, "x", H5T_NATIVE_UINT8, start, count, got));
    pattern(want, at, n, seed);
    if (memcmp(got, want, n) != 0)
      for (size_t j = 0; j < n; j++)
        if (got[j] != want[j] && !bad++) first = at + j;
  }
  if (bad) {
    fprintf(stderr, "FAIL %s port %s: [%zu, %zu): %zu wrong bytes, the first at %zu\n", who, port,
            lo, hi, bad, first);
    failures++;
  }
}

static void consume(cpl_context *ctx, int r, const char *port, int seed, size_t lo, size_t hi,
                    int select, unsigned char *got, unsigned char *want) {
  cpl_input *in;
  OK(cpl_input_open(ctx, port, NULL, &in));
  if (select) {
    const hsize_t start[1] = {lo}, count[1] = {hi - lo};
    OK(cpl_input_select(in, "x", 1, 1, start, count));
  }
  /* Ask for the step before the producer ends it, so end_step serves the
   * request at once: the step goes on the port's own path (under latest
   * the scatter, not the allgather close would use) with no queued copy.
   * The request is sent before the barrier, on one node it is there after. */
  long step;
  if (!h5_mode) {
    int rc = cpl_input_try_step(in, 0, &step);
    if (rc != CPL_ERR_TIMEOUT) OK(rc == CPL_OK ? CPL_ERR_STATE : rc);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  OK(cpl_input_begin_step(in, &step));
  cpl_dataset_info info;
  OK(cpl_input_inquire(in, "x", &info));
  if (info.bytes != TOTAL || info.dims[0] != TOTAL) {
    fprintf(stderr, "FAIL %s port %s: dataset of %zu bytes, dims %llu\n", who, port, info.bytes,
            (unsigned long long)info.dims[0]);
    failures++;
  }
  check_box(in, lo, hi, seed, port, got, want);
  cpl_input_stats st;
  OK(cpl_input_stats_get(in, &st));
  if (select && (st.bytes != hi - lo || st.selective != 1)) {
    fprintf(stderr, "FAIL %s port %s: received %zu bytes in %ld redistributions, selected %zu\n",
            who, port, st.bytes, st.selective, hi - lo);
    failures++;
  }
  OK(cpl_input_end_step(in));
  OK(cpl_input_close(in));
  printf("%s rank %d: port %s: [%zu, %zu) checked, %zu bytes received\n", who, r, port, lo, hi,
         st.bytes);
  fflush(stdout);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  h5_mode = argc > 1 && !strcmp(argv[1], "h5");
  if (argc > 1 && !h5_mode) {
    BIG = strtoull(argv[1], NULL, 10);
    CROSS = BIG / 2;
  }
  for (size_t i = 0; i < sizeof base; i++) /* periodic: any run may start anywhere */
    base[i] = (unsigned char)(((i % PERIOD) * 2654435761u) >> 13);
  cpl_context *ctx;
  OK(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx));
  static char name[80];
  const char *cn;
  OK(cpl_context_component(ctx, NULL, &cn));
  snprintf(name, sizeof name, "%s", cn);
  who = name;
  MPI_Comm comm;
  OK(cpl_component_comm(ctx, &comm));
  int r, n;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  if (!strcmp(who, "prod")) {
    if (n != 3) {
      fprintf(stderr, "FAIL: the producer needs 3 ranks, has %d\n", n);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (h5_mode) {
      produce(ctx, r, "out", 4);
    } else {
      produce(ctx, r, "all", 1);
      produce(ctx, r, "latest", 2);
      produce(ctx, r, "sel", 3);
    }
  } else {
    unsigned char *got = malloc(CHUNK), *want = malloc(CHUNK);
    if (!got || !want) MPI_Abort(MPI_COMM_WORLD, 3);
    if (h5_mode) {
      consume(ctx, r, "in", 4, 0, TOTAL, 0, got, want);
    } else {
      consume(ctx, r, "all", 1, 0, TOTAL, 0, got, want);
      consume(ctx, r, "latest", 2, 0, TOTAL, 0, got, want);
      if (r == 0) consume(ctx, r, "sel", 3, 0, BIG + 100, 1, got, want);
      else consume(ctx, r, "sel", 3, CROSS, BIG + SMALL1 + 7, 1, got, want);
    }
    free(got);
    free(want);
  }
  /* Over the component only: the HDF5 built-ins run no such reduction. */
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, comm);
  if (r == 0) printf("data big, %s: %s (%d failures)\n", who, all ? "FAILED" : "passed", all);
  OK(cpl_finalize(ctx));
  MPI_Finalize();
  return all ? 1 : 0;
}
