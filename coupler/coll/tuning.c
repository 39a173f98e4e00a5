#include "coll/tuning.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/tuning_file.h"
#include "coupler.h"

extern char **environ;

enum {
  ALPHA,
  BETA,
  CHUNK,
  FLOW,
  RING,
  INTER,
  INTRA,
  TIMEOUT,
  OVERHEAD,
  INTER_ROOT_MAX,
  INTRA_ROOT_BYTES,
  NVARS
};
/* Names without the CPL_ prefix, in the order of the enum. */
static const struct {
  const char *name;
  size_t len;
} vars[NVARS] = {{"ALPHA", 5},
                 {"BETA", 4},
                 {"CHUNK", 5},
                 {"FLOW", 4},
                 {"RING", 4},
                 {"INTER_ALGORITHM", 15},
                 {"INTRA_ALGORITHM", 15},
                 {"TIMEOUT", 7},
                 {"OVERHEAD", 8},
                 {"INTER_ROOT_MAX", 14},
                 {"INTRA_ROOT_BYTES", 16}};

/* Values up to this length are remembered; a longer one is parsed on
 * every call (nobody sets one). */
#define VAL_MAX 96

typedef struct memo {
  int read;                 /* refreshed at least once on this thread */
  int valid;                /* val[] holds what t was parsed from   */
  unsigned gen;             /* the tuning file read it was parsed with */
  char val[NVARS][VAL_MAX]; /* "" for unset */
  cpli_tuning t;
  /* The environment val[] was read from (see env_same): environ, its
   * number of entries, a hash of the entries' addresses, and the entry
   * each variable came from (NULL: unset). */
  char **env;
  size_t n;
  uint64_t hash;
  const char *from[NVARS];
} memo;

static _Thread_local memo last;

/* The tuning file: read once per process, at the first refresh. */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint file_gen; /* 0: not read yet; else the read's number */
static unsigned file_reads;
static cpli_tuning_vals file_vals;
static char file_path[4096], file_err[4608];
static int file_found;

static unsigned load_file(void) {
  unsigned g = atomic_load_explicit(&file_gen, memory_order_acquire);
  if (g) return g;
  pthread_mutex_lock(&file_lock);
  if (!(g = atomic_load_explicit(&file_gen, memory_order_relaxed))) {
    int explicit_ = 0;
    file_vals = (cpli_tuning_vals){0};
    file_found = 0;
    file_err[0] = '\0';
    const char *path = cpli_tuning_file_path(file_path, sizeof file_path, &explicit_);
    if (path) {
      char why[sizeof file_err - 64];
      const int rc = cpli_tuning_file_read(path, &file_vals, why, sizeof why);
      /* a missing default file means the defaults; anything else is loud */
      if (rc == CPL_OK) file_found = 1;
      else if (explicit_ || rc != CPL_ERR_IO || access(path, F_OK) == 0) {
        snprintf(file_err, sizeof file_err, "tuning file %s%s", why,
                 explicit_ ? " (named by CPL_TUNING_FILE)" : "");
        fprintf(stderr, "coupler: %s\n", file_err);
      }
    }
    g = ++file_reads;
    atomic_store_explicit(&file_gen, g, memory_order_release);
  }
  pthread_mutex_unlock(&file_lock);
  return g;
}

void cpli_tuning_file_forget(void) {
  pthread_mutex_lock(&file_lock);
  atomic_store(&file_gen, 0);
  pthread_mutex_unlock(&file_lock);
}

/* What is wrong with this thread's variables (t->file_error points here
 * when the tuning file itself is fine); kept as long as the snapshot. */
static _Thread_local char env_err[160 + VAL_MAX];

/* The first of: the variable (set and not empty), the file's value, the
 * default; *from says which. A variable that is set but not a number in
 * the model's range (tuning_file.h) is an error (recorded in *bad, the
 * first one wins), not a silent fallback: a typo would otherwise run
 * with another cost model. */
static double pick(const char *v, const char *var, int beta, double file, double dflt,
                   const char **from, const char **bad) {
  if (*v) {
    char *end;
    errno = 0;
    const double d = strtod(v, &end);
    if (end != v && *end == '\0' && !errno && cpli_model_value_ok(beta, d)) return *from = var, d;
    if (!*bad) {
      snprintf(env_err, sizeof env_err, "%s: expected a number of seconds%s %s, got \"%.*s\"", var,
               beta ? " per byte" : "", cpli_model_range(beta), VAL_MAX, v);
      *bad = env_err;
    }
  }
  if (file > 0) return *from = "file", file;
  return *from = "default", dflt;
}

/* A byte count as pick() does: the variable (K or M suffix; at least
 * min, where min 0 also allows "0"), else the file's when it gave one,
 * else 0 with *from = dflt. */
static size_t pick_bytes(const char *v, const char *var, size_t min, int file_set, size_t file,
                         const char *dflt, const char **from, const char **bad) {
  size_t b;
  if (*v) {
    if ((min ? cpli_parse_bytes(v, &b) : cpli_parse_bytes0(v, &b)) == 0 && b >= min)
      return *from = var, b;
    if (!*bad) {
      if (min)
        snprintf(env_err, sizeof env_err,
                 "%s: expected a whole number of bytes from %zu to 10^15 (K or M suffix), got "
                 "\"%.*s\"",
                 var, min, VAL_MAX, v);
      else
        snprintf(env_err, sizeof env_err,
                 "%s: expected a whole number of bytes up to 10^15 (K or M suffix) or 0, got "
                 "\"%.*s\"",
                 var, VAL_MAX, v);
      *bad = env_err;
    }
  }
  if (file_set) return *from = "file", file;
  return *from = dflt, 0;
}

static int flag_of(const char *v) {
  return (v[0] == '0' || v[0] == '1') && v[1] == '\0' ? v[0] - '0' : -1;
}

static void parse(const char *const v[NVARS], cpli_tuning *t) {
  static _Thread_local unsigned parses;
  *t = (cpli_tuning){.version = ++parses};
  const cpli_tuning_vals *fv = &file_vals;
  t->file = file_found ? file_path : NULL;
  const char *bad = NULL; /* a bad CPL_ALPHA, ... (env_err) */
  t->alpha = pick(v[ALPHA], "CPL_ALPHA", 0, fv->alpha, CPLI_DEFAULT_ALPHA, &t->alpha_from, &bad);
  t->beta = pick(v[BETA], "CPL_BETA", 1, fv->beta, CPLI_DEFAULT_BETA, &t->beta_from, &bad);
  t->overhead =
      pick(v[OVERHEAD], "CPL_OVERHEAD", 0, fv->overhead, t->alpha, &t->overhead_from, &bad);
  if (t->overhead_from[0] == 'd') t->overhead_from = "alpha";
  t->chunk = pick_bytes(v[CHUNK], "CPL_CHUNK", CPLI_CHUNK_MIN, fv->chunk > 0, fv->chunk, "model",
                        &t->chunk_from, &bad);
  t->inter_root_max = pick_bytes(v[INTER_ROOT_MAX], "CPL_INTER_ROOT_MAX", 0, fv->inter_root_max_set,
                                 fv->inter_root_max, "default", &t->inter_root_max_from, &bad);
  t->intra_root_bytes =
      pick_bytes(v[INTRA_ROOT_BYTES], "CPL_INTRA_ROOT_BYTES", 0, fv->intra_root_bytes_set,
                 fv->intra_root_bytes, "default", &t->intra_root_bytes_from, &bad);
  t->flow = strcmp(v[FLOW], "0") != 0;
  t->ring = flag_of(v[RING]);
  /* Switches: 0 or 1; "no" or "false" ran the dataflow plans or the
   * model's ring choice without a word. */
  for (int i = FLOW; i <= RING && !bad; i++)
    if (*v[i] && flag_of(v[i]) < 0) {
      snprintf(env_err, sizeof env_err, "CPL_%s: expected 0 or 1, got \"%.*s\"", vars[i].name,
               VAL_MAX, v[i]);
      bad = env_err;
    }
  /* api.c refuses every call while file_error is set: a broken tuning
   * file first (it concerns every variable), else a bad variable. */
  t->file_error = file_err[0] ? file_err : bad;
  t->inter = v[INTER];
  t->intra = v[INTRA];
  if (*v[TIMEOUT]) {
    char *end;
    t->timeout = strtod(v[TIMEOUT], &end);
    t->timeout_set = 1;
    if (*end || !isfinite(t->timeout)) t->timeout_bad = v[TIMEOUT], t->timeout = 0;
  }
}

/* The number of entries of environ and a hash of their addresses. */
static size_t env_hash(char **env, uint64_t *hash) {
  uint64_t h = (uint64_t)(uintptr_t)env;
  size_t n = 0;
  for (; env && env[n]; n++) h = (h ^ (uint64_t)(uintptr_t)env[n]) * 0x100000001b3u;
  *hash = h;
  return n;
}

/* Is the environment the one last.val[] was read from? Parsing it (a
 * string compare per CPL_ entry and variable) was 4% of a step of many
 * small datasets, which runs a collective per dataset. setenv, putenv and
 * unsetenv change environ or an entry's address (glibc's setenv makes a
 * new "NAME=value" string for a new value), which the hash sees; the
 * entries the variables came from are compared too, for a putenv'd string
 * changed in place. Not seen: an unrelated entry changed in place into a
 * CPL_ variable. */
static int env_same(char **env, size_t n, uint64_t hash) {
  if (env != last.env || n != last.n || hash != last.hash) return 0;
  for (int i = 0; i < NVARS; i++) {
    const char *e = last.from[i];
    if (e && (memcmp(e + 4, vars[i].name, vars[i].len) || e[4 + vars[i].len] != '=' ||
              strcmp(e + 5 + vars[i].len, last.val[i])))
      return 0;
  }
  return 1;
}

const cpli_tuning *cpli_tuning_refresh(void) {
  const unsigned gen = load_file();
  char **env = environ;
  uint64_t hash;
  const size_t nenv = env_hash(env, &hash);
  if (last.valid && last.gen == gen && env_same(env, nenv, hash)) return &last.t;
  const char *v[NVARS], *from[NVARS] = {0};
  for (int i = 0; i < NVARS; i++) v[i] = "";
  /* getenv's rule: the first definition of a name counts. */
  unsigned seen = 0;
  for (char **e = env; e && *e; e++) {
    const char *s = *e;
    if (s[0] != 'C' || s[1] != 'P' || s[2] != 'L' || s[3] != '_') continue;
    for (int i = 0; i < NVARS; i++) {
      const size_t n = vars[i].len; /* strncmp first: s may be shorter */
      if (!(seen >> i & 1) && strncmp(s + 4, vars[i].name, n) == 0 && s[4 + n] == '=') {
        v[i] = s + 5 + n;
        from[i] = s;
        seen |= 1u << i;
        break;
      }
    }
  }
  last.read = 1;
  last.env = env;
  last.n = nenv;
  last.hash = hash;
  memcpy(last.from, from, sizeof from);
  int same = last.valid && last.gen == gen;
  last.gen = gen;
  for (int i = 0; i < NVARS && same; i++) same = strcmp(v[i], last.val[i]) == 0;
  if (same) return &last.t;
  last.valid = 1;
  for (int i = 0; i < NVARS; i++) last.valid &= strlen(v[i]) < VAL_MAX;
  if (!last.valid) { /* parse in place; nothing remembered */
    parse(v, &last.t);
    return &last.t;
  }
  const char *copy[NVARS];
  for (int i = 0; i < NVARS; i++) {
    strcpy(last.val[i], v[i]);
    copy[i] = last.val[i];
  }
  parse(copy, &last.t);
  return &last.t;
}

const cpli_tuning *cpli_tuning_now(void) { return last.read ? &last.t : cpli_tuning_refresh(); }

void cpli_model_params(double *alpha, double *beta) {
  const cpli_tuning *t = cpli_tuning_now();
  *alpha = t->alpha;
  *beta = t->beta;
}

size_t cpli_flow_chunk(void) { return cpli_tuning_now()->chunk; }

int cpli_flow_enabled(void) { return cpli_tuning_now()->flow; }
