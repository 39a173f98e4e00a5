/*
 * Algorithm selection by the alpha-beta model: sending m bytes between two
 * processes costs alpha + m beta; a process sends one and receives one
 * message at a time (the model of Kang et al. and Traff). Each formula is
 * the one stated at the top of the algorithm's own file.
 *
 * `auto` takes the cheapest algorithm under the model. For the inter-group
 * operation fc is never worse than root or native in either term, and ring
 * is for ring networks, so on the fully connected networks Coupler assumes
 * `auto` resolves to fc; the model is still evaluated, so the choice stays
 * right if the formulas change. Both groups must pick the same algorithm,
 * and senders of an allgatherv do not know the other senders' sizes, so the
 * inter-group choice depends on p, q and a byte size both sides know:
 * the exact total for regular calls, and a nominal 64 KiB per block for
 * irregular ones.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"
#include "coll/intra_circulant.h"

static const char *const inter_names[CPL_INTER_COUNT] = {
    [CPL_INTER_AUTO] = "auto", [CPL_INTER_FC] = "fc", [CPL_INTER_RING] = "ring",
    [CPL_INTER_ROOT] = "root", [CPL_INTER_NATIVE] = "native"};
static const char *const intra_names[CPL_INTRA_COUNT] = {
    [CPL_INTRA_AUTO] = "auto", [CPL_INTRA_CIRCULANT] = "circulant",
    [CPL_INTRA_BRUCK] = "bruck", [CPL_INTRA_RING] = "ring",
    [CPL_INTRA_NATIVE] = "native"};

const char *cpl_inter_algorithm_name(cpl_inter_algorithm a) {
  return a >= 0 && a < CPL_INTER_COUNT ? inter_names[a] : "invalid";
}
const char *cpl_intra_algorithm_name(cpl_intra_algorithm a) {
  return a >= 0 && a < CPL_INTRA_COUNT ? intra_names[a] : "invalid";
}

static int parse(const char *name, const char *const *names, int n,
                 const char *what, int *out) {
  if (name)
    for (int i = 0; i < n; i++)
      if (strcmp(name, names[i]) == 0) return *out = i, CPL_OK;
  char list[256] = "";
  for (int i = 0; i < n; i++) {
    strncat(list, names[i], sizeof list - strlen(list) - 1);
    if (i + 1 < n) strncat(list, "|", sizeof list - strlen(list) - 1);
  }
  return cpli_fail(CPL_ERR_ARG, "unknown %s algorithm \"%s\" (expected %s)", what,
                   name ? name : "(null)", list);
}

int cpl_inter_algorithm_parse(const char *name, cpl_inter_algorithm *out) {
  int v;
  CPLI_TRY(parse(name, inter_names, CPL_INTER_COUNT, "inter-group", &v));
  *out = (cpl_inter_algorithm)v;
  return CPL_OK;
}

int cpl_intra_algorithm_parse(const char *name, cpl_intra_algorithm *out) {
  int v;
  CPLI_TRY(parse(name, intra_names, CPL_INTRA_COUNT, "intra-group", &v));
  *out = (cpl_intra_algorithm)v;
  return CPL_OK;
}

/* An algorithm named in the environment (empty: none); a bad name is
 * CPL_ERR_ENV naming the variable. */
static int env_alg(const char *var, const char *v, int (*parse_fn)(const char *, void *),
                   void *out) {
  if (!*v) return CPL_OK;
  if (parse_fn(v, out) != CPL_OK) {
    cpli_error_prefix("%s: ", var);
    return CPL_ERR_ENV;
  }
  return CPL_OK;
}

static int parse_inter_v(const char *s, void *o) { return cpl_inter_algorithm_parse(s, o); }
static int parse_intra_v(const char *s, void *o) { return cpl_intra_algorithm_parse(s, o); }

int cpli_env_inter(cpl_inter_algorithm *out) {
  *out = CPL_INTER_AUTO;
  return env_alg("CPL_INTER_ALGORITHM", cpli_tuning_now()->inter, parse_inter_v, out);
}

int cpli_env_intra(cpl_intra_algorithm *out) {
  *out = CPL_INTRA_AUTO;
  return env_alg("CPL_INTRA_ALGORITHM", cpli_tuning_now()->intra, parse_intra_v, out);
}

void cpli_model_params(double *alpha, double *beta) {
  const cpli_tuning *t = cpli_tuning_now();
  *alpha = t->alpha;
  *beta = t->beta;
}

size_t cpli_flow_chunk(void) { return cpli_tuning_now()->chunk; }

int cpli_flow_enabled(void) { return cpli_tuning_now()->flow; }

int cpli_alg7_startups(const cpli_circ *c) {
  return cpli_flow_enabled() ? cpli_circ_alg7_depth(c) : c->q;
}

int cpli_ring_preferred_ab(const cpli_circ *c, size_t total, double alpha, double beta) {
  const int e = cpli_tuning_now()->ring;
  if (e >= 0) return e;
  const int g = c->p;
  if (g <= 2) return 0; /* one exchange either way */
  return (g - 1 - cpli_alg7_startups(c)) * alpha <=
         CPLI_RING_SHARE * beta * (double)total * (g - 1) / g;
}

int cpli_ring_preferred(int g, size_t total) {
  double alpha, beta;
  cpli_model_params(&alpha, &beta);
  cpli_circ c;
  if (cpli_circ_init(&c, g) != CPL_OK) return 0;
  return cpli_ring_preferred_ab(&c, total, alpha, beta);
}

int cpli_chain_preferred(int g, size_t bytes) {
  const int e = cpli_tuning_now()->fc_chain;
  if (e >= 0) return e;
  (void)g;
  (void)bytes;
  return 0;
}

int cpli_ceil_log2(long n) {
  int k = 0;
  while ((1L << k) < n) k++;
  return k;
}

/* Round-optimal n-block broadcast of m bytes among g processes with the
 * best n: (L + n - 1)(alpha + beta m / n), L = ceil(log2 g). */
static double bcast_pipelined(int g, double m, double alpha, double beta) {
  const int L = cpli_ceil_log2(g);
  if (L == 0) return 0;
  double n = (L > 1 && m > 0) ? sqrt(beta * m * (L - 1) / alpha) : 1;
  if (n < 1) n = 1;
  if (n > m && m >= 1) n = m;
  n = floor(n);
  return (L + n - 1) * (alpha + beta * m / n);
}

/* MPICH 4.0's broadcast of m bytes among g processes (MPIR_Bcast_intra_auto
 * and its nonblocking twin): binomial tree below 12 KiB or 8 processes,
 * else scatter then recursive-doubling allgather (below 512 KiB, g a power
 * of two) or ring allgather. */
static double bcast_mpich(int g, double m, double alpha, double beta) {
  if (g <= 1) return 0;
  const int L = cpli_ceil_log2(g);
  if (m < 12288 || g < 8) return L * (alpha + beta * m);
  const double scatter = L * alpha + beta * m * (g - 1) / g;
  if (m < 524288 && (g & (g - 1)) == 0) return 2 * scatter;
  return scatter + (g - 1) * alpha + beta * m * (g - 1) / g;
}

double cpli_intra_cost_v(cpl_intra_algorithm a, int n, size_t bytes, size_t maxb,
                         int regular, double alpha, double beta) {
  if (n <= 1) return 0;
  const int L = cpli_ceil_log2(n);
  const double m = (double)bytes, k = regular ? m / n : (double)maxb;
  switch (a) {
  case CPL_INTRA_CIRCULANT: /* the better of Alg. 7 and Alg. 9 */
    return cpli_circulant_cost(n, bytes, regular ? bytes / (size_t)n : maxb, alpha, beta);
  case CPL_INTRA_BRUCK:
    return L * alpha + beta * (regular ? m - m / n : fmin(m, (double)(n - 1) * k));
  case CPL_INTRA_RING:
    return (n - 1) * (alpha + beta * k);
  case CPL_INTRA_NATIVE:
    /* MPICH: recursive doubling / Bruck below 80 KiB total, ring above. */
    return m < 81920 ? L * alpha + beta * (m - m / n) : (n - 1) * (alpha + beta * k);
  default:
    return INFINITY;
  }
}

cpl_intra_algorithm cpli_intra_pick(int n, size_t bytes, size_t maxb, int regular) {
  double alpha, beta;
  cpli_model_params(&alpha, &beta);
  /* Native last: on a tie Coupler's own algorithm wins. */
  const cpl_intra_algorithm order[] = {CPL_INTRA_CIRCULANT, CPL_INTRA_BRUCK,
                                       CPL_INTRA_RING, CPL_INTRA_NATIVE};
  cpl_intra_algorithm best = order[0];
  double bc = INFINITY;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    double c = cpli_intra_cost_v(order[i], n, bytes, maxb, regular, alpha, beta);
    if (c < bc) bc = c, best = order[i];
  }
  return best;
}

static double intra_cost(cpl_intra_algorithm a, int p, size_t bytes, double alpha,
                         double beta) {
  if (a == CPL_INTRA_AUTO) a = cpli_intra_pick(p, bytes, p ? bytes / p : 0, 1);
  return cpli_intra_cost_v(a, p, bytes, p ? bytes / p : 0, 1, alpha, beta);
}

static double inter_cost(cpl_inter_algorithm a, int p, int q, size_t bytes,
                         double alpha, double beta) {
  const double m = (double)bytes, k = p ? m / p : 0;
  const int Lp = cpli_ceil_log2(p);
  switch (a) {
  case CPL_INTER_FC:
    if (p >= q) /* one inter step, then an allgather among p */
      return alpha + beta * k + intra_cost(CPL_INTRA_AUTO, p, bytes, alpha, beta);
    return bcast_pipelined(q / p + 1, k, alpha, beta) +
           intra_cost(CPL_INTRA_AUTO, p + (q % p ? (q % p + q / p - 1) / (q / p) : 0),
                      bytes, alpha, beta);
  case CPL_INTER_RING: {
    /* p + q/2 steps of one block each (even sizes; odd sizes round up). */
    const int pe = p + (p & 1), qe = q + (q & 1);
    return (pe + qe / 2) * (alpha + beta * k);
  }
  case CPL_INTER_ROOT:
    /* MPI_Igatherv to sender 0, one message to receiver 0, MPI_Ibcast */
    return Lp * alpha + beta * (m - k) + alpha + beta * m + bcast_mpich(q, m, alpha, beta);
  case CPL_INTER_NATIVE:
    /* MPICH's MPI_Iallgatherv on an intercommunicator: every sender sends
     * straight to receiver 0 (an intercommunicator gatherv), which then
     * broadcasts locally; no local gather, no root-to-root hop */
    return alpha + beta * m + bcast_mpich(q, m, alpha, beta);
  default:
    return INFINITY;
  }
}

double cpl_intra_cost(cpl_intra_algorithm a, int p, size_t bytes, double alpha,
                      double beta) {
  cpli_tuning_refresh();
  return intra_cost(a, p, bytes, alpha, beta);
}

double cpl_inter_cost(cpl_inter_algorithm a, int p, int q, size_t bytes,
                      double alpha, double beta) {
  cpli_tuning_refresh();
  return inter_cost(a, p, q, bytes, alpha, beta);
}

int cpli_inter_select(int p, int q, size_t bytes, const cpl_coll_options *opt,
                      cpl_inter_algorithm *out) {
  cpl_inter_algorithm a = opt ? opt->inter : CPL_INTER_AUTO, env;
  CPLI_TRY(cpli_env_inter(&env));
  if (env != CPL_INTER_AUTO) a = env;
  if (a < 0 || a >= CPL_INTER_COUNT)
    return cpli_fail(CPL_ERR_ARG, "invalid inter-group algorithm %d", (int)a);
  if (a == CPL_INTER_AUTO) {
    double alpha, beta, best = INFINITY;
    cpli_model_params(&alpha, &beta);
    /* Ring is for ring networks; it is never chosen automatically. */
    const cpl_inter_algorithm order[] = {CPL_INTER_FC, CPL_INTER_ROOT, CPL_INTER_NATIVE};
    for (size_t i = 0; i < 3; i++) {
      double c = inter_cost(order[i], p, q, bytes, alpha, beta);
      if (c < best) best = c, a = order[i];
    }
  }
  *out = a;
  return CPL_OK;
}

int cpl_inter_select(int p, int q, size_t bytes, const cpl_coll_options *opt,
                     cpl_inter_algorithm *out) {
  cpli_tuning_refresh();
  return cpli_inter_select(p, q, bytes, opt, out);
}

int cpli_intra_requested(const cpl_coll_options *opt, cpl_intra_algorithm *out) {
  cpl_intra_algorithm a = opt ? opt->intra : CPL_INTRA_AUTO, env;
  CPLI_TRY(cpli_env_intra(&env));
  if (env != CPL_INTRA_AUTO) a = env;
  if (a < 0 || a >= CPL_INTRA_COUNT)
    return cpli_fail(CPL_ERR_ARG, "invalid intra-group algorithm %d", (int)a);
  *out = a;
  return CPL_OK;
}

int cpl_intra_select(int p, size_t bytes, int regular, const cpl_coll_options *opt,
                     cpl_intra_algorithm *out) {
  cpli_tuning_refresh();
  CPLI_TRY(cpli_intra_requested(opt, out));
  if (*out == CPL_INTRA_AUTO) *out = cpli_intra_pick(p, bytes, p ? bytes / p : 0, regular);
  return CPL_OK;
}
