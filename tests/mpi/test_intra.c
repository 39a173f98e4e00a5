/*
 * Public intra-group API, byte-exact against MPI's own results: every
 * algorithm (circulant, bruck, ring, native, root, auto) for allgather and
 * allgatherv, in place and not, contiguous and strided types, counts 0, 1,
 * odd, 64 KiB and irregular with zeros; and the circulant broadcast from
 * every root with a strided type, and at MPI_BOTTOM. Run with any number
 * of ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coupler.h"

static int failures;

static int val(int r, int i, int c) { return r * 7919 + i * 13 + c; }

static void report(int rc, const char *what, const char *alg) {
  if (rc != CPL_OK) {
    fprintf(stderr, "FAIL %s/%s: %s: %s\n", what, alg, cpl_strerror(rc), cpl_last_error());
    failures++;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Datatype vec, strided; /* every second int */
  MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
  MPI_Type_create_resized(vec, 0, 2 * sizeof(int), &strided);
  MPI_Type_commit(&strided);
  MPI_Type_free(&vec);
  /* every row of the intra-group table, auto included (the enum lists them) */
  cpl_intra_algorithm algs[CPL_INTRA_COUNT];
  for (int a = 0; a < CPL_INTRA_COUNT; a++) algs[a] = (cpl_intra_algorithm)a;
  const int sizes[] = {0, 1, 37, 16384, -1 /* irregular */};
  int call = 0;
  for (size_t a = 0; a < sizeof algs / sizeof *algs; a++)
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
      for (int mode = 0; mode < 3; mode++, call++) { /* 0 plain, 1 in place, 2 strided recv */
        cpl_coll_options opt;
        cpl_coll_options_init(&opt);
        opt.intra = algs[a];
        int *counts = malloc(sizeof(int) * 2 * (size_t)p), *displs = counts + p, total = 0;
        for (int i = 0; i < p; i++) {
          counts[i] = sizes[z] >= 0 ? sizes[z] : (i * 5 + 2) % 4 * 9;
          displs[i] = total;
          total += counts[i] + 2; /* gaps stay untouched */
        }
        const int el = mode == 2 ? 2 : 1;
        int *rbuf = malloc(sizeof(int) * (size_t)(total * el + 1));
        int *want = malloc(sizeof(int) * (size_t)(total * el + 1));
        for (int i = 0; i < total * el + 1; i++) rbuf[i] = want[i] = -1;
        for (int s = 0; s < p; s++)
          for (int i = 0; i < counts[s]; i++) want[(displs[s] + i) * el] = val(s, i, call);
        int *sbuf = malloc(sizeof(int) * (size_t)(counts[r] + 1));
        for (int i = 0; i < counts[r]; i++) sbuf[i] = val(r, i, call);
        const MPI_Datatype rt = mode == 2 ? strided : MPI_INT;
        int rc;
        if (mode == 1) {
          for (int i = 0; i < counts[r]; i++) rbuf[displs[r] + i] = val(r, i, call);
          rc = cpl_intra_allgatherv(MPI_IN_PLACE, 0, MPI_INT, rbuf, counts, displs, rt, comm, &opt);
        } else {
          rc = cpl_intra_allgatherv(sbuf, counts[r], MPI_INT, rbuf, counts, displs, rt, comm, &opt);
        }
        report(rc, "allgatherv", cpl_intra_algorithm_name(algs[a]));
        if (rc == CPL_OK && memcmp(rbuf, want, sizeof(int) * (size_t)(total * el + 1)) != 0) {
          fprintf(stderr, "FAIL allgatherv/%s size %d mode %d: wrong data\n",
                  cpl_intra_algorithm_name(algs[a]), sizes[z], mode);
          failures++;
        }
        if (sizes[z] >= 0 && mode == 0) { /* regular allgather as well */
          int *g = malloc(sizeof(int) * (size_t)(p * sizes[z] + 1));
          rc = cpl_intra_allgather(sbuf, sizes[z], MPI_INT, g, sizes[z], MPI_INT, comm, &opt);
          report(rc, "allgather", cpl_intra_algorithm_name(algs[a]));
          for (int s = 0; rc == CPL_OK && s < p; s++)
            for (int i = 0; i < sizes[z]; i++)
              if (g[s * sizes[z] + i] != val(s, i, call)) {
                fprintf(stderr, "FAIL allgather/%s size %d: block %d elem %d\n",
                        cpl_intra_algorithm_name(algs[a]), sizes[z], s, i);
                failures++;
                s = p;
                break;
              }
          free(g);
        }
        free(sbuf);
        free(rbuf);
        free(want);
        free(counts);
      }
  /* broadcast: every root, contiguous and strided, sizes 0..large */
  const int bsizes[] = {0, 1, 1000, 100003};
  for (int root = 0; root < p; root++)
    for (size_t z = 0; z < sizeof bsizes / sizeof *bsizes; z++)
      for (int st = 0; st < 2; st++) {
        const int n = bsizes[z], el = st ? 2 : 1;
        int *b = malloc(sizeof(int) * (size_t)(n * el + 1));
        for (int i = 0; i < n * el + 1; i++)
          b[i] = r == root && i % el == 0 && i < n * el ? val(root, i, 3) : -1;
        int rc = cpl_intra_bcast(b, n, st ? strided : MPI_INT, root, comm, NULL);
        report(rc, "bcast", "circulant");
        for (int i = 0; rc == CPL_OK && i < n * el + 1; i++) {
          const int w = i % el == 0 && i < n * el ? val(root, i, 3) : -1;
          if (b[i] != w) {
            fprintf(stderr, "FAIL bcast root %d size %d strided %d: element %d\n", root, n, st, i);
            failures++;
            break;
          }
        }
        free(b);
      }
  /* A type whose map is not its memory order, with size = extent = true
   * extent: indexed {1, 0} sends the second int first. Moved as raw bytes
   * it arrived unswapped (compared with MPI's own allgather and bcast). */
  MPI_Datatype swapped;
  MPI_Type_indexed(2, (int[]){1, 1}, (int[]){1, 0}, MPI_INT, &swapped);
  MPI_Type_commit(&swapped);
  int mine[2] = {val(r, 0, 4), val(r, 1, 4)}, *got = malloc(sizeof(int) * 2 * (size_t)p),
      *ref = malloc(sizeof(int) * 2 * (size_t)p);
  for (int side = 0; side < 2; side++) { /* the send type, then the receive type */
    const MPI_Datatype st = side ? MPI_INT : swapped, rt = side ? swapped : MPI_INT;
    const int sc = side ? 2 : 1, rcount = side ? 1 : 2;
    MPI_Allgather(mine, sc, st, ref, rcount, rt, comm);
    int rc = cpl_intra_allgather(mine, sc, st, got, rcount, rt, comm, NULL);
    report(rc, "allgather of a swapped type", "auto");
    if (rc == CPL_OK && memcmp(got, ref, sizeof(int) * 2 * (size_t)p) != 0) {
      fprintf(stderr, "FAIL allgather with a swapped %s type: wrong order\n",
              side ? "receive" : "send");
      failures++;
    }
  }
  int b2[2] = {val(0, 0, 5), val(0, 1, 5)}, bref[2] = {b2[0], b2[1]};
  if (r != 0) b2[0] = b2[1] = bref[0] = bref[1] = -1;
  MPI_Bcast(bref, 1, swapped, 0, comm);
  int rc = cpl_intra_bcast(b2, 1, swapped, 0, comm, NULL);
  report(rc, "bcast of a swapped type", "circulant");
  if (rc == CPL_OK && (b2[0] != bref[0] || b2[1] != bref[1])) {
    fprintf(stderr, "FAIL bcast with a swapped type: %d %d, MPI %d %d\n", b2[0], b2[1], bref[0],
            bref[1]);
    failures++;
  }
  /* MPI_BOTTOM with a type of absolute addresses, as MPI_Bcast takes it
   * (the broadcast refused it: "buffer is NULL with count 1"). */
  int abs_data[3];
  for (int i = 0; i < 3; i++) abs_data[i] = r == 0 ? val(0, i, 6) : -1;
  MPI_Aint abs_at;
  MPI_Get_address(abs_data, &abs_at);
  MPI_Datatype absolute;
  MPI_Type_create_hindexed(1, (int[]){3}, &abs_at, MPI_INT, &absolute);
  MPI_Type_commit(&absolute);
  rc = cpl_intra_bcast(MPI_BOTTOM, 1, absolute, 0, comm, NULL);
  report(rc, "bcast at MPI_BOTTOM", "circulant");
  for (int i = 0; rc == CPL_OK && i < 3; i++)
    if (abs_data[i] != val(0, i, 6)) {
      fprintf(stderr, "FAIL bcast at MPI_BOTTOM: element %d is %d\n", i, abs_data[i]);
      failures++;
      break;
    }
  MPI_Type_free(&absolute);
  free(got);
  free(ref);
  MPI_Type_free(&swapped);
  MPI_Type_free(&strided);
  MPI_Comm_free(&comm);
  int total;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (r == 0) printf("intra %d ranks: %s: %d failures\n", p, total ? "FAILED" : "PASSED", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
