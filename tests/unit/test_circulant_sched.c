/*
 * Traff circulant schedules: reproduce the paper's Table 1 (p = 20) and
 * Table 5 (p = 9, both schedules), verify every p in 1..2000 and spot
 * checks at large p by simulating the n-block broadcast, cross-check the
 * per-rank construction against the full-schedule one, and show that the
 * verifier rejects mutated schedules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "sched/circulant.h"

static double now(void) {
  struct timespec t;
  timespec_get(&t, TIME_UTC); /* C11; clock_gettime needs POSIX */
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* ------------------------------------------------------------ Table 1 */

static const int T1_SKIPS[] = {1, 2, 3, 5, 10, 20};
/* The paper prints the root's baseblock as 0; ours is q = 5 by convention. */
static const int T1_BASE[20] = {0, 0, 1, 2, 0, 3, 0, 1, 2, 0, 4, 0, 1, 2, 0, 3, 0, 1, 2, 0};
static const int T1_RECV[5][20] = {
    {-5, 0, -5, -4, -3, -5, -2, -5, -4, -3, -5, -1, -5, -4, -3, -5, -2, -5, -4, -3},
    {-3, -3, 1, -5, -4, -3, -3, -2, -5, -4, -3, -3, -1, -5, -4, -3, -3, -2, -5, -4},
    {-4, -4, -3, 2, 0, -4, -4, -3, -2, -2, -4, -4, -3, -1, -1, -4, -4, -3, -2, -2},
    {-2, -2, -2, -2, -2, 3, 0, 1, 2, 0, -2, -2, -2, -2, -2, -1, -1, -1, -1, -1},
    {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 4, 0, 1, 2, 0, 3, 0, 1, 2, 0}};
static const int T1_SEND[5][20] = {
    {0, -5, -4, -3, -5, -2, -5, -4, -3, -5, -1, -5, -4, -3, -5, -2, -5, -4, -3, -5},
    {1, -5, -4, -3, -3, -2, -5, -4, -3, -3, -1, -5, -4, -3, -3, -2, -5, -4, -3, -3},
    {2, 0, -4, -4, -3, -2, -2, -4, -4, -3, -1, -1, -4, -4, -3, -2, -2, -4, -4, -3},
    {3, 0, 1, 2, 0, -2, -2, -2, -2, -2, -1, -1, -1, -1, -1, -2, -2, -2, -2, -2},
    {4, 0, 1, 2, 0, 3, 0, 1, 2, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}};

static void test_table1(void) {
  cpli_circ_full f;
  CHECK(cpli_circ_full_init(&f, 20) == 0, "full schedule p=20");
  const cpli_circ *c = &f.c;
  CHECK(c->q == 5, "q=%d", c->q);
  for (int k = 0; k <= 5; k++) CHECK(c->skips[k] == T1_SKIPS[k], "skips[%d]=%d", k, c->skips[k]);
  CHECK(cpli_circ_baseblock(c, 0) == 5 && f.base[0] == 5, "root baseblock");
  for (int r = 1; r < 20; r++) {
    CHECK(cpli_circ_baseblock(c, r) == T1_BASE[r], "baseblock(%d)", r);
    CHECK(f.base[r] == T1_BASE[r], "full base[%d]", r);
  }
  for (int r = 0; r < 20; r++) {
    int rs[5], ss[5];
    CHECK(cpli_circ_recvsched(c, r, 5, rs) == 0, "recvsched(%d)", r);
    CHECK(cpli_circ_sendsched(c, r, ss) == 0, "sendsched(%d)", r);
    for (int k = 0; k < 5; k++) {
      CHECK(rs[k] == T1_RECV[k][r], "recv r=%d k=%d: %d != %d", r, k, rs[k], T1_RECV[k][r]);
      CHECK(ss[k] == T1_SEND[k][r], "send r=%d k=%d: %d != %d", r, k, ss[k], T1_SEND[k][r]);
      CHECK(f.recv[r * 5 + k] == T1_RECV[k][r], "full recv r=%d k=%d", r, k);
      CHECK(f.send[r * 5 + k] == T1_SEND[k][r], "full send r=%d k=%d", r, k);
    }
  }
  cpli_circ_full_free(&f);
}

/* ------------------------------------------------------------ Table 5 */

/* p = 9: the left schedule is what the construction yields; the right one
 * differs in four entries and must be valid too. */
static const int T5_RECV[4][9] = {{-2, 0, -4, -3, -2, -4, -1, -4, -3},
                                  {-3, -2, 1, -4, -3, -2, -2, -1, -4},
                                  {-1, -3, -2, 2, 0, -3, -3, -2, -1},
                                  {-4, -1, -1, -1, -1, 3, 0, 1, 2}};
static const int T5_SEND[4][9] = {{0, -4, -3, -2, -4, -1, -4, -3, -2},
                                  {1, -4, -3, -2, -2, -1, -4, -3, -2},
                                  {2, 0, -3, -3, -2, -1, -1, -3, -2},
                                  {3, 0, 1, 2, -4, -1, -1, -1, -1}};

static void test_table5(void) {
  cpli_circ_full f;
  char why[256];
  CHECK(cpli_circ_full_init(&f, 9) == 0, "full schedule p=9");
  for (int r = 0; r < 9; r++)
    for (int k = 0; k < 4; k++) {
      CHECK(f.recv[r * 4 + k] == T5_RECV[k][r], "p=9 recv r=%d k=%d", r, k);
      CHECK(f.send[r * 4 + k] == T5_SEND[k][r], "p=9 send r=%d k=%d", r, k);
    }
  /* the alternative schedule (Table 5, right) */
  f.recv[8 * 4 + 1] = -1;
  f.recv[8 * 4 + 2] = -4;
  f.send[6 * 4 + 1] = -1;
  f.send[5 * 4 + 2] = -4;
  for (int n = 1; n <= 12; n++) {
    int rc = cpli_circ_verify(&f.c, f.base, f.recv, f.send, n, why, sizeof why);
    CHECK(rc == 0, "Table 5 right schedule, n=%d: %s", n, why);
  }
  cpli_circ_full_free(&f);
}

/* ----------------------------------------------------- exhaustive runs */

static unsigned long long rng = 88172645463325252ULL;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (unsigned)(rng % n);
}

/* Per-rank construction (no tables) must equal the full one. */
static int cross_check(const cpli_circ_full *f, int r) {
  const int q = f->c.q;
  int rs[CPLI_CIRC_QMAX], ss[CPLI_CIRC_QMAX];
  if (cpli_circ_baseblock(&f->c, r) != f->base[r]) return 1;
  if (cpli_circ_recvsched(&f->c, r, q, rs) || cpli_circ_sendsched(&f->c, r, ss)) return 1;
  for (int k = 0; k < q; k++)
    if (rs[k] != f->recv[(size_t)r * q + k] || ss[k] != f->send[(size_t)r * q + k]) return 1;
  return 0;
}

/* Build, cross-check some ranks (all if `all`), verify for each n. */
static int verify_p(int p, const long long *ns, int nn, int all) {
  cpli_circ_full f;
  char why[512];
  if (cpli_circ_full_init(&f, p)) {
    fprintf(stderr, "FAIL p=%d: construction failed\n", p);
    return 1;
  }
  int bad = 0;
  const int q = f.c.q;
  if (all) {
    for (int r = 0; r < p && !bad; r++) bad = cross_check(&f, r);
  } else {
    const int fixed[] = {0, 1, p - 1, p / 2, q < p ? f.c.skips[q > 0 ? q - 1 : 0] : 0};
    for (int i = 0; i < 5 && !bad; i++) bad = cross_check(&f, fixed[i]);
    for (int i = 0; i < 8 && !bad; i++) bad = cross_check(&f, (int)rnd((unsigned)p));
  }
  if (bad) fprintf(stderr, "FAIL p=%d: per-rank and full schedules differ\n", p);
  for (int i = 0; i < nn && !bad; i++) {
    if (i > 0 && ns[i] == ns[i - 1]) continue;
    if (cpli_circ_verify(&f.c, f.base, f.recv, f.send, ns[i], why, sizeof why)) {
      fprintf(stderr, "FAIL %s\n", why);
      bad = 1;
    }
  }
  cpli_circ_full_free(&f);
  return bad;
}

static void test_all_p(int pmax) {
  int failed = 0;
  double t0 = now();
  for (int p = 1; p <= pmax; p++) {
    cpli_circ c;
    cpli_circ_init(&c, p);
    const int q = c.q;
    long long ns[5] = {1, 2, q > 2 ? q : 2, q + 1, 2 * q + 3};
    failed += verify_p(p, ns, 5, p <= 256);
  }
  failures += failed;
  printf("circulant: %d p verified, %d failed (n = 1, 2, q, q+1, 2q+3; %.1f s)\n", pmax, failed,
         now() - t0);
}

static void test_large_p(void) {
  const int ps[] = {4093, 4096, 4097, 8191, 10007, 16384, 65537};
  int failed = 0;
  double t0 = now();
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    cpli_circ c;
    cpli_circ_init(&c, ps[i]);
    long long ns[3] = {1, c.q + 1, 2 * c.q + 3};
    failed += verify_p(ps[i], ns, ps[i] > 20000 ? 1 : 3, 0);
  }
  failures += failed;
  printf("circulant: large p spot checks (4093 .. 65537): %d failed (%.1f s)\n", failed,
         now() - t0);
}

/* ----------------------------------------------------- negative tests */

typedef struct copy {
  int base[64], recv[64 * 8], send[64 * 8];
} copy;

static void reset(copy *m, const cpli_circ_full *f) {
  const int p = f->c.p, q = f->c.q;
  memcpy(m->base, f->base, sizeof(int) * p);
  memcpy(m->recv, f->recv, sizeof(int) * p * q);
  memcpy(m->send, f->send, sizeof(int) * p * q);
}

static void expect_reject(const cpli_circ_full *f, const copy *m, long long n, const char *what) {
  char why[256];
  int rc = cpli_circ_verify(&f->c, m->base, m->recv, m->send, n, why, sizeof why);
  CHECK(rc != 0, "verifier accepted a mutated schedule: %s", what);
  if (rc) printf("  rejected (%s): %s\n", what, why);
}

static void test_negative(void) {
  cpli_circ_full f;
  CHECK(cpli_circ_full_init(&f, 20) == 0, "p=20");
  const int q = f.c.q;
  copy m;
  char why[256];
  reset(&m, &f);
  CHECK(cpli_circ_verify(&f.c, m.base, m.recv, m.send, 7, why, sizeof why) == 0,
        "unmutated copy: %s", why);

  /* 1. one send entry changed: the edge 3 -> 4 no longer agrees */
  reset(&m, &f);
  m.send[3 * q + 0] = -1;
  expect_reject(&f, &m, 7, "send[3][0] changed");

  /* 2. a receive entry and its matching send changed together (edges
   * agree): rank 7 now receives block -1 twice in a phase */
  reset(&m, &f);
  m.recv[7 * q + 0] = -1; /* was -5; -1 already in round 3 */
  m.send[6 * q + 0] = -1;
  expect_reject(&f, &m, 7, "recv[7][0] duplicated, edges consistent");

  /* 3. two receive rounds of rank 13 swapped (with their senders): the
   * set is unchanged, but a sender now forwards a block it lacks */
  reset(&m, &f);
  {
    const int a = 1, b = 3; /* rank 13 receives -4 -5 -1 -2 2 */
    int t = m.recv[13 * q + a];
    m.recv[13 * q + a] = m.recv[13 * q + b];
    m.recv[13 * q + b] = t;
    m.send[(13 - f.c.skips[a]) * q + a] = m.recv[13 * q + a];
    m.send[(13 - f.c.skips[b]) * q + b] = m.recv[13 * q + b];
  }
  expect_reject(&f, &m, 7, "rank 13 rounds 1 and 3 swapped");

  /* 4. a rank's baseblock changed */
  reset(&m, &f);
  m.base[6] = 1;
  expect_reject(&f, &m, 3, "base[6] changed");

  /* 5. the root made to receive its own new block (not previous-phase) */
  reset(&m, &f);
  m.recv[0 * q + 2] = 0;
  m.send[(20 - f.c.skips[2]) * q + 2] = 0;
  expect_reject(&f, &m, 7, "root receives a current-phase block");

  /* 6. every block value shifted by one phase in a round of every rank:
   * structure breaks (a baseblock round no longer holds the baseblock) */
  reset(&m, &f);
  for (int r = 0; r < 20; r++) {
    m.recv[r * q + 4] -= q;
    m.send[r * q + 4] -= q;
  }
  expect_reject(&f, &m, 7, "round 4 shifted a phase back");
  cpli_circ_full_free(&f);

  /* 7. p = 9, the schedule of Table 5 mixed half-way between its two valid
   * variants: only one of the two swapped entries applied */
  CHECK(cpli_circ_full_init(&f, 9) == 0, "p=9");
  reset(&m, &f);
  m.recv[8 * 4 + 1] = -1;
  m.send[6 * 4 + 1] = -1;
  expect_reject(&f, &m, 9, "p=9 half of Table 5's alternative");
  cpli_circ_full_free(&f);
}

/* -------------------------------------------------------------- timing */

static void timing(void) {
  const int ps[] = {1024, 2000, 10007};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    const int p = ps[i];
    cpli_circ_full f;
    int reps = p > 5000 ? 5 : 20;
    double t0 = now();
    for (int j = 0; j < reps; j++) {
      cpli_circ_full_init(&f, p);
      cpli_circ_full_free(&f);
    }
    double tf = (now() - t0) / reps;
    cpli_circ c;
    cpli_circ_init(&c, p);
    int rs[CPLI_CIRC_QMAX], ss[CPLI_CIRC_QMAX];
    t0 = now();
    for (int r = 0; r < p; r++) {
      cpli_circ_recvsched(&c, r, c.q, rs);
      cpli_circ_sendsched(&c, r, ss);
    }
    double tr = (now() - t0) / p;
    printf("circulant: p=%d q=%d full schedule %.3f ms, one rank's recv+send "
           "%.1f us\n",
           p, c.q, 1e3 * tf, 1e6 * tr);
  }
}

int main(int argc, char **argv) {
  int pmax = argc > 1 ? atoi(argv[1]) : 2000;
  cpli_circ c;
  CHECK(cpli_circ_init(&c, 0) != 0, "p = 0 must be rejected");
  CHECK(cpli_circ_init(&c, 1) == 0 && c.q == 0 && c.skips[0] == 1, "p = 1");
  CHECK(cpli_circ_init(&c, 2147483647) == 0 && c.q == 31 && c.skips[31] == 2147483647 &&
            c.skips[0] == 1,
        "p = INT_MAX");
  {
    int s[31];
    CHECK(cpli_circ_recvsched(&c, 2147483646, 31, s) == 0 &&
              cpli_circ_sendsched(&c, 1234567891, s) == 0,
          "schedule of one rank at p = INT_MAX");
  }
  test_table1();
  test_table5();
  test_negative();
  test_large_p();
  timing();
  test_all_p(pmax);
  if (failures) printf("circulant: %d check(s) FAILED\n", failures);
  return failures ? 1 : 0;
}
