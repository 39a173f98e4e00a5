/*
 * Every rank of a collective must choose alike, so the cost model's values
 * (environment and tuning file, coll/tuning.h) must be equal on all of
 * them: a node reading another tuning file would build another plan and
 * hang its peers until the timeout. Checked once per communicator and
 * link direction, when the engine first uses it (where it already runs a
 * collective to set up), never per call.
 */
#include <stdio.h>

#include "coll/coll.h"
#include "coll/tuning.h"

int cpli_tuning_agree(MPI_Comm comm, const char *where) {
  const cpli_tuning *t = cpli_tuning_now();
  enum { N = 4 };
  const double mine[N] = {t->alpha, t->beta, t->overhead, (double)t->chunk};
  double v[2 * N], r[2 * N];
  for (int i = 0; i < N; i++) v[i] = mine[i], v[N + i] = -mine[i];
  int rc = MPI_Allreduce(v, r, 2 * N, MPI_DOUBLE, MPI_MAX, comm);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Allreduce", "%s: comparing the cost model", where));
  static const char *const name[N] = {"alpha", "beta", "overhead", "chunk"};
  for (int i = 0; i < N; i++)
    if (r[i] != -r[N + i])
      return cpli_fail(CPL_ERR_MISMATCH,
                       "%s: ranks use different cost models (%s from %g to %g; this rank: alpha "
                       "%g from %s, beta %g from %s, overhead %g from %s, chunk %zu from %s, "
                       "tuning file %s): every rank must read the same tuning file and "
                       "CPL_ALPHA, CPL_BETA, CPL_OVERHEAD, CPL_CHUNK",
                       where, name[i], -r[N + i], r[i], t->alpha, t->alpha_from, t->beta,
                       t->beta_from, t->overhead, t->overhead_from, t->chunk, t->chunk_from,
                       t->file ? t->file : "(none)");
  return CPL_OK;
}
