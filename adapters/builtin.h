/*
 * Helpers shared by the built-in components of cpl-component (stage, HDF5
 * sink and source). Everything here is written on the public API of
 * coupler.h.
 */
#ifndef CPLI_BUILTIN_H
#define CPLI_BUILTIN_H

#include "coupler.h"

/* Distinct local ports of this component with a link in role `role`
 * (CPL_SENDER: output ports, CPL_RECEIVER: input ports), in link order.
 * *names is malloc'ed (free it; the strings belong to the context). */
int cpli_linked_ports(const cpl_context *ctx, cpl_role role, const char ***names, int *n);

/* Product of dims[0..rank) times `elem` bytes, or CPL_ERR_ARG naming `what`
 * if it does not fit in size_t. */
int cpli_block_bytes(int rank, const hsize_t dims[], size_t elem, const char *what, size_t *out);

/* This process's component name and rank in it, for messages. */
void cpli_whoami(const cpl_context *ctx, const char **name, int *rank);

/* Rank 0's clock, the same on every rank of comm (collective): link
 * timeouts must expire alike everywhere, since the failure decision is. */
double cpli_agreed_now(MPI_Comm comm);

#endif
