#include "group/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void cpli_rec_pack(const cpli_rank_rec *r, uint32_t w[CPLI_REC_WORDS]) {
  w[0] = (uint32_t)r->status;
  w[1] = (uint32_t)(r->comp + 2); /* CPLI_COMP_NONE -> 0 */
  w[2] = (uint32_t)(r->hash >> 32);
  w[3] = (uint32_t)r->hash;
}

void cpli_rec_unpack(const uint32_t w[CPLI_REC_WORDS], cpli_rank_rec *r) {
  r->status = (int)w[0];
  r->comp = (int)w[1] - 2;
  r->hash = ((uint64_t)w[2] << 32) | w[3];
}

/* Append "a, b, c" of up to `max` ranks matching pred, then "... (N)". */
static void rank_list(char *buf, size_t size, int nranks, const cpli_rank_rec *recs,
                      int (*pred)(const cpli_rank_rec *, const void *), const void *arg) {
  size_t o = 0;
  int shown = 0, total = 0;
  buf[0] = '\0';
  for (int r = 0; r < nranks; r++) {
    if (!pred(&recs[r], arg)) continue;
    total++;
    if (shown < 8 && o < size) {
      o += (size_t)snprintf(buf + o, size - o, "%s%d", shown ? ", " : "", r);
      shown++;
    }
  }
  if (total > shown && o < size) snprintf(buf + o, size - o, " and %d more", total - shown);
}

static int failed(const cpli_rank_rec *r, const void *a) {
  (void)a;
  return r->status != CPL_OK;
}
static int hash_differs(const cpli_rank_rec *r, const void *a) {
  return r->hash != *(const uint64_t *)a;
}
static int comp_is(const cpli_rank_rec *r, const void *a) { return r->comp == *(const int *)a; }

int cpli_group_agree(const cpli_workflow *wf, int nranks, const cpli_rank_rec *recs, int myrank,
                     const char *myname) {
  char list[256];
  /* 1. The workflow must load everywhere. Every rank returns the status
   * of the lowest failing rank, so all agree on the code. */
  int first = -1;
  for (int r = 0; r < nranks && first < 0; r++)
    if (recs[r].status != CPL_OK) first = r;
  if (first >= 0) {
    int st = recs[first].status;
    if (recs[myrank].status != CPL_OK) {
      /* Keep this rank's own message (it names file:line:col). */
      cpli_error_prefix("cpl_init: ");
      return st;
    }
    rank_list(list, sizeof list, nranks, recs, failed, NULL);
    return cpli_fail(st,
                     "cpl_init: the workflow could not be loaded on rank(s) "
                     "%s (rank %d: %s); see the message on those ranks",
                     list, first, cpl_strerror(st));
  }
  /* 2. Same file contents everywhere (a stale copy on one node). */
  uint64_t h0 = recs[0].hash;
  for (int r = 1; r < nranks; r++) {
    if (recs[r].hash != h0) {
      rank_list(list, sizeof list, nranks, recs, hash_differs, &h0);
      return cpli_fail(CPL_ERR_MISMATCH,
                       "cpl_init: ranks read different workflow files: "
                       "rank(s) %s differ from rank 0 (%s)",
                       list, wf->path);
    }
  }
  /* 3. Every rank names a component of the workflow. */
  for (int r = 0; r < nranks; r++) {
    if (recs[r].comp >= 0 && recs[r].comp < wf->ncomps) continue;
    int which = recs[r].comp;
    rank_list(list, sizeof list, nranks, recs, comp_is, &which);
    char names[512];
    size_t o = 0;
    names[0] = '\0';
    for (int c = 0; c < wf->ncomps && o < sizeof names; c++)
      o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", c ? ", " : "", wf->comps[c].name);
    if (which == CPLI_COMP_NONE)
      return cpli_fail(CPL_ERR_MISMATCH,
                       "cpl_init: rank(s) %s have no component name (pass "
                       "one to cpl_init or set CPL_COMPONENT; components of "
                       "%s: %s)",
                       list, wf->path, names);
    int mine = recs[myrank].comp == which && myname;
    return cpli_fail(CPL_ERR_MISMATCH,
                     "cpl_init: rank(s) %s name a component that is not in "
                     "%s%s%s%s (components: %s)",
                     list, wf->path, mine ? " (this rank: \"" : "", mine ? myname : "",
                     mine ? "\")" : "", names);
  }
  /* 4. Job size and ranks per component. Counted together so the message
   * tells which component is short or over. */
  int *count = calloc((size_t)wf->ncomps, sizeof *count);
  if (!count) return cpli_fail(CPL_ERR_NOMEM, "cpl_init: out of memory");
  for (int r = 0; r < nranks; r++) count[recs[r].comp]++;
  int bad = nranks != wf->total_procs;
  for (int c = 0; c < wf->ncomps; c++) bad |= count[c] != wf->comps[c].nprocs;
  if (bad) {
    char per[1024];
    size_t o = 0;
    for (int c = 0; c < wf->ncomps && o < sizeof per; c++) {
      const cpli_component *k = &wf->comps[c];
      if (count[c] == k->nprocs) continue;
      o += (size_t)snprintf(per + o, sizeof per - o,
                            "%scomponent \"%s\" has %d but nprocs is %d "
                            "(%s:%d:%d)",
                            o ? "; " : "", k->name, count[c], k->nprocs, wf->path,
                            k->nprocs_pos.line, k->nprocs_pos.col);
    }
    free(count);
    if (nranks != wf->total_procs)
      return cpli_fail(CPL_ERR_MISMATCH,
                       "cpl_init: the job has %d processes, workflow \"%s\" "
                       "needs %d: %s",
                       nranks, wf->name, wf->total_procs, per);
    return cpli_fail(CPL_ERR_MISMATCH,
                     "cpl_init: the job's processes do not match the "
                     "components of workflow \"%s\": %s",
                     wf->name, per);
  }
  free(count);
  return CPL_OK;
}

void cpli_group_leaders(const cpli_workflow *wf, int nranks, const cpli_rank_rec *recs,
                        int *leaders) {
  for (int c = 0; c < wf->ncomps; c++) leaders[c] = -1;
  for (int r = 0; r < nranks; r++) {
    int c = recs[r].comp;
    if (c >= 0 && c < wf->ncomps && leaders[c] < 0) leaders[c] = r;
  }
}
