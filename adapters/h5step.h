/* Writing steps to HDF5 in the sink's layout (README.md, "Sink"): used by
 * the sink for every step it receives and by the stage for its drain. */
#ifndef CPLI_H5STEP_H
#define CPLI_H5STEP_H

#include "coupler.h"

typedef struct cpli_h5_steps {
  hid_t file, dxpl;     /* from cpli_h5_file (created)                    */
  int rank, size;       /* each rank writes its rows (cpl_rows_part)    */
  const char *who;      /* component name, for the warning below          */
  int warned_step_attr; /* a producer's own "step" attribute: warned once */
  long steps;           /* written                                        */
  double bytes;         /* of every dataset written, whole arrays         */
} cpli_h5_steps;

/* Write the current step of `in` as group "step_%06ld" under `parent`
 * (`where` names parent in messages, "" for the root; `label` the link):
 * @step, the step's attributes, every dataset with its global dims, the
 * producer's type and its attributes; then flush the file. Collective over
 * the writer's ranks; rank r writes rows cpl_rows_part(dims[0], r, size).
 * rows[i], if rows is not NULL, holds this rank's rows of dataset i in its
 * stored type already; otherwise they are read with cpl_input_get. */
int cpli_h5_write_step(cpli_h5_steps *w, hid_t parent, const char *where, const char *label,
                       cpl_input *in, long step, const void *const *rows);

/* mkdir -p of the directory of `path`: rank 0 of comm creates, every rank
 * gets the outcome (CPL_ERR_IO naming the directory). */
int cpli_h5_make_parent_dirs(const char *path, MPI_Comm comm);

#endif
