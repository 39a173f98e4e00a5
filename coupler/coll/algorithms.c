/* The algorithm tables (algorithms.h) and their public parse/name calls. */
#include "coll/algorithms.h"

#include <string.h>

#include "coll/cost.h"
#include "core/error.h"

#define ROW(e, name, autopick, restriction, cost, run) [e] = {name, autopick, restriction, cost},
#define NAME(e, name, autopick, restriction, cost, run) [e] = name,
const cpli_inter_alg cpli_inter_algs[CPL_INTER_COUNT] = {[CPL_INTER_AUTO] = {"auto", 0, "", NULL},
                                                         CPLI_INTER_TABLE(ROW)};
const cpli_intra_alg cpli_intra_algs[CPL_INTRA_COUNT] = {[CPL_INTRA_AUTO] = {"auto", 0, "", NULL},
                                                         CPLI_INTRA_TABLE(ROW)};
const char *const cpli_inter_names[CPL_INTER_COUNT] = {[CPL_INTER_AUTO] = "auto",
                                                       CPLI_INTER_TABLE(NAME)};
const char *const cpli_intra_names[CPL_INTRA_COUNT] = {[CPL_INTRA_AUTO] = "auto",
                                                       CPLI_INTRA_TABLE(NAME)};

const char *cpl_inter_algorithm_name(cpl_inter_algorithm a) {
  return a >= 0 && a < CPL_INTER_COUNT ? cpli_inter_names[a] : "invalid";
}
const char *cpl_intra_algorithm_name(cpl_intra_algorithm a) {
  return a >= 0 && a < CPL_INTRA_COUNT ? cpli_intra_names[a] : "invalid";
}

static int parse(const char *name, const char *const *names, int n, const char *what, int *out) {
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
  if (!out) return cpli_fail(CPL_ERR_ARG, "cpl_inter_algorithm_parse: out is NULL");
  CPLI_TRY(parse(name, cpli_inter_names, CPL_INTER_COUNT, "inter-group", &v));
  *out = (cpl_inter_algorithm)v;
  return CPL_OK;
}

int cpl_intra_algorithm_parse(const char *name, cpl_intra_algorithm *out) {
  int v;
  if (!out) return cpli_fail(CPL_ERR_ARG, "cpl_intra_algorithm_parse: out is NULL");
  CPLI_TRY(parse(name, cpli_intra_names, CPL_INTRA_COUNT, "intra-group", &v));
  *out = (cpl_intra_algorithm)v;
  return CPL_OK;
}
