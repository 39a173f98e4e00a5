/*
 * The algorithm tables and the choices `auto` makes from them (coll/cost.c,
 * coll/algorithms.h), exhaustively over group sizes, block sizes and model
 * parameters (shared memory, a cluster, the library's defaults), with the
 * dataflow on and off (CPL_FLOW) and the ring rule free or forced
 * (CPL_RING):
 *  - every row parses back to its enum and has a cost; auto rows only;
 *  - Bruck runs in lockstep with several peers: auto never picks it, not
 *    for regular blocks nor when one block is huge (issue: auto took
 *    Bruck for a 64 MiB block among 1-element ones, 1.01 s against the
 *    circulant's 0.52 s), and its cost with one huge block counts that
 *    block once per round;
 *  - for q = 1 and p >= 2 auto picks two-hop: the p streams arrive at
 *    once and receiver 0's port is the bound (measured at the bound on
 *    the emulated cluster, as native is, which adds its nonblocking
 *    schedule's start-ups);
 *  - for p > q two-hop is the fully connected exchange and always
 *    cheapest (emulated cluster, 1 MiB: 5|3 1.03 of the bound, fc 1.09;
 *    6|2 1.00 and 1.04); at p = q fc or two-hop keep small blocks and
 *    chains takes large ones (see test_chains, test_two_hop);
 *  - direct-ring is fc's p = q plan plus a pipeline's fill, so it never
 *    wins at p = q; with the emulated cluster's calibrated parameters auto
 *    takes it for one sender and many receivers with large blocks (1|7 at
 *    1 MiB measured 1.25-1.30 of the bound against fc's 1.55-1.64), not
 *    2|6 (direct-ring 1.46, its homes take two streams);
 *  - chains never for p > q (see test_chains);
 *  - the inter-group choice depends on p, q and the shared byte size only:
 *    both groups' views of one call choose alike.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/algorithms.h"
#include "coll/cost.h"
#include "coll/select.h"
#include "sched/flow.h"

static const struct {
  const char *what;
  double alpha, beta;
} models[] = {{"defaults", CPLI_DEFAULT_ALPHA, CPLI_DEFAULT_BETA},
              {"shared memory", 1e-6, 1.0 / 5e9},
              {"cluster", 5e-5, 1.0 / 47.8e6},
              {"emulated cluster (run.sh)", 5e-4, 2.091e-8},
              {"slow start-ups", 1e-3, 1e-10}};
#define NMODELS (sizeof models / sizeof *models)

/* Environments the choice must hold under: dataflow or lockstep, ring
 * rule free or forced either way. */
static const char *const envs[][2] = {{"", ""}, {"0", ""}, {"", "0"}, {"", "1"}, {"0", "1"}};
#define NENVS (sizeof envs / sizeof *envs)

static void set_env(size_t e) {
  if (*envs[e][0]) setenv("CPL_FLOW", envs[e][0], 1);
  else unsetenv("CPL_FLOW");
  if (*envs[e][1]) setenv("CPL_RING", envs[e][1], 1);
  else unsetenv("CPL_RING");
  cpli_tuning_refresh();
}

static void test_tables(void) {
  for (int a = 0; a < CPL_INTER_COUNT; a++) {
    cpl_inter_algorithm back = CPL_INTER_COUNT;
    CHECK(cpl_inter_algorithm_parse(cpli_inter_algs[a].name, &back) == CPL_OK &&
              back == (cpl_inter_algorithm)a,
          "inter row %d (%s) does not parse back", a, cpli_inter_algs[a].name);
    CHECK(!strcmp(cpli_inter_names[a], cpli_inter_algs[a].name), "inter name %d", a);
    CHECK((a == CPL_INTER_AUTO) == !cpli_inter_algs[a].cost, "inter row %d cost", a);
  }
  for (int a = 0; a < CPL_INTRA_COUNT; a++) {
    cpl_intra_algorithm back = CPL_INTRA_COUNT;
    CHECK(cpl_intra_algorithm_parse(cpli_intra_algs[a].name, &back) == CPL_OK &&
              back == (cpl_intra_algorithm)a,
          "intra row %d (%s) does not parse back", a, cpli_intra_algs[a].name);
    CHECK(!strcmp(cpli_intra_names[a], cpli_intra_algs[a].name), "intra name %d", a);
    CHECK((a == CPL_INTRA_AUTO) == !cpli_intra_algs[a].cost, "intra row %d cost", a);
  }
  CHECK(!cpli_inter_algs[CPL_INTER_RING].autopick, "the inter ring is for ring networks only");
  CHECK(cpl_inter_algorithm_name(CPL_INTER_COUNT)[0] == 'i', "out of range is \"invalid\"");
  CHECK(isinf(cpli_inter_cost(CPL_INTER_AUTO, 2, 2, 1, 1, 1)) &&
            isinf(cpli_intra_cost_v(CPL_INTRA_COUNT, 2, 1, 1, 1, 1, 1)),
        "no cost for auto or out of range");
}

/* Intra: auto never picks lockstep Bruck, unless CPL_RING=1 makes the
 * circulant run the ring where its p - 1 start-ups cost more. */
static void test_intra_no_bruck(void) {
  int cases = 0;
  for (size_t e = 0; e < NENVS; e++) {
    if (!strcmp(envs[e][1], "1")) continue;
    set_env(e);
    for (size_t mo = 0; mo < NMODELS; mo++) {
      const double al = models[mo].alpha, be = models[mo].beta;
      for (int n = 2; n <= 70; n++)
        for (size_t k = 1; k <= ((size_t)1 << 32); k *= 4) {
          /* regular: n blocks of k */
          size_t m = k * (size_t)n;
          cpl_intra_algorithm a = cpli_intra_pick_ab(n, m, k, 1, al, be);
          CHECK(a != CPL_INTRA_BRUCK, "%s, env %zu: regular n=%d k=%zu picks bruck",
                models[mo].what, e, n, k);
          /* one huge block, the others 1 byte: Bruck forwards it every round */
          m = k + (size_t)(n - 1);
          a = cpli_intra_pick_ab(n, m, k, 0, al, be);
          CHECK(a != CPL_INTRA_BRUCK, "%s, env %zu: one block of %zu among n=%d picks bruck",
                models[mo].what, e, k, n);
          const double bruck = cpli_intra_cost_v(CPL_INTRA_BRUCK, n, m, k, 0, al, be);
          CHECK(bruck >= cpli_ceil_log2(n) * be * (double)k,
                "bruck with one huge block: %g < its rounds x the block", bruck);
          cases += 2;
        }
    }
  }
  set_env(0);
  /* the measured case: p = 4, one block of 64 MiB, the others 1 int */
  const size_t big = (size_t)64 << 20;
  for (size_t mo = 0; mo < NMODELS; mo++)
    CHECK(cpli_intra_pick_ab(4, big + 12, big, 0, models[mo].alpha, models[mo].beta) ==
              CPL_INTRA_CIRCULANT,
          "%s: p = 4 with one 64 MiB block does not pick circulant", models[mo].what);
  printf("cost: %d intra choices\n", cases);
}

/* Inter: for q = 1 and p >= 2 auto takes two-hop (receiver 0's port is
 * the bound), never a dearer row; for p > q two-hop as well, and fc at
 * p = q from 4 KiB. Both views of a call choose alike. */
static void test_inter(void) {
  int cases = 0;
  for (size_t mo = 0; mo < NMODELS; mo++) {
    const double al = models[mo].alpha, be = models[mo].beta;
    for (int p = 1; p <= 40; p++)
      for (size_t k = 1; k <= ((size_t)1 << 30); k *= 8) {
        const size_t m = k * (size_t)p;
        const double nat = cpli_inter_cost(CPL_INTER_NATIVE, p, 1, m, al, be);
        const double fc = cpli_inter_cost(CPL_INTER_FC, p, 1, m, al, be);
        const double th = cpli_inter_cost(CPL_INTER_TWO_HOP, p, 1, m, al, be);
        CHECK(fabs(th - (al + be * (double)m)) <= 1e-12 * th,
              "two-hop %d|1: %g is not one start-up and m bytes at receiver 0", p, th);
        const cpl_inter_algorithm a = cpli_inter_pick_ab(p, 1, m, al, be);
        const double ca = cpli_inter_cost(a, p, 1, m, al, be);
        CHECK(ca <= nat && ca <= fc, "%s: %d|1 k=%zu picks %s at %g (native %g, fc %g)",
              models[mo].what, p, k, cpl_inter_algorithm_name(a), ca, nat, fc);
        if (p >= 2)
          CHECK(a == CPL_INTER_TWO_HOP, "%s: %d|1 k=%zu picks %s, not two-hop", models[mo].what, p,
                k, cpl_inter_algorithm_name(a));
        for (int q = 2; q < p; q++)
          CHECK(cpli_inter_pick_ab(p, q, m, al, be) == CPL_INTER_TWO_HOP,
                "%s: %d|%d k=%zu does not pick two-hop", models[mo].what, p, q, k);
        cases++;
      }
  }
  /* Both groups of a call: the senders know their own block (regular:
   * everyone's), the receivers know recvcount (regular) or nothing about
   * the others (irregular), except with one sender, whose block is their
   * only count. The choice may use only what both share. */
  for (size_t e = 0; e < NENVS; e++) {
    set_env(e);
    for (int p = 1; p <= 24; p++)
      for (int q = 1; q <= 24; q++)
        for (size_t k = 0; k <= ((size_t)1 << 28); k = k ? k * 16 : 1) {
          cpl_inter_algorithm s, r, s2, r2;
          CHECK(cpli_inter_choose(p, q, k, 1, NULL, &s) == CPL_OK &&
                    cpli_inter_choose(p, q, k, 1, NULL, &r) == CPL_OK && s == r,
                "regular %d|%d k=%zu: the two sides choose differently", p, q, k);
          /* irregular: a sender's own block against a receiver's view */
          CHECK(cpli_inter_choose(p, q, k, 0, NULL, &s2) == CPL_OK &&
                    cpli_inter_choose(p, q, p == 1 ? k : 0, 0, NULL, &r2) == CPL_OK && s2 == r2,
                "irregular %d|%d own block %zu: the two sides choose differently", p, q, k);
          CHECK(p > 1 || s2 == s, "irregular 1|%d block %zu: %s, not %s as for its size", q, k,
                cpl_inter_algorithm_name(s2), cpl_inter_algorithm_name(s));
          CHECK(s != CPL_INTER_RING && s2 != CPL_INTER_RING, "auto picked the ring");
          cases += 2;
        }
  }
  set_env(0);
  printf("cost: %d inter choices\n", cases);
}

static void test_direct_ring(void) {
  for (size_t mo = 0; mo < NMODELS; mo++)
    for (int p = 1; p <= 40; p++)
      for (size_t k = 1; k <= ((size_t)1 << 30); k *= 8) {
        const size_t m = k * (size_t)p;
        const double al = models[mo].alpha, be = models[mo].beta;
        CHECK(cpli_inter_cost(CPL_INTER_DIRECT_RING, p, p, m, al, be) >=
                  cpli_inter_cost(CPL_INTER_FC, p, p, m, al, be) * (1 - 1e-9),
              "%s: direct-ring cheaper than fc at %d|%d, k = %zu", models[mo].what, p, p, k);
      }
  const double al = 1.24e-5, be = 2.04e-8; /* calibrated, 8 nodes */
  CHECK(cpli_inter_pick_ab(1, 7, (size_t)1 << 20, al, be) == CPL_INTER_DIRECT_RING,
        "1|7 at 1 MiB: auto does not take direct-ring");
  CHECK(cpli_inter_pick_ab(1, 7, 1024, al, be) != CPL_INTER_DIRECT_RING,
        "1|7 at 1 KiB: auto takes direct-ring's seven start-ups");
}

/* chains: never at p > q (whole blocks, a signal's two start-ups per
 * round: two-hop moves the same bytes straight, with fewer); at p = q
 * for large blocks, where fc's receivers (their allgather) and two-hop's
 * (relays) send while they receive, or two-hop's p holders take p
 * streams at once (16 nodes at 25 mbit/s, 1 MiB: 6|6 and 8|8 chains
 * 1.00 of the bound, two-hop 1.09-1.11, fc 1.29-1.32; 8 nodes at
 * 100 mbit/s, 4|4 and 3|3 at 1-4 MiB: chains 1.03-1.08, fc 1.05-1.21),
 * but not for short blocks (p - 1 rounds' signals); with the 16-node
 * calibration (100 mbit/s) auto takes it for the p < q shapes of 16
 * nodes at 1 MiB, where it came to 1.02-1.07 of the bound and fc and
 * two-hop to 1.14-1.41 (scripts/cluster/RESULTS.md), but not for blocks
 * of 256 bytes, whose ceil(q / p) + 1 start-ups cost more than
 * two-hop's two. */
static void test_chains(void) {
  for (size_t mo = 0; mo < NMODELS; mo++)
    for (int p = 1; p <= 24; p++)
      for (int q = 1; q <= p; q++)
        for (size_t k = 1; k <= ((size_t)1 << 30); k *= 8)
          CHECK(cpli_inter_pick_ab(p, q, k * (size_t)p, models[mo].alpha, models[mo].beta) !=
                        CPL_INTER_CHAINS ||
                    (p == q && p > 1 && k >= 4096),
                "%s: auto takes chains at %d|%d, k = %zu", models[mo].what, p, q, k);
  for (int p = 2; p <= 16; p += 2) {
    CHECK(cpli_inter_pick_ab(p, p, (size_t)p << 20, 4.32e-5, 3.30e-7) == CPL_INTER_CHAINS,
          "%d|%d at 1 MiB, 25 mbit/s: auto does not take chains", p, p);
    CHECK(cpli_inter_pick_ab(p, p, (size_t)p << 10, 2.26e-5, 1.92e-8) != CPL_INTER_CHAINS,
          "%d|%d at 1 KiB, 8 nodes: auto takes chains", p, p);
  }
  const double al = 4.32e-5, be = 8.26e-8; /* calibrated, 16 nodes at 100 mbit/s */
  const int shapes[][2] = {{2, 14}, {3, 13}, {4, 12}, {5, 11}, {6, 10}, {7, 9}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    const int p = shapes[i][0], q = shapes[i][1];
    CHECK(cpli_inter_pick_ab(p, q, (size_t)p << 20, al, be) == CPL_INTER_CHAINS,
          "%d|%d at 1 MiB: auto does not take chains", p, q);
    CHECK(cpli_inter_pick_ab(p, q, (size_t)p * 256, al, be) != CPL_INTER_CHAINS,
          "%d|%d at 256 B: auto takes chains", p, q);
  }
  /* 8 nodes at 400 mbit/s: 2|6 1.05-1.06, 3|5 1.04-1.07 (two-hop 1.11-1.14) */
  for (int p = 2; p <= 3; p++)
    CHECK(cpli_inter_pick_ab(p, 8 - p, (size_t)p << 20, 2.21e-5, 2.039e-8) == CPL_INTER_CHAINS,
          "%d|%d at 1 MiB, 8 nodes: auto does not take chains", p, 8 - p);
}

/* two-hop at p = q: blocks of 80 ms and more go to every receiver
 * straight (r = p, no relays: 4|4 at 16 MiB 1.03, fc 1.05-1.18), shorter
 * ones to p - 1 holders (4|4 at 1 MiB: r = p 1.18 of the bound, r = p - 1
 * 1.07); with p holders each port takes p streams at once, which costs
 * rate however long the blocks (8|8, 85-350 ms a block: 1.09-1.13), so
 * auto takes chains at p = q for blocks of 80 ms (with the emulated
 * cluster's calibration), and not for blocks of 5 ms, whose rounds' signals
 * cost more than chains saves (CPLI_SIGNAL_WAKE_S); two-hop is never
 * cheaper than its own port. */
static void test_two_hop(void) {
  const double al = 2.25e-5, be = 1.94e-8; /* calibrated, 8 nodes */
  for (int p = 2; p <= 8; p++)
    for (size_t k = 262144; k <= ((size_t)16 << 20); k *= 4) {
      const int r = (double)k * be >= CPLI_TWO_HOP_DIRECT_S ? p : p - 1;
      const cpl_inter_algorithm a = cpli_inter_pick_ab(p, p, k * (size_t)p, al, be);
      CHECK(k < ((size_t)4 << 20) || a == CPL_INTER_CHAINS,
            "%d|%d at k = %zu: auto does not take chains", p, p, k);
      CHECK(k > ((size_t)256 << 10) || a != CPL_INTER_CHAINS, "%d|%d at k = %zu: auto takes chains",
            p, p, k);
      CHECK(cpli_two_hop_holders(p, p, k, be) == r, "%d|%d at k = %zu: two-hop's holders", p, p, k);
    }
  for (int p = 1; p <= 12; p++)
    for (int q = 1; q <= 12; q++)
      CHECK(cpli_inter_cost(CPL_INTER_TWO_HOP, p, q, (size_t)p << 20, al, be) >=
                be * (double)((size_t)p << 20),
            "%d|%d: two-hop cheaper than a receiver's port", p, q);
}

/* The ring rule never takes the ring for blocks under CPLI_RING_MIN_BLOCK
 * (with a quiet 8-node calibration it took it from about 2 KiB per block
 * at p = 7, 8, where it ran at 0.67-0.78x MPICH's speed at 4 KiB), and
 * still does for large blocks. */
static void test_ring_floor(void) {
  const double al = 2.08e-5, be = 2.02e-8; /* calibrated, 8 nodes, quiet */
  for (int p = 3; p <= 64; p++) {
    cpli_circ c;
    if (cpli_circ_init(&c, p) != CPL_OK) abort();
    for (size_t k = 1; k < CPLI_RING_MIN_BLOCK; k = k * 3 + 1)
      CHECK(!cpli_ring_preferred_ab(&c, k * (size_t)p, al, be), "p = %d, %zu B blocks: the ring", p,
            k);
    CHECK(p < 5 || cpli_ring_preferred_ab(&c, (size_t)p << 20, al, be),
          "p = %d, 1 MiB blocks: not the ring", p);
  }
}

static void set_model(size_t mo) {
  char v[32];
  snprintf(v, sizeof v, "%.17g", models[mo].alpha);
  setenv("CPL_ALPHA", v, 1);
  snprintf(v, sizeof v, "%.17g", models[mo].beta);
  setenv("CPL_BETA", v, 1);
  cpli_tuning_refresh();
}

/* cpli_inter_pick keeps its last answer per thread (as cpli_intra_pick,
 * whose choice no model here changes): a change of the model parameters
 * in the environment reaches the next call of the same shape, and a
 * repeated call answers as the model does. */
static void test_pick_memo(void) {
  int inter = 0;
  for (size_t m1 = 0; m1 < NMODELS; m1++)
    for (size_t m2 = 0; m2 < NMODELS; m2++) {
      const double a1 = models[m1].alpha, b1 = models[m1].beta;
      const double a2 = models[m2].alpha, b2 = models[m2].beta;
      for (int p = 1; p <= 8; p++)
        for (int q = 1; q <= 8; q++)
          for (size_t k = 1; k <= ((size_t)1 << 30); k *= 8) {
            const size_t m = k * (size_t)p;
            const cpl_inter_algorithm x1 = cpli_inter_pick_ab(p, q, m, a1, b1);
            const cpl_inter_algorithm x2 = cpli_inter_pick_ab(p, q, m, a2, b2);
            if (x1 == x2) continue;
            set_model(m1);
            CHECK(cpli_inter_pick(p, q, m) == x1 && cpli_inter_pick(p, q, m) == x1,
                  "%d|%d %zu B: inter pick under %s", p, q, m, models[m1].what);
            set_model(m2);
            CHECK(cpli_inter_pick(p, q, m) == x2,
                  "%d|%d %zu B: the inter pick under %s kept under %s", p, q, m, models[m1].what,
                  models[m2].what);
            inter++;
          }
    }
  CHECK(inter > 0, "no shape whose inter choice the model changes");
  printf("cost: %d inter shapes whose choice follows the model\n", inter);
  unsetenv("CPL_ALPHA");
  unsetenv("CPL_BETA");
  cpli_tuning_refresh();
}

/* The small-block rule: with inter_root_max set (the calibration's switch
 * point, CPL_INTER_ROOT_MAX), root for p, q >= 2 and blocks up to it, never at
 * p = 1 (fc's broadcast sends as few messages in fewer hops) nor q = 1
 * (root is two-hop's plan there), nor above it; inter_root_max 0 (the default)
 * is the model alone; cpli_inter_pick reads it from the tuning. */
static void test_root_rule(void) {
  const double al = 2.22e-5, be = 2.045e-8;
  for (int p = 1; p <= 12; p++)
    for (int q = 1; q <= 12; q++)
      for (size_t k = 1; k <= 65536; k *= 2) {
        const size_t m = k * (size_t)p;
        const cpl_inter_algorithm a = cpli_inter_pick_tuned(p, q, m, al, be, 2048),
                                  z = cpli_inter_pick_tuned(p, q, m, al, be, 0);
        const int want = p >= 2 && q >= 2 && k <= 2048;
        CHECK((a == CPL_INTER_ROOT) == want, "%d|%d, %zu B blocks, inter_root_max 2048: %s", p, q,
              k, cpl_inter_algorithm_name(a));
        CHECK(a == CPL_INTER_ROOT || a == cpli_inter_pick_ab(p, q, m, al, be),
              "%d|%d, %zu B: not the model's pick above inter_root_max", p, q, k);
        CHECK(z == cpli_inter_pick_ab(p, q, m, al, be) && z != CPL_INTER_ROOT,
              "%d|%d, %zu B, inter_root_max 0: %s", p, q, k, cpl_inter_algorithm_name(z));
      }
  setenv("CPL_INTER_ROOT_MAX", "1K", 1);
  cpli_tuning_refresh();
  CHECK(cpli_inter_pick(3, 5, 3 * 1024) == CPL_INTER_ROOT &&
            cpli_inter_pick(3, 5, 3 * 1025) != CPL_INTER_ROOT,
        "CPL_INTER_ROOT_MAX=1K: 3|5 at 1 KiB not root, or at 1025 B root");
  setenv("CPL_INTER_ROOT_MAX", "0", 1);
  cpli_tuning_refresh();
  CHECK(cpli_inter_pick(3, 5, 3 * 1024) != CPL_INTER_ROOT, "root with CPL_INTER_ROOT_MAX=0");
  /* intra: root for n >= 3 while member 0 sends at most intra_root_bytes,
   * ceil(log2 n) messages of the other n - 1 blocks */
  const size_t lim = 16384;
  for (int n = 1; n <= 16; n++)
    for (size_t k = 1; k <= 65536; k *= 2)
      for (int reg = 0; reg < 2; reg++) {
        const size_t maxb = reg ? k : 2 * k, m = reg ? k * (size_t)n : k * (size_t)n + k;
        const size_t sends = n < 2 ? 0 : (size_t)cpli_ceil_log2(n) * (size_t)(n - 1) * maxb;
        const cpl_intra_algorithm a = cpli_intra_pick_tuned(n, m, maxb, reg, al, be, lim),
                                  z = cpli_intra_pick_tuned(n, m, maxb, reg, al, be, 0);
        CHECK(cpli_intra_root_sends(n, maxb) == sends, "root sends at n=%d: %zu, not %zu", n,
              cpli_intra_root_sends(n, maxb), sends);
        CHECK((a == CPL_INTRA_ROOT) == (n >= 3 && sends <= lim), "intra n=%d maxb %zu: %s", n, maxb,
              cpl_intra_algorithm_name(a));
        CHECK(z == cpli_intra_pick_ab(n, m, maxb, reg, al, be) && z != CPL_INTRA_ROOT,
              "intra n=%d maxb %zu, intra_root_bytes 0: %s", n, maxb, cpl_intra_algorithm_name(z));
      }
  /* 16 KiB of sends: p = 3 up to 4 KiB blocks (2 x 2 x 4K), p = 8 up to
   * 780 B (3 x 7 x 780 = 16380) */
  setenv("CPL_INTRA_ROOT_BYTES", "16K", 1);
  cpli_tuning_refresh();
  CHECK(cpli_intra_pick(3, 3 * 4096, 4096, 1) == CPL_INTRA_ROOT &&
            cpli_intra_pick(3, 3 * 4097, 4097, 1) != CPL_INTRA_ROOT &&
            cpli_intra_pick(8, 8 * 780, 780, 1) == CPL_INTRA_ROOT &&
            cpli_intra_pick(8, 8 * 1024, 1024, 1) != CPL_INTRA_ROOT,
        "CPL_INTRA_ROOT_BYTES=16K: p = 3 at 4 KiB, or p = 8 at 780 B not root, or more taken");
  setenv("CPL_INTRA_ROOT_BYTES", "0", 1);
  cpli_tuning_refresh();
}

/* The broadcast's block count keeps blocks of at least 8 KiB (one block
 * for less) under any model: CPL_BETA=1e300 cut 64 KiB into 1-byte
 * blocks, a call of 27 s. */
static void test_bcast_blocks(void) {
  const size_t sizes[] = {1, 1000, 8191, 8192, 65536, (size_t)1 << 20, (size_t)3 << 30};
  const double ab[][2] = {{2e-5, 2e-8}, {5e-6, 1e-10}, {1e-300, 1e300}, {1e300, 1e-300}};
  for (int p = 2; p <= 64; p *= 2)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
      for (size_t m = 0; m < sizeof ab / sizeof *ab; m++) {
        const long long n = cpli_bcast_nblocks(p, sizes[s], ab[m][0], ab[m][1]);
        const long long most = sizes[s] / 8192 > 0 ? (long long)(sizes[s] / 8192) : 1;
        const long long least = (long long)((sizes[s] + CPLI_MAX_MSG - 1) / CPLI_MAX_MSG);
        CHECK(n >= 1 && n >= least && n <= most, "p %d, %zu bytes, alpha %g beta %g: %lld blocks",
              p, sizes[s], ab[m][0], ab[m][1], n);
      }
}

/* The public entry points refuse shapes the model cannot price, and
 * NULL outputs, instead of dividing by zero or writing through NULL. */
static void test_bad_args(void) {
  cpl_inter_algorithm a = CPL_INTER_FC;
  cpl_intra_algorithm b = CPL_INTRA_RING;
  CHECK(cpl_inter_select(0, 4, 1000, NULL, &a) == CPL_ERR_ARG &&
            strstr(cpl_last_error(), "cpl_inter_select: 0 senders and 4 receivers"),
        "0 senders: %s", cpl_last_error());
  CHECK(cpl_inter_select(3, -4, 1000, NULL, &a) == CPL_ERR_ARG, "negative receivers accepted");
  CHECK(cpl_inter_select(4, 4, 1000, NULL, NULL) == CPL_ERR_ARG, "NULL out accepted");
  CHECK(cpl_inter_select(4, 4, 1000, NULL, &a) == CPL_OK, "a good shape refused");
  CHECK(isnan(cpl_inter_cost(CPL_INTER_FC, 0, 4, 1000, 1e-6, 1e-9)), "fc with p = 0");
  CHECK(isnan(cpl_inter_cost(CPL_INTER_RING, 4, 0, 1000, 1e-6, 1e-9)), "ring with q = 0");
  CHECK(isnan(cpl_inter_cost(CPL_INTER_ROOT, -1, 4, 1000, 1e-6, 1e-9)), "root with p = -1");
  CHECK(isnan(cpl_intra_cost(CPL_INTRA_CIRCULANT, 0, 1000, 1e-6, 1e-9)), "circulant with p = 0");
  CHECK(isnan(cpl_intra_cost(CPL_INTRA_BRUCK, -5, 1000, 1e-6, 1e-9)), "bruck with p = -5");
  CHECK(cpl_inter_cost(CPL_INTER_FC, 4, 4, 1000, 1e-6, 1e-9) > 0, "fc 4|4 has a cost");
  CHECK(cpl_inter_algorithm_parse("fc", NULL) == CPL_ERR_ARG &&
            strstr(cpl_last_error(), "cpl_inter_algorithm_parse: out is NULL"),
        "inter parse into NULL: %s", cpl_last_error());
  CHECK(cpl_intra_algorithm_parse("ring", NULL) == CPL_ERR_ARG, "intra parse into NULL");
  CHECK(cpl_intra_algorithm_parse("ring", &b) == CPL_OK && b == CPL_INTRA_RING, "intra parse");
}

int main(void) {
  test_bad_args();
  unsetenv("CPL_ALPHA");
  unsetenv("CPL_BETA");
  unsetenv("CPL_INTER_ALGORITHM");
  unsetenv("CPL_INTRA_ALGORITHM");
  setenv("CPL_INTER_ROOT_MAX", "0", 1); /* whatever a tuning file says */
  setenv("CPL_INTRA_ROOT_BYTES", "0", 1);
  set_env(0);
  test_tables();
  test_intra_no_bruck();
  test_inter();
  test_direct_ring();
  test_chains();
  test_two_hop();
  test_pick_memo();
  test_ring_floor();
  test_root_rule();
  test_bcast_blocks();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures != 0;
}
