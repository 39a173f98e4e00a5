/*
 * Byte-exact check of every inter-group algorithm.
 *
 * usage: test_inter P:Q [P:Q ...]   (needs max(P+Q) ranks)
 * For each shape, ranks 0..P-1 form group A and P..P+Q-1 group B, joined
 * by one intercommunicator that every call reuses. Each algorithm (fc with
 * each intra-group phase, ring, root, native) moves data A -> B and then
 * B -> A, for: count 0, 1, odd, 64 KiB blocks, irregular counts with zeros,
 * a strided receive type, a strided send type, and a burst of repeats.
 * Receivers check every element and that gaps between strided elements are
 * untouched. Prints one line per shape; exits non-zero on any mismatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coupler.h"

#define SENTINEL (-7)

static int failures;

static int value(int sender, int i, int call) { return sender * 1000003 + i * 31 + call; }

typedef struct alg {
  cpl_inter_algorithm inter;
  cpl_intra_algorithm intra;
} alg;

/* Every row of the algorithm tables: fc with each intra-group algorithm
 * (fc's allgather phase), every other inter-group algorithm (auto
 * included) with auto. Both enums list the tables' rows. */
static alg algs[CPL_INTER_COUNT + CPL_INTRA_COUNT];
static size_t nalgs;

static void list_algs(void) {
  for (int i = 0; i < CPL_INTER_COUNT; i++)
    if (i == CPL_INTER_FC)
      for (int j = CPL_INTRA_AUTO + 1; j < CPL_INTRA_COUNT; j++)
        algs[nalgs++] = (alg){CPL_INTER_FC, (cpl_intra_algorithm)j};
    else algs[nalgs++] = (alg){(cpl_inter_algorithm)i, CPL_INTRA_AUTO};
}

enum pattern { P_ZERO, P_ONE, P_ODD, P_BIG, P_IRREG, P_STRIDED_RECV, P_STRIDED_SEND, P_COUNT };
static const char *pattern_name[] = {"count 0",   "count 1",      "odd count",   "64 KiB",
                                     "irregular", "strided recv", "strided send"};

static int count_of(enum pattern pt, int sender) {
  switch (pt) {
  case P_ZERO: return 0;
  case P_ONE: return 1;
  case P_ODD: return 37;
  case P_BIG: return 16384;                       /* 64 KiB of int */
  case P_IRREG: return (sender * 7 + 3) % 5 * 13; /* includes zeros */
  default: return 11;
  }
}

/* One call: `sending` says which side this rank is on. */
static void one_call(MPI_Comm inter, int sending, int p, int me, enum pattern pt, alg a, int call,
                     const char *shape) {
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.inter = a.inter;
  opt.intra = a.intra;
  opt.label = "test";
  opt.timeout = 60;
  const int stride = 3; /* strided types take every third int */
  MPI_Datatype vec;
  MPI_Type_vector(1, 1, stride, MPI_INT, &vec);
  MPI_Datatype strided;
  MPI_Type_create_resized(vec, 0, stride * (MPI_Aint)sizeof(int), &strided);
  MPI_Type_commit(&strided);
  MPI_Type_free(&vec);
  int rc;
  if (sending) {
    const int n = count_of(pt, me);
    const int span = pt == P_STRIDED_SEND ? n * stride : n;
    int *buf = malloc(sizeof(int) * (size_t)(span ? span : 1));
    for (int i = 0; i < span; i++) buf[i] = SENTINEL;
    for (int i = 0; i < n; i++) buf[pt == P_STRIDED_SEND ? i * stride : i] = value(me, i, call);
    if (pt == P_IRREG)
      rc =
          cpl_inter_allgatherv(buf, n, MPI_INT, NULL, NULL, NULL, MPI_INT, CPL_SENDER, inter, &opt);
    else
      rc = cpl_inter_allgather(buf, n, pt == P_STRIDED_SEND ? strided : MPI_INT, NULL, 0, MPI_INT,
                               CPL_SENDER, inter, &opt);
    free(buf);
  } else {
    int *counts = malloc(sizeof(int) * 2 * (size_t)p), *displs = counts + p, total = 0;
    for (int i = 0; i < p; i++) {
      counts[i] = count_of(pt, i);
      displs[i] = total; /* blocks are one element apart: gaps must stay untouched */
      total += counts[i] + 1;
    }
    const int el = pt == P_STRIDED_RECV ? stride : 1;
    int *buf = malloc(sizeof(int) * (size_t)(total * el + 1));
    for (int i = 0; i < total * el + 1; i++) buf[i] = SENTINEL;
    if (pt == P_IRREG)
      rc = cpl_inter_allgatherv(NULL, 0, MPI_INT, buf, counts, displs, MPI_INT, CPL_RECEIVER, inter,
                                &opt);
    else if (pt == P_STRIDED_RECV || pt == P_STRIDED_SEND || pt == P_ZERO || pt == P_ONE ||
             pt == P_ODD || pt == P_BIG) {
      /* regular: contiguous blocks, no gaps */
      const int c = counts[0];
      for (int i = 0; i < p; i++) displs[i] = i * c;
      /* zero counts: no buffer at all, as MPI allows (the drop-in passes
       * NULL for the direction whose group sends nothing) */
      rc = cpl_inter_allgather(NULL, 0, MPI_INT, pt == P_ZERO ? NULL : buf, c,
                               pt == P_STRIDED_RECV ? strided : MPI_INT, CPL_RECEIVER, inter, &opt);
    } else rc = CPL_ERR_INTERNAL;
    if (rc == CPL_OK) {
      int bad = 0;
      for (int s = 0; s < p && !bad; s++)
        for (int i = 0; i < counts[s] && !bad; i++) {
          const int at = (displs[s] + i) * el;
          if (buf[at] != value(s, i, call)) {
            fprintf(stderr, "[%s] %s/%s %s call %d: block %d elem %d = %d, want %d\n", shape,
                    cpl_inter_algorithm_name(a.inter), cpl_intra_algorithm_name(a.intra),
                    pattern_name[pt], call, s, i, buf[at], value(s, i, call));
            bad = 1;
          }
        }
      /* everything that is not a received element must be untouched */
      char *mark = calloc((size_t)(total * el + 1), 1);
      for (int s = 0; s < p; s++)
        for (int i = 0; i < counts[s]; i++) mark[(displs[s] + i) * el] = 1;
      for (int i = 0; i < total * el + 1 && !bad; i++)
        if (!mark[i] && buf[i] != SENTINEL) {
          fprintf(stderr, "[%s] %s/%s %s: gap element %d overwritten (%d)\n", shape,
                  cpl_inter_algorithm_name(a.inter), cpl_intra_algorithm_name(a.intra),
                  pattern_name[pt], i, buf[i]);
          bad = 1;
        }
      free(mark);
      failures += bad;
    }
    free(buf);
    free(counts);
  }
  if (rc != CPL_OK) {
    fprintf(stderr, "[%s] %s/%s %s: %s: %s\n", shape, cpl_inter_algorithm_name(a.inter),
            cpl_intra_algorithm_name(a.intra), pattern_name[pt], cpl_strerror(rc),
            cpl_last_error());
    failures++;
  }
  MPI_Type_free(&strided);
}

static void run_shape(int p, int q, int wrank) {
  char shape[32];
  snprintf(shape, sizeof shape, "%d|%d", p, q);
  const int color = wrank < p ? 0 : wrank < p + q ? 1 : MPI_UNDEFINED;
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &local);
  if (color == MPI_UNDEFINED) return;
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? p : 0, 100 + p * 64 + q, &inter);
  int me;
  MPI_Comm_rank(local, &me);
  int call = 0;
  for (size_t k = 0; k < nalgs; k++)
    for (int pt = 0; pt < P_COUNT; pt++)
      for (int dir = 0; dir < 2; dir++) { /* A -> B, then B -> A */
        const int sending = (color == 0) == (dir == 0);
        const int senders = dir == 0 ? p : q;
        one_call(inter, sending, senders, me, (enum pattern)pt, algs[k], call++, shape);
      }
  /* the same intercommunicator many times in a row */
  for (int r = 0; r < 25; r++)
    one_call(inter, color == 0, p, me, P_ODD, algs[(size_t)r % nalgs], call++, shape);
  int lfail = failures, gfail = 0;
  MPI_Allreduce(&lfail, &gfail, 1, MPI_INT, MPI_SUM, local);
  if (me == 0 && color == 1)
    printf("inter %-5s %s (%d calls per rank)\n", shape, gfail ? "FAILED" : "ok", call);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wrank, wsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  list_algs();
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  for (int i = 1; i < argc; i++) {
    int p, q;
    if (sscanf(argv[i], "%d:%d", &p, &q) != 2 || p < 1 || q < 1 || p + q > wsize) {
      if (wrank == 0) fprintf(stderr, "bad shape %s for %d ranks\n", argv[i], wsize);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    run_shape(p, q, wrank);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (wrank == 0) printf("%s: %d failures\n", total ? "FAILED" : "PASSED", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
