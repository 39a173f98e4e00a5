/*
 * cpl-model: the alpha-beta cost model at scale, no MPI needed.
 *
 *   cpl-model [--alpha S] [--beta S_PER_BYTE | --rate MBPS] [--size BYTES]
 *             [--max N] [--check] [--shapes P:Q,...] [--csv FILE]
 *
 * Prints
 *  1. Kang et al. Table I (fully connected): the paper's formulas for root
 *     gathering and the proposed algorithm, their ratio, and Coupler's own
 *     models of fc, root and native (coupler/coll/cost.c) for shapes up
 *     to N|N;
 *  2. Table II (ring): the intra-group ring allgather over p+q processes
 *     against the Kang ring, with the EXACT step count of the schedule
 *     Coupler runs (sched/ring.c), for p = q, p = 2q and 2p = q up to N;
 *  3. circulant allgather/broadcast: ceil(log2 p) rounds per phase for the
 *     real schedules, verified (--check) for the sizes listed;
 *  4. with --shapes, every inter-group algorithm at the given shapes (any
 *     p, q up to the --max limit), the ring with its exact step count.
 * root is Coupler's root gathering, the structure of MPICH's blocking
 * MPI_Allgather on an intercommunicator; native is MPICH's MPI_Iallgatherv
 * (remote gather + local broadcast). --csv writes every modelled time as
 * table,p,q,algorithm,steps,seconds. Parameters default to
 * CPL_ALPHA/CPL_BETA, else the tuning file (see coll/tuning.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"
#include "coll/tuning.h"
#include "coll/tuning_file.h"
#include "sched/circulant.h"
#include "sched/ring.h"
#include "sched/verify.h"
#include "tools/cli.h"

static void usage(FILE *f) {
  fprintf(f, "usage: cpl-model [--alpha SECONDS] [--beta SECONDS_PER_BYTE | --rate MBPS]\n"
             "                 [--size BYTES_PER_PROCESS] [--max N] [--check]\n"
             "                 [--shapes P:Q,...] [--csv FILE]\n"
             "The alpha-beta cost model of Coupler's algorithms at scale (no MPI):\n"
             "Kang et al.'s Tables I (fully connected) and II (ring) against Coupler's\n"
             "models and exact schedules, and the circulant rounds, for p up to --max.\n"
             "  --alpha S    latency per message in seconds (default: $CPL_ALPHA, else\n"
             "               the tuning file's, else the library's default)\n"
             "  --beta S     seconds per byte (default: $CPL_BETA, else the tuning\n"
             "               file's, else the library's)\n"
             "  --rate MBPS  the same as a link rate in MB/s: beta = 1 / (MBPS * 1e6)\n"
             "  --size B     bytes per process, K or M suffix (default 1M)\n"
             "  --max N      largest group size modelled (default 1024, at least 2)\n"
             "  --check      also verify every ring and circulant schedule printed\n"
             "  --shapes L   model every inter-group algorithm at these shapes P:Q\n"
             "               (p, q <= --max)\n"
             "  --csv FILE   also write every modelled time (table,p,q,algorithm,steps,\n"
             "               seconds)\n"
             "  -h, --help     show this help\n"
             "  -V, --version  show the version\n"
             "Exit status: 0 done, 1 a schedule failed or was invalid, 2 usage error\n"
             "(also a bad CPL_ALPHA, CPL_BETA, ... or tuning file).\n");
}

/* 1 if all of s is a finite number (in *out), else 0: strtod also takes
 * "inf" and "1e400", which modelled every time as inf or 0. */
static int number(const char *s, double *out) {
  char *end;
  *out = strtod(s, &end);
  return end != s && *end == '\0' && isfinite(*out);
}

static FILE *csv;

static void row(const char *table, int p, int q, const char *alg, int steps, double t) {
  if (csv) fprintf(csv, "%s,%d,%d,%s,%d,%.9g\n", table, p, q, alg, steps, t);
}

/* Exact steps of the Kang ring schedule Coupler runs, or -1. */
static int ring_steps(int p, int q) {
  cpli_schedule s = {0};
  if (cpli_ring_schedule(p, q, &s) != CPL_OK) return -1;
  int n = s.nsteps;
  cpli_schedule_free(&s);
  return n;
}

/* Largest --size (bytes per process): with --max at most 2^20, p * k
 * stays below 2^60, well inside size_t (and exact in a double). */
#define CPL_MODEL_MAX_SIZE 1099511627776.0 /* 2^40 */

static double lg(double x) { return x > 1 ? log2(x) : 0; }

int main(int argc, char **argv) {
  double alpha, beta, k = 1 << 20;
  int max = 1024, check = 0;
  const char *shapes = NULL, *csvpath = NULL;
  int info = cpli_cli_info("cpl-model", argc, argv, usage);
  if (info >= 0) return info;
  /* A bad CPL_ALPHA (...) or tuning file was taken as the defaults,
   * silently; the library refuses every call with it, so does this. */
  const cpli_tuning *env = cpli_tuning_refresh();
  if (env->file_error) {
    fprintf(stderr, "cpl-model: %s\n", env->file_error);
    return CPLI_CLI_USAGE_ERROR;
  }
  cpli_model_params(&alpha, &beta);
  const char *beta_from = NULL; /* --beta or --rate, whichever was given */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--check")) {
      check = 1;
      continue;
    }
    static const char *const valued[] = {"--alpha", "--beta",   "--rate", "--size",
                                         "--max",   "--shapes", "--csv"};
    int known = 0;
    for (size_t j = 0; j < sizeof valued / sizeof *valued; j++) known |= !strcmp(a, valued[j]);
    if (!known) return cpli_cli_usage_error("cpl-model", usage, "unknown option %s", a);
    if (!v) return cpli_cli_usage_error("cpl-model", usage, "option %s needs a value", a);
    i++;
    double x = 0;
    if (!strcmp(a, "--shapes")) {
      shapes = v;
      continue;
    }
    if (!strcmp(a, "--csv")) {
      csvpath = v;
      continue;
    }
    int ok = number(v, &x) && x > 0;
    /* Two ways to give beta: the one given last won without a word. */
    if (!strcmp(a, "--beta") || !strcmp(a, "--rate")) {
      if (beta_from && strcmp(beta_from, a))
        return cpli_cli_usage_error("cpl-model", usage,
                                    "--beta and --rate both set beta: give one");
      beta_from = a;
    }
    if (!strcmp(a, "--alpha")) alpha = x;
    else if (!strcmp(a, "--beta")) beta = x;
    else if (!strcmp(a, "--rate")) beta = 1 / (x * 1e6);
    else if (!strcmp(a, "--size")) {
      size_t b = 0; /* p * k must fit size_t for every p <= --max */
      ok = cpli_parse_bytes0(v, &b) == 0 && b <= CPL_MODEL_MAX_SIZE, k = (double)b;
    } else ok = ok && x >= 2 && x <= 1 << 20 && x == (int)x, max = (int)x;
    if (!ok)
      return cpli_cli_usage_error(
          "cpl-model", usage, "bad value for %s: %s%s", a, v,
          strcmp(a, "--size") ? "" : " (bytes per process, 0 to 2^40, K or M suffix)");
  }
  /* Every shape is checked before anything is printed (--max may follow
   * --shapes). */
  if (shapes) {
    char *copy = strdup(shapes);
    int nshape = 0;
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ","), nshape++) {
      int p, q;
      char end;
      if (sscanf(tok, "%d:%d%c", &p, &q, &end) != 2 || p < 1 || q < 1 || p > max || q > max) {
        const int rc = cpli_cli_usage_error("cpl-model", usage,
                                            "bad shape %s (P:Q, 1 <= P, Q <= %d)", tok, max);
        free(copy);
        return rc;
      }
    }
    free(copy);
    if (nshape == 0)
      return cpli_cli_usage_error("cpl-model", usage, "--shapes needs at least one P:Q");
  }
  if (csvpath) {
    if (!(csv = fopen(csvpath, "w"))) {
      fprintf(stderr, "cpl-model: cannot write %s\n", csvpath);
      return 2;
    }
    fprintf(csv, "table,p,q,algorithm,steps,seconds\n");
  }
  printf("# alpha = %.3g s, beta = %.3g s/B (%.1f MB/s), k = %.0f bytes per process\n\n", alpha,
         beta, 1e-6 / beta, k);

  printf("Table I (fully connected). Paper: root = (log p + 2 log q) ts + 4 p k tw,\n"
         "proposed = log p ts + p k tw. Coupler's models in ms (root: Coupler's root\n"
         "gathering = MPICH's blocking MPI_Allgather; native: MPICH's MPI_Iallgatherv);\n"
         "ratio = root / fc, then native / fc.\n");
  printf("%6s %6s %12s %12s %7s %10s %10s %10s %7s %7s\n", "p", "q", "paper root", "paper fc",
         "ratio", "fc", "root", "native", "ratio", "nat/fc");
  for (int p = 2; p <= max; p *= 2) {
    const int qs[] = {p, p / 2 ? p / 2 : 1, p * 2};
    for (int j = 0; j < 3; j++) {
      const int q = qs[j];
      if (q > max || (j == 1 && q == p)) continue;
      const double pr = (lg(p) + 2 * lg(q)) * alpha + 4 * p * k * beta;
      const double pf = lg(p) * alpha + p * k * beta;
      const size_t bytes = (size_t)(p * k);
      const double fc = cpl_inter_cost(CPL_INTER_FC, p, q, bytes, alpha, beta);
      const double root = cpl_inter_cost(CPL_INTER_ROOT, p, q, bytes, alpha, beta);
      const double nat = cpl_inter_cost(CPL_INTER_NATIVE, p, q, bytes, alpha, beta);
      printf("%6d %6d %12.3f %12.3f %7.2f %10.3f %10.3f %10.3f %7.2f %7.2f\n", p, q, pr * 1e3,
             pf * 1e3, pr / pf, fc * 1e3, root * 1e3, nat * 1e3, root / fc, nat / fc);
      row("I", p, q, "paper-root", 0, pr);
      row("I", p, q, "paper-fc", 0, pf);
      row("I", p, q, "fc", 0, fc);
      row("I", p, q, "root", 0, root);
      row("I", p, q, "native", 0, nat);
    }
  }

  printf("\nTable II (ring). Intra-group ring allgather over p+q: (p+q-1)(ts + k tw);\n"
         "Kang ring: (p + q/2)(ts + k tw). steps = the schedule Coupler runs.\n");
  printf("%6s %6s %8s %8s %8s %7s %s\n", "p", "q", "intra", "p+q/2", "steps", "ratio",
         check ? "verified" : "");
  int bad = 0;
  for (int p = 2; p <= max; p *= 2) {
    const int shapes[3][2] = {{p, p}, {p, p / 2}, {p / 2, p}};
    for (int j = 0; j < 3; j++) {
      const int pp = shapes[j][0], qq = shapes[j][1];
      if (pp < 1 || qq < 1) continue;
      cpli_schedule s = {0};
      if (cpli_ring_schedule(pp, qq, &s) != CPL_OK) {
        printf("%6d %6d  %s\n", pp, qq, cpl_last_error());
        bad++;
        continue;
      }
      char verdict[16] = "";
      if (check) {
        char why[256];
        int rc = cpli_ring_verify(pp, qq, &s, why, sizeof why);
        snprintf(verdict, sizeof verdict, "%s", rc ? "INVALID" : "yes");
        bad += rc != 0;
      }
      const int intra = pp + qq - 1;
      printf("%6d %6d %8d %8d %8d %7.3f %s\n", pp, qq, intra, cpli_ring_steps_even(pp, qq),
             s.nsteps, (double)intra / s.nsteps, verdict);
      row("II", pp, qq, "ring-intra", intra, intra * (alpha + k * beta));
      row("II", pp, qq, "ring", s.nsteps, s.nsteps * (alpha + k * beta));
      cpli_schedule_free(&s);
    }
  }
  printf("(large-p limits: p = q 4/3, p = 2q 6/5, 2p = q 3/2; the paper's text says\n"
         " 1.5, 1.14 and 1.6, which its own Table II does not give)\n");

  printf("\nCirculant (Traff): rounds of the real schedules; allgather ceil(log2 p),\n"
         "n-block broadcast ceil(log2 p) + n - 1.\n");
  printf("%6s %6s %10s %s\n", "p", "rounds", "model ms", check ? "verified (n = 1, q + 1)" : "");
  for (int p = 3; p <= max; p = p * 2 + 1) {
    cpli_circ_full f;
    if (cpli_circ_full_init(&f, p) != CPL_OK) {
      printf("%6d  %s\n", p, cpl_last_error());
      bad++;
      continue;
    }
    char verdict[16] = "";
    if (check) {
      char why[256];
      int rc = cpli_circ_verify(&f.c, f.base, f.recv, f.send, 1, why, sizeof why) ||
               cpli_circ_verify(&f.c, f.base, f.recv, f.send, f.c.q + 1, why, sizeof why);
      snprintf(verdict, sizeof verdict, "%s", rc ? "INVALID" : "yes");
      bad += rc != 0;
    }
    const double tc = cpl_intra_cost(CPL_INTRA_CIRCULANT, p, (size_t)(p * k), alpha, beta);
    printf("%6d %6d %10.3f %s\n", p, f.c.q, tc * 1e3, verdict);
    row("circulant", p, 0, "circulant", f.c.q, tc);
    cpli_circ_full_free(&f);
  }

  if (shapes) {
    printf("\nShapes: every inter-group algorithm in ms (ring: the exact steps of its\n"
           "schedule; ring-intra: the intra-group ring over p+q; auto: what auto\n"
           "takes). bound = p k beta.\n");
    const cpli_tuning *t = cpli_tuning_now();
    if (t->inter_root_max)
      printf("auto takes root for blocks up to %zu bytes at p, q >= 2 (inter_root_max, from %s)\n",
             t->inter_root_max, t->inter_root_max_from);
    printf("%6s %6s %9s %9s %9s %9s %9s %9s %9s %9s %9s %7s %7s %8s  %s\n", "p", "q", "bound", "fc",
           "root", "native", "dring", "two-hop", "chains", "ring", "ringintra", "root/fc", "nat/fc",
           "ri/ring", "auto");
    char *copy = strdup(shapes);
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
      int p, q;
      if (sscanf(tok, "%d:%d", &p, &q) != 2 || p < 1 || q < 1 || p > max || q > max) {
        fprintf(stderr, "cpl-model: bad shape %s (P:Q, 1 <= P, Q <= %d)\n", tok, max);
        bad++;
        continue;
      }
      const size_t bytes = (size_t)(p * k);
      const double fc = cpl_inter_cost(CPL_INTER_FC, p, q, bytes, alpha, beta);
      const double root = cpl_inter_cost(CPL_INTER_ROOT, p, q, bytes, alpha, beta);
      const double nat = cpl_inter_cost(CPL_INTER_NATIVE, p, q, bytes, alpha, beta);
      const double dr = cpl_inter_cost(CPL_INTER_DIRECT_RING, p, q, bytes, alpha, beta);
      const double th = cpl_inter_cost(CPL_INTER_TWO_HOP, p, q, bytes, alpha, beta);
      const double ch = cpl_inter_cost(CPL_INTER_CHAINS, p, q, bytes, alpha, beta);
      const int rs = ring_steps(p, q);
      const double ring = rs * (alpha + k * beta), ri = (p + q - 1) * (alpha + k * beta);
      printf(
          "%6d %6d %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %7.2f %7.2f %8.3f  %s\n",
          p, q, p * k * beta * 1e3, fc * 1e3, root * 1e3, nat * 1e3, dr * 1e3, th * 1e3, ch * 1e3,
          ring * 1e3, ri * 1e3, root / fc, nat / fc, ri / ring,
          cpl_inter_algorithm_name(
              cpli_inter_pick_tuned(p, q, bytes, alpha, beta, cpli_tuning_now()->inter_root_max)));
      row("shape", p, q, "bound", 0, p * k * beta);
      row("shape", p, q, "fc", 0, fc);
      row("shape", p, q, "root", 0, root);
      row("shape", p, q, "native", 0, nat);
      row("shape", p, q, "direct-ring", 0, dr);
      row("shape", p, q, "two-hop", 0, th);
      row("shape", p, q, "chains", 0, ch);
      row("shape", p, q, "ring", rs, ring);
      row("shape", p, q, "ring-intra", p + q - 1, ri);
      if (rs < 0) bad++;
    }
    free(copy);
  }
  if (csv) fclose(csv);
  return bad ? 1 : 0;
}
