/*
 * Selections (data/select.c), checked on grids small enough to paint: every
 * random box list becomes disjoint pieces whose union is exactly the union
 * of the boxes; subtraction, clipping, row shares, name/default resolution
 * and the wire round trip.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data/select.h"

#define G 7 /* grid extent per dimension */

static unsigned rnd_state = 12345;
static unsigned rnd(unsigned n) {
  rnd_state = rnd_state * 1103515245u + 12345u;
  return (rnd_state >> 16) % n;
}

static size_t cell(int rank, const hsize_t *x) {
  size_t i = 0;
  for (int d = 0; d < rank; d++) i = i * (G + 4) + (size_t)x[d];
  return i;
}

/* Paint box (s, c) into grid g (extent G + 4, boxes may reach past G). */
static void paint(int rank, const hsize_t *s, const hsize_t *c, int *g, int add) {
  hsize_t x[H5S_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    if (c[d] == 0) return;
    x[d] = s[d];
  }
  for (;;) {
    g[cell(rank, x)] += add;
    int d = rank - 1;
    while (d >= 0 && ++x[d] == s[d] + c[d]) {
      x[d] = s[d];
      d--;
    }
    if (d < 0) return;
  }
}

static void test_subtract(void) {
  for (int rank = 1; rank <= 3; rank++)
    for (int t = 0; t < 3000; t++) {
      hsize_t bs[3], bc[3], ps[3], pc[3];
      for (int d = 0; d < rank; d++) {
        bs[d] = rnd(G);
        bc[d] = 1 + rnd(G - (unsigned)bs[d]);
        ps[d] = rnd(G);
        pc[d] = 1 + rnd(G - (unsigned)ps[d]);
      }
      cpli_boxes out = {.rank = rank};
      int n = cpli_box_subtract(rank, bs, bc, ps, pc, &out);
      CHECK(n >= 0 && n <= 2 * rank, "rank %d: %d pieces", rank, n);
      size_t cells = 1;
      for (int d = 0; d < rank; d++) cells *= G + 4;
      int *want = calloc(cells, sizeof *want), *got = calloc(cells, sizeof *got);
      int *p = calloc(cells, sizeof *p);
      paint(rank, bs, bc, want, 1);
      paint(rank, ps, pc, p, 1);
      for (size_t i = 0; i < cells; i++) want[i] = want[i] && !p[i];
      for (int k = 0; k < out.n; k++)
        paint(rank, out.start + k * rank, out.count + k * rank, got, 1);
      for (size_t i = 0; i < cells; i++)
        CHECK(got[i] == want[i], "subtract rank %d case %d cell %zu: %d != %d", rank, t, i, got[i],
              want[i]);
      free(want);
      free(got);
      free(p);
      cpli_boxes_free(&out);
    }
}

static void test_disjoint(void) {
  hsize_t dims[3] = {G, G - 2, G - 1};
  for (int rank = 1; rank <= 3; rank++)
    for (int t = 0; t < 2000; t++) {
      int nb = (int)rnd(6);
      hsize_t s[18], c[18];
      for (int i = 0; i < nb * rank; i++) {
        s[i] = rnd(G + 1);
        c[i] = rnd(4); /* zero counts: empty boxes; may reach past dims */
      }
      cpli_sel sel = {0};
      CHECK(cpli_sel_set_boxes(&sel, "a", rank, nb, s, c) == 0, "set");
      cpli_boxes pieces = {0};
      CHECK(cpli_sel_pieces(&sel, "a", rank, dims, &pieces) == 0, "pieces");
      size_t cells = 1;
      for (int d = 0; d < rank; d++) cells *= G + 4;
      int *want = calloc(cells, sizeof *want), *got = calloc(cells, sizeof *got);
      hsize_t zero[3] = {0};
      int *in = calloc(cells, sizeof *in);
      paint(rank, zero, dims, in, 1);
      for (int b = 0; b < nb; b++) paint(rank, s + b * rank, c + b * rank, want, 1);
      for (size_t i = 0; i < cells; i++) want[i] = want[i] > 0 && in[i];
      for (int k = 0; k < pieces.n; k++) {
        uint64_t v = 1;
        for (int d = 0; d < rank; d++) v *= pieces.count[k * rank + d];
        CHECK(v > 0, "empty piece");
        paint(rank, pieces.start + k * rank, pieces.count + k * rank, got, 1);
      }
      for (size_t i = 0; i < cells; i++)
        CHECK(got[i] == want[i],
              "pieces rank %d case %d cell %zu: covered %d "
              "times, want %d",
              rank, t, i, got[i], want[i]);
      /* The wire gives back the same selection, so the same pieces. */
      cpli_wbuf w = {0};
      cpli_sel_encode(&sel, &w);
      cpli_rbuf r = cpli_r_init(w.p, w.len);
      cpli_sel back = {0};
      cpli_sel_decode(&r, &back);
      CHECK(!r.bad && r.pos == w.len && back.active, "round trip");
      cpli_boxes p2 = {0};
      cpli_sel_pieces(&back, "a", rank, dims, &p2);
      CHECK(p2.n == pieces.n &&
                (p2.n == 0 ||
                 (!memcmp(p2.start, pieces.start, (size_t)p2.n * rank * sizeof(hsize_t)) &&
                  !memcmp(p2.count, pieces.count, (size_t)p2.n * rank * sizeof(hsize_t)))),
            "round trip pieces");
      /* Every truncation of the message is refused, never read past. */
      for (size_t cut = 0; cut < w.len; cut += 1 + w.len / 16) {
        cpli_rbuf rr = cpli_r_init(w.p, cut);
        cpli_sel_decode(&rr, &back);
        CHECK(rr.bad, "truncated at %zu of %zu accepted", cut, w.len);
      }
      cpli_w_free(&w);
      cpli_sel_free(&back);
      cpli_boxes_free(&p2);
      free(want);
      free(got);
      free(in);
      cpli_boxes_free(&pieces);
      cpli_sel_free(&sel);
    }
}

static void test_rows_and_names(void) {
  /* Row shares tile dim 0 exactly, balanced, in order. */
  for (hsize_t n = 0; n < 40; n++)
    for (int parts = 1; parts < 12; parts++) {
      hsize_t next = 0;
      for (int k = 0; k < parts; k++) {
        hsize_t s, c;
        cpl_rows_part(n, k, parts, &s, &c);
        CHECK(s == next, "rows %llu/%d part %d starts at %llu", (unsigned long long)n, parts, k,
              (unsigned long long)s);
        CHECK(c == n / parts || c == n / parts + 1, "unbalanced");
        next = s + c;
      }
      CHECK(next == n, "rows do not tile");
    }
  /* A part that does not exist reads nothing (no division by zero). */
  const int bad[][2] = {{0, 0}, {3, 2}, {-1, 3}, {0, -2}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hsize_t s = 7, c = 7;
    cpl_rows_part(10, bad[i][0], bad[i][1], &s, &c);
    CHECK(s == 0 && c == 0, "part %d of %d: rows [%llu, +%llu)", bad[i][0], bad[i][1],
          (unsigned long long)s, (unsigned long long)c);
  }
  cpl_rows_part(10, 0, 2, NULL, NULL);
  hsize_t d2[2] = {10, 4}, d3[3] = {5, 2, 2};
  cpli_sel sel = {0};
  cpli_boxes p = {0};
  CHECK(cpli_sel_pieces(&sel, "x", 2, d2, &p) == 0 && p.n == 1 && p.count[0] == 10 &&
            p.count[1] == 4,
        "inactive reads the whole array");
  hsize_t s[2] = {2, 0}, c[2] = {3, 4};
  cpli_sel_set_boxes(&sel, "x", 2, 1, s, c);
  cpli_sel_pieces(&sel, "y", 2, d2, &p);
  CHECK(p.n == 0, "an active selection reads nothing of an unnamed dataset");
  cpli_sel_set_rows(&sel, NULL, 1, 2);
  cpli_sel_pieces(&sel, "y", 3, d3, &p);
  CHECK(p.n == 1 && p.start[0] == 3 && p.count[0] == 2 && p.count[1] == 2,
        "the row default applies to any rank");
  cpli_sel_pieces(&sel, "x", 2, d2, &p);
  CHECK(p.n == 1 && p.start[0] == 2 && p.count[0] == 3, "a name wins over the default");
  cpli_sel_set_boxes(&sel, NULL, 3, 0, NULL, NULL);
  cpli_sel_pieces(&sel, "y", 3, d3, &p);
  CHECK(p.n == 0, "zero boxes read nothing");
  cpli_sel_set_boxes(&sel, NULL, 2, 1, s, c);
  cpli_sel_pieces(&sel, "y", 3, d3, &p);
  CHECK(p.n == 0, "boxes of another rank read nothing");
  hsize_t bad_s[1] = {(hsize_t)-2}, bad_c[1] = {5};
  CHECK(cpli_sel_set_boxes(&sel, "z", 1, 1, bad_s, bad_c) != 0, "overflow refused");
  CHECK(cpli_sel_set_rows(&sel, "z", 2, 2) != 0, "part out of range refused");
  cpli_sel_clear(&sel);
  cpli_sel_pieces(&sel, "x", 2, d2, &p);
  CHECK(p.n == 1 && p.count[0] == 10, "cleared reads whole again");
  cpli_boxes_free(&p);
  cpli_sel_free(&sel);
}

/* Past the limit of pieces the message says how many there are, and
 * does not claim boxes overlap that do not (4097 apart in 1-D). */
static void test_too_many_pieces(void) {
  enum { N = CPLI_SEL_MAX_PIECES + 1 };
  static hsize_t s[N + 1], c[N + 1];
  for (int i = 0; i <= N; i++) s[i] = 2 * (hsize_t)i, c[i] = 1;
  cpli_sel sel = {0};
  CHECK(cpli_sel_set_boxes(&sel, "a", 1, N, s, c) == CPL_ERR_ARG &&
            strstr(cpl_last_error(), "4097 boxes make 4097 disjoint pieces, more than the 4096 "
                                     "a selection may have") &&
            !strstr(cpl_last_error(), "overlap into"),
        "too many pieces: %s", cpl_last_error());
  CHECK(cpli_sel_set_boxes(&sel, "a", 1, N + 1, s, c) == CPL_ERR_ARG &&
            strstr(cpl_last_error(), "the first 4097 of 4098 boxes make 4097 disjoint pieces"),
        "too many pieces before the last box: %s", cpl_last_error());
  CHECK(cpli_sel_set_boxes(&sel, "a", 1, N - 1, s, c) == 0, "4096 pieces refused");
  cpli_sel_free(&sel);
}

int main(void) {
  test_too_many_pieces();
  test_subtract();
  test_disjoint();
  test_rows_and_names();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("select: all checks passed\n");
  return failures != 0;
}
