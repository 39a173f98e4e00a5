/*
 * Drop-in test: a plain MPI program (no coupler.h) that calls
 * MPI_Allgather and MPI_Allgatherv, which libcoupler_mpi interposes, and
 * compares every receive buffer byte for byte with PMPI_Allgather(v), the
 * MPI library's own result, on identically pre-filled buffers (so gaps,
 * padding and buffers that must stay untouched are compared too).
 *
 * usage: test_dropin [--expect-interposed] [errors] [mismatch] [intra] [cycle] [verbose]
 *                    [P:Q ...] [create]
 *   P:Q      intercommunicator from MPI_Comm_split: world ranks 0..P-1
 *            against P..P+Q-1 (other ranks idle)
 *   create   intercommunicator from two MPI_Comm_create calls: world ranks
 *            r % 3 == 0 against the rest (interleaved, needs >= 2 ranks)
 *   intra    intracommunicator calls (world and a split half), MPI_IN_PLACE
 *   errors   MPI_ERRORS_RETURN: bad arguments return codes with MPI's class
 *            (inter, and intra on a duplicate of world), nothing aborts
 *   mismatch only the count mismatch of `errors`, on every shape
 *   samesum  MPI_Allgatherv whose blocks differ from the receivers'
 *            recvcounts but add up to the same total: some receiver must
 *            return MPI_ERR_TRUNCATE, under every algorithm
 *   cycle    create, use and free many intercommunicators: the library's
 *            private communicators must be freed with the user's
 *   verbose  CPL_MPI_VERBOSE=1 prints a line naming the algorithm
 *   invalid-comm    MPI_Allgather on an invalid handle, world's handler
 *            fatal: must abort naming MPI_Allgather (checked by ctest)
 *   after-finalize  MPI_Allgather after MPI_Finalize: the same
 *   threads  MPI_THREAD_MULTIPLE: threads call at once on their own
 *            communicators after each communicator's first call
 *   --expect-interposed  fail unless cpl_mpi_interposed_calls() exists and
 *            counts every MPI_Allgather(v) call (i.e. the library is in)
 *
 * On every intercommunicator: MPI_Allgather and MPI_Allgatherv, both
 * directions and one direction only, counts 0, 1, odd and 100000, with
 * MPI_INT, a strided vector type (on the send or the receive side) and a
 * padded struct type; and MPI_BOTTOM with absolute-address types (inter
 * and intra).
 */
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILL 0xA5
#define LARGE 100000

static int failures, checks;
static int expect_interposed;
static int (*interposed_calls)(void);
static int wrank;

static void fail(const char *where, const char *what) {
  failures++;
  fprintf(stderr, "FAIL rank %d: %s: %s\n", wrank, where, what);
}

/* ------------------------------------------------------------- datatypes */

typedef struct rec {
  int a;
  double b;
  char c;
} rec;

enum { K_INT, K_VEC_SEND, K_VEC_RECV, K_STRUCT, K_COUNT };
static const char *kind_name[K_COUNT] = {"int", "vector->int", "int->vector", "struct"};

typedef struct kind {
  MPI_Datatype st, rt;
  int smul, rmul; /* elements per logical unit on each side */
} kind;

static MPI_Datatype pair_t, rec_t;
static kind kinds[K_COUNT];

static void make_types(void) {
  /* pair: two ints three apart, extent six ints: holes inside and after. */
  MPI_Datatype v;
  MPI_Type_vector(2, 1, 3, MPI_INT, &v);
  MPI_Type_create_resized(v, 0, 6 * (MPI_Aint)sizeof(int), &pair_t);
  MPI_Type_free(&v);
  MPI_Type_commit(&pair_t);
  int bl[3] = {1, 1, 1};
  MPI_Aint disp[3] = {offsetof(rec, a), offsetof(rec, b), offsetof(rec, c)};
  MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, s;
  MPI_Type_create_struct(3, bl, disp, ty, &s);
  MPI_Type_create_resized(s, 0, sizeof(rec), &rec_t);
  MPI_Type_free(&s);
  MPI_Type_commit(&rec_t);
  kinds[K_INT] = (kind){MPI_INT, MPI_INT, 1, 1};
  kinds[K_VEC_SEND] = (kind){pair_t, MPI_INT, 1, 2};
  kinds[K_VEC_RECV] = (kind){MPI_INT, pair_t, 2, 1};
  kinds[K_STRUCT] = (kind){rec_t, rec_t, 1, 1};
}

static size_t extent_of(MPI_Datatype t) {
  MPI_Aint lb, ext;
  MPI_Type_get_extent(t, &lb, &ext);
  return (size_t)ext;
}

/* Deterministic bytes, different per sender and call. */
static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  unsigned x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    p[i] = (unsigned char)(x >> 16);
  }
}

/* --------------------------------------------------- interposed wrappers */

static int counted(int before, const char *where) {
  if (!expect_interposed) return 1;
  if (interposed_calls() != before + 1) {
    fail(where, "the call did not go through libcoupler_mpi");
    return 0;
  }
  return 1;
}

static int allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                     MPI_Comm comm, const char *where) {
  int before = expect_interposed ? interposed_calls() : 0;
  int r = MPI_Allgather(sb, sc, st, rb, rc, rt, comm);
  counted(before, where);
  return r;
}

static int allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int *rc,
                      const int *dp, MPI_Datatype rt, MPI_Comm comm, const char *where) {
  int before = expect_interposed ? interposed_calls() : 0;
  int r = MPI_Allgatherv(sb, sc, st, rb, rc, dp, rt, comm);
  counted(before, where);
  return r;
}

/* ----------------------------------------------------- inter-group cases */

typedef struct side {
  MPI_Comm inter;
  int in_a; /* 1 on group A, 0 on group B */
  int lsize, rsize, lrank;
  const char *shape; /* for messages */
} side;

static void compare(const side *s, const char *fn, const char *what, const unsigned char *ref,
                    const unsigned char *got, size_t n, int rc_ref, int rc_got,
                    const unsigned char *sb, const unsigned char *sb_copy, size_t sn) {
  char where[200];
  snprintf(where, sizeof where, "%s %s %s (%s, local rank %d)", s->shape, fn, what,
           s->in_a ? "A" : "B", s->lrank);
  checks++;
  if (rc_ref != MPI_SUCCESS || rc_got != MPI_SUCCESS) {
    fail(where, "a call returned an error");
    return;
  }
  if (memcmp(ref, got, n) != 0) {
    size_t i = 0;
    while (ref[i] == got[i]) i++;
    char msg[120];
    snprintf(msg, sizeof msg, "receive buffer differs from PMPI at byte %zu of %zu", i, n);
    fail(where, msg);
  }
  if (sn && memcmp(sb, sb_copy, sn) != 0) fail(where, "send buffer was modified");
}

/* Reference for struct types on intercommunicators. MPICH 4.0.2's own
 * inter-group MPI_Allgather(v) fails ("Failure during collective" in its
 * remote broadcast) for this padded struct type from a few KB on, so the
 * reference moves MPI_Pack'ed bytes with PMPI_Allgatherv(MPI_BYTE) and
 * MPI_Unpack's them: still MPI's own data movement and typemap handling. */
static int ref_packed(const side *s, const void *sb, int scount, MPI_Datatype st, void *ref,
                      const int *rc, const int *dp, MPI_Datatype rt) {
  int ps = 0, pos = 0;
  MPI_Pack_size(scount, st, s->inter, &ps);
  char *pk = malloc((size_t)ps + 1);
  MPI_Pack(sb, scount, st, pk, ps, &pos, s->inter);
  int *rb = malloc(sizeof(int) * 2 * (size_t)s->rsize), *rd = rb + s->rsize;
  int err = PMPI_Allgather(&pos, 1, MPI_INT, rb, 1, MPI_INT, s->inter);
  long long tot = 0;
  for (int i = 0; i < s->rsize; i++) rd[i] = (int)tot, tot += rb[i];
  char *rp = malloc((size_t)tot + 1);
  if (err == MPI_SUCCESS) err = PMPI_Allgatherv(pk, pos, MPI_BYTE, rp, rb, rd, MPI_BYTE, s->inter);
  for (int i = 0; i < s->rsize && err == MPI_SUCCESS; i++)
    if (rc[i] > 0) {
      int at = 0;
      err = MPI_Unpack(rp + rd[i], rb[i], &at, (char *)ref + (size_t)dp[i] * extent_of(rt), rc[i],
                       rt, s->inter);
    }
  free(pk), free(rb), free(rp);
  return err;
}

/* MPI_Allgather: group A sends cA logical units per rank, B sends cB. */
static void case_allgather(const side *s, int k, int cA, int cB, int call) {
  const kind *K = &kinds[k];
  const int cs = s->in_a ? cA : cB, cr = s->in_a ? cB : cA;
  const int scount = cs * K->smul, rcount = cr * K->rmul;
  const size_t sn = (size_t)scount * extent_of(K->st);
  const size_t rn = (size_t)s->rsize * (size_t)rcount * extent_of(K->rt);
  unsigned char *sb = malloc(sn + 1), *sc = malloc(sn + 1);
  unsigned char *ref = malloc(rn + 1), *got = malloc(rn + 1);
  fill_pattern(sb, sn, (unsigned)(call * 7919 + s->in_a * 131 + s->lrank));
  memcpy(sc, sb, sn);
  memset(ref, FILL, rn + 1);
  memset(got, FILL, rn + 1);
  char what[96];
  snprintf(what, sizeof what, "%s A:%d B:%d", kind_name[k], cA, cB);
  int r1;
  if (k == K_STRUCT) {
    int *rc = malloc(sizeof(int) * 2 * (size_t)s->rsize);
    for (int i = 0; i < s->rsize; i++) rc[i] = rcount, rc[s->rsize + i] = i * rcount;
    r1 = ref_packed(s, sb, scount, K->st, ref, rc, rc + s->rsize, K->rt);
    free(rc);
  } else {
    r1 = PMPI_Allgather(sb, scount, K->st, ref, rcount, K->rt, s->inter);
  }
  int r2 = allgather(sb, scount, K->st, got, rcount, K->rt, s->inter, what);
  compare(s, "MPI_Allgather", what, ref, got, rn + 1, r1, r2, sb, sc, sn);
  free(sb), free(sc), free(ref), free(got);
}

/* Logical count of rank i of group g under pattern pt (Allgatherv). */
enum { V_IRREG, V_A_ONLY, V_B_ONLY, V_ZERO, V_LARGE, V_COUNT };
static const char *vpat_name[V_COUNT] = {"irregular", "A->B only", "B->A only", "all zero",
                                         "large"};

static int vcount(int pt, int g_is_a, int i) {
  const int irr = (i * 7 + 3 + g_is_a) % 5 * 13; /* includes zeros */
  switch (pt) {
  case V_IRREG: return irr;
  case V_A_ONLY: return g_is_a ? irr + 1 : 0;
  case V_B_ONLY: return g_is_a ? 0 : irr + 1;
  case V_ZERO: return 0;
  default: return i == 0 ? LARGE : i * 3 + 1;
  }
}

static void case_allgatherv(const side *s, int k, int pt, int call) {
  const kind *K = &kinds[k];
  const int scount = vcount(pt, s->in_a, s->lrank) * K->smul;
  int *rc = malloc(sizeof(int) * (size_t)s->rsize), *dp = malloc(sizeof(int) * (size_t)s->rsize);
  /* Remote blocks in reverse rank order with a one-element gap each. */
  int at = 1;
  for (int i = s->rsize - 1; i >= 0; i--) {
    rc[i] = vcount(pt, !s->in_a, i) * K->rmul;
    dp[i] = at;
    at += rc[i] + 1;
  }
  const size_t sn = (size_t)scount * extent_of(K->st);
  const size_t rn = (size_t)at * extent_of(K->rt);
  unsigned char *sb = malloc(sn + 1), *sc = malloc(sn + 1);
  unsigned char *ref = malloc(rn), *got = malloc(rn);
  fill_pattern(sb, sn, (unsigned)(call * 7919 + s->in_a * 131 + s->lrank));
  memcpy(sc, sb, sn);
  memset(ref, FILL, rn);
  memset(got, FILL, rn);
  char what[96];
  snprintf(what, sizeof what, "%s %s", kind_name[k], vpat_name[pt]);
  int r1 = k == K_STRUCT ? ref_packed(s, sb, scount, K->st, ref, rc, dp, K->rt)
                         : PMPI_Allgatherv(sb, scount, K->st, ref, rc, dp, K->rt, s->inter);
  int r2 = allgatherv(sb, scount, K->st, got, rc, dp, K->rt, s->inter, what);
  compare(s, "MPI_Allgatherv", what, ref, got, rn, r1, r2, sb, sc, sn);
  /* A direction that delivers nothing leaves the buffer untouched. */
  int total = 0;
  for (int i = 0; i < s->rsize; i++) total += rc[i];
  if (total == 0)
    for (size_t i = 0; i < rn; i++)
      if (got[i] != FILL) {
        fail(what, "buffer of a direction with zero counts was written");
        break;
      }
  free(rc), free(dp), free(sb), free(sc), free(ref), free(got);
}

/* MPI_BOTTOM (NULL in MPICH) with absolute-address datatypes, on the
 * send side, the receive side or both, MPI_Allgather and MPI_Allgatherv:
 * valid MPI, which the library refused (MPI_ERR_BUFFER on
 * intercommunicators; on intracommunicators a NULL buffer error from the
 * engine, then MPICH's MPI_Pack, which refuses a NULL buffer). */
static MPI_Datatype at_address(const void *p, int ints) {
  MPI_Aint a;
  MPI_Get_address(p, &a);
  MPI_Datatype t;
  MPI_Type_create_hindexed(1, &ints, &a, MPI_INT, &t);
  MPI_Type_commit(&t);
  return t;
}

static void case_bottom(const side *s) {
  enum { N = 3 }; /* ints per block */
  int sb[N], sc[N];
  const size_t rn = (size_t)s->rsize * N * sizeof(int) + 1;
  unsigned char *ref = malloc(rn), *got = malloc(rn);
  for (int i = 0; i < N; i++) sb[i] = wrank * 100 + i;
  memcpy(sc, sb, sizeof sb);
  /* A block type at got/ref: element i is block i (extent N ints). */
  MPI_Datatype sbt = at_address(sb, N), rt_got, rt_ref, t;
  t = at_address(got, N);
  MPI_Type_create_resized(t, 0, N * (MPI_Aint)sizeof(int), &rt_got);
  MPI_Type_free(&t);
  t = at_address(ref, N);
  MPI_Type_create_resized(t, 0, N * (MPI_Aint)sizeof(int), &rt_ref);
  MPI_Type_free(&t);
  MPI_Type_commit(&rt_got), MPI_Type_commit(&rt_ref);
  int *cnt = malloc(sizeof(int) * 2 * (size_t)s->rsize), *dsp = cnt + s->rsize;
  for (int i = 0; i < s->rsize; i++) cnt[i] = 1, dsp[i] = s->rsize - 1 - i;
  for (int c = 0; c < 6; c++) {
    const int send_bottom = c % 3 != 1, recv_bottom = c % 3 != 0, v = c >= 3;
    const void *sbuf = send_bottom ? MPI_BOTTOM : sb;
    MPI_Datatype st = send_bottom ? sbt : MPI_INT;
    const int scount = send_bottom ? 1 : N;
    memset(ref, FILL, rn), memset(got, FILL, rn);
    char what[96];
    snprintf(what, sizeof what, "MPI_BOTTOM %s%s", send_bottom ? "send" : "",
             recv_bottom ? " recv" : "");
    int r1, r2;
    if (!v) {
      r1 = PMPI_Allgather(sbuf, scount, st, recv_bottom ? MPI_BOTTOM : ref, recv_bottom ? 1 : N,
                          recv_bottom ? rt_ref : MPI_INT, s->inter);
      r2 = allgather(sbuf, scount, st, recv_bottom ? MPI_BOTTOM : got, recv_bottom ? 1 : N,
                     recv_bottom ? rt_got : MPI_INT, s->inter, what);
    } else {
      /* blocks in reverse order; counts and displacements in rt units */
      if (!recv_bottom)
        for (int i = 0; i < s->rsize; i++) cnt[i] = N, dsp[i] = (s->rsize - 1 - i) * N;
      r1 = PMPI_Allgatherv(sbuf, scount, st, recv_bottom ? MPI_BOTTOM : ref, cnt, dsp,
                           recv_bottom ? rt_ref : MPI_INT, s->inter);
      r2 = allgatherv(sbuf, scount, st, recv_bottom ? MPI_BOTTOM : got, cnt, dsp,
                      recv_bottom ? rt_got : MPI_INT, s->inter, what);
      for (int i = 0; i < s->rsize; i++) cnt[i] = 1, dsp[i] = s->rsize - 1 - i;
    }
    compare(s, v ? "MPI_Allgatherv" : "MPI_Allgather", what, ref, got, rn, r1, r2,
            (const unsigned char *)sb, (const unsigned char *)sc, sizeof sb);
  }
  MPI_Type_free(&sbt), MPI_Type_free(&rt_got), MPI_Type_free(&rt_ref);
  free(cnt), free(ref), free(got);
}

static void run_inter(const side *s) {
  static const int counts[][2] = {{0, 0}, {1, 1}, {37, 5}, {LARGE, LARGE}, {7, 0}, {0, 7}};
  int call = 0;
  for (int k = 0; k < K_COUNT; k++) {
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
      case_allgather(s, k, counts[c][0], counts[c][1], call++);
    for (int pt = 0; pt < V_COUNT; pt++) case_allgatherv(s, k, pt, call++);
  }
  case_bottom(s);
}

/* ------------------------------------------------------ building shapes */

static void split_inter(int P, int Q, side *s, MPI_Comm *inter) {
  int color = wrank < P ? 0 : wrank < P + Q ? 1 : MPI_UNDEFINED;
  MPI_Comm local;
  MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &local);
  *inter = MPI_COMM_NULL;
  if (local == MPI_COMM_NULL) return;
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? P : 0, 1000 + P * 64 + Q, inter);
  MPI_Comm_free(&local);
  s->inter = *inter;
  s->in_a = color == 0;
}

/* Two MPI_Comm_create calls on world groups: r % 3 == 0 against the rest. */
static void create_inter(int wsize, side *s, MPI_Comm *inter) {
  MPI_Group world, ga, gb;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int *a = malloc(sizeof(int) * (size_t)wsize), *b = malloc(sizeof(int) * (size_t)wsize);
  int na = 0, nb = 0;
  for (int r = 0; r < wsize; r++) {
    if (r % 3 == 0) a[na++] = r;
    else b[nb++] = r;
  }
  MPI_Group_incl(world, na, a, &ga);
  MPI_Group_incl(world, nb, b, &gb);
  MPI_Comm ca, cb;
  MPI_Comm_create(MPI_COMM_WORLD, ga, &ca);
  MPI_Comm_create(MPI_COMM_WORLD, gb, &cb);
  const int in_a = wrank % 3 == 0;
  MPI_Comm local = in_a ? ca : cb;
  /* Group B's leader calls in with A's leader, world rank 0, and back. */
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, in_a ? b[0] : a[0], 4242, inter);
  MPI_Comm_free(&local);
  MPI_Group_free(&ga), MPI_Group_free(&gb), MPI_Group_free(&world);
  free(a), free(b);
  s->inter = *inter;
  s->in_a = in_a;
}

static void fill_side(side *s, const char *shape) {
  MPI_Comm_size(s->inter, &s->lsize);
  MPI_Comm_remote_size(s->inter, &s->rsize);
  MPI_Comm_rank(s->inter, &s->lrank);
  s->shape = shape;
}

/* ---------------------------------------------------------- other cases */

/* Counts that do not match (group A sends 4 ints, B expects 2 from each):
 * an error the receivers' handler decides on, MPI_ERRORS_RETURN here, so
 * the call returns instead of aborting the job. With one rank per group
 * every rank returns without a deadline (the failed receiver still sends
 * its own block); in larger groups peers of a failed receiver wait for
 * blocks it will not forward, so a deadline. On a dup of its own:
 * messages left over by the failure die with it. */
static void run_mismatch(const side *s) {
  MPI_Comm bad;
  MPI_Comm_dup(s->inter, &bad);
  MPI_Comm_set_errhandler(bad, MPI_ERRORS_RETURN);
  const int deadline = s->lsize > 1 || s->rsize > 1;
  if (deadline) setenv("CPL_TIMEOUT", "1", 1);
  int sbuf[4] = {1, 2, 3, 4}, *rb = calloc((size_t)s->rsize * 4 + 4, sizeof *rb);
  int rc = s->in_a ? allgather(sbuf, 4, MPI_INT, rb, 4, MPI_INT, bad, "count mismatch")
                   : allgather(sbuf, 2, MPI_INT, rb, 2, MPI_INT, bad, "count mismatch");
  checks++;
  int cls;
  MPI_Error_class(rc, &cls);
  if (!s->in_a && rc == MPI_SUCCESS)
    fail("count mismatch", "the receiving side returned MPI_SUCCESS");
  /* MPI's class for a message longer than the receive, where the
   * receiver is the one that sees it (no forwarding peers). */
  else if (!s->in_a && !deadline && cls != MPI_ERR_TRUNCATE)
    fail("count mismatch", "the receiving side's error class is not MPI_ERR_TRUNCATE");
  if (deadline) unsetenv("CPL_TIMEOUT");
  free(rb);
  MPI_Comm_free(&bad);
}

/* Group A's ranks send 1 and 3 ints alternately (an odd last one 2), B
 * expects 2 from each: the same total, other blocks. Erroneous in MPI;
 * MPICH's MPI_Allgatherv returns MPI_ERR_TRUNCATE. At least one rank of B
 * must too (the others may wait for blocks a failed peer does not forward:
 * a deadline); with MPI_ERRORS_ARE_FATAL that ends the job. B -> A is
 * regular. Needs 2 or more ranks in A. */
static void run_samesum(const side *s) {
  MPI_Comm bad;
  MPI_Comm_dup(s->inter, &bad);
  MPI_Comm_set_errhandler(bad, MPI_ERRORS_RETURN);
  int one = 1, ones[64]; /* first use, both directions: not under the deadline */
  allgather(&one, 1, MPI_INT, ones, 1, MPI_INT, bad, "same total (set-up)");
  setenv("CPL_TIMEOUT", "1", 1);
  const int asize = s->in_a ? s->lsize : s->rsize;
  int sbuf[3] = {7, 8, 9}, cnt[64], dsp[64];
  int *rb = calloc((size_t)s->rsize * 2 + 4, sizeof *rb);
  for (int i = 0; i < s->rsize && i < 64; i++) cnt[i] = 2, dsp[i] = 2 * i;
  const int mine = !s->in_a                                   ? 2
                   : s->lrank == s->lsize - 1 && s->lsize % 2 ? 2
                   : s->lrank % 2                             ? 3
                                                              : 1;
  int rc = allgatherv(sbuf, mine, MPI_INT, rb, cnt, dsp, MPI_INT, bad, "same total");
  int cls = MPI_SUCCESS, saw = 0;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  if (!s->in_a) saw = cls == MPI_ERR_TRUNCATE;
  int seen = 0; /* on A: B's count (an intercommunicator reduces the other group's) */
  MPI_Allreduce(&saw, &seen, 1, MPI_INT, MPI_SUM, s->inter);
  checks++;
  if (asize >= 2 && !seen && s->in_a && s->lrank == 0)
    fail("same total", "no receiver returned MPI_ERR_TRUNCATE for blocks of other sizes");
  unsetenv("CPL_TIMEOUT");
  free(rb);
  MPI_Comm_free(&bad);
}

static void run_errors(const side *s) {
  MPI_Comm_set_errhandler(s->inter, MPI_ERRORS_RETURN);
  int buf[8] = {0}, rbuf[64], cnt[16], dsp[16], cls;
  for (int i = 0; i < 16; i++) cnt[i] = 1, dsp[i] = i;
  cnt[0] = -1;
  struct {
    const char *what;
    int want;
  } cases[] = {{"negative sendcount", MPI_ERR_COUNT},
               {"MPI_IN_PLACE on an intercommunicator", MPI_ERR_ARG},
               {"negative recvcounts entry", MPI_ERR_COUNT},
               {"MPI_DATATYPE_NULL", MPI_ERR_TYPE},
               {"MPI_DATATYPE_NULL, count 0 (MPICH refuses it)", MPI_ERR_TYPE},
               {"uncommitted datatype", MPI_ERR_TYPE}};
  MPI_Datatype loose; /* never committed */
  MPI_Type_contiguous(2, MPI_INT, &loose);
  for (int c = 0; c < 6; c++) {
    int rc;
    switch (c) {
    case 0: rc = allgather(buf, -1, MPI_INT, rbuf, 1, MPI_INT, s->inter, cases[c].what); break;
    case 1:
      rc = allgather(MPI_IN_PLACE, 1, MPI_INT, rbuf, 1, MPI_INT, s->inter, cases[c].what);
      break;
    case 2:
      rc = allgatherv(buf, 1, MPI_INT, rbuf, cnt, dsp, MPI_INT, s->inter, cases[c].what);
      break;
    case 3:
      rc = allgather(buf, 1, MPI_DATATYPE_NULL, rbuf, 1, MPI_INT, s->inter, cases[c].what);
      break;
    case 4:
      rc =
          allgather(buf, 0, MPI_DATATYPE_NULL, rbuf, 0, MPI_DATATYPE_NULL, s->inter, cases[c].what);
      break;
    default: rc = allgather(buf, 1, loose, rbuf, 1, loose, s->inter, cases[c].what);
    }
    checks++;
    MPI_Error_class(rc, &cls);
    if (rc == MPI_SUCCESS) fail(cases[c].what, "returned MPI_SUCCESS");
    else if (cls != cases[c].want) {
      char msg[MPI_MAX_ERROR_STRING + 40];
      int len;
      MPI_Error_string(rc, msg, &len);
      fail(cases[c].what, msg);
    }
  }
  MPI_Type_free(&loose);
  /* The MPI library agrees these are errors. */
  checks++;
  if (PMPI_Allgather(buf, -1, MPI_INT, rbuf, 1, MPI_INT, s->inter) == MPI_SUCCESS)
    fail("PMPI negative sendcount", "MPI accepted it");
  /* And the communicator still works afterwards. */
  case_allgather(s, K_INT, 3, 2, 999);
  MPI_Comm_set_errhandler(s->inter, MPI_ERRORS_ARE_FATAL);
  run_mismatch(s);
}

/* Argument errors on an intracommunicator, where the engine may run the
 * call (CPL_INTRA_ALGORITHM forces it): MPI's error class, the one
 * PMPI_Allgather returns, not the engine's MPI_ERR_ARG. */
static void run_intra_errors(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int p, buf[4] = {1, 2, 3, 4}, *rbuf = malloc(sizeof(int) * 4 * 64);
  MPI_Comm_size(comm, &p);
  static const char *what[] = {"intra sendtype MPI_DATATYPE_NULL",
                               "intra sendbuf NULL",
                               "intra recvbuf NULL",
                               "intra MPI_DATATYPE_NULL, count 0",
                               "intra 4 ints sent, blocks of 2 (MPI_ERR_TRUNCATE)",
                               "intra uncommitted sendtype"};
  MPI_Datatype loose; /* never committed */
  MPI_Type_contiguous(1, MPI_INT, &loose);
  for (int c = 0; c < 6; c++) {
    const void *sb = c == 1 ? NULL : buf;
    void *rb = c == 2 ? NULL : rbuf;
    MPI_Datatype st = c == 0 || c == 3 ? MPI_DATATYPE_NULL : c == 5 ? loose : MPI_INT;
    const int n = c == 3 ? 0 : 4, rn = c == 4 ? 2 : n;
    int want, got;
    MPI_Error_class(PMPI_Allgather(sb, n, st, rb, rn, MPI_INT, comm), &want);
    MPI_Error_class(allgather(sb, n, st, rb, rn, MPI_INT, comm, what[c]), &got);
    checks++;
    if (want == MPI_SUCCESS || got != want) {
      char msg[80];
      snprintf(msg, sizeof msg, "error class %d, PMPI_Allgather's is %d", got, want);
      fail(what[c], msg);
    }
  }
  MPI_Type_free(&loose);
  free(rbuf);
  MPI_Comm_free(&comm);
}

static void run_intra(MPI_Comm comm, const char *name) {
  int p, r;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  side s = {comm, 1, p, p, r, name};
  static const int counts[] = {0, 1, 37, LARGE};
  for (int k = 0; k < K_COUNT; k++) {
    const kind *K = &kinds[k];
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
      const int sc = counts[c] * K->smul, rc = counts[c] * K->rmul;
      const size_t sn = (size_t)sc * extent_of(K->st), re = extent_of(K->rt);
      const size_t rn = (size_t)p * (size_t)rc * re;
      unsigned char *sb = malloc(sn + 1), *cp = malloc(sn + 1);
      unsigned char *ref = malloc(rn + 1), *got = malloc(rn + 1);
      fill_pattern(sb, sn, (unsigned)(r + 17 * (int)c));
      memcpy(cp, sb, sn);
      char what[80];
      /* Regular, from a send buffer. */
      memset(ref, FILL, rn + 1), memset(got, FILL, rn + 1);
      snprintf(what, sizeof what, "%s count %d", kind_name[k], counts[c]);
      int r1 = PMPI_Allgather(sb, sc, K->st, ref, rc, K->rt, comm);
      int r2 = allgather(sb, sc, K->st, got, rc, K->rt, comm, what);
      compare(&s, "MPI_Allgather", what, ref, got, rn + 1, r1, r2, sb, cp, sn);
      /* MPI_IN_PLACE: own block already in recvbuf (same type both ways). */
      if (K->st == K->rt) {
        unsigned char *own = ref + (size_t)r * (size_t)rc * re;
        memset(ref, FILL, rn + 1);
        fill_pattern(own, (size_t)rc * re, (unsigned)(r + 5));
        memcpy(got, ref, rn + 1);
        snprintf(what, sizeof what, "%s count %d in place", kind_name[k], counts[c]);
        r1 = PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref, rc, K->rt, comm);
        r2 = allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, rc, K->rt, comm, what);
        compare(&s, "MPI_Allgather", what, ref, got, rn + 1, r1, r2, NULL, NULL, 0);
      }
      free(sb), free(cp), free(ref), free(got);
    }
    /* Irregular (rank 0 large), reversed blocks, in place and not. */
    int *cnt = malloc(sizeof(int) * (size_t)p), *dsp = malloc(sizeof(int) * (size_t)p), at = 0;
    for (int i = p - 1; i >= 0; i--) {
      cnt[i] = (i == 0 ? LARGE / 2 : (i * 5) % 3 * 11) * K->rmul;
      dsp[i] = at;
      at += cnt[i] + 2;
    }
    const size_t re = extent_of(K->rt), rn = (size_t)at * re;
    const int sc = cnt[r] / K->rmul * K->smul;
    const size_t sn = (size_t)sc * extent_of(K->st);
    unsigned char *sb = malloc(sn + 1), *ref = malloc(rn + 1), *got = malloc(rn + 1);
    fill_pattern(sb, sn, (unsigned)(r * 3 + 1));
    memset(ref, FILL, rn + 1), memset(got, FILL, rn + 1);
    char what[80];
    snprintf(what, sizeof what, "%s irregular", kind_name[k]);
    int r1 = PMPI_Allgatherv(sb, sc, K->st, ref, cnt, dsp, K->rt, comm);
    int r2 = allgatherv(sb, sc, K->st, got, cnt, dsp, K->rt, comm, what);
    compare(&s, "MPI_Allgatherv", what, ref, got, rn + 1, r1, r2, NULL, NULL, 0);
    if (K->st == K->rt) {
      memset(ref, FILL, rn + 1);
      fill_pattern(ref + (size_t)dsp[r] * re, (size_t)cnt[r] * re, (unsigned)(r + 9));
      memcpy(got, ref, rn + 1);
      snprintf(what, sizeof what, "%s irregular in place", kind_name[k]);
      r1 = PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref, cnt, dsp, K->rt, comm);
      r2 = allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, cnt, dsp, K->rt, comm, what);
      compare(&s, "MPI_Allgatherv", what, ref, got, rn + 1, r1, r2, NULL, NULL, 0);
    }
    free(cnt), free(dsp), free(sb), free(ref), free(got);
  }
  case_bottom(&s);
}

/* Many intercommunicators created, used and freed. If the library's
 * private communicators outlived the user's, MPICH would run out of
 * context ids (2046 in MPICH 4.0.2; an iteration would leak at least
 * five) well before the end. */
static void run_cycle(MPI_Comm inter, int iters) {
  for (int it = 0; it < iters; it++) {
    MPI_Comm d;
    MPI_Comm_dup(inter, &d);
    int v = it, out[16];
    int rs;
    MPI_Comm_remote_size(d, &rs);
    int rc = allgather(&v, 1, MPI_INT, out, 1, MPI_INT, d, "cycle");
    checks++;
    if (rc != MPI_SUCCESS || out[rs - 1] != it) {
      fail("cycle", "wrong result");
      MPI_Comm_free(&d);
      return;
    }
    MPI_Comm_free(&d);
  }
}

/* CPL_MPI_VERBOSE=1: the call prints which algorithm ran. Captures this
 * process's stderr in a temporary file for the duration of one call. */
static void run_verbose(const side *s) {
  char path[] = "/tmp/test_dropin_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    fail("verbose", "mkstemp failed");
    return;
  }
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  setenv("CPL_MPI_VERBOSE", "1", 1);
  int v = 1, out[16];
  allgather(&v, 1, MPI_INT, out, 1, MPI_INT, s->inter, "verbose");
  unsetenv("CPL_MPI_VERBOSE");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char text[1024] = "";
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n > 0) text[n] = 0;
  close(fd);
  unlink(path);
  checks++;
  if (!strstr(text, "coupler_mpi: MPI_Allgather inter"))
    fail("CPL_MPI_VERBOSE=1", "no \"coupler_mpi: MPI_Allgather inter\" line on stderr");
  else if (wrank == 0) printf("verbose: %s", text);
}

/* MPI_THREAD_MULTIPLE: after each communicator's first call (made here,
 * one at a time, as README asks), NT threads call at once, each on its
 * own intercommunicator and its own duplicate of world, and check every
 * block. */
#define NT 4
typedef struct thread_arg {
  MPI_Comm inter, intra;
  int t, bad;
} thread_arg;

static int thread_call(thread_arg *a, int it) {
  int rs, p, v[3] = {wrank, it, a->t}, out[3 * 64], bad = 0;
  MPI_Comm_remote_size(a->inter, &rs);
  MPI_Comm_size(a->intra, &p);
  MPI_Comm comm = it % 2 ? a->inter : a->intra;
  const int n = it % 2 ? rs : p;
  if (MPI_Allgather(v, 3, MPI_INT, out, 3, MPI_INT, comm) != MPI_SUCCESS) return 1;
  for (int i = 0; i < n; i++) bad |= out[3 * i + 1] != it || out[3 * i + 2] != a->t;
  return bad;
}

static void *thread_main(void *arg) {
  thread_arg *a = arg;
  for (int it = 1; it <= 100 && !a->bad; it++) a->bad = thread_call(a, it);
  return NULL;
}

static void run_threads(int wsize) {
  const int half = wsize / 2, color = wrank >= half;
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color ? 0 : half, 77, &inter);
  thread_arg a[NT];
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) {
    a[t] = (thread_arg){MPI_COMM_NULL, MPI_COMM_NULL, t, 0};
    MPI_Comm_dup(inter, &a[t].inter);
    MPI_Comm_dup(MPI_COMM_WORLD, &a[t].intra);
    a[t].bad = thread_call(&a[t], 0) | thread_call(&a[t], 1); /* first calls */
  }
  for (int t = 0; t < NT; t++) pthread_create(&th[t], NULL, thread_main, &a[t]);
  for (int t = 0; t < NT; t++) {
    pthread_join(th[t], NULL);
    checks++;
    if (a[t].bad) fail("threads", "a block differs, or a call failed");
    MPI_Comm_free(&a[t].inter), MPI_Comm_free(&a[t].intra);
  }
  MPI_Comm_free(&inter), MPI_Comm_free(&local);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
  int want_threads = 0, provided;
  for (int i = 1; i < argc; i++) want_threads |= !strcmp(argv[i], "threads");
  if (want_threads) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  else MPI_Init(&argc, &argv);
  int wsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  make_types();
  void *self = dlopen(NULL, RTLD_NOW);
  *(void **)&interposed_calls = self ? dlsym(self, "cpl_mpi_interposed_calls") : NULL;
  int want_errors = 0, want_mismatch = 0, want_intra = 0, want_cycle = 0, want_verbose = 0;
  int want_samesum = 0;
  int want_after = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--expect-interposed")) expect_interposed = 1;
    else if (!strcmp(argv[i], "errors")) want_errors = 1;
    else if (!strcmp(argv[i], "mismatch")) want_mismatch = 1;
    else if (!strcmp(argv[i], "samesum")) want_samesum = 1;
    else if (!strcmp(argv[i], "intra")) want_intra = 1;
    else if (!strcmp(argv[i], "cycle")) want_cycle = 1;
    else if (!strcmp(argv[i], "verbose")) want_verbose = 1;
    else if (!strcmp(argv[i], "after-finalize")) want_after = 1;
    else if (!strcmp(argv[i], "invalid-comm")) {
      int v = 1, out[64];
      /* Not a communicator handle in MPICH; MPI aborts the job here. */
      allgather(&v, 1, MPI_INT, out, 1, MPI_INT, (MPI_Comm)0x12345678, "invalid-comm");
    }
  }
  if (expect_interposed && !interposed_calls) {
    if (wrank == 0)
      fprintf(stderr, "FAIL: cpl_mpi_interposed_calls not found: libcoupler_mpi is not loaded\n");
    MPI_Finalize();
    return 1;
  }
  if (wrank == 0)
    printf("test_dropin: %d ranks, libcoupler_mpi %s\n", wsize,
           interposed_calls ? "loaded" : "not loaded");

  int first_done = 0;
  for (int i = 1; i < argc; i++) {
    int P, Q;
    side s = {0};
    MPI_Comm inter = MPI_COMM_NULL;
    char shape[32];
    if (sscanf(argv[i], "%d:%d", &P, &Q) == 2) {
      if (P < 1 || Q < 1 || P + Q > wsize) {
        if (wrank == 0) fprintf(stderr, "skipping %s: needs %d ranks\n", argv[i], P + Q);
        continue;
      }
      split_inter(P, Q, &s, &inter);
      snprintf(shape, sizeof shape, "split %d|%d", P, Q);
    } else if (!strcmp(argv[i], "create") && wsize >= 2) {
      create_inter(wsize, &s, &inter);
      snprintf(shape, sizeof shape, "create %d|%d", (wsize + 2) / 3, wsize - (wsize + 2) / 3);
    } else {
      continue;
    }
    if (inter != MPI_COMM_NULL) {
      fill_side(&s, shape);
      run_inter(&s);
      if (!first_done && want_errors) run_errors(&s);
      if (want_mismatch) run_mismatch(&s);
      if (want_samesum) run_samesum(&s);
      if (!first_done && want_verbose) run_verbose(&s);
      if (!first_done && want_cycle) run_cycle(inter, 700);
      MPI_Comm_free(&inter);
    }
    first_done = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 0) printf("%-14s done\n", shape);
  }
  if (want_errors) run_intra_errors();
  if (want_threads && wsize >= 2) {
    if (provided < MPI_THREAD_MULTIPLE) fail("threads", "no MPI_THREAD_MULTIPLE");
    else run_threads(wsize);
    if (wrank == 0) printf("threads        done\n");
  }
  if (want_intra) {
    run_intra(MPI_COMM_WORLD, "world");
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    run_intra(half, "half");
    MPI_Comm_free(&half);
    if (wrank == 0) printf("intra          done\n");
  }
  int tot[2] = {failures, checks}, all[2];
  MPI_Allreduce(tot, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (wrank == 0)
    printf("test_dropin: %d checks, %d failures, %d interposed calls on rank 0\n", all[1], all[0],
           interposed_calls ? interposed_calls() : 0);
  MPI_Type_free(&pair_t);
  MPI_Type_free(&rec_t);
  MPI_Finalize();
  if (want_after) { /* MPI aborts the process here */
    int v = 1, out[64];
    MPI_Allgather(&v, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD);
  }
  return all[0] != 0;
}
