/* Helpers shared by the built-in components (stage, HDF5 sink and source). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "core/error.h"

int cpli_linked_ports(const cpl_context *ctx, cpl_role role, const char ***names, int *n) {
  int nlinks = 0;
  *names = NULL;
  *n = 0;
  CPLI_TRY(cpl_context_link_count(ctx, &nlinks));
  const char **v = malloc((size_t)(nlinks ? nlinks : 1) * sizeof *v);
  if (!v) return cpli_fail(CPL_ERR_NOMEM, "out of memory listing ports");
  int k = 0;
  for (int i = 0; i < nlinks; i++) {
    cpl_link_end e;
    int rc = cpl_context_link(ctx, i, &e);
    if (rc != CPL_OK) {
      free(v);
      return rc;
    }
    if (e.role != role) continue;
    int seen = 0; /* fan-out/fan-in: one port, several links */
    for (int j = 0; j < k && !seen; j++) seen = strcmp(v[j], e.port) == 0;
    if (!seen) v[k++] = e.port;
  }
  *names = v;
  *n = k;
  return CPL_OK;
}

int cpli_block_bytes(int rank, const hsize_t dims[], size_t elem, const char *what, size_t *out) {
  size_t total = elem;
  for (int d = 0; d < rank; d++) {
    if (dims[d] == 0) {
      total = 0;
      continue; /* keep checking: a later huge extent is still an error */
    }
    if (dims[d] > SIZE_MAX || (total && (size_t)dims[d] > SIZE_MAX / total))
      return cpli_fail(CPL_ERR_ARG,
                       "%s: block of %d dimensions is larger "
                       "than memory can address",
                       what, rank);
    total *= (size_t)dims[d];
  }
  *out = total;
  return CPL_OK;
}

void cpli_whoami(const cpl_context *ctx, const char **name, int *rank) {
  MPI_Comm comm;
  *name = "?";
  *rank = -1;
  if (cpl_context_component(ctx, NULL, name) != CPL_OK) *name = "?";
  if (cpl_component_comm(ctx, &comm) == CPL_OK) MPI_Comm_rank(comm, rank);
}

double cpli_agreed_now(MPI_Comm comm) {
  double now = MPI_Wtime();
  MPI_Bcast(&now, 1, MPI_DOUBLE, 0, comm);
  return now;
}
