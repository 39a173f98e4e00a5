/*
 * Ranks that disagree on a block's size (erroneous in MPI): the calls fail,
 * and the job survives them.
 *
 * usage: test_mismatch long
 * long: intra (all ranks), the last rank believes rank 0's block 3
 *   elements shorter than rank 0 sends, with blocks of 200 KiB and more
 *   (taken straight from the sender's memory); under circulant, bruck and
 *   ring that rank must return an error, and every rank unmaps its buffers
 *   at once. The other ranks but rank 0 call late, so the failed rank's
 *   sends to them are still waiting when it returns: taking them from
 *   freed memory, UCX aborted the peer, the job with it.
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

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wrank, wsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  if (argc < 2 || strcmp(argv[1], "long")) {
    if (wrank == 0) fprintf(stderr, "usage: test_mismatch long\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  static const char *const intra_algs[] = {"circulant", "bruck", "ring"};
  const size_t nintra = sizeof intra_algs / sizeof *intra_algs;
  for (size_t k = 0; k < nintra; k++)
    for (int c = 50000; c <= 300000; c += 250000) {
      intra_case(wrank, wsize, intra_algs[k], c, -3);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  int total;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (wrank == 0) printf("%s: %d failures\n", total ? "FAILED" : "PASSED", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
