/*
 * Blocks of 2 GiB and more: one block of 2^31 + 17 bytes (5-byte elements,
 * so counts fit int while bytes do not) through every algorithm, the data
 * checked at sampled positions and byte for byte around 2^31 and the ends.
 *
 *   test_big inter P:Q ALG...   inter-group allgatherv, sender 0 big, the
 *                               other senders small (ALG: fc ring root
 *                               native auto; native must refuse alike)
 *   test_big intra ALG...       intra-group allgatherv, rank 0 big
 *   test_big bcast              intra-group broadcast of the big block
 *   test_big dropin P:Q         MPI_Allgatherv through libcoupler_mpi
 *                               (build linked with coupler_mpi), intra on
 *                               world and inter on P|Q
 *
 * "native" named explicitly cannot move it (MPICH's own allgatherv); every
 * rank must then fail with CPL_ERR_UNSUPPORTED before any transfer, never
 * one side waiting for the other. Memory: about 2.2 GB per rank that holds
 * the big block, 4.3 GB with the sending copy.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coupler.h"

#define ESIZE 5
static const int BIG = 429496733; /* elements: 2147483665 bytes = 2^31 + 17 */
static const int SMALL = 1001;
#define PERIOD 4093 /* prime: a shifted block shows at once */

static int failures;
static unsigned char base[PERIOD + 4096];

/* Byte i of the block from source s. */
static unsigned char expect_byte(size_t i, int s) {
  return base[(i + (size_t)s * 977) % PERIOD] ^ (unsigned char)((i >> 12) ^ (i >> 20) ^ (i >> 28));
}

static void fill(unsigned char *b, size_t n, int s) {
  for (size_t i = 0; i < n; i += 4096) {
    const size_t len = n - i < 4096 ? n - i : 4096;
    memcpy(b + i, base + (i + (size_t)s * 977) % PERIOD, len);
    const unsigned char x = (unsigned char)((i >> 12) ^ (i >> 20) ^ (i >> 28));
    for (size_t j = 0; j < len; j++) b[i + j] ^= x;
  }
}

/* Every byte in [lo, hi) of the block. */
static size_t check_range(const unsigned char *b, size_t n, int s, size_t lo, size_t hi) {
  size_t bad = 0;
  for (size_t i = lo; i < hi && i < n; i++) bad += b[i] != expect_byte(i, s);
  return bad;
}

static void check(const char *what, const unsigned char *b, size_t n, int s) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i += 997) bad += b[i] != expect_byte(i, s);
  const size_t w = 65536, two31 = (size_t)1 << 31;
  bad += check_range(b, n, s, 0, w);
  if (n > two31) bad += check_range(b, n, s, two31 - w, two31 + w);
  bad += check_range(b, n, s, n > w ? n - w : 0, n);
  if (bad) {
    fprintf(stderr, "FAIL %s: block from %d (%zu bytes): %zu wrong bytes\n", what, s, n, bad);
    failures++;
  }
}

static size_t bytes_of(int rank) { return (size_t)(rank == 0 ? BIG : SMALL) * ESIZE; }

/* The same outcome on every rank of comm: all CPL_OK, or all want_rc. */
static void agree(const char *what, int rc, int want_rc, MPI_Comm comm) {
  int mine[2] = {rc, -rc}, all[2];
  MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, comm);
  int me;
  MPI_Comm_rank(comm, &me);
  if (all[0] != want_rc || -all[1] != want_rc) {
    if (me == 0 || rc != want_rc)
      fprintf(stderr, "FAIL %s: rank %d got %d (%s), want %d on every rank\n", what, me, rc,
              rc ? cpl_last_error() : "ok", want_rc);
    failures++;
  } else if (me == 0) {
    printf("ok   %-28s %s%s\n", what, want_rc ? "refused alike: " : "",
           want_rc ? cpl_last_error() : "");
    fflush(stdout);
  }
}

static MPI_Datatype elem(void) {
  MPI_Datatype t;
  MPI_Type_contiguous(ESIZE, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  return t;
}

/* Options running algorithm `name` (inter or intra); returns the status
 * every rank must get: CPL_ERR_UNSUPPORTED for native, else CPL_OK. */
static int options_for(const char *name, int inter, cpl_coll_options *opt) {
  cpl_coll_options_init(opt);
  opt->timeout = 600; /* not the point here: loaded machines are slow */
  if (!strcmp(name, "auto")) return CPL_OK;
  if ((inter ? cpl_inter_algorithm_parse(name, &opt->inter)
             : cpl_intra_algorithm_parse(name, &opt->intra)) != CPL_OK) {
    fprintf(stderr, "unknown algorithm %s\n", name);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (inter ? opt->inter != CPL_INTER_NATIVE : opt->intra != CPL_INTRA_NATIVE) return CPL_OK;
  opt->timeout = 60; /* a one-sided wait would end as a timeout, not a refusal */
  return CPL_ERR_UNSUPPORTED;
}

static void inter_case(int p, int q, int argc, char **argv, int dropin) {
  int wr;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  const int sender = wr < p;
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, sender, wr, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, sender ? p : 0, 11, &inter);
  int lr;
  MPI_Comm_rank(local, &lr);
  MPI_Datatype t = elem();
  int *counts = malloc(sizeof *counts * 2 * (size_t)(p > q ? p : q)), *displs = counts + p;
  for (int i = 0, at = 0; i < p; i++) {
    counts[i] = i == 0 ? BIG : SMALL;
    displs[i] = at; /* in elements: fits int */
    at += counts[i];
  }
  size_t total = 0;
  for (int i = 0; i < p; i++) total += bytes_of(i);
  unsigned char *own = NULL, *all = NULL;
  if (sender) {
    own = malloc(bytes_of(lr));
    fill(own, bytes_of(lr), lr);
  } else {
    all = malloc(total);
  }
  for (int a = 0; a < argc; a++) {
    char what[64];
    snprintf(what, sizeof what, "%s %d|%d %s", dropin ? "dropin inter" : "inter", p, q, argv[a]);
    cpl_coll_options opt;
    const int want = options_for(argv[a], 1, &opt);
    if (all && !want) memset(all, 0, total);
    int rc;
    if (dropin) {
      /* Both directions at once; the receivers contribute nothing. */
      int zero[64] = {0};
      rc = MPI_Allgatherv(sender ? own : NULL, sender ? counts[lr] : 0, t, sender ? NULL : all,
                          sender ? zero : counts, sender ? zero : displs, t, inter);
      rc = rc == MPI_SUCCESS ? CPL_OK : CPL_ERR_MPI;
    } else if (sender) {
      rc = cpl_inter_allgatherv(own, counts[lr], t, NULL, NULL, NULL, t, CPL_SENDER, inter, &opt);
    } else {
      rc = cpl_inter_allgatherv(NULL, 0, t, all, counts, displs, t, CPL_RECEIVER, inter, &opt);
    }
    agree(what, rc, want, MPI_COMM_WORLD);
    if (rc == CPL_OK && !sender)
      for (int i = 0, at = 0; i < p; i++) {
        check(what, all + (size_t)at * ESIZE, bytes_of(i), i);
        at += counts[i];
      }
    if (dropin) break;
  }
  free(own);
  free(all);
  free(counts);
  MPI_Type_free(&t);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

static void intra_case(int argc, char **argv, int dropin) {
  int p, r;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Datatype t = elem();
  int *counts = malloc(sizeof *counts * 2 * (size_t)p), *displs = counts + p;
  size_t total = 0;
  for (int i = 0, at = 0; i < p; i++) {
    counts[i] = i == 0 ? BIG : SMALL;
    displs[i] = at;
    at += counts[i];
    total += bytes_of(i);
  }
  unsigned char *all = malloc(total);
  for (int a = 0; a < argc; a++) {
    char what[64];
    snprintf(what, sizeof what, "%s %s", dropin ? "dropin intra" : "intra", argv[a]);
    cpl_coll_options opt;
    const int want = options_for(argv[a], 0, &opt);
    memset(all, 0, total);
    fill(all + (size_t)displs[r] * ESIZE, bytes_of(r), r);
    int rc = dropin ? (MPI_Allgatherv(MPI_IN_PLACE, 0, t, all, counts, displs, t, MPI_COMM_WORLD) ==
                               MPI_SUCCESS
                           ? CPL_OK
                           : CPL_ERR_MPI)
                    : cpl_intra_allgatherv(MPI_IN_PLACE, 0, t, all, counts, displs, t,
                                           MPI_COMM_WORLD, &opt);
    agree(what, rc, want, MPI_COMM_WORLD);
    if (rc == CPL_OK)
      for (int i = 0; i < p; i++) check(what, all + (size_t)displs[i] * ESIZE, bytes_of(i), i);
    if (dropin) break;
  }
  free(all);
  free(counts);
  MPI_Type_free(&t);
}

static void bcast_case(void) {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Datatype t = elem();
  const size_t n = bytes_of(0);
  unsigned char *b = malloc(n);
  if (r == 0) fill(b, n, 7);
  else memset(b, 0, n);
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = 600;
  int rc = cpl_intra_bcast(b, BIG, t, 0, MPI_COMM_WORLD, &opt);
  agree("bcast", rc, 0, MPI_COMM_WORLD);
  if (rc == CPL_OK) check("bcast", b, n, 7);
  free(b);
  MPI_Type_free(&t);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  for (size_t i = 0; i < sizeof base; i++) base[i] = (unsigned char)(i * 2654435761u >> 13);
  for (size_t i = PERIOD; i < sizeof base; i++) base[i] = base[i - PERIOD];
  int wsize, p = 0, q = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  const char *mode = argc > 1 ? argv[1] : "";
  const int dropin = !strcmp(mode, "dropin");
  if (!strcmp(mode, "inter") || dropin) {
    if (argc < 3 || sscanf(argv[2], "%d:%d", &p, &q) != 2 || p < 1 || q < 1 || p + q != wsize ||
        p > 64) {
      fprintf(stderr, "usage: test_big inter|dropin P:Q [ALG...] with P+Q ranks\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (dropin) {
    char *none[] = {"auto"};
    intra_case(1, none, 1);
    inter_case(p, q, 1, none, 1);
  } else if (!strcmp(mode, "inter")) {
    inter_case(p, q, argc - 3, argv + 3, 0);
  } else if (!strcmp(mode, "intra")) {
    intra_case(argc - 2, argv + 2, 0);
  } else if (!strcmp(mode, "bcast")) {
    bcast_case();
  } else {
    fprintf(stderr, "usage: test_big inter|intra|bcast|dropin ...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int all;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 1 : 0;
}
