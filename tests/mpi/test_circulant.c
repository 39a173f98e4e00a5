/*
 * Circulant algorithms over MPI, called directly on a dup of
 * MPI_COMM_WORLD: allgatherv (Alg. 7 as a dataflow plan and in lockstep,
 * the pipelined ring,
 * Alg. 9 with several block counts, and
 * the model's choice) on regular, irregular-with-zeros, all-zero,
 * single-big-block, 64 KiB and scattered/reversed layouts; the n-block
 * broadcast (Alg. 6) from every root with several sizes and block counts.
 * Every byte is checked, including the gaps between blocks, which must not
 * be written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/intra_circulant.h"

static int rank, size, cases, failed;

static unsigned char pat(int j, size_t i, int salt) {
  return (unsigned char)(j * 131 + (int)(i * 7) + salt * 17 + 1);
}

/* Layouts: 0 contiguous in rank order, 1 gaps of 3 bytes, 2 reversed order
 * with gaps. Returns the buffer size. */
static size_t layout(const size_t *counts, size_t *displs, int kind) {
  size_t off = 0;
  for (int i = 0; i < size; i++) {
    const int j = kind == 2 ? size - 1 - i : i;
    displs[j] = off;
    off += counts[j] + (kind ? 3 : 0);
  }
  return off + 1;
}

static void report(int bad, const char *what) {
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  cases++;
  if (any) {
    failed++;
    if (rank == 0) printf("FAIL %s\n", what);
  }
}

static int run_allgatherv(MPI_Comm comm, const size_t *counts, int kind, int variant, long long n,
                          const char *name) {
  size_t *displs = malloc(sizeof *displs * size);
  const size_t total = layout(counts, displs, kind);
  unsigned char *buf = malloc(total);
  const int salt = variant + (int)n;
  memset(buf, 0xEE, total);
  for (size_t i = 0; i < counts[rank]; i++) buf[displs[rank] + i] = pat(rank, i, salt);
  cpli_ctx ctx = {.timeout = 20.0, .label = "test", .step = -1, .alg = "circulant"};
  cpli_intra_args a = {comm, {(char *)buf, counts, displs}, &ctx, NULL};
  int rc = cpli_intra_circulant_v(&a, variant, n);
  int bad = 0;
  if (rc != CPL_OK) {
    fprintf(stderr, "rank %d: %s: rc=%d %s\n", rank, name, rc, cpl_last_error());
    bad = 1;
  }
  /* every block in place, every gap untouched */
  unsigned char *want = malloc(total);
  memset(want, 0xEE, total);
  for (int j = 0; j < size; j++)
    for (size_t i = 0; i < counts[j]; i++) want[displs[j] + i] = pat(j, i, salt);
  for (size_t i = 0; i < total && !bad; i++)
    if (buf[i] != want[i]) {
      fprintf(stderr, "rank %d: %s: byte %zu is %d, expected %d\n", rank, name, i, buf[i], want[i]);
      bad = 1;
    }
  free(want);
  free(buf);
  free(displs);
  char what[160];
  snprintf(what, sizeof what, "allgatherv %s layout %d variant %d n %lld (p=%d)", name, kind,
           variant, n, size);
  report(bad, what);
  return bad;
}

static void test_allgatherv(MPI_Comm comm) {
  size_t *counts = malloc(sizeof *counts * size);
  struct {
    const char *name;
    int kinds;
  } shapes[] = {{"regular", 3},    {"irregular+zeros", 3}, {"all-zero", 1},
                {"single-big", 2}, {"64KiB", 1},           {"one-byte-some", 3}};
  const struct {
    int variant;
    long long n;
  } vs[] = {{CPLI_CIRC_AUTO, 0}, {CPLI_CIRC_ALG7, 0}, {CPLI_CIRC_ALG7_STEP, 0},
            {CPLI_CIRC_RING, 0}, {CPLI_CIRC_ALG9, 1}, {CPLI_CIRC_ALG9, 2},
            {CPLI_CIRC_ALG9, 3}, {CPLI_CIRC_ALG9, 7}, {CPLI_CIRC_ALG9, 40}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    for (int j = 0; j < size; j++) {
      switch (s) {
      case 0: counts[j] = 5; break;
      case 1: counts[j] = j % 3 == 0 ? 0 : (size_t)(j * 37 % 11 + 1); break;
      case 2: counts[j] = 0; break;
      case 3: counts[j] = j == size / 2 ? 100003 : 0; break;
      case 4: counts[j] = 65536; break;
      default: counts[j] = j % 2; break;
      }
    }
    for (int kind = 0; kind < shapes[s].kinds; kind++)
      for (size_t v = 0; v < sizeof vs / sizeof *vs; v++) {
        /* keep the oversubscribed runs short: many-round variants on a few shapes */
        if ((s == 4 || kind > 0) && vs[v].n > 3) continue;
        run_allgatherv(comm, counts, kind, vs[v].variant, vs[v].n, shapes[s].name);
      }
  }
  free(counts);
}

static void test_bcast(MPI_Comm comm) {
  const size_t sizes[] = {1, 7, 1000, 65539, 300001};
  const int nbs[] = {0, 1, 2, 5, 64};
  unsigned char *buf = malloc(300001);
  for (int root = 0; root < size; root++)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
      for (size_t b = 0; b < sizeof nbs / sizeof *nbs; b++) {
        const size_t m = sizes[s];
        /* all shapes from the first and last root, a sample from the others
         * (oversubscribed runs pay milliseconds per round) */
        if (root != 0 && root != size - 1 && (s == 0 || s == 4 || b == 2 || b == 4)) continue;
        if (m > 70000 && nbs[b] == 64 && size > 3) continue;
        const int salt = root + (int)b;
        for (size_t i = 0; i < m; i++) buf[i] = rank == root ? pat(root, i, salt) : 0xEE;
        cpli_ctx ctx = {.timeout = 20.0, .label = "test", .step = -1, .alg = "circulant-bcast"};
        int rc = cpli_bcast_circulant(comm, buf, m, root, nbs[b], &ctx);
        int bad = rc != CPL_OK;
        if (bad) fprintf(stderr, "rank %d: bcast rc=%d %s\n", rank, rc, cpl_last_error());
        for (size_t i = 0; i < m && !bad; i++)
          if (buf[i] != pat(root, i, salt)) {
            fprintf(stderr, "rank %d: bcast root %d m %zu n %d: byte %zu wrong\n", rank, root, m,
                    nbs[b], i);
            bad = 1;
          }
        char what[128];
        snprintf(what, sizeof what, "bcast root %d bytes %zu nblocks %d (p=%d)", root, m, nbs[b],
                 size);
        report(bad, what);
      }
  /* bad arguments are refused, on every rank alike */
  cpli_ctx ctx = {.timeout = 20.0, .label = "test", .step = -1, .alg = "circulant-bcast"};
  int rc = cpli_bcast_circulant(comm, buf, 10, size, 0, &ctx);
  report(rc != CPL_ERR_ARG || !strstr(cpl_last_error(), "root"), "bcast bad root refused");
  free(buf);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  double t0 = MPI_Wtime();
  test_allgatherv(comm);
  test_bcast(comm);
  if (rank == 0) {
    long long n;
    int v = cpli_circulant_plan(size, (size_t)size << 20, 1 << 20, 5e-6, 1e-10, &n);
    printf("circulant mpi: p=%d: %d cases, %d failed (%.2f s); model for 1 MiB "
           "blocks: Alg. %d n=%lld\n",
           size, cases, failed, MPI_Wtime() - t0, v, n);
  }
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return failed ? 1 : 0;
}
