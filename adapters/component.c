/*
 * cpl-component: the program cpl-run starts for built-in components
 * (kind: sink, source, stage). The workflow file and the component come
 * from CPL_WORKFLOW and CPL_COMPONENT; everything else from the file.
 * Any failure prints "cpl-component[<component> rank r]: <message>" and
 * aborts the whole job, so a broken built-in never leaves its peers waiting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adapters.h"
#include "builtin.h"
#include "core/error.h"
#include "coupler.h"
#include "tools/cli.h"

static void usage(FILE *f) {
  fprintf(f, "usage: cpl-component\n"
             "Run a Coupler built-in component (kind: sink, source or stage).\n"
             "Started by cpl-run, which sets CPL_WORKFLOW (the workflow file)\n"
             "and CPL_COMPONENT (this process's component); the component's\n"
             "kind and file are read from the workflow file.\n"
             "Output: one line when done, \"cpl-component[<component>]: sink: 20 steps,\n"
             "...\" (steps, bytes, file); CPL_VERBOSE=0 prints nothing on success,\n"
             "CPL_VERBOSE=2 also a line per step (set it in the component's env:).\n"
             "CPL_HDF5_VERBOSE=1 also prints HDF5's own error stacks.\n"
             "Exit status: 0 when every stream has ended; any failure prints\n"
             "\"cpl-component[<component> rank <r>]: <what failed>\" and aborts the job.\n"
             "Options: -h, --help (this text), -V, --version.\n");
}

/* Report and take the job down: peers blocked in a collective or waiting
 * for a step would otherwise sit until their timeouts. */
static void die(const char *name, int rank, int rc) {
  const char *msg = cpl_last_error();
  fprintf(stderr, "cpl-component[%s rank %d]: %s\n", name ? name : "?", rank,
          msg && msg[0] ? msg : cpl_strerror(rc));
  fflush(stderr);
  /* Hydra discards output still in its pipes when the abort tears the job
   * down (seen: about 1 run in 10 lost the message); let it forward ours. */
  nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1); /* not reached */
}

static int run(cpl_context *ctx) {
  int index = -1;
  cpl_component_info info;
  int rc = cpl_context_component(ctx, &index, NULL);
  if (rc == CPL_OK) rc = cpl_workflow_component(cpl_context_workflow(ctx), index, &info);
  if (rc == CPL_OK) rc = cpli_report_init();
  if (rc != CPL_OK) return rc;
  switch (info.kind) {
  case CPL_KIND_SINK: return cpli_hdf5_sink_run(ctx, info.file);
  case CPL_KIND_SOURCE: return cpli_hdf5_source_run(ctx, info.file);
  case CPL_KIND_STAGE: return cpli_stage_run(ctx);
  default:
    return cpli_fail(CPL_ERR_CONFIG,
                     "component \"%s\" (line %d) is not a "
                     "built-in: it has a command, not kind sink, source or "
                     "stage",
                     info.name, info.line);
  }
}

int main(int argc, char **argv) {
  int info = cpli_cli_info("cpl-component", argc, argv, usage);
  if (info >= 0) return info;
  if (argc > 1)
    return cpli_cli_usage_error("cpl-component", usage,
                                "unexpected argument %s "
                                "(it takes none: the workflow file says what to do)",
                                argv[1]);
  MPI_Init(&argc, &argv);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  /* HDF5 errors reach the user through cpl_last_error(), once. */
  const char *verbose = getenv("CPL_HDF5_VERBOSE");
  if (!verbose || strcmp(verbose, "1") != 0) H5Eset_auto2(H5E_DEFAULT, NULL, NULL);

  cpl_context *ctx = NULL;
  int rc = cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx);
  if (rc != CPL_OK) die(getenv("CPL_COMPONENT"), world_rank, rc);
  const char *cname = "?";
  char name[128]; /* a copy: the context's strings go with cpl_finalize */
  int rank = -1;
  cpli_whoami(ctx, &cname, &rank);
  snprintf(name, sizeof name, "%s", cname);
  rc = run(ctx);
  if (rc != CPL_OK) die(name, rank, rc);
  rc = cpl_finalize(ctx);
  if (rc != CPL_OK) die(name, rank, rc);
  MPI_Finalize();
  return 0;
}
