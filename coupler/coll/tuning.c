#include "coll/tuning.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

enum { ALPHA, BETA, CHUNK, FLOW, RING, INTER, INTRA, TIMEOUT, NVARS };
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
                 {"TIMEOUT", 7}};

/* Values up to this length are remembered; a longer one is parsed on
 * every call (nobody sets one). */
#define VAL_MAX 96

typedef struct memo {
  int read;                 /* refreshed at least once on this thread */
  int valid;                /* val[] holds what t was parsed from   */
  char val[NVARS][VAL_MAX]; /* "" for unset */
  cpli_tuning t;
} memo;

static _Thread_local memo last;

static double positive(const char *v, double dflt) {
  if (!*v) return dflt;
  char *end;
  const double d = strtod(v, &end);
  return (*end == '\0' && d > 0 && isfinite(d)) ? d : dflt;
}

static size_t chunk_of(const char *v) {
  if (!*v) return CPLI_DEFAULT_CHUNK;
  char *end;
  double d = strtod(v, &end);
  if (*end == 'k' || *end == 'K') d *= 1024, end++;
  else if (*end == 'm' || *end == 'M') d *= 1024 * 1024, end++;
  if (*end || !(d >= 1) || d > 1e15) return CPLI_DEFAULT_CHUNK;
  return (size_t)d;
}

static int flag_of(const char *v) {
  return (v[0] == '0' || v[0] == '1') && v[1] == '\0' ? v[0] - '0' : -1;
}

static void parse(const char *const v[NVARS], cpli_tuning *t) {
  *t = (cpli_tuning){0};
  t->alpha = positive(v[ALPHA], CPLI_DEFAULT_ALPHA);
  t->beta = positive(v[BETA], CPLI_DEFAULT_BETA);
  t->chunk = chunk_of(v[CHUNK]);
  t->flow = strcmp(v[FLOW], "0") != 0;
  t->ring = flag_of(v[RING]);
  t->inter = v[INTER];
  t->intra = v[INTRA];
  if (*v[TIMEOUT]) {
    char *end;
    t->timeout = strtod(v[TIMEOUT], &end);
    t->timeout_set = 1;
    if (*end || !isfinite(t->timeout)) t->timeout_bad = v[TIMEOUT], t->timeout = 0;
  }
}

const cpli_tuning *cpli_tuning_refresh(void) {
  const char *v[NVARS];
  for (int i = 0; i < NVARS; i++) v[i] = "";
  /* getenv's rule: the first definition of a name counts. */
  unsigned seen = 0;
  for (char **e = environ; e && *e; e++) {
    const char *s = *e;
    if (s[0] != 'C' || s[1] != 'P' || s[2] != 'L' || s[3] != '_') continue;
    for (int i = 0; i < NVARS; i++) {
      const size_t n = vars[i].len; /* strncmp first: s may be shorter */
      if (!(seen >> i & 1) && strncmp(s + 4, vars[i].name, n) == 0 && s[4 + n] == '=') {
        v[i] = s + 5 + n;
        seen |= 1u << i;
        break;
      }
    }
  }
  last.read = 1;
  int same = last.valid;
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
