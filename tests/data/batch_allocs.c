/*
 * The producer's batch buffer (data/desc.h, "the batch") is kept across
 * steps: after the first step, end_step allocates no buffer of the
 * batch's size. It was malloc'ed and freed every step while the consumer
 * kept its own. Counts the allocations of exactly the batch's size made
 * inside cpl_output_end_step (malloc interposed, forwarding to glibc's):
 * one, wherever the first send falls (step 0 may wait in the queue for
 * the consumer's first request and go out in a later step's end_step;
 * counting from step 1 on failed then). A dataset too large for the
 * batch makes a queued step's copy another size. argv: none; the
 * component name says the role (prod*, cons*).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <coupler.h>

#define NDSETS 50
#define N 1000                                      /* doubles a dataset: each batched */
#define BATCH ((size_t)NDSETS * N * sizeof(double)) /* one producer rank's */
#define NBIG 10000                                  /* doubles: over 64 KiB, moves alone */
#define STEPS 6

/* glibc lets a program replace malloc, calloc, realloc and free; these
 * forward to its own and count what end_step asks for. */
extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static int counting;
static long batch_allocs;
void *malloc(size_t n) {
  batch_allocs += counting && n == BATCH;
  return __libc_malloc(n);
}
void *calloc(size_t k, size_t n) {
  batch_allocs += counting && k * n == BATCH;
  return __libc_calloc(k, n);
}
void *realloc(void *p, size_t n) {
  batch_allocs += counting && n == BATCH;
  return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }

#define OK(call)                                                                                   \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != CPL_OK) {                                                                           \
      fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cpl_last_error());        \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                                \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  cpl_context *ctx;
  OK(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx));
  const char *comp = getenv("CPL_COMPONENT");
  int fail = 0;
  if (comp && !strncmp(comp, "prod", 4)) {
    static double blk[NDSETS][N], big[NBIG];
    cpl_output *out;
    OK(cpl_output_open(ctx, "out", &out));
    long allocs = 0;
    for (long s = 0; s < STEPS; s++) {
      OK(cpl_output_begin_step(out, s));
      for (int i = 0; i < NDSETS; i++) {
        char name[16];
        snprintf(name, sizeof name, "d%02d", i);
        hsize_t n = N, start = 0, count = N;
        for (int e = 0; e < N; e++) blk[i][e] = (double)(s * 1000000 + i * N + e);
        OK(cpl_output_put(out, name, H5T_NATIVE_DOUBLE, 1, &n, &start, &count, blk[i]));
      }
      hsize_t n = NBIG, start = 0;
      OK(cpl_output_put(out, "big", H5T_NATIVE_DOUBLE, 1, &n, &start, &n, big));
      const long before = batch_allocs;
      counting = 1;
      OK(cpl_output_end_step(out));
      counting = 0;
      allocs += batch_allocs - before;
    }
    OK(cpl_output_close(out));
    printf("batch_allocs: %ld allocations of %zu bytes (the batch) in end_step of steps 0-%d\n",
           allocs, BATCH, STEPS - 1);
    fail = allocs != 1;
  } else {
    cpl_input *in;
    OK(cpl_input_open(ctx, "in", NULL, &in));
    long step, n = 0;
    while (cpl_input_begin_step(in, &step) == CPL_OK) {
      double x;
      hsize_t start = N - 1, count = 1;
      OK(cpl_input_get(in, "d07", H5T_NATIVE_DOUBLE, &start, &count, &x));
      if (x != (double)(step * 1000000 + 7 * N + N - 1)) fail = 1, printf("FAIL: step %ld\n", step);
      OK(cpl_input_end_step(in));
      n++;
    }
    if (n != STEPS) fail = 1, printf("FAIL: %ld of %d steps\n", n, STEPS);
    OK(cpl_input_close(in));
  }
  OK(cpl_finalize(ctx));
  MPI_Finalize();
  return fail;
}
