/*
 * cpl-sched fc|direct-ring|two-hop|chains|root: the dataflow plan of an inter-group
 * allgather as the library builds it (coll/fc_plan.c, sched/flow.c,
 * sched/direct_ring.c, sched/two_hop.c, sched/chains.c, sched/root.c), for every rank of a p|q
 * shape with k bytes per sender, and how each stream is cut and why
 * (--explain). No MPI.
 */
#include "tools/explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/fc_plan.h"
#include "coll/tuning.h"
#include "sched/flow.h"

static const char *short_why(int why) {
  switch (why) {
  case CPLI_CUT_FIXED: return "fixed";
  case CPLI_CUT_LAST: return "last";
  case CPLI_CUT_BUSY: return "busy";
  case CPLI_CUT_PORT: return "port";
  case CPLI_CUT_PIPE: return "pipeline";
  case CPLI_CUT_BCAST: return "bcast";
  default: return "?";
  }
}

static const char *human(size_t b, char *buf, size_t n) {
  if (b >= 1048576 && b % 1048576 == 0) snprintf(buf, n, "%zuM", b / 1048576);
  else if (b >= 1024 && b % 1024 == 0) snprintf(buf, n, "%zuK", b / 1024);
  else snprintf(buf, n, "%zu", b);
  return buf;
}

/* One line per (rank, direction, peer, reason, depth, chunk): the streams
 * of a broadcast or ring between two ranks are summed. */
static void explain_rank(int r, int p, cpli_flow *const *plans, int n) {
  const cpli_flow *f = plans[r];
  unsigned char *fwd = NULL, *relay = NULL;
  if (cpli_flow_forwarded(n, plans, r, &fwd, &relay) != CPL_OK) return;
  unsigned char *done = calloc(f->nnote ? f->nnote : 1, 1);
  if (!done) {
    free(fwd), free(relay);
    return;
  }
  for (size_t i = 0; i < f->nnote; i++) {
    if (done[i]) continue;
    const cpli_fnote *a = &f->note[i];
    size_t bytes = 0, msgs = 0, streams = 0;
    int nfwd = 0, nrelay = 0;
    for (size_t j = i; j < f->nnote; j++) {
      const cpli_fnote *b = &f->note[j];
      if (done[j] || b->send != a->send || b->peer != a->peer || b->why != a->why ||
          b->depth != a->depth || b->chunk != a->chunk)
        continue;
      done[j] = 1;
      bytes += b->bytes, msgs += b->nmsg, streams++;
      nfwd += fwd[j], nrelay += relay[j];
    }
    char hc[32];
    const int peer = a->peer;
#define SOME(x) ((x) == 0 ? "no" : (size_t)(x) == streams ? "yes" : "some")
    printf("%4d %-8s %-4s %4d %-8s %7zu %10zu %-5s %-4s %5d %6zu %7s  %s\n", r,
           r < p ? "sender" : "receiver", a->send ? "send" : "recv", peer,
           peer < p ? "sender" : "receiver", streams, bytes, SOME(nrelay), SOME(nfwd), a->depth,
           msgs, a->chunk ? human(a->chunk, hc, sizeof hc) : "whole", short_why(a->why));
  }
  free(done);
  free(fwd), free(relay);
}

int cpli_explain_inter(const char *alg, int p, int q, size_t k, int explain, int check,
                       int header) {
  const int n = p + q, fc = !strcmp(alg, "fc"), two_hop = !strcmp(alg, "two-hop"),
            chains = !strcmp(alg, "chains"), root = !strcmp(alg, "root");
  const cpli_inter_plan_fn build = fc        ? cpli_flow_fc
                                   : two_hop ? cpli_flow_two_hop
                                   : chains  ? cpli_flow_chains
                                   : root    ? cpli_flow_root
                                             : cpli_flow_direct_ring;
  cpli_tuning_refresh();
  const cpli_tuning *t = cpli_tuning_now();
  if (t->file_error) {
    fprintf(stderr, "cpl-sched: %s\n", t->file_error);
    return 1;
  }
  const size_t total = (size_t)p * k;
  size_t *counts = malloc(sizeof *counts * (size_t)p), *displs = malloc(sizeof *displs * (size_t)p);
  cpli_flow *plans = calloc((size_t)n, sizeof *plans);
  cpli_flow **pp = malloc(sizeof *pp * (size_t)n);
  if (!counts || !displs || !plans || !pp) {
    fprintf(stderr, "cpl-sched: out of memory\n");
    return 1;
  }
  for (int j = 0; j < p; j++) counts[j] = k, displs[j] = (size_t)j * k;
  int rc = 0;
  cpli_fc_opts o = {0};
  char why[512] = "";
  for (int r = 0; r < n && !rc; r++) {
    pp[r] = &plans[r];
    const int relay = fc && r < p && p > q && r >= q, pure = r < p && !relay;
    if (fc) cpli_fc_plan_opts(p, q, k, total, CPL_INTRA_AUTO, pure, &o);
    else cpli_model_plan_opts(&o);
    if (r == p && header) { /* a receiver's options describe the run */
      char hc[32];
      printf("# %s %d|%d, %zu bytes per sender; alpha %.3g s (%s), beta %.3g s/B (%s, %.1f MB/s),"
             "\n# overhead %.3g s (%s), cut: %s%s%s\n",
             alg, p, q, k, t->alpha, t->alpha_from, t->beta, t->beta_from, 1e-6 / t->beta,
             t->overhead, t->overhead_from, t->chunk ? "fixed at " : "the model",
             t->chunk ? human(t->chunk, hc, sizeof hc) : "",
             t->chunk ? (t->chunk_from[0] == 'f' ? " (tuning file)" : " (CPL_CHUNK)") : "");
      if (fc) {
        /* how each of its streams is cut: the table below */
        printf("# allgather phase: %s", o.ring ? "ring" : "Alg. 7");
        if (p < q)
          printf("; broadcasts: Alg. 6, %lld blocks of %zu bytes", o.nblocks,
                 o.nblocks > 0 ? (k + (size_t)o.nblocks - 1) / (size_t)o.nblocks : k);
      } else if (two_hop) {
        const int h = cpli_two_hop_holders(p, q, k, o.cut.beta);
        const long long fan = cpli_two_hop_fanout(p, q, h);
        printf("# %d holder%s per block; the busiest receiver passes on %lld stream%s", h,
               h == 1 ? "" : "s", fan, fan == 1 ? "" : "s");
        if (cpli_two_hop_admits(p, q, k, &o.cut))
          printf("; a receiver lets %d senders in at once (incast)", CPLI_TWO_HOP_FAN_IN);
      } else if (chains) {
        const int g = cpli_chains_groups(p, q), d = cpli_chains_depth(p, q);
        printf("# %d chain%s of at most %d receiver%s; sender b feeds chain b + round, %d "
               "round%s",
               g, g == 1 ? "" : "s", d, d == 1 ? "" : "s", p, p == 1 ? "" : "s");
      } else if (root) {
        printf("# every block whole to receiver 0, which broadcasts all %zu bytes among the "
               "%d receivers (Alg. 6)",
               total, q);
      } else {
        printf("# sender b's home: receiver floor(b q / p); a ring of the %d receivers", q);
      }
      if (t->file) printf("\n# tuning file: %s", t->file);
      printf("\n");
    }
    if (build(&plans[r], p, q, r, pure ? NULL : counts, pure ? NULL : displs, r < p ? k : 0, &o) !=
            CPL_OK ||
        cpli_flow_resolve(&plans[r], why, sizeof why) != CPL_OK) {
      fprintf(stderr, "cpl-sched: %s %d|%d rank %d: %s\n", alg, p, q, r,
              why[0] ? why : cpl_last_error());
      rc = 1;
    }
  }
  if (!rc && explain) {
    if (header) {
      printf("# per rank, direction and peer: streams, bytes, whether the sending end relays\n"
             "# bytes it receives, whether the receiving end forwards them, pipeline depth,\n"
             "# messages, chunk and why:\n");
      for (int w = CPLI_CUT_FIXED; w <= CPLI_CUT_BCAST; w++)
        printf("#   %-8s %s\n", short_why(w), cpli_cut_why_text(w));
      printf("%4s %-8s %-4s %4s %-8s %7s %10s %-5s %-4s %5s %6s %7s  %s\n", "rank", "role", "dir",
             "peer", "role", "streams", "bytes", "relay", "fwd", "depth", "msgs", "chunk", "why");
    }
    for (int r = 0; r < n; r++) explain_rank(r, p, pp, n);
  } else if (!rc) {
    if (header) printf("rank dir peer bytes\n");
    for (int r = 0; r < n; r++)
      for (size_t i = 0; i < plans[r].nm; i++)
        printf("%d %s %d %zu\n", r, plans[r].m[i].send ? "send" : "recv", plans[r].m[i].peer,
               plans[r].m[i].bytes);
  }
  if (!rc && check) {
    unsigned char **b0 = calloc((size_t)n, sizeof *b0), **b1 = calloc((size_t)n, sizeof *b1);
    int ok = b0 && b1;
    for (int r = 0; r < n && ok; r++) {
      b0[r] = calloc(total + 1, 1);
      b1[r] = r < p ? malloc(k + 1) : NULL;
      ok = b0[r] && (r >= p || b1[r]);
      for (size_t i = 0; ok && r < p && i < k; i++) b1[r][i] = (unsigned char)(r * 31 + i);
      if (ok && fc && r < p && p > q && r >= q) memcpy(b0[r] + displs[r], b1[r], k);
    }
    ok = ok && cpli_flow_simulate(n, pp, b0, b1, why, sizeof why) == 0;
    for (int r = p; r < n && ok; r++)
      for (int j = 0; j < p && ok; j++)
        for (size_t i = 0; i < k && ok; i++)
          if (b0[r][displs[j] + i] != (unsigned char)(j * 31 + i))
            ok = 0, snprintf(why, sizeof why, "receiver %d lacks block %d", r - p, j);
    fprintf(stderr, "%s %d|%d: %zu bytes per sender: %s\n", alg, p, q, k,
            ok ? "valid (simulated, every receiver holds every block)" : why);
    rc = !ok;
    for (int r = 0; b0 && b1 && r < n; r++) free(b0[r]), free(b1[r]);
    free(b0), free(b1);
  }
  for (int r = 0; r < n; r++) cpli_flow_free(&plans[r]);
  free(plans), free(pp), free(counts), free(displs);
  return rc;
}
