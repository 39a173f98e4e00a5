/*
 * Blocks of 2 GiB and more: one block of 2^31 + 17 bytes (5-byte elements,
 * so counts fit int while bytes do not) through every path, the data
 * checked at sampled positions and byte for byte around 2^31 and the ends.
 * One job runs a script of cases back to back on the same buffers: the big
 * block is allocated and filled once, and before each call a receiver
 * poisons only the bytes it will check (a path that does not deliver them
 * fails), so a case costs little more than its transfer.
 *
 *   test_big TOKEN...       read left to right, on every rank alike:
 *     inter:P:Q             the next cases are inter-group allgathervs,
 *                           world ranks < P sending (rank 0 big, the other
 *                           senders small), the other Q receiving
 *     intra                 the next cases are intra-group allgathervs
 *                           among the first and the last rank (rank 0 big)
 *     ALG                   one call with that algorithm (inter: fc ring
 *                           root native direct-ring chains auto; intra: circulant bruck ring
 *                           native auto)
 *     dropin                the same call through MPI_Allgatherv, which
 *                           libcoupler_mpi (linked in) must take
 *     bcast                 intra-group broadcast of the big block from
 *                           the first to the last rank
 *     lockstep | flow       CPL_FLOW=0 (lockstep executors) from here on |
 *                           back to the dataflow plans
 *
 * "native" named explicitly cannot move it (MPICH's own allgatherv); every
 * rank must then fail with CPL_ERR_UNSUPPORTED before any transfer, never
 * one side waiting for the other. Memory: about 2.2 GB per rank that holds
 * the big block (sending, receiving, or relaying it inside the engine, as
 * fc's second sender of 2|1 does): 4.3 GB on 2 ranks, 6.5 GB on 3.
 * Rank 0 prints each case with its time (information, not checked).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coupler.h"

#define ESIZE 5
static const int BIG = 429496733; /* elements: 2147483665 bytes = 2^31 + 17 */
static const int SMALL = 1001;
#define PERIOD 4093 /* prime: a shifted block shows at once */

static int failures;
static unsigned char base[PERIOD + 4096];

/* Byte i of the block from source s. */
static unsigned char expect_byte(size_t i, int s) {
  return base[(i + (size_t)s * 977) % PERIOD] ^ (unsigned char)((i >> 12) ^ (i >> 20) ^ (i >> 28));
}

static void fill(unsigned char *b, size_t n, int s) {
  for (size_t i = 0; i < n; i += 4096) {
    const size_t len = n - i < 4096 ? n - i : 4096;
    memcpy(b + i, base + (i + (size_t)s * 977) % PERIOD, len);
    const unsigned char x = (unsigned char)((i >> 12) ^ (i >> 20) ^ (i >> 28));
    for (size_t j = 0; j < len; j++) b[i + j] ^= x;
  }
}

/* The bytes of a block that are checked: every 997th, and every one within
 * 64 KiB of its ends and of 2^31. poison != 0 writes a wrong value there
 * (before a call: a path that does not deliver them shows); otherwise
 * counts the bytes that differ from the source's. */
static size_t scan_range(unsigned char *b, size_t n, int s, size_t lo, size_t hi, size_t step,
                         int poison) {
  size_t bad = 0;
  for (size_t i = lo; i < hi && i < n; i += step)
    if (poison) b[i] = (unsigned char)~expect_byte(i, s);
    else bad += b[i] != expect_byte(i, s);
  return bad;
}

static size_t scan(unsigned char *b, size_t n, int s, int poison) {
  const size_t w = 65536, two31 = (size_t)1 << 31;
  size_t bad = scan_range(b, n, s, 0, n, 997, poison);
  bad += scan_range(b, n, s, 0, w, 1, poison);
  if (n > two31) bad += scan_range(b, n, s, two31 - w, two31 + w, 1, poison);
  return bad + scan_range(b, n, s, n > w ? n - w : 0, n, 1, poison);
}

static void check(const char *what, unsigned char *b, size_t n, int s) {
  const size_t bad = scan(b, n, s, 0);
  if (bad) {
    fprintf(stderr, "FAIL %s: block from %d (%zu bytes): %zu wrong bytes\n", what, s, n, bad);
    failures++;
  }
}
static size_t bytes_of(int rank) { return (size_t)(rank == 0 ? BIG : SMALL) * ESIZE; }

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The same outcome on every rank of the job: all CPL_OK, or all want_rc. */
static void agree(const char *what, int rc, int want_rc, double t0) {
  int mine[2] = {rc, -rc}, all[2];
  MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (all[0] != want_rc || -all[1] != want_rc) {
    if (me == 0 || rc != want_rc)
      fprintf(stderr, "FAIL %s: rank %d got %d (%s), want %d on every rank\n", what, me, rc,
              rc ? cpl_last_error() : "ok", want_rc);
    failures++;
  } else if (me == 0) {
    printf("ok   %-30s %6.1f s %s%s\n", what, now() - t0, want_rc ? "refused alike: " : "",
           want_rc ? cpl_last_error() : "");
    fflush(stdout);
  }
}

static MPI_Datatype elem(void) {
  MPI_Datatype t;
  MPI_Type_contiguous(ESIZE, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  return t;
}

/* Options running algorithm `name` (inter or intra); returns the status
 * every rank must get: CPL_ERR_UNSUPPORTED for native, else CPL_OK. */
static int options_for(const char *name, int inter, cpl_coll_options *opt) {
  cpl_coll_options_init(opt);
  opt->timeout = 600; /* not the point here: loaded machines are slow */
  if (!strcmp(name, "auto")) return CPL_OK;
  if ((inter ? cpl_inter_algorithm_parse(name, &opt->inter)
             : cpl_intra_algorithm_parse(name, &opt->intra)) != CPL_OK) {
    fprintf(stderr, "test_big: unknown %s algorithm %s\n", inter ? "inter" : "intra", name);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (inter ? opt->inter != CPL_INTER_NATIVE : opt->intra != CPL_INTRA_NATIVE) return CPL_OK;
  opt->timeout = 60; /* a one-sided wait would end as a timeout, not a refusal */
  return CPL_ERR_UNSUPPORTED;
}

int cpl_mpi_interposed_calls(void); /* libcoupler_mpi: calls it took */

/* A drop-in call's status: it must have returned MPI_SUCCESS and gone
 * through libcoupler_mpi (PMPI cannot move the block). */
static int dropin_rc(const char *what, int mpi_rc, int calls_before) {
  if (mpi_rc != MPI_SUCCESS) return CPL_ERR_MPI;
  if (cpl_mpi_interposed_calls() > calls_before) return CPL_OK;
  fprintf(stderr, "FAIL %s: MPI_Allgatherv did not go through libcoupler_mpi\n", what);
  return CPL_ERR_INTERNAL;
}

/* What the cases of the current phase run on. */
typedef struct {
  int inter;            /* inter:P:Q (else intra, or nothing yet) */
  int p, q;             /* inter: senders, receivers; intra: 2 ranks */
  int member, sender;   /* this rank takes part; sends (inter) */
  int lr;               /* rank in its group (inter) or in comm (intra) */
  MPI_Comm comm, local; /* the intercommunicator or the intra group */
  int counts[64], displs[64];
  size_t total; /* bytes a receiver holds */
} phase;

static MPI_Datatype t;
static int wrank, wsize;
static unsigned char *buf;   /* rank 0's big block at 0 (filled once), or received data */
static unsigned char *small; /* a small sender's own block */

/* buf, allocated when this rank first needs it (sized for every layout);
 * rank 0's block is filled then, once. */
static unsigned char *need_buf(void) {
  if (!buf) {
    buf = malloc(bytes_of(0) + (size_t)(wsize - 1) * bytes_of(1));
    if (!buf) {
      fprintf(stderr, "test_big: rank %d: out of memory for the big block\n", wrank);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (wrank == 0) fill(buf, bytes_of(0), 0);
  }
  return buf;
}

static void layout(phase *ph, int n) {
  ph->total = 0;
  for (int i = 0, at = 0; i < n; i++) {
    ph->counts[i] = i == 0 ? BIG : SMALL;
    ph->displs[i] = at; /* in elements: fits int */
    at += ph->counts[i];
    ph->total += bytes_of(i);
  }
}

static void phase_end(phase *ph) {
  if (ph->comm != MPI_COMM_NULL) MPI_Comm_free(&ph->comm);
  if (ph->local != MPI_COMM_NULL) MPI_Comm_free(&ph->local);
  *ph = (phase){.comm = MPI_COMM_NULL, .local = MPI_COMM_NULL};
}

static void inter_begin(phase *ph, const char *tok) {
  phase_end(ph);
  if (sscanf(tok, "inter:%d:%d", &ph->p, &ph->q) != 2 || ph->p < 1 || ph->q < 1 ||
      ph->p + ph->q != wsize || ph->p > 64) {
    fprintf(stderr, "test_big: %s: want inter:P:Q with P+Q = %d ranks\n", tok, wsize);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  ph->inter = ph->member = 1;
  ph->sender = wrank < ph->p;
  MPI_Comm_split(MPI_COMM_WORLD, ph->sender, wrank, &ph->local);
  MPI_Intercomm_create(ph->local, 0, MPI_COMM_WORLD, ph->sender ? ph->p : 0, 11, &ph->comm);
  MPI_Comm_rank(ph->local, &ph->lr);
  layout(ph, ph->p);
  if (ph->sender && ph->lr > 0) {
    free(small);
    small = malloc(bytes_of(ph->lr));
    fill(small, bytes_of(ph->lr), ph->lr);
  }
  if (!ph->sender || ph->lr == 0) need_buf();
}

/* The first and the last rank of the job (rank 0 has the big block). */
static void intra_begin(phase *ph) {
  phase_end(ph);
  ph->member = wrank == 0 || wrank == wsize - 1;
  MPI_Comm_split(MPI_COMM_WORLD, ph->member ? 0 : MPI_UNDEFINED, wrank, &ph->comm);
  ph->p = 2;
  if (!ph->member) return;
  MPI_Comm_rank(ph->comm, &ph->lr);
  layout(ph, 2);
  need_buf();
}

static void inter_case(const phase *ph, const char *alg, int dropin) {
  char what[64];
  snprintf(what, sizeof what, "%sinter %d|%d %s", dropin ? "dropin " : "", ph->p, ph->q, alg);
  cpl_coll_options opt;
  const int want = dropin ? CPL_OK : options_for(alg, 1, &opt);
  const int calls = dropin ? cpl_mpi_interposed_calls() : 0;
  if (!ph->sender && !want)
    for (int i = 0; i < ph->p; i++) scan(buf + (size_t)ph->displs[i] * ESIZE, bytes_of(i), i, 1);
  unsigned char *own = ph->sender ? (ph->lr == 0 ? buf : small) : NULL;
  const double t0 = now();
  int rc;
  if (dropin) {
    /* Both directions at once; the receivers contribute nothing. */
    static const int zero[64];
    rc =
        MPI_Allgatherv(own, ph->sender ? ph->counts[ph->lr] : 0, t, ph->sender ? NULL : buf,
                       ph->sender ? zero : ph->counts, ph->sender ? zero : ph->displs, t, ph->comm);
    rc = dropin_rc(what, rc, calls);
  } else if (ph->sender) {
    rc = cpl_inter_allgatherv(own, ph->counts[ph->lr], t, NULL, NULL, NULL, t, CPL_SENDER, ph->comm,
                              &opt);
  } else {
    rc = cpl_inter_allgatherv(NULL, 0, t, buf, ph->counts, ph->displs, t, CPL_RECEIVER, ph->comm,
                              &opt);
  }
  agree(what, rc, want, t0);
  if (rc == CPL_OK && !ph->sender)
    for (int i = 0; i < ph->p; i++)
      check(what, buf + (size_t)ph->displs[i] * ESIZE, bytes_of(i), i);
}

static void intra_case(const phase *ph, const char *alg, int dropin) {
  char what[64];
  snprintf(what, sizeof what, "%sintra %s", dropin ? "dropin " : "", alg);
  cpl_coll_options opt;
  const int want = dropin ? CPL_OK : options_for(alg, 0, &opt);
  const double t0 = now();
  int rc = want;
  if (ph->member) {
    const int calls = dropin ? cpl_mpi_interposed_calls() : 0;
    for (int i = 0; i < 2; i++) /* rank 0's block stays; the small one is refilled */
      if (i != ph->lr && !want) scan(buf + (size_t)ph->displs[i] * ESIZE, bytes_of(i), i, 1);
    if (ph->lr > 0) fill(buf + (size_t)ph->displs[ph->lr] * ESIZE, bytes_of(ph->lr), ph->lr);
    if (dropin) {
      rc = MPI_Allgatherv(MPI_IN_PLACE, 0, t, buf, ph->counts, ph->displs, t, ph->comm);
      rc = dropin_rc(what, rc, calls);
    } else {
      rc = cpl_intra_allgatherv(MPI_IN_PLACE, 0, t, buf, ph->counts, ph->displs, t, ph->comm, &opt);
    }
  }
  agree(what, rc, want, t0);
  if (rc == CPL_OK && ph->member)
    for (int i = 0; i < 2; i++) check(what, buf + (size_t)ph->displs[i] * ESIZE, bytes_of(i), i);
}

/* Broadcast of rank 0's block to the last rank. */
static void bcast_case(void) {
  phase ph = {.comm = MPI_COMM_NULL, .local = MPI_COMM_NULL};
  intra_begin(&ph);
  const double t0 = now();
  int rc = CPL_OK;
  if (ph.member) {
    if (ph.lr > 0) scan(buf, bytes_of(0), 0, 1);
    cpl_coll_options opt;
    cpl_coll_options_init(&opt);
    opt.timeout = 600;
    rc = cpl_intra_bcast(buf, BIG, t, 0, ph.comm, &opt);
  }
  agree("bcast", rc, CPL_OK, t0);
  if (rc == CPL_OK && ph.member) check("bcast", buf, bytes_of(0), 0);
  phase_end(&ph);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  for (size_t i = 0; i < sizeof base; i++) base[i] = (unsigned char)(i * 2654435761u >> 13);
  for (size_t i = PERIOD; i < sizeof base; i++) base[i] = base[i - PERIOD];
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  if (wsize < 2 || argc < 2) {
    fprintf(stderr, "usage: test_big [inter:P:Q|intra|bcast|dropin|lockstep|flow|ALG]... "
                    "on 2 or more ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  t = elem();
  phase ph = {.comm = MPI_COMM_NULL, .local = MPI_COMM_NULL};
  for (int a = 1; a < argc; a++) {
    const char *tok = argv[a];
    if (!strncmp(tok, "inter:", 6)) inter_begin(&ph, tok);
    else if (!strcmp(tok, "intra")) intra_begin(&ph);
    else if (!strcmp(tok, "bcast")) bcast_case();
    else if (!strcmp(tok, "lockstep")) setenv("CPL_FLOW", "0", 1);
    else if (!strcmp(tok, "flow")) unsetenv("CPL_FLOW");
    else if (!ph.p) {
      fprintf(stderr, "test_big: %s before inter:P:Q or intra\n", tok);
      MPI_Abort(MPI_COMM_WORLD, 2);
    } else if (ph.inter) inter_case(&ph, tok, !strcmp(tok, "dropin"));
    else intra_case(&ph, tok, !strcmp(tok, "dropin"));
  }
  phase_end(&ph);
  free(buf);
  free(small);
  MPI_Type_free(&t);
  int all;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 1 : 0;
}
