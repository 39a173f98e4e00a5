/*
 * cpl-sched: print the schedules Coupler runs, so anyone can check them.
 *
 *   cpl-sched ring P Q      one line per transfer: <step> <from> <to> <message>
 *                           (steps from 0; senders 0..P-1, receivers P..P+Q-1;
 *                           message = index of the sender whose block it is)
 *   cpl-sched circulant P   first line the skips, then per rank r the lines
 *                           "<r> recv <b0> ..." and "<r> send <b0> ...",
 *                           block numbers as in Traff's Table 1
 *   --check                 also verify the schedule; verdict on stderr,
 *                           exit 1 if it is invalid
 * No MPI is started.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coupler.h"
#include "sched/circulant.h"
#include "sched/ring.h"
#include "sched/verify.h"

static void usage(FILE *f) {
  fprintf(f, "usage: cpl-sched ring P Q [--check]\n"
             "       cpl-sched circulant P [--check]\n"
             "       cpl-sched --help | --version\n");
}

static int positive(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end || v < 1 || v > 1000000) return 0;
  *out = (int)v;
  return 1;
}

static int ring(int p, int q, int check) {
  cpli_schedule s = {0};
  if (cpli_ring_schedule(p, q, &s) != CPL_OK) {
    fprintf(stderr, "cpl-sched: %s\n", cpl_last_error());
    return 1;
  }
  for (size_t i = 0; i < s.n; i++)
    printf("%d %d %d %d\n", s.t[i].step, s.t[i].from, s.t[i].to, s.t[i].msg);
  int rc = 0;
  if (check) {
    char why[512];
    rc = cpli_ring_verify(p, q, &s, why, sizeof why) != 0;
    fprintf(stderr, "ring %d %d: %d steps, %zu transfers: %s\n", p, q, s.nsteps, s.n,
            rc ? why : "valid");
  }
  cpli_schedule_free(&s);
  return rc;
}

static int circulant(int p, int check) {
  cpli_circ_full f;
  if (cpli_circ_full_init(&f, p) != CPL_OK) {
    fprintf(stderr, "cpl-sched: %s\n", cpl_last_error());
    return 1;
  }
  const int q = f.c.q;
  for (int k = 0; k <= q; k++) printf("%d%c", f.c.skips[k], k < q ? ' ' : '\n');
  for (int r = 0; r < p; r++) {
    for (int side = 0; side < 2; side++) {
      const int *row = (side ? f.send : f.recv) + (size_t)r * q;
      printf("%d %s", r, side ? "send" : "recv");
      for (int k = 0; k < q; k++) printf(" %d", row[k]);
      printf("\n");
    }
  }
  int rc = 0;
  if (check) {
    char why[512];
    rc = cpli_circ_verify(&f.c, f.base, f.recv, f.send, q + 1, why, sizeof why) != 0;
    fprintf(stderr, "circulant %d: q = %d: %s\n", p, q, rc ? why : "valid");
  }
  cpli_circ_full_free(&f);
  return rc;
}

int main(int argc, char **argv) {
  int check = 0, n = 0;
  const char *args[4];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout), 0;
    if (!strcmp(argv[i], "--version")) return printf("cpl-sched %s\n", CPL_VERSION_STRING), 0;
    if (!strcmp(argv[i], "--check")) check = 1;
    else if (n < 4) args[n++] = argv[i];
    else return usage(stderr), 2;
  }
  int p, q;
  if (n == 3 && !strcmp(args[0], "ring") && positive(args[1], &p) && positive(args[2], &q))
    return ring(p, q, check);
  if (n == 2 && !strcmp(args[0], "circulant") && positive(args[1], &p))
    return circulant(p, check);
  usage(stderr);
  return 2;
}
