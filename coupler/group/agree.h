/* The decision every rank takes, identically, before any communicator is
 * split: from one record per rank (gathered with one allgather), either all
 * ranks go ahead or all return the same error. Pure, so it is unit-tested
 * without MPI. */
#ifndef CPLI_GROUP_AGREE_H
#define CPLI_GROUP_AGREE_H

#include <stddef.h>
#include <stdint.h>

#include "workflow/model.h"

/* Component index values besides 0..ncomps-1. */
#define CPLI_COMP_UNKNOWN (-1) /* named a component not in the workflow */
#define CPLI_COMP_NONE (-2)    /* no name: neither argument nor env     */

/* What each rank contributes; sent as CPLI_REC_WORDS uint32 words. */
typedef struct cpli_rank_rec {
  int status;    /* CPL_OK if the workflow loaded on that rank         */
  int comp;      /* component index or CPLI_COMP_*                     */
  uint64_t hash; /* hash of the file bytes (0 if it did not load)      */
} cpli_rank_rec;

#define CPLI_REC_WORDS 4
void cpli_rec_pack(const cpli_rank_rec *r, uint32_t w[CPLI_REC_WORDS]);
void cpli_rec_unpack(const uint32_t w[CPLI_REC_WORDS], cpli_rank_rec *r);

/*
 * Check the records of all `nranks` ranks. `wf` is this rank's model (NULL
 * if its own load failed, in which case recs[myrank].status says so).
 * `myname` is this rank's component name (may be NULL) for messages.
 * Returns CPL_OK or the status all ranks return, with the message set
 * through cpli_fail (so cpl_last_error() shows it). A rank whose own load
 * failed keeps its own message.
 */
int cpli_group_agree(const cpli_workflow *wf, int nranks, const cpli_rank_rec *recs, int myrank,
                     const char *myname);

/* Lowest rank of each component (leaders[ncomps]); requires agreement. */
void cpli_group_leaders(const cpli_workflow *wf, int nranks, const cpli_rank_rec *recs,
                        int *leaders);

#endif
