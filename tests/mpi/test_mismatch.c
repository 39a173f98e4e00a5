/*
 * Ranks that disagree on a block's size (erroneous in MPI): the calls fail,
 * never pass with stale elements, and the job survives them.
 *
 * usage: test_mismatch long|short P   (P senders for the inter cases, the
 *                                      other ranks receive; 1 <= P < size)
 * long: intra (all ranks), the last rank believes rank 0's block 3
 *   elements shorter than rank 0 sends, with blocks of 200 KiB and more
 *   (taken straight from the sender's memory); under circulant, bruck and
 *   ring that rank must return an error, and every rank unmaps its buffers
 *   at once. The other ranks but rank 0 call late, so the failed rank's
 *   sends to them are still waiting when it returns: taking them from
 *   freed memory, UCX aborted the peer, the job with it.
 * short: inter, sender 0 passes 3 elements fewer than the others and than
 *   the receivers' recvcount, under every algorithm that moves the blocks
 *   itself (native is MPICH's, which does not look) and fc's lockstep
 *   executor (CPL_FLOW=0); every receiver must return an error naming its
 *   peers by role ("sender 0", "receiver 1"; "rank 4" was receiver 2, a
 *   rank of the link's merged communicator). Intra, the
 *   last rank believes rank 0's block 3 elements longer than rank 0 sends,
 *   under circulant, bruck and ring, blocks small enough to be gathered in
 *   the relative order and large enough for the dataflow plans; that rank
 *   must return an error.
 * Each case runs on a fresh communicator (a failed one keeps its call's
 * messages), with a 1 s timeout for the ranks the failed ones leave
 * waiting.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "coupler.h"

static int failures;

static int value(int rank, int i) { return rank * 100003 + i; }

/* Buffers of their own pages: once freed, reading them faults (malloc's
 * memory may stay mapped, and a read of it would pass unseen). */
static void *map(size_t bytes) {
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    perror("mmap");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return m;
}

/* Intra: the last rank's count of rank 0's block is c + delta. */
static void intra_case(int r, int n, const char *alg, int c, int delta) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  cpl_coll_options o;
  cpl_coll_options_init(&o);
  cpl_intra_algorithm_parse(alg, &o.intra);
  o.timeout = 1;
  int *cnt = malloc(sizeof(int) * 2 * (size_t)n), *dsp = cnt + n;
  for (int i = 0; i < n; i++) cnt[i] = c, dsp[i] = i * (c + 5);
  if (r == n - 1) cnt[0] = c + delta;
  const size_t sbytes = sizeof(int) * (size_t)c, bbytes = sizeof(int) * (size_t)(n * (c + 5));
  int *s = map(sbytes), *b = map(bbytes);
  for (int i = 0; i < c; i++) s[i] = value(r, i);
  for (int i = 0; i < n * (c + 5); i++) b[i] = -1;
  /* The ranks between come late: the failed rank's sends are still
   * waiting for them when it returns (and frees its buffers). */
  const struct timespec late = {0, 300 * 1000 * 1000};
  if (delta < 0 && r > 0 && r < n - 1) nanosleep(&late, NULL);
  const int rc = cpl_intra_allgatherv(s, c, MPI_INT, b, cnt, dsp, MPI_INT, comm, &o);
  munmap(s, sbytes); /* at once, as a program that gives up on the call would */
  munmap(b, bbytes);
  free(cnt);
  if (r == n - 1) {
    if (rc == CPL_OK) {
      fprintf(stderr, "FAIL intra %s, %d ints: rank %d returned success for a block of %d\n", alg,
              c, r, c + delta);
      failures++;
    } else {
      printf("ok   intra %s, %d ints, rank %d: %s\n", alg, c, r, cpl_last_error());
    }
  }
}

static void inter_case(MPI_Comm inter0, int sender, int me, int p, const char *alg, int flow) {
  setenv("CPL_FLOW", flow ? "1" : "0", 1);
  MPI_Comm inter;
  MPI_Comm_dup(inter0, &inter);
  cpl_coll_options o;
  cpl_coll_options_init(&o);
  cpl_inter_algorithm_parse(alg, &o.inter);
  o.timeout = 1;
  o.label = "short";
  const int c = 40;
  if (sender) {
    int *b = malloc(sizeof(int) * c);
    for (int i = 0; i < c; i++) b[i] = value(me, i);
    cpl_inter_allgather(b, me == 0 ? c - 3 : c, MPI_INT, NULL, 0, MPI_INT, CPL_SENDER, inter, &o);
    free(b);
  } else {
    int *b = malloc(sizeof(int) * (size_t)(c * p));
    for (int i = 0; i < c * p; i++) b[i] = -1;
    const int rc = cpl_inter_allgather(NULL, 0, MPI_INT, b, c, MPI_INT, CPL_RECEIVER, inter, &o);
    int wrong = 0;
    for (int s = 0; s < p; s++)
      for (int i = 0; i < c; i++) wrong += b[s * c + i] != value(s, i);
    if (rc == CPL_OK) {
      fprintf(stderr, "FAIL inter %s%s: receiver %d returned success, %d elements wrong\n", alg,
              flow ? "" : " (CPL_FLOW=0)", me, wrong);
      failures++;
    } else if (strstr(cpl_last_error(), " rank ")) {
      /* ranks of the link's merged communicator: receiver 0 is "rank 2" */
      fprintf(stderr, "FAIL inter %s%s: receiver %d names a peer by rank: %s\n", alg,
              flow ? "" : " (CPL_FLOW=0)", me, cpl_last_error());
      failures++;
    } else {
      printf("ok   inter %s%s, receiver %d: %s\n", alg, flow ? "" : " (CPL_FLOW=0)", me,
             cpl_last_error());
    }
    free(b);
  }
  unsetenv("CPL_FLOW");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wrank, wsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  const int p = argc > 2 ? atoi(argv[2]) : 0;
  const int longer = argc > 1 && !strcmp(argv[1], "long");
  if ((!longer && (argc < 2 || strcmp(argv[1], "short"))) || p < 1 || p >= wsize) {
    if (wrank == 0) fprintf(stderr, "usage: test_mismatch long|short P (1 <= P < size)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  static const char *const intra_algs[] = {"circulant", "bruck", "ring"};
  const size_t nintra = sizeof intra_algs / sizeof *intra_algs;
  if (longer) {
    for (size_t k = 0; k < nintra; k++)
      for (int c = 50000; c <= 300000; c += 250000) {
        intra_case(wrank, wsize, intra_algs[k], c, -3);
        MPI_Barrier(MPI_COMM_WORLD);
      }
  } else {
    const int sender = wrank < p;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, sender, wrank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, sender ? p : 0, 11, &inter);
    int me;
    MPI_Comm_rank(local, &me);
    static const char *const inter_algs[] = {"fc",          "ring",    "root",
                                             "direct-ring", "two-hop", "chains"};
    for (size_t k = 0; k < sizeof inter_algs / sizeof *inter_algs; k++) {
      inter_case(inter, sender, me, p, inter_algs[k], 1);
      MPI_Barrier(MPI_COMM_WORLD);
    }
    inter_case(inter, sender, me, p, "fc", 0);
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t k = 0; k < nintra; k++)
      for (int c = 40; c <= 20000; c += 19960) {
        intra_case(wrank, wsize, intra_algs[k], c, 3);
        MPI_Barrier(MPI_COMM_WORLD);
      }
  }
  int total;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (wrank == 0) printf("%s: %d failures\n", total ? "FAILED" : "PASSED", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
