/*
 * Algorithm selection: the environment's overrides and `auto`,
 * which takes the cheapest algorithm under the alpha-beta model (the
 * formulas: coll/cost.c).
 *
 * For the inter-group operation `auto` weighs every row but ring (for
 * ring networks): on the fully connected networks Coupler assumes it
 * takes two-hop for p > q and q = 1, fc for p = q with medium blocks,
 * chains or two-hop for p < q with large blocks, direct-ring for one
 * sender and many receivers. Both groups
 * must pick the same algorithm, and senders of an allgatherv do not know
 * the other senders' sizes, so the inter-group choice depends on p, q and
 * a byte size both sides know: the exact total for regular calls and calls
 * with one sender, and a nominal 64 KiB per block for other irregular ones
 * (cpli_inter_choose).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"

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

/* The model's formulas divide by the group sizes: no group, no cost. */
double cpl_intra_cost(cpl_intra_algorithm a, int p, size_t bytes, double alpha, double beta) {
  if (p < 1) return NAN;
  cpli_tuning_refresh();
  return cpli_intra_cost(a, p, bytes, alpha, beta);
}

double cpl_inter_cost(cpl_inter_algorithm a, int p, int q, size_t bytes, double alpha,
                      double beta) {
  if (p < 1 || q < 1) return NAN;
  cpli_tuning_refresh();
  return cpli_inter_cost(a, p, q, bytes, alpha, beta);
}

int cpli_inter_requested(const cpl_coll_options *opt, cpl_inter_algorithm *out) {
  cpl_inter_algorithm a = opt ? opt->inter : CPL_INTER_AUTO, env;
  CPLI_TRY(cpli_env_inter(&env));
  if (env != CPL_INTER_AUTO) a = env;
  if (a < 0 || a >= CPL_INTER_COUNT)
    return cpli_fail(CPL_ERR_ARG, "invalid inter-group algorithm %d", (int)a);
  *out = a;
  return CPL_OK;
}

int cpli_inter_select(int p, int q, size_t bytes, const cpl_coll_options *opt,
                      cpl_inter_algorithm *out) {
  cpl_inter_algorithm a;
  CPLI_TRY(cpli_inter_requested(opt, &a));
  if (a == CPL_INTER_AUTO) a = cpli_inter_pick(p, q, bytes);
  *out = a;
  return CPL_OK;
}

int cpli_inter_choose(int p, int q, size_t block, int regular, const cpl_coll_options *opt,
                      cpl_inter_algorithm *out) {
  regular = regular || p == 1; /* one sender: both sides know its block */
  return cpli_inter_select(p, q, (size_t)p * (regular ? block : CPLI_NOMINAL_BLOCK), opt, out);
}

int cpli_native_to_fc(int by_auto, size_t total) { return by_auto && total > CPLI_NATIVE_MAX; }

int cpli_inter_bytes_algorithm(int p, int q, size_t first, size_t total,
                               const cpl_coll_options *opt, cpl_inter_algorithm *out) {
  cpl_inter_algorithm asked;
  CPLI_TRY(cpli_inter_requested(opt, &asked));
  CPLI_TRY(cpli_inter_choose(p, q, first, 0, opt, out));
  if (*out == CPL_INTER_NATIVE && cpli_native_to_fc(asked == CPL_INTER_AUTO, total))
    *out = CPL_INTER_FC;
  return CPL_OK;
}

void cpli_inter_algs_add(char algs[CPLI_ALGS_LEN], cpl_inter_algorithm a) {
  const char *name = cpl_inter_algorithm_name(a);
  size_t n = strlen(name), len = strlen(algs);
  for (const char *at = algs; (at = strstr(at, name)) != NULL; at += n)
    if ((at == algs || at[-1] == '+') && (at[n] == '\0' || at[n] == '+')) return;
  snprintf(algs + len, CPLI_ALGS_LEN - len, "%s%s", len ? "+" : "", name);
}

int cpli_inter_dataset_algs_add(int p, int q, size_t total, const cpl_coll_options *opt,
                                char algs[CPLI_ALGS_LEN]) {
  /* What the run would do with this environment: a bad CPL_ALPHA (...)
   * or tuning file fails every collective, no algorithm runs. */
  const cpli_tuning *t = cpli_tuning_refresh();
  if (t->file_error) return cpli_fail(CPL_ERR_ENV, "%s", t->file_error);
  cpl_inter_algorithm a;
  CPLI_TRY(cpli_inter_bytes_algorithm(p, q, total, total, opt, &a));
  cpli_inter_algs_add(algs, a);
  return CPL_OK;
}

int cpl_inter_select(int p, int q, size_t bytes, const cpl_coll_options *opt,
                     cpl_inter_algorithm *out) {
  if (!out) return cpli_fail(CPL_ERR_ARG, "cpl_inter_select: out is NULL");
  if (p < 1 || q < 1)
    return cpli_fail(CPL_ERR_ARG, "cpl_inter_select: %d senders and %d receivers (need >= 1 each)",
                     p, q);
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

const char *cpli_inter_forecast(cpl_inter_algorithm file, char *buf, size_t n) {
  cpl_coll_options env;
  cpl_coll_options_init(&env);
  env.inter = file;
  cpl_inter_algorithm ia = file;
  if (cpli_inter_requested(&env, &ia) != CPL_OK)
    snprintf(buf, n, "%s (model: %.100s)", cpl_inter_algorithm_name(file), cpl_last_error());
  else if (ia != file)
    snprintf(buf, n, "%s (CPL_INTER_ALGORITHM; the file says %s)", cpl_inter_algorithm_name(ia),
             cpl_inter_algorithm_name(file));
  else return NULL;
  return buf;
}
