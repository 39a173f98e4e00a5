/*
 * Progress lines (data/report.c) of a component with many links, without a
 * job: 20 links of 3 steps each, all within the rate limit's 250 ms, then
 * each link ends. Every link must print its step 0 and, when it ends, its
 * step 2 "(+1 steps)". A process had 16 slots for links: from the 17th on,
 * links printed nothing at all (a sink fed by 18 producers named 16).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/data.h"
#include "data/report.h"
#include "group/context.h"

#define NLINKS 20

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  cpli_component comp = {.name = "writer"};
  cpli_workflow wf = {.comps = &comp, .ncomps = 1};
  cpl_context ctx = {.wf = &wf, .comm = MPI_COMM_SELF, .nends = NLINKS, .progress = 1};
  cpli_data_state *s;
  if (cpli_data_get(&ctx, &s) != CPL_OK) {
    fprintf(stderr, "progress_links: %s\n", cpl_last_error());
    return 1;
  }
  char path[] = "/tmp/cpl-progress-links-XXXXXX";
  int fd = mkstemp(path), saved = dup(1);
  fflush(stdout);
  dup2(fd, 1); /* the lines go to stdout: catch them */
  char label[NLINKS][32];
  for (int l = 0; l < NLINKS; l++) {
    snprintf(label[l], sizeof label[l], "p%d.out->writer.in", l);
    for (long step = 0; step < 3; step++) {
      cpli_event e = {.link = label[l],
                      .step = step,
                      .mode = "allgather",
                      .t_wait = 1e6,
                      .t_start = 1e6,
                      .t_end = 1e6 + 1000.0 * (double)step};
      cpli_report_step(&ctx, &e);
    }
    cpli_report_flush(&ctx, label[l]);
  }
  fflush(stdout);
  dup2(saved, 1);
  FILE *f = fopen(path, "r");
  char line[1024], want0[700], want2[700];
  int bad = 0;
  for (int l = 0; l < NLINKS; l++) {
    snprintf(want0, sizeof want0, "[writer] %s: step 0 received", label[l]);
    snprintf(want2, sizeof want2, "[writer] %s: step 2 received", label[l]);
    int got0 = 0, got2 = 0;
    rewind(f);
    while (fgets(line, sizeof line, f)) {
      got0 += strncmp(line, want0, strlen(want0)) == 0;
      got2 += strncmp(line, want2, strlen(want2)) == 0 && strstr(line, "(+1 steps)\n") != NULL;
    }
    if (got0 != 1 || got2 != 1) {
      fprintf(stderr, "progress_links: link %s: %d lines of step 0, %d of step 2 (+1 steps)\n",
              label[l], got0, got2);
      bad = 1;
    }
  }
  fclose(f);
  unlink(path);
  if (!bad) printf("progress_links: %d links, each with its first and last step\n", NLINKS);
  MPI_Finalize();
  return bad;
}
