/*
 * Hyperslab geometry and wire encoding, exhaustively on small shapes:
 * cpli_slab_copy against an element-by-element reference for every
 * (block, selection) pair, and cpli_tiling_check against a coverage count
 * for every set of up to three boxes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data/slab.h"
#include "data/wire.h"

/* Every box (start, count) of dims, count possibly zero, in order. */
typedef struct box {
  hsize_t s[3], c[3];
} box;

static int all_boxes(int rank, const hsize_t *dims, box *out) {
  int n = 0;
  hsize_t s[3] = {0}, c[3] = {0};
  for (;;) {
    int ok = 1;
    for (int d = 0; d < rank; d++) ok &= s[d] + c[d] <= dims[d];
    if (ok) {
      memcpy(out[n].s, s, sizeof s);
      memcpy(out[n].c, c, sizeof c);
      n++;
    }
    int d = rank - 1; /* odometer over (s, c) pairs per dimension */
    for (; d >= 0; d--) {
      if (++c[d] <= dims[d]) break;
      c[d] = 0;
      if (++s[d] <= dims[d]) break;
      s[d] = 0;
    }
    if (d < 0) return n;
  }
}

static unsigned long long volume(int rank, const hsize_t *c) {
  unsigned long long v = 1;
  for (int d = 0; d < rank; d++) v *= c[d];
  return v;
}

/* Global index of local element e of box b. */
static unsigned long long global(int rank, const hsize_t *dims, const box *b, unsigned long long e,
                                 hsize_t *coord) {
  for (int d = rank - 1; d >= 0; d--) {
    coord[d] = b->s[d] + e % b->c[d];
    e /= b->c[d];
  }
  unsigned long long g = 0;
  for (int d = 0; d < rank; d++) g = g * dims[d] + coord[d];
  return g;
}

static int inside(int rank, const box *b, const hsize_t *coord) {
  for (int d = 0; d < rank; d++)
    if (coord[d] < b->s[d] || coord[d] >= b->s[d] + b->c[d]) return 0;
  return 1;
}

static void test_copy(int rank, const hsize_t *dims) {
  static box boxes[20000];
  int nb = all_boxes(rank, dims, boxes);
  unsigned long long tot = volume(rank, dims);
  int *src = malloc(tot * sizeof *src), *dst = malloc(tot * sizeof *dst);
  long pairs = 0;
  for (int i = 0; i < nb; i++) {
    const box *b = &boxes[i];
    unsigned long long nbv = volume(rank, b->c);
    hsize_t co[3];
    for (unsigned long long e = 0; e < nbv; e++) src[e] = (int)global(rank, dims, b, e, co);
    for (int j = 0; j < nb; j++) {
      const box *s = &boxes[j];
      unsigned long long nsv = volume(rank, s->c);
      if (nsv == 0 || nbv == 0) continue;
      for (unsigned long long e = 0; e < nsv; e++) dst[e] = -1;
      cpli_slab_copy(rank, sizeof(int), b->s, b->c, src, s->s, s->c, dst);
      for (unsigned long long e = 0; e < nsv; e++) {
        int want = (int)global(rank, dims, s, e, co);
        if (!inside(rank, b, co)) want = -1;
        if (dst[e] != want) {
          CHECK(0,
                "rank %d: copy block %d into selection %d: element %llu "
                "is %d, want %d",
                rank, i, j, e, dst[e], want);
          break;
        }
      }
      pairs++;
    }
  }
  printf("slab copy, rank %d dims %llu..: %d boxes, %ld pairs checked\n", rank,
         (unsigned long long)dims[0], nb, pairs);
  free(src);
  free(dst);
}

/* Reference verdict: count how often each element is covered. */
static int tiles(int rank, const hsize_t *dims, int n, const box *set) {
  unsigned long long tot = volume(rank, dims);
  int cover[64] = {0};
  for (int k = 0; k < n; k++) {
    unsigned long long v = volume(rank, set[k].c);
    hsize_t co[3];
    for (unsigned long long e = 0; e < v; e++) cover[global(rank, dims, &set[k], e, co)]++;
  }
  for (unsigned long long g = 0; g < tot; g++)
    if (cover[g] != 1) return 0;
  return 1;
}

static void test_tiling(int rank, const hsize_t *dims, int maxn) {
  static box boxes[20000];
  int nb = all_boxes(rank, dims, boxes);
  long sets = 0, tilings = 0;
  int idx[3];
  for (int n = 1; n <= maxn; n++) {
    for (int k = 0; k < n; k++) idx[k] = 0;
    for (;;) {
      box set[3];
      hsize_t st[9], ct[9];
      for (int k = 0; k < n; k++) {
        set[k] = boxes[idx[k]];
        memcpy(st + k * rank, set[k].s, (size_t)rank * sizeof(hsize_t));
        memcpy(ct + k * rank, set[k].c, (size_t)rank * sizeof(hsize_t));
      }
      char msg[300];
      int got = cpli_tiling_check(rank, dims, n, st, ct, msg, sizeof msg);
      int want = tiles(rank, dims, n, set);
      CHECK(got == want, "rank %d, %d boxes: check says %d, reference %d (%s)", rank, n, got, want,
            got ? "" : msg);
      /* A gap names an element, and no box covers it. */
      const char *el = got ? NULL : strstr(msg, "(a gap)");
      if (el) {
        el = strstr(msg, "element [");
        hsize_t pt[3] = {0};
        int ok = el != NULL, covered = 0;
        for (int d = 0; ok && d < rank; d++) {
          unsigned long long v;
          ok = sscanf(el += (d ? 2 : 9), "%llu", &v) == 1;
          pt[d] = v;
          while (ok && *el >= '0' && *el <= '9') el++;
        }
        for (int k = 0; ok && k < n; k++) {
          int in = 1;
          for (int d = 0; d < rank; d++)
            in &= pt[d] >= set[k].s[d] && pt[d] < set[k].s[d] + set[k].c[d];
          covered |= in;
        }
        CHECK(ok && !covered, "rank %d, %d boxes: gap message names no uncovered element: %s", rank,
              n, msg);
      }
      sets++;
      tilings += want;
      int k = n - 1;
      while (k >= 0 && ++idx[k] == nb) idx[k--] = 0;
      if (k < 0) break;
    }
  }
  printf("tiling check, rank %d: %ld box sets, %ld tilings, verdicts agree\n", rank, sets, tilings);
}

static void test_messages(void) {
  hsize_t dims[2] = {4, 6};
  hsize_t st[4] = {0, 0, 1, 3}, ct[4] = {2, 6, 3, 3};
  char msg[300];
  CHECK(!cpli_tiling_check(2, dims, 2, st, ct, msg, sizeof msg) &&
            strstr(msg, "rank 0, [0:2, 0:6], and rank 1, [1:4, 3:6], overlap"),
        "overlap message: %s", msg);
  hsize_t st2[4] = {0, 0, 2, 0}, ct2[4] = {2, 6, 1, 6};
  CHECK(!cpli_tiling_check(2, dims, 2, st2, ct2, msg, sizeof msg) &&
            strstr(msg, "cover 18 of the 24 elements of the global array [4, 6] (a gap): "
                        "element [3, 0] is in no block; blocks: rank 0 [0:2, 0:6], "
                        "rank 1 [2:3, 0:6]"),
        "gap message: %s", msg);
  /* A hole inside: found among the block ends; an empty block says so. */
  hsize_t st4[8] = {0, 0, 0, 3, 2, 2, 0, 0}, ct4[8] = {4, 2, 2, 3, 2, 1, 0, 0};
  CHECK(!cpli_tiling_check(2, dims, 4, st4, ct4, msg, sizeof msg) &&
            strstr(msg, "element [0, 2] is in no block; blocks: rank 0 [0:4, 0:2], "
                        "rank 1 [0:2, 3:6], rank 2 [2:4, 2:3], rank 3 none"),
        "gap message: %s", msg);
  /* Many blocks: the list is cut to fit, saying how many are left out. */
  hsize_t dims1[1] = {100}, st5[40], ct5[40];
  for (int i = 0; i < 40; i++) st5[i] = (hsize_t)i * 2, ct5[i] = 2;
  CHECK(!cpli_tiling_check(1, dims1, 40, st5, ct5, msg, sizeof msg) &&
            strstr(msg, "element [80] is in no block") && strstr(msg, " more)") &&
            strlen(msg) < sizeof msg - 1,
        "long gap message: %s", msg);
  hsize_t st3[2] = {3, 0}, ct3[2] = {2, 6};
  CHECK(!cpli_tiling_check(2, dims, 1, st3, ct3, msg, sizeof msg) && strstr(msg, "lies outside"),
        "outside message: %s", msg);
  /* A box whose end is past 2^64 is said with its count: its end wrapped
   * around ("[18446744073709551615:1]" for start 2^64 - 1, count 2). */
  char b[80];
  hsize_t wst[2] = {(hsize_t)-1, 1}, wct[2] = {2, 3};
  CHECK(!strcmp(cpli_box_str(2, wst, wct, b, sizeof b), "[18446744073709551615:+2, 1:4]"),
        "box past 2^64: %s", b);
  hsize_t huge[2] = {1ull << 40, 1ull << 40};
  uint64_t v;
  CHECK(cpli_box_volume(2, huge, &v) == -1, "64-bit overflow detected");
}

static void test_wire(void) {
  cpli_wbuf w = {0};
  cpli_w_u32(&w, 7);
  cpli_w_str(&w, "temperature");
  cpli_w_u64(&w, 1ull << 40);
  cpli_rbuf r = cpli_r_init(w.p, w.len);
  CHECK(cpli_r_u32(&r) == 7 && !strcmp(cpli_r_str(&r), "temperature") &&
            cpli_r_u64(&r) == 1ull << 40 && !r.bad && r.pos == r.len,
        "round trip");
  for (size_t cut = 0; cut < w.len; cut++) { /* every truncation is caught */
    cpli_rbuf t = cpli_r_init(w.p, cut);
    cpli_r_u32(&t);
    cpli_r_str(&t);
    cpli_r_u64(&t);
    CHECK(t.bad, "truncated at %zu not detected", cut);
  }
  cpli_w_free(&w);
  printf("wire: round trip and every truncation checked\n");
}

int main(void) {
  hsize_t d1[1] = {7}, d2[2] = {4, 5}, d3[3] = {3, 2, 3};
  test_copy(1, d1);
  test_copy(2, d2);
  test_copy(3, d3);
  hsize_t t1[1] = {5}, t2[2] = {3, 3}, t3[3] = {2, 2, 2};
  test_tiling(1, t1, 3);
  test_tiling(2, t2, 3);
  test_tiling(3, t3, 2);
  test_messages();
  test_wire();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures != 0;
}
