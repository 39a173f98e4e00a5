/*
 * Every rank of a collective must choose alike, so the cost model's values
 * (environment and tuning file, coll/tuning.h) must be equal on all of
 * them: a node reading another tuning file would build another plan and
 * hang its peers until the timeout. The same holds for the settings that
 * pick the protocol outright: CPL_INTER_ALGORITHM, CPL_INTRA_ALGORITHM,
 * CPL_FLOW and CPL_RING (ranks running different algorithms wait for
 * messages that never come, and the timeout then blames a "dead" peer).
 * Checked once per communicator and link direction, when the engine first
 * uses it (where it already runs a collective to set up), never per call;
 * a mismatch is CPL_ERR_MISMATCH naming the setting and the ranks' values.
 */
#include <stdio.h>
#include <string.h>

#include "coll/algorithms.h"
#include "coll/coll.h"
#include "coll/tuning.h"

/* An algorithm variable as a number all ranks compare: 0 for unset or
 * "auto" (the same behaviour), the table index for a known name, -1 for
 * an unknown one (that rank fails with CPL_ERR_ENV when it selects). */
static int alg_code(const char *v, const char *const *names, int n) {
  if (!*v) return 0;
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i])) return i;
  return -1;
}

static const char *alg_text(int code, const char *const *names, int n) {
  return code >= 0 && code < n ? names[code] : "(an unknown name)";
}

static const char *flag_text(int setting, int v) {
  if (setting == 0) return v ? "not 0 (dataflow plans)" : "0 (lockstep)"; /* CPL_FLOW */
  return v < 0 ? "unset (the model's choice)" : v ? "1" : "0";
}

int cpli_tuning_agree(MPI_Comm comm, const char *where, int role) {
  const cpli_tuning *t = cpli_tuning_now();
  enum { NM = 6, NS = 4, N = NM + NS + 1 };
  const int inter = alg_code(t->inter, cpli_inter_names, CPL_INTER_COUNT);
  const int intra = alg_code(t->intra, cpli_intra_names, CPL_INTRA_COUNT);
  const double mine[N] = {t->alpha,
                          t->beta,
                          t->overhead,
                          (double)t->chunk,
                          (double)t->inter_root_max,
                          (double)t->intra_root_bytes,
                          inter,
                          intra,
                          (double)t->flow,
                          (double)t->ring,
                          role};
  double v[2 * N], r[2 * N];
  for (int i = 0; i < N; i++) v[i] = mine[i], v[N + i] = -mine[i];
  int rc = MPI_Allreduce(v, r, 2 * N, MPI_DOUBLE, MPI_MAX, comm);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Allreduce", "%s: comparing the cost model and settings", where));
  /* Both groups of a link passing one role: the merged communicator is
   * not senders first, and each side's plan sends to ranks that send too
   * (ring, root and two-hop returned success on every sender). */
  if (role >= 0 && r[N - 1] == -r[2 * N - 1])
    return cpli_fail(CPL_ERR_MISMATCH,
                     "%s: both groups called as %s: one group must pass CPL_SENDER, the other "
                     "CPL_RECEIVER",
                     where,
                     role == CPL_SENDER ? "senders (CPL_SENDER)" : "receivers (CPL_RECEIVER)");
  static const char *const name[NM] = {"alpha", "beta",           "overhead",
                                       "chunk", "inter_root_max", "intra_root_bytes"};
  for (int i = 0; i < NM; i++)
    if (r[i] != -r[N + i])
      return cpli_fail(CPL_ERR_MISMATCH,
                       "%s: ranks use different cost models (%s from %g to %g; this rank: alpha "
                       "%g from %s, beta %g from %s, overhead %g from %s, chunk %zu from %s, "
                       "inter_root_max %zu from %s, intra_root_bytes %zu from %s, tuning file %s): "
                       "every rank must read the same "
                       "tuning file and CPL_ALPHA, CPL_BETA, CPL_OVERHEAD, CPL_CHUNK, "
                       "CPL_INTER_ROOT_MAX, CPL_INTRA_ROOT_BYTES",
                       where, name[i], -r[N + i], r[i], t->alpha, t->alpha_from, t->beta,
                       t->beta_from, t->overhead, t->overhead_from, t->chunk, t->chunk_from,
                       t->inter_root_max, t->inter_root_max_from, t->intra_root_bytes,
                       t->intra_root_bytes_from, t->file ? t->file : "(none)");
  static const char *const var[NS] = {"CPL_INTER_ALGORITHM", "CPL_INTRA_ALGORITHM", "CPL_FLOW",
                                      "CPL_RING"};
  for (int s = 0; s < NS; s++) {
    const int i = NM + s, lo = (int)-r[N + i], hi = (int)r[i];
    if (lo == hi) continue;
    const char *a, *b, *me;
    if (s < 2) {
      const char *const *names = s == 0 ? cpli_inter_names : cpli_intra_names;
      const int n = s == 0 ? CPL_INTER_COUNT : CPL_INTRA_COUNT;
      a = alg_text(lo, names, n), b = alg_text(hi, names, n);
      me = s == 0 ? t->inter : t->intra;
      if (!*me) me = "unset (auto)";
    } else {
      a = flag_text(s - 2, lo), b = flag_text(s - 2, hi);
      me = flag_text(s - 2, (int)mine[i]);
    }
    return cpli_fail(CPL_ERR_MISMATCH,
                     "%s: ranks set %s differently (values include %s and %s; this rank: %s): "
                     "ranks running different algorithms would wait for each other until the "
                     "timeout; every rank must set the same CPL_INTER_ALGORITHM, "
                     "CPL_INTRA_ALGORITHM, CPL_FLOW and CPL_RING",
                     where, var[s], a, b, me);
  }
  return CPL_OK;
}
