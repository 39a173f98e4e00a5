/*
 * cpl-sched: print the schedules Coupler runs, so anyone can check them.
 * Usage and output format: usage() below (cpl-sched --help). No MPI is
 * started.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/tuning_file.h"
#include "coupler.h"
#include "sched/circulant.h"
#include "sched/ring.h"
#include "sched/verify.h"
#include "tools/cli.h"
#include "tools/explain.h"

static void usage(FILE *f) {
  fprintf(f, "usage: cpl-sched ring P Q [--check] [--no-header]\n"
             "       cpl-sched circulant P [--check] [--no-header]\n"
             "       cpl-sched fc|direct-ring|two-hop|chains|root P Q [--size BYTES]\n"
             "                 [--explain] [--check] [--no-header]\n"
             "Print the schedules Coupler runs (no MPI is started).\n"
             "  ring P Q       Kang et al.'s ring inter-group allgather, P senders to\n"
             "                 Q receivers: a header line \"step from to message\", then\n"
             "                 one line per transfer (steps from 0; senders 0..P-1,\n"
             "                 receivers P..P+Q-1; message = the sender whose block it is)\n"
             "  circulant P    Traff's circulant allgather on P ranks: a line \"skips\"\n"
             "                 and the skips s0..sq, a header line \"rank side blocks\",\n"
             "                 then per rank r \"r recv b0 ...\" and \"r send b0 ...\"\n"
             "                 (block numbers as in Traff's Table 1)\n"
             "  fc P Q         the dataflow plan of Kang et al.'s fully connected\n"
             "                 allgather, P senders (ranks 0..P-1) to Q receivers (P..),\n"
             "                 --size bytes per sender (default 1M, K/M suffixes), as the\n"
             "                 library builds it with this environment and tuning file\n"
             "                 (CPL_ALPHA, CPL_BETA, CPL_OVERHEAD, CPL_CHUNK,\n"
             "                 CPL_TUNING_FILE): a header, then \"rank dir peer bytes\"\n"
             "                 per message\n"
             "  direct-ring P Q, two-hop P Q, chains P Q, root P Q\n"
             "                 the same for those inter-group algorithms' plans\n"
             "  --explain      fc, direct-ring, two-hop, chains, root: instead of the\n"
             "                 messages, how"
             "                 each stream is cut: per rank, direction and peer the\n"
             "                 streams, bytes, whether the receiving end forwards them,\n"
             "                 the pipeline depth, messages, chunk and why (the reasons\n"
             "                 are listed in the header)\n"
             "  --check        also verify the schedule: verdict on stderr, exit 1 if\n"
             "                 it is invalid\n"
             "  --no-header    data lines only (no header line, no \"skips\" label)\n"
             "  -h, --help     show this help\n"
             "  -V, --version  show the version\n"
             "P and Q: 1 to 1000000 (fc, direct-ring, two-hop, chains, root: 1 to 4096).\n"
             "Exit status: 0 done (and valid), 1 invalid or failed, 2 usage error.\n");
}

static int positive(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end || v < 1 || v > 1000000) return 0;
  *out = (int)v;
  return 1;
}

static int ring(int p, int q, int check, int header) {
  cpli_schedule s = {0};
  if (cpli_ring_schedule(p, q, &s) != CPL_OK) {
    fprintf(stderr, "cpl-sched: %s\n", cpl_last_error());
    return 1;
  }
  if (header) printf("step from to message\n");
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

static int circulant(int p, int check, int header) {
  cpli_circ_full f;
  if (cpli_circ_full_init(&f, p) != CPL_OK) {
    fprintf(stderr, "cpl-sched: %s\n", cpl_last_error());
    return 1;
  }
  const int q = f.c.q;
  if (header) printf("skips ");
  for (int k = 0; k <= q; k++) printf("%d%c", f.c.skips[k], k < q ? ' ' : '\n');
  if (header) printf("rank side blocks\n");
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
  int check = 0, header = 1, n = 0, explain = 0, size_given = 0;
  size_t size = 1 << 20;
  const char *args[3];
  int info = cpli_cli_info("cpl-sched", argc, argv, usage);
  if (info >= 0) return info;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--check")) check = 1;
    else if (!strcmp(a, "--no-header")) header = 0;
    else if (!strcmp(a, "--explain")) explain = 1;
    else if (!strcmp(a, "--size")) {
      if (i + 1 >= argc)
        return cpli_cli_usage_error("cpl-sched", usage, "--size needs a byte count (e.g. 1M)");
      if (cpli_parse_bytes(argv[i + 1], &size)) /* it did not say what was wrong */
        return cpli_cli_usage_error("cpl-sched", usage,
                                    "bad value for --size: %s (a whole number of bytes, 1 "
                                    "to 10^15, with K or M)",
                                    argv[i + 1]);
      i++;
      size_given = 1;
    } else if (a[0] == '-' && a[1])
      return cpli_cli_usage_error("cpl-sched", usage, "unknown option %s", a);
    else if (n < 3) args[n++] = a;
    else return cpli_cli_usage_error("cpl-sched", usage, "unexpected argument %s", a);
  }
  int p, q;
  if (n == 0)
    return cpli_cli_usage_error("cpl-sched", usage, "no schedule given (ring or circulant)");
  /* ring and circulant have no plan to size or explain: the options were
   * ignored without a word. */
  if ((explain || size_given) && (!strcmp(args[0], "ring") || !strcmp(args[0], "circulant")))
    return cpli_cli_usage_error("cpl-sched", usage,
                                "%s is for fc, direct-ring, two-hop, chains, root, not %s",
                                explain ? "--explain" : "--size", args[0]);
  if (!strcmp(args[0], "ring")) {
    if (n != 3) return cpli_cli_usage_error("cpl-sched", usage, "ring takes P and Q");
    if (!positive(args[1], &p) || !positive(args[2], &q))
      return cpli_cli_usage_error("cpl-sched", usage,
                                  "ring %s %s: P and Q must be integers "
                                  "from 1 to 1000000",
                                  args[1], args[2]);
    return ring(p, q, check, header);
  }
  if (!strcmp(args[0], "fc") || !strcmp(args[0], "direct-ring") || !strcmp(args[0], "two-hop") ||
      !strcmp(args[0], "chains") || !strcmp(args[0], "root")) {
    if (n != 3) return cpli_cli_usage_error("cpl-sched", usage, "%s takes P and Q", args[0]);
    if (!positive(args[1], &p) || !positive(args[2], &q) || p > 4096 || q > 4096)
      return cpli_cli_usage_error("cpl-sched", usage,
                                  "%s %s %s: P and Q must be integers from 1 to 4096", args[0],
                                  args[1], args[2]);
    return cpli_explain_inter(args[0], p, q, size, explain, check, header);
  }
  if (!strcmp(args[0], "circulant")) {
    if (n != 2) return cpli_cli_usage_error("cpl-sched", usage, "circulant takes P");
    if (!positive(args[1], &p))
      return cpli_cli_usage_error("cpl-sched", usage,
                                  "circulant %s: P must be an integer "
                                  "from 1 to 1000000",
                                  args[1]);
    return circulant(p, check, header);
  }
  return cpli_cli_usage_error("cpl-sched", usage,
                              "unknown schedule %s (ring, circulant, fc, direct-ring or two-hop)",
                              args[0]);
}
