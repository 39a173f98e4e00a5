#include "data/slab.h"

#include "coupler.h" /* CPL_MAX_RANK */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpli_box_volume(int rank, const hsize_t *count, uint64_t *out) {
  uint64_t v = 1;
  for (int d = 0; d < rank; d++) {
    if (count[d] == 0) {
      *out = 0;
      return 0;
    }
  }
  for (int d = 0; d < rank; d++) {
    if (count[d] > UINT64_MAX / v) return -1;
    v *= count[d];
  }
  *out = v;
  return 0;
}

int cpli_box_inside(int rank, const hsize_t *dims, const hsize_t *start, const hsize_t *count) {
  for (int d = 0; d < rank; d++)
    if (start[d] > dims[d] || count[d] > dims[d] - start[d]) return 0;
  return 1;
}

int cpli_box_overlap(int rank, const hsize_t *s1, const hsize_t *c1, const hsize_t *s2,
                     const hsize_t *c2) {
  for (int d = 0; d < rank; d++) {
    if (c1[d] == 0 || c2[d] == 0) return 0;
    if (s1[d] + c1[d] <= s2[d] || s2[d] + c2[d] <= s1[d]) return 0;
  }
  return 1;
}

void cpli_slab_copy(int rank, size_t esize, const hsize_t *bstart, const hsize_t *bcount,
                    const void *src, const hsize_t *sstart, const hsize_t *scount, void *dst) {
  if (rank < 1 || rank > H5S_MAX_RANK) return;
  hsize_t lo[H5S_MAX_RANK] = {0}, n[H5S_MAX_RANK] = {0}, idx[H5S_MAX_RANK];
  size_t bstride[H5S_MAX_RANK], sstride[H5S_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    hsize_t a = bstart[d] > sstart[d] ? bstart[d] : sstart[d];
    hsize_t be = bstart[d] + bcount[d], se = sstart[d] + scount[d];
    hsize_t b = be < se ? be : se;
    if (b <= a) return; /* no intersection */
    lo[d] = a;
    n[d] = b - a;
  }
  /* Element strides of each dimension in block and selection. */
  size_t bs = 1, ss = 1;
  for (int d = rank - 1; d >= 0; d--) {
    bstride[d] = bs;
    sstride[d] = ss;
    bs *= bcount[d];
    ss *= scount[d];
  }
  /* Trailing dimensions covered whole in both boxes merge into one run. */
  int k = rank - 1;
  size_t run = n[k];
  while (k > 0 && n[k] == bcount[k] && n[k] == scount[k]) {
    k--;
    run *= n[k];
  }
  const char *s = src;
  char *t = dst;
  size_t runbytes = run * esize;
  for (int d = 0; d < k; d++) idx[d] = lo[d];
  for (;;) {
    size_t so = (lo[k] - bstart[k]) * bstride[k];
    size_t to = (lo[k] - sstart[k]) * sstride[k];
    for (int d = 0; d < k; d++) {
      so += (idx[d] - bstart[d]) * bstride[d];
      to += (idx[d] - sstart[d]) * sstride[d];
    }
    memcpy(t + to * esize, s + so * esize, runbytes);
    int d = k - 1;
    while (d >= 0 && ++idx[d] == lo[d] + n[d]) {
      idx[d] = lo[d];
      d--;
    }
    if (d < 0) break;
  }
}

const char *cpli_box_str(int rank, const hsize_t *start, const hsize_t *count, char *buf,
                         size_t n) {
  size_t o = 0;
  o += (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < rank && o < n; d++) {
    /* An end past 2^64 would wrap around: say the count instead. */
    const int wraps = count[d] > (hsize_t)-1 - start[d];
    o += (size_t)snprintf(buf + o, n - o, wraps ? "%s%llu:+%llu" : "%s%llu:%llu", d ? ", " : "",
                          (unsigned long long)start[d],
                          (unsigned long long)(wraps ? count[d] : start[d] + count[d]));
  }
  if (o < n) snprintf(buf + o, n - o, "]");
  return buf;
}

const char *cpli_dims_str(int rank, const hsize_t *dims, char *buf, size_t n) {
  size_t o = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < rank && o < n; d++)
    o += (size_t)snprintf(buf + o, n - o, "%s%llu", d ? ", " : "", (unsigned long long)dims[d]);
  if (o < n) snprintf(buf + o, n - o, "]");
  return buf;
}

typedef struct by_start {
  hsize_t s0;
  int b;
} by_start;

static int cmp_start(const void *a, const void *b) {
  const by_start *x = a, *y = b;
  if (x->s0 != y->s0) return x->s0 < y->s0 ? -1 : 1;
  return x->b - y->b;
}

static int cmp_hsize(const void *a, const void *b) {
  const hsize_t x = *(const hsize_t *)a, y = *(const hsize_t *)b;
  return (x > y) - (x < y);
}

/* An element no block covers. Some uncovered element has every coordinate
 * 0 or the end of a block (move any uncovered element down each dimension
 * to the nearest such value: no block starts covering it on the way), so
 * only those points are tried, up to a budget of box tests. 1 if found. */
static int find_uncovered(int rank, const hsize_t *dims, int nb, const hsize_t *starts,
                          const hsize_t *counts, hsize_t *pt) {
  hsize_t *cand = malloc(sizeof *cand * (size_t)rank * (size_t)(nb + 1));
  int ncand[CPL_MAX_RANK], idx[CPL_MAX_RANK] = {0}, found = 0;
  if (!cand || rank > CPL_MAX_RANK) {
    free(cand);
    return 0;
  }
  for (int d = 0; d < rank; d++) {
    hsize_t *c = cand + (size_t)d * (nb + 1);
    int n = 0;
    c[n++] = 0;
    for (int b = 0; b < nb; b++) {
      const hsize_t end = starts[(size_t)b * rank + d] + counts[(size_t)b * rank + d];
      if (end < dims[d]) c[n++] = end;
    }
    qsort(c, (size_t)n, sizeof *c, cmp_hsize);
    int u = 1;
    for (int i = 1; i < n; i++)
      if (c[i] != c[u - 1]) c[u++] = c[i];
    ncand[d] = u;
  }
  for (long budget = 4000000 / (nb ? nb : 1); budget > 0 && !found; budget--) {
    for (int d = 0; d < rank; d++) pt[d] = cand[(size_t)d * (nb + 1) + idx[d]];
    found = 1;
    for (int b = 0; b < nb && found; b++) {
      const hsize_t *s = starts + (size_t)b * rank, *c = counts + (size_t)b * rank;
      int in = 1;
      for (int d = 0; d < rank && in; d++) in = pt[d] >= s[d] && pt[d] - s[d] < c[d];
      found = !in;
    }
    int k = rank - 1; /* next point, last dimension fastest */
    while (!found && k >= 0 && ++idx[k] == ncand[k]) idx[k--] = 0;
    if (k < 0) break;
  }
  free(cand);
  return found;
}

/* The gap message: counts, an element in no block, every rank's block. */
static void gap_message(int rank, const hsize_t *dims, int nb, const hsize_t *starts,
                        const hsize_t *counts, uint64_t covered, uint64_t total, char *msg,
                        size_t msglen) {
  char b1[160], b2[160];
  hsize_t pt[CPL_MAX_RANK];
  size_t o = (size_t)snprintf(msg, msglen,
                              "the blocks cover %llu of the %llu elements "
                              "of the global array %s (a gap)",
                              (unsigned long long)covered, (unsigned long long)total,
                              cpli_dims_str(rank, dims, b2, sizeof b2));
  if (o < msglen && find_uncovered(rank, dims, nb, starts, counts, pt)) {
    o += (size_t)snprintf(msg + o, msglen - o, ": element %s is in no block",
                          cpli_dims_str(rank, pt, b1, sizeof b1));
  }
  for (int b = 0; b < nb && o < msglen; b++) {
    const hsize_t *s = starts + (size_t)b * rank, *c = counts + (size_t)b * rank;
    uint64_t v = 0;
    cpli_box_volume(rank, c, &v);
    const char *sep = b ? ", " : "; blocks: ";
    if (msglen - o < 48 + strlen(cpli_box_str(rank, s, c, b1, sizeof b1))) {
      snprintf(msg + o, msglen - o, "%s... (%d more)", sep, nb - b);
      return;
    }
    o += (size_t)snprintf(msg + o, msglen - o, "%srank %d %s", sep, b, v ? b1 : "none");
  }
}

int cpli_tiling_check(int rank, const hsize_t *dims, int nb, const hsize_t *starts,
                      const hsize_t *counts, char *msg, size_t msglen) {
  char b1[160], b2[160];
  uint64_t total, covered = 0;
  if (cpli_box_volume(rank, dims, &total) != 0) {
    snprintf(msg, msglen, "the global dims overflow 64 bits");
    return 0;
  }
  by_start *order = malloc((size_t)(nb ? nb : 1) * sizeof *order);
  if (!order) {
    snprintf(msg, msglen, "out of memory checking the blocks");
    return 0;
  }
  int m = 0;
  for (int b = 0; b < nb; b++) {
    const hsize_t *s = starts + (size_t)b * rank, *c = counts + (size_t)b * rank;
    uint64_t v = 0;
    if (!cpli_box_inside(rank, dims, s, c)) {
      snprintf(msg, msglen,
               "the block of rank %d, %s, lies outside the "
               "global array %s",
               b, cpli_box_str(rank, s, c, b1, sizeof b1),
               cpli_dims_str(rank, dims, b2, sizeof b2));
      free(order);
      return 0;
    }
    cpli_box_volume(rank, c, &v); /* inside dims: cannot overflow */
    if (v == 0) continue;
    covered += v;
    order[m++] = (by_start){s[0], b};
  }
  /* Sorted by first coordinate, a block can only overlap those that start
   * before its end in dimension 0: near-linear for usual decompositions. */
  qsort(order, (size_t)m, sizeof *order, cmp_start);
  for (int i = 0; i < m; i++) {
    int a = order[i].b;
    const hsize_t *sa = starts + (size_t)a * rank, *ca = counts + (size_t)a * rank;
    for (int j = i + 1; j < m && order[j].s0 < sa[0] + ca[0]; j++) {
      int b = order[j].b;
      const hsize_t *sb = starts + (size_t)b * rank, *cb = counts + (size_t)b * rank;
      if (cpli_box_overlap(rank, sa, ca, sb, cb)) {
        int lo = a < b ? a : b, hi = a < b ? b : a;
        const hsize_t *sl = lo == a ? sa : sb, *cl = lo == a ? ca : cb;
        const hsize_t *sh = lo == a ? sb : sa, *ch = lo == a ? cb : ca;
        snprintf(msg, msglen,
                 "the blocks of rank %d, %s, and rank %d, %s, "
                 "overlap",
                 lo, cpli_box_str(rank, sl, cl, b1, sizeof b1), hi,
                 cpli_box_str(rank, sh, ch, b2, sizeof b2));
        free(order);
        return 0;
      }
    }
  }
  free(order);
  if (covered != total) {
    gap_message(rank, dims, nb, starts, counts, covered, total, msg, msglen);
    return 0;
  }
  return 1;
}
