/*
 * YAML tree -> workflow model. Every key is checked for type and range and
 * every problem is reported with its position; parsing goes on after an
 * error so one run lists them all. Reference: README.md in this directory.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algorithms.h"
#include "workflow/model.h"
#include "workflow/ytree.h"

typedef struct S {
  const char *file;
  cpl_diag *d;
  int oom;
  cpli_workflow *wf;
} S;

static void err(S *s, const cpli_ynode *n, const char *fmt, ...) CPLI_PRINTF(3, 4);
static void err(S *s, const cpli_ynode *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cpli_diag_vadd(s->d, s->file, n ? n->line : 0, n ? n->col : 0, fmt, ap);
  va_end(ap);
}

static char *xstrdup(S *s, const char *str) {
  size_t n = strlen(str) + 1;
  char *p = malloc(n);
  if (!p) {
    s->oom = 1;
    return NULL;
  }
  memcpy(p, str, n);
  return p;
}

static void *xcalloc(S *s, size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) s->oom = 1;
  return p;
}

static cpli_pos pos_of(const cpli_ynode *n) { return (cpli_pos){n->line, n->col}; }

/* How a node looks, for "got ..." in messages: quoted scalars verbatim
 * (truncated, non-printables escaped), containers by kind. */
static const char *describe(const cpli_ynode *n, char *buf, size_t size) {
  if (n->kind == CPLI_Y_MAP) return "a mapping";
  if (n->kind == CPLI_Y_SEQ) return "a list";
  if (cpli_y_is_null(n)) return "nothing (null)";
  size_t o = 0;
  buf[o++] = '"';
  for (size_t i = 0; i < n->len && o + 6 < size; i++) {
    unsigned char c = (unsigned char)n->str[i];
    if (i >= 40) {
      o += (size_t)snprintf(buf + o, size - o, "...");
      break;
    }
    if (c == '"' || c == '\\') o += (size_t)snprintf(buf + o, size - o, "\\%c", c);
    else if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
    else buf[o++] = (char)c;
  }
  snprintf(buf + o, size - o, "\"");
  return buf;
}
#define DESC(n) describe((n), descbuf, sizeof descbuf)

/* Optimal string alignment distance (a swap of two neighbours counts as
 * one edit: "form" is one typo away from "from"), case-insensitive. */
int cpli_edit_distance(const char *a, const char *b, int cap) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return cap + 1;
  int r0[65], r1[65], r2[65]; /* rows i-2, i-1, i */
  int *pp = r0, *prev = r1, *cur = r2;
  for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = (int)i;
    int ai = tolower((unsigned char)a[i - 1]);
    for (size_t j = 1; j <= lb; j++) {
      int bj = tolower((unsigned char)b[j - 1]);
      int best = prev[j - 1] + (ai != bj);
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == bj && pp[j - 2] + 1 < best)
        best = pp[j - 2] + 1;
      cur[j] = best;
    }
    int *t = pp;
    pp = prev;
    prev = cur;
    cur = t;
  }
  return prev[lb] > cap ? cap + 1 : prev[lb];
}

/* The closest candidate to word if it is close enough to be a typo. */
static const char *closest(const char *word, const char *const *cands, int ncands) {
  const char *best = NULL;
  int bestd = 3;
  int cap = strlen(word) <= 4 ? 1 : 2;
  for (int i = 0; i < ncands; i++) {
    int dist = cpli_edit_distance(word, cands[i], cap);
    if (dist <= cap && dist < bestd) {
      best = cands[i];
      bestd = dist;
    }
  }
  return best;
}

static void join(const char *const *v, int n, char *buf, size_t size) {
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && o < size; i++)
    o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? ", " : "", v[i]);
}

/* Report keys of map that are not in known; suggest the closest. */
static void check_keys(S *s, const cpli_ynode *map, const char *where, const char *const *known,
                       int nknown) {
  for (size_t i = 0; i < cpli_ymap_size(map); i++) {
    const cpli_ynode *k = cpli_ymap_key(map, i);
    if (k->bad) continue;
    int found = 0;
    for (int j = 0; j < nknown && !found; j++) found = strcmp(k->str, known[j]) == 0;
    if (found) continue;
    char descbuf[128];
    const char *sug = closest(k->str, known, nknown);
    if (sug) {
      err(s, k, "unknown key %s in %s (did you mean \"%s\"?)", DESC(k), where, sug);
    } else {
      char list[512];
      join(known, nknown, list, sizeof list);
      err(s, k, "unknown key %s in %s (known keys: %s)", DESC(k), where, list);
    }
  }
}

static int want_kind(S *s, const cpli_ynode *n, cpli_ykind kind, const char *what) {
  if (n->bad) return 0;
  if (n->kind == kind) return 1;
  char descbuf[128];
  err(s, n, "%s must be %s, got %s", what,
      kind == CPLI_Y_MAP   ? "a mapping"
      : kind == CPLI_Y_SEQ ? "a list"
                           : "a scalar",
      DESC(n));
  return 0;
}

/* A non-empty string scalar; NUL inside ("\0" escapes) is refused. */
static const char *want_string(S *s, const cpli_ynode *n, const char *what) {
  if (n->bad) return NULL;
  char descbuf[128];
  if (n->kind != CPLI_Y_SCALAR || cpli_y_is_null(n)) {
    err(s, n, "%s must be a string, got %s", what, DESC(n));
    return NULL;
  }
  if (n->len == 0) {
    err(s, n, "%s must not be empty", what);
    return NULL;
  }
  if (strlen(n->str) != n->len) {
    err(s, n, "%s contains a NUL character", what);
    return NULL;
  }
  return n->str;
}

/* A leading "~" is no home directory here: no shell reads the file, and
 * a sink given ~/out.h5 made a directory named "~" where it ran. */
static int tilde_path(S *s, const cpli_ynode *n, const char *what, const char *path) {
  if (path[0] != '~') return 0;
  err(s, n,
      "%s %s starts with \"~\", which nothing expands (no shell reads the workflow): write "
      "the path out",
      what, path);
  return 1;
}

/* A path: a non-empty string not starting with "~". */
static const char *want_path(S *s, const cpli_ynode *n, const char *what) {
  const char *str = want_string(s, n, what);
  return str && !tilde_path(s, n, what, str) ? str : NULL;
}

static int valid_name_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-'; }

/* Component, port and dataset names: they appear in "component.port"
 * references, environment values and file names, so keep them simple. */
static const char *want_name(S *s, const cpli_ynode *n, const char *what) {
  const char *str = want_string(s, n, what);
  if (!str) return NULL;
  char descbuf[128];
  if (n->len > CPLI_WF_MAX_NAME) {
    err(s, n, "%s is longer than %d characters", what, CPLI_WF_MAX_NAME);
    return NULL;
  }
  for (const char *p = str; *p; p++) {
    if (!valid_name_char(*p)) {
      err(s, n, "%s %s may only contain letters, digits, \"_\" and \"-\"", what, DESC(n));
      return NULL;
    }
  }
  return str;
}

/* Digits with a leading 0 ("010"): 8 to YAML 1.1 readers (PyYAML), and
 * "09" a string there, but 10 and 9 to YAML 1.2 ones; refused, as the
 * file would mean two things. Writes the message's tail into buf; 0 if
 * str is not such. */
static int leading_zero(const char *str, char *buf, size_t size) {
  const int sign = *str == '+' || *str == '-';
  const char *p = str + sign;
  if (p[0] != '0' || !p[1] || strspn(p, "0123456789") != strlen(p)) return 0;
  const char *digits = p + strspn(p, "0");
  snprintf(buf, size,
           " (with a leading 0 it is octal or a string to YAML 1.1 readers; write %.*s%s)", sign,
           str, *digits ? digits : "0");
  return 1;
}

/* Integer in [lo, hi]. `kind` phrases the expectation ("a positive
 * integer"). Only plain decimal scalars count: "4" quoted is a string,
 * 1e3, 0x10 and 010 are not integers here. */
static int want_int(S *s, const cpli_ynode *n, const char *what, const char *kind, long long lo,
                    long long hi, long long *out) {
  if (n->bad) return 0;
  char descbuf[128];
  if (n->kind != CPLI_Y_SCALAR || cpli_y_is_null(n)) {
    err(s, n, "%s must be %s, got %s", what, kind, DESC(n));
    return 0;
  }
  if (n->quoted) {
    err(s, n, "%s must be %s, got the string %s (remove the quotes)", what, kind, DESC(n));
    return 0;
  }
  if (n->tag != CPLI_YTAG_NONE && n->tag != CPLI_YTAG_INT) {
    err(s, n, "%s must be %s, got %s tagged !!%s (not an integer to other YAML readers)", what,
        kind, DESC(n), n->tag == CPLI_YTAG_FLOAT ? "float" : "bool");
    return 0;
  }
  const char *p = n->str;
  int neg = 0;
  char why[128] = "";
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(n->str) != n->len ||
      leading_zero(n->str, why, sizeof why)) {
    err(s, n, "%s must be %s, got %s%s", what, kind, DESC(n), why);
    return 0;
  }
  /* Accumulate with a saturating bound so huge values are reported as
   * out of range, not wrapped. */
  long long v = 0;
  const long long big = 1LL << 62;
  for (; *p; p++) {
    if (v < big / 10) v = v * 10 + (*p - '0');
    else v = big;
  }
  if (neg) v = -v;
  if (v < lo) {
    err(s, n, "%s must be at least %lld, got %s", what, lo, n->str);
    return 0;
  }
  if (v > hi) {
    err(s, n, "%s must be at most %lld, got %s", what, hi, n->str);
    return 0;
  }
  *out = v;
  return 1;
}

/* A finite number in (0, hi]: seconds. */
static int want_seconds(S *s, const cpli_ynode *n, const char *what, double hi, double *out) {
  if (n->bad) return 0;
  char descbuf[128];
  if (n->kind != CPLI_Y_SCALAR || n->quoted || cpli_y_is_null(n) || strlen(n->str) != n->len ||
      n->tag == CPLI_YTAG_BOOL) {
    err(s, n, "%s must be a number of seconds, got %s", what, DESC(n));
    return 0;
  }
  const char *p = n->str;
  char why[128] = "";
  /* strtod also takes hex, inf and nan; a timeout is written in decimal. */
  if (strspn(p, "+-0123456789.eE") != n->len || leading_zero(p, why, sizeof why)) {
    err(s, n, "%s must be a number of seconds, got %s%s", what, DESC(n), why);
    return 0;
  }
  char *end = NULL;
  errno = 0;
  double v = strtod(p, &end);
  if (end == p || *end) {
    err(s, n, "%s must be a number of seconds, got %s", what, DESC(n));
    return 0;
  }
  if (errno == ERANGE || !isfinite(v) || v <= 0 || v > hi) {
    err(s, n, "%s must be more than 0 and at most %g seconds, got %s", what, hi, n->str);
    return 0;
  }
  *out = v;
  return 1;
}

/* Pick a value from a table of names; suggest on a typo. */
static int want_enum(S *s, const cpli_ynode *n, const char *what, const char *const *names,
                     int count, int *out) {
  const char *str = want_string(s, n, what);
  if (!str) return 0;
  for (int i = 0; i < count; i++) {
    if (strcmp(str, names[i]) == 0) {
      *out = i;
      return 1;
    }
  }
  char descbuf[128], list[256];
  join(names, count, list, sizeof list);
  const char *sug = closest(str, names, count);
  if (sug) err(s, n, "unknown %s %s (did you mean \"%s\"? one of: %s)", what, DESC(n), sug, list);
  else err(s, n, "unknown %s %s (one of: %s)", what, DESC(n), list);
  return 0;
}

/* ------------------------------------------------------------ names */

static const char *const kind_names[CPL_KIND_COUNT] = {[CPL_KIND_COMMAND] = "command",
                                                       [CPL_KIND_SINK] = "sink",
                                                       [CPL_KIND_SOURCE] = "source",
                                                       [CPL_KIND_STAGE] = "stage"};
static const char *const policy_names[CPL_POLICY_COUNT] = {
    [CPL_POLICY_ALL] = "all", [CPL_POLICY_LATEST] = "latest", [CPL_POLICY_EVERY] = "every:N"};
static const char *const delivery_names[CPLI_DELIVERY_COUNT] = {[CPLI_DELIVERY_AUTO] = "auto",
                                                                [CPLI_DELIVERY_ALLGATHER] =
                                                                    "allgather",
                                                                [CPLI_DELIVERY_SELECT] = "select"};
static const char *const when_full_names[CPLI_FULL_COUNT] = {
    [CPLI_FULL_BLOCK] = "block", [CPLI_FULL_EVICT] = "evict"};
const char *const cpli_dtype_names[CPLI_DT_COUNT] = {
    [CPLI_DT_INT8] = "int8",       [CPLI_DT_INT16] = "int16",   [CPLI_DT_INT32] = "int32",
    [CPLI_DT_INT64] = "int64",     [CPLI_DT_UINT8] = "uint8",   [CPLI_DT_UINT16] = "uint16",
    [CPLI_DT_UINT32] = "uint32",   [CPLI_DT_UINT64] = "uint64", [CPLI_DT_FLOAT32] = "float32",
    [CPLI_DT_FLOAT64] = "float64", [CPLI_DT_CHAR] = "char",     [CPLI_DT_BYTE] = "byte"};
static const size_t dtype_sizes[CPLI_DT_COUNT] = {
    [CPLI_DT_INT8] = 1,    [CPLI_DT_INT16] = 2,   [CPLI_DT_INT32] = 4,  [CPLI_DT_INT64] = 8,
    [CPLI_DT_UINT8] = 1,   [CPLI_DT_UINT16] = 2,  [CPLI_DT_UINT32] = 4, [CPLI_DT_UINT64] = 8,
    [CPLI_DT_FLOAT32] = 4, [CPLI_DT_FLOAT64] = 8, [CPLI_DT_CHAR] = 1,   [CPLI_DT_BYTE] = 1};

int cpli_dtype_find(const char *name) {
  for (int i = 0; name && i < CPLI_DT_COUNT; i++)
    if (strcmp(name, cpli_dtype_names[i]) == 0) return i;
  return -1;
}

size_t cpli_dtype_size(const char *name) {
  const int i = cpli_dtype_find(name);
  return i < 0 ? 0 : dtype_sizes[i];
}

/* All twelve are HDF5 native integers or floats, and HDF5 converts any of
 * those to any other. */
int cpli_dtype_convertible(const char *a, const char *b) {
  return cpli_dtype_find(a) >= 0 && cpli_dtype_find(b) >= 0;
}

const char *cpli_kind_name(cpl_component_kind k) {
  return (unsigned)k < CPL_KIND_COUNT ? kind_names[k] : NULL;
}
const char *cpli_policy_name(cpl_flow_policy p) {
  return (unsigned)p < CPL_POLICY_COUNT ? policy_names[p] : NULL;
}
const char *cpli_delivery_name(cpli_delivery d) {
  return (unsigned)d < CPLI_DELIVERY_COUNT ? delivery_names[d] : NULL;
}
const char *cpli_when_full_name(cpli_when_full w) {
  return (unsigned)w < CPLI_FULL_COUNT ? when_full_names[w] : NULL;
}

/* --------------------------------------------------------- command */

/* Split a command string into words like a POSIX shell would for the simple
 * cases: blanks separate, '...' is literal, "..." and \ escape. No
 * expansion of any kind. */
static int split_command(S *s, const cpli_ynode *n, cpli_component *c) {
  const char *p = n->str;
  size_t len = strlen(p);
  char *word = malloc(len + 1);
  c->argv = xcalloc(s, len / 2 + 2, sizeof *c->argv);
  c->argpos = xcalloc(s, len / 2 + 2, sizeof *c->argpos);
  if (!word || !c->argv || !c->argpos) {
    free(word);
    s->oom = 1;
    return 0;
  }
  int ok = 1;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (!*p) break;
    if (c->argc == CPLI_WF_MAX_ARGS) { /* the same limit as the list form */
      err(s, n, "command has more than %d words", CPLI_WF_MAX_ARGS);
      ok = 0;
      break;
    }
    size_t w = 0;
    char quote = 0;
    for (; *p; p++) {
      if (quote == '\'') {
        if (*p == '\'') quote = 0;
        else word[w++] = *p;
      } else if (quote == '"') {
        if (*p == '"') quote = 0;
        else if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) word[w++] = *++p;
        else word[w++] = *p;
      } else if (*p == ' ' || *p == '\t' || *p == '\n') {
        break;
      } else if (*p == '\'' || *p == '"') {
        quote = *p;
      } else if (*p == '\\' && p[1]) {
        word[w++] = *++p;
      } else {
        word[w++] = *p;
      }
    }
    if (quote) {
      err(s, n, "command has an unterminated %c quote", quote);
      ok = 0;
      break;
    }
    word[w] = '\0';
    c->argpos[c->argc] = pos_of(n); /* words of a string: the string's position */
    if (!(c->argv[c->argc++] = xstrdup(s, word))) {
      ok = 0;
      break;
    }
  }
  free(word);
  if (ok && c->argc == 0) {
    err(s, n, "command must not be empty");
    ok = 0;
  }
  return ok;
}

static void parse_command(S *s, const cpli_ynode *n, cpli_component *c) {
  if (n->bad) return;
  if (n->kind == CPLI_Y_SCALAR) {
    if (want_string(s, n, "command") && split_command(s, n, c))
      tilde_path(s, n, "program", c->argv[0]);
    return;
  }
  if (n->kind != CPLI_Y_SEQ) {
    char descbuf[128];
    err(s, n, "command must be a string or a list of words, got %s", DESC(n));
    return;
  }
  if (n->n == 0) {
    err(s, n, "command must not be empty");
    return;
  }
  if (n->n > CPLI_WF_MAX_ARGS) {
    err(s, n, "command has more than %d words", CPLI_WF_MAX_ARGS);
    return;
  }
  c->argv = xcalloc(s, n->n + 1, sizeof *c->argv);
  c->argpos = xcalloc(s, n->n + 1, sizeof *c->argpos);
  if (!c->argv || !c->argpos) return;
  for (size_t i = 0; i < n->n; i++) {
    const cpli_ynode *w = n->items[i];
    if (w->bad) continue;
    if (w->kind != CPLI_Y_SCALAR || (i == 0 && w->len == 0) || strlen(w->str) != w->len) {
      char descbuf[128];
      err(s, w, "command words must be strings%s, got %s", i == 0 ? " (the first non-empty)" : "",
          DESC(w));
      continue;
    }
    if (c->argc == 0) tilde_path(s, w, "program", w->str);
    c->argpos[c->argc] = pos_of(w);
    c->argv[c->argc++] = xstrdup(s, w->str);
  }
}

/* ------------------------------------------------------------ env */

static void parse_env(S *s, const cpli_ynode *n, cpli_component *c) {
  if (!want_kind(s, n, CPLI_Y_MAP, "env")) return;
  c->env = xcalloc(s, cpli_ymap_size(n), sizeof *c->env);
  if (!c->env) return;
  for (size_t i = 0; i < cpli_ymap_size(n); i++) {
    const cpli_ynode *k = cpli_ymap_key(n, i), *v = cpli_ymap_val(n, i);
    if (k->bad || v->bad) continue;
    char descbuf[128];
    const char *name = k->str;
    int ok = name[0] && !isdigit((unsigned char)name[0]) && strlen(name) == k->len;
    for (const char *p = name; ok && *p; p++) ok = isalnum((unsigned char)*p) || *p == '_';
    if (!ok) {
      err(s, k,
          "environment variable name %s must be letters, digits and "
          "\"_\", not starting with a digit",
          DESC(k));
      continue;
    }
    if (strcmp(name, "CPL_COMPONENT") == 0 || strcmp(name, "CPL_WORKFLOW") == 0 ||
        strcmp(name, "CPL_FIRST_RANK") == 0) {
      err(s, k, "environment variable %s is set by Coupler itself", name);
      continue;
    }
    if (v->kind != CPLI_Y_SCALAR || strlen(v->str) != v->len) {
      err(s, v, "value of environment variable %s must be a scalar, got %s", name, DESC(v));
      continue;
    }
    /* Null has three spellings that became three values ("~", "null",
     * ""): as for every other key, it is no value. */
    if (cpli_y_is_null(v)) {
      err(s, v,
          "value of environment variable %s is null (~, null or nothing): write \"\" for an "
          "empty value, or quote the text",
          name);
      continue;
    }
    cpli_envvar *e = &c->env[c->nenv++];
    e->name = xstrdup(s, name);
    e->value = xstrdup(s, v->str);
    e->pos = pos_of(k);
  }
}

/* ---------------------------------------------------------- ports */

static void parse_dims(S *s, const cpli_ynode *n, cpli_dataset *ds) {
  if (!want_kind(s, n, CPLI_Y_SEQ, "dims")) return;
  if (n->n == 0 || n->n > CPLI_WF_MAX_DIMS) {
    err(s, n, "dims must have 1 to %d entries, got %zu", CPLI_WF_MAX_DIMS, n->n);
    return;
  }
  ds->dims = xcalloc(s, n->n, sizeof *ds->dims);
  if (!ds->dims) return;
  int ok = 1;
  for (size_t i = 0; i < n->n; i++) {
    long long v;
    if (want_int(s, n->items[i], "each entry of dims", "a positive integer", 1, 1LL << 50, &v))
      ds->dims[i] = v;
    else ok = 0;
  }
  if (ok) ds->ndims = (int)n->n;
}

static void parse_dataset(S *s, const cpli_ynode *n, cpli_dataset *ds) {
  static const char *const known[] = {"name", "type", "dims"};
  ds->ndims = -1;
  ds->pos = pos_of(n);
  if (n->kind == CPLI_Y_SCALAR) {
    const char *name = want_name(s, n, "dataset name");
    if (name) ds->name = xstrdup(s, name);
    return;
  }
  if (!want_kind(s, n, CPLI_Y_MAP, "a dataset (a name or a mapping)")) return;
  check_keys(s, n, "dataset", known, 3);
  const cpli_ynode *v = cpli_ymap_get(n, "name");
  if (!v) err(s, n, "dataset needs a name");
  else if (want_name(s, v, "dataset name")) ds->name = xstrdup(s, v->str);
  int t;
  if ((v = cpli_ymap_get(n, "type")) &&
      want_enum(s, v, "dataset type", cpli_dtype_names, CPLI_DT_COUNT, &t))
    ds->type = xstrdup(s, cpli_dtype_names[t]);
  if ((v = cpli_ymap_get(n, "dims"))) parse_dims(s, v, ds);
  if (ds->ndims < 0) return;
  /* A declared dataset the run would refuse: say so here, at its dims. */
  uint64_t esize = ds->type ? cpli_dtype_size(ds->type) : 1, bytes = esize;
  for (int k = 0; k < ds->ndims && bytes <= CPLI_WF_MAX_DATASET_BYTES; k++)
    bytes = (uint64_t)ds->dims[k] > CPLI_WF_MAX_DATASET_BYTES / bytes
                ? CPLI_WF_MAX_DATASET_BYTES + 1
                : bytes * (uint64_t)ds->dims[k];
  if (bytes > CPLI_WF_MAX_DATASET_BYTES)
    err(s, v,
        "dataset %s: dims make more than %llu bytes (64 TiB, the most a dataset may "
        "have)%s",
        ds->name ? ds->name : "", (unsigned long long)CPLI_WF_MAX_DATASET_BYTES,
        ds->type ? "" : " even at one byte per element");
}

static void parse_port(S *s, const cpli_ynode *n, int output, cpli_port *p) {
  static const char *const known[] = {"name", "datasets"};
  p->output = output;
  p->pos = pos_of(n);
  if (n->kind == CPLI_Y_SCALAR) {
    const char *name = want_name(s, n, "port name");
    if (name) p->name = xstrdup(s, name);
    return;
  }
  if (!want_kind(s, n, CPLI_Y_MAP, "a port (a name or a mapping)")) return;
  check_keys(s, n, "port", known, 2);
  const cpli_ynode *v = cpli_ymap_get(n, "name");
  if (!v) err(s, n, "port needs a name");
  else if (want_name(s, v, "port name")) p->name = xstrdup(s, v->str);
  if (!(v = cpli_ymap_get(n, "datasets"))) return;
  if (!want_kind(s, v, CPLI_Y_SEQ, "datasets")) return;
  if (v->n == 0) {
    err(s, v, "datasets must list at least one dataset (or be left out)");
    return;
  }
  if (v->n > CPLI_WF_MAX_DATASETS) {
    err(s, v, "a port may carry at most %d datasets", CPLI_WF_MAX_DATASETS);
    return;
  }
  p->datasets = xcalloc(s, v->n, sizeof *p->datasets);
  if (!p->datasets) return;
  for (size_t i = 0; i < v->n; i++) parse_dataset(s, v->items[i], &p->datasets[p->ndatasets++]);
}

static void parse_ports(S *s, const cpli_ynode *n, int output, cpli_component *c) {
  const char *what = output ? "outputs" : "inputs";
  if (!want_kind(s, n, CPLI_Y_SEQ, what)) return;
  if (c->nports + n->n > CPLI_WF_MAX_PORTS) {
    err(s, n, "a component may have at most %d ports", CPLI_WF_MAX_PORTS);
    return;
  }
  cpli_port *v = realloc(c->ports, (c->nports + n->n + 1) * sizeof *v);
  if (!v) {
    s->oom = 1;
    return;
  }
  c->ports = v;
  for (size_t i = 0; i < n->n; i++) {
    memset(&c->ports[c->nports], 0, sizeof *c->ports);
    parse_port(s, n->items[i], output, &c->ports[c->nports++]);
  }
}

/* ------------------------------------------------------ placement */

/* A host name as hostfiles and Slurm node lists write it: letters, digits,
 * "-", "_" and ".", not starting with "-" (it would read as an option). */
static const char *want_host(S *s, const cpli_ynode *n) {
  const char *str = want_string(s, n, "a host name");
  if (!str) return NULL;
  char descbuf[128];
  int ok = str[0] != '-' && n->len <= CPLI_WF_MAX_HOSTNAME;
  for (const char *p = str; ok && *p; p++) ok = valid_name_char(*p) || *p == '.';
  if (!ok) {
    err(s, n,
        "host name %s must be 1 to %d letters, digits, \"-\", \"_\" "
        "or \".\", not starting with \"-\"",
        DESC(n), CPLI_WF_MAX_HOSTNAME);
    return NULL;
  }
  return str;
}

/* hosts: a list of names or a count; ppn: processes per node. Both must
 * leave no host without a process and hold every process. */
static void parse_placement(S *s, const cpli_ynode *n, cpli_component *c) {
  const cpli_ynode *h = cpli_ymap_get(n, "hosts");
  const cpli_ynode *p = cpli_ymap_get(n, "ppn");
  long long v;
  int hosts_ok = 0, ppn_ok = 0;
  if (h && !h->bad && h->kind == CPLI_Y_SEQ) {
    if (h->n == 0) {
      err(s, h, "hosts must name at least one host");
    } else if (h->n > (size_t)c->nprocs) {
      err(s, h,
          "hosts lists %zu hosts for %d process%s: a host would get "
          "none",
          h->n, c->nprocs, c->nprocs == 1 ? "" : "es");
    } else if ((c->hosts = xcalloc(s, h->n, sizeof *c->hosts))) {
      const cpli_ynode **named = xcalloc(s, h->n, sizeof *named);
      hosts_ok = named != NULL;
      size_t k = 0;
      for (size_t i = 0; named && i < h->n; i++) {
        if (!want_host(s, h->items[i])) {
          hosts_ok = 0;
          continue;
        }
        named[k++] = h->items[i];
        c->hosts[c->nhosts++] = xstrdup(s, h->items[i]->str);
      }
      /* Sorted, duplicates are neighbours: O(n log n) for 100,000 hosts. */
      cpli_y_sort_scalars(named, k);
      for (size_t i = 1, first = 0; i < k; i++) {
        if (!cpli_y_same_text(named[first], named[i])) {
          first = i;
          continue;
        }
        err(s, named[i], "duplicate host \"%s\" in hosts (first at %d:%d)", named[i]->str,
            named[first]->line, named[first]->col);
        hosts_ok = 0;
      }
      free(named);
    }
  } else if (h && !h->bad && h->kind == CPLI_Y_SCALAR && !cpli_y_is_null(h) && !h->quoted &&
             strspn(h->str, "+-0123456789") == h->len) {
    if (want_int(s, h, "hosts", "a list of host names or a positive count", 1, c->nprocs, &v)) {
      c->nhosts = (int)v;
      hosts_ok = 1;
    }
  } else if (h && !h->bad) {
    char descbuf[128];
    err(s, h,
        "hosts must be a list of host names or a count of hosts, "
        "got %s",
        DESC(h));
  }
  if (p && want_int(s, p, "ppn", "a positive integer", 1, CPLI_WF_MAX_NPROCS, &v)) {
    c->ppn = (int)v;
    ppn_ok = 1;
  }
  if (!hosts_ok || !ppn_ok) return;
  long long slots = (long long)c->nhosts * c->ppn;
  if (slots < c->nprocs)
    err(s, p,
        "hosts and ppn hold %lld processes (%d hosts x %d per node), "
        "nprocs is %d",
        slots, c->nhosts, c->ppn, c->nprocs);
  else if (slots - c->ppn >= c->nprocs)
    err(s, p,
        "hosts and ppn leave a host without processes: %d processes "
        "at %d per node need %d host%s, hosts gives %d",
        c->nprocs, c->ppn, (c->nprocs + c->ppn - 1) / c->ppn,
        (c->nprocs + c->ppn - 1) / c->ppn == 1 ? "" : "s", c->nhosts);
}

/* ------------------------------------------------------ component */

/* keep, when_full, drain: a stage's store (adapters/README.md). */
static void parse_stage_keys(S *s, const cpli_ynode *n, cpli_component *c) {
  static const char *const keys[] = {"keep", "when_full", "drain"};
  const cpli_ynode *v;
  if (c->kind != CPL_KIND_STAGE) {
    for (int i = 0; i < 3; i++)
      if ((v = cpli_ymap_get(n, keys[i])))
        err(s, v, "%s is only for kind stage (this component is %s)", keys[i],
            c->kind == CPL_KIND_COMMAND ? "a command" : kind_names[c->kind]);
    return;
  }
  long long keep;
  int e;
  if ((v = cpli_ymap_get(n, "keep")) &&
      want_int(s, v, "keep", "a positive integer (steps kept)", 1, CPLI_WF_MAX_KEEP, &keep))
    c->keep = (int)keep;
  if ((v = cpli_ymap_get(n, "when_full")) &&
      want_enum(s, v, "when_full", when_full_names, CPLI_FULL_COUNT, &e))
    c->when_full = (cpli_when_full)e;
  if ((v = cpli_ymap_get(n, "drain")) && want_path(s, v, "drain")) {
    c->drain = xstrdup(s, v->str);
    c->drain_pos = pos_of(v);
  }
}

static void parse_component(S *s, const cpli_ynode *n, cpli_component *c) {
  static const char *const known[] = {"name",      "nprocs",  "command", "kind",   "file",
                                      "env",       "workdir", "outputs", "inputs", "keep",
                                      "when_full", "drain",   "hosts",   "ppn"};
  c->pos = pos_of(n);
  c->nprocs = 1;
  c->nprocs_pos = c->pos;
  c->keep = CPLI_WF_DEFAULT_KEEP;
  if (!want_kind(s, n, CPLI_Y_MAP, "a component")) return;
  check_keys(s, n, "component", known, 14);

  const cpli_ynode *v = cpli_ymap_get(n, "name");
  if (!v) err(s, n, "component needs a name");
  else if (want_name(s, v, "component name")) c->name = xstrdup(s, v->str);

  long long np;
  if ((v = cpli_ymap_get(n, "nprocs"))) {
    c->nprocs_pos = pos_of(v);
    if (want_int(s, v, "nprocs", "a positive integer", 1, CPLI_WF_MAX_NPROCS, &np))
      c->nprocs = (int)np;
  }

  const cpli_ynode *cmd = cpli_ymap_get(n, "command");
  const cpli_ynode *kind = cpli_ymap_get(n, "kind");
  int k = CPL_KIND_COMMAND;
  if (kind && !want_enum(s, kind, "component kind", kind_names + 1, CPL_KIND_COUNT - 1, &k))
    return; /* the other keys depend on the kind: no follow-on errors */
  if (kind) k += 1;
  c->kind = (cpl_component_kind)k;
  if (cmd && kind) err(s, kind, "a component has either command or kind, not both");
  else if (!cmd && !kind)
    err(s, n,
        "component %s needs a command (or a built-in kind: sink, "
        "source, stage)",
        c->name ? c->name : "");
  else if (cmd) {
    c->command_pos = pos_of(cmd);
    parse_command(s, cmd, c);
  }

  const cpli_ynode *file = cpli_ymap_get(n, "file");
  int wants_file = c->kind == CPL_KIND_SINK || c->kind == CPL_KIND_SOURCE;
  if (file && !wants_file) err(s, file, "file is only for kinds sink and source");
  else if (file && want_path(s, file, "file")) {
    c->file = xstrdup(s, file->str);
    c->file_pos = pos_of(file);
  } else if (!file && wants_file && kind)
    err(s, kind, "a %s component needs a file (the HDF5 file it %s)", kind_names[c->kind],
        c->kind == CPL_KIND_SINK ? "writes" : "reads");

  parse_stage_keys(s, n, c);

  if ((v = cpli_ymap_get(n, "workdir")) && want_path(s, v, "workdir")) {
    c->workdir = xstrdup(s, v->str);
    c->workdir_pos = pos_of(v);
  }
  if ((v = cpli_ymap_get(n, "env"))) parse_env(s, v, c);
  parse_placement(s, n, c);

  const cpli_ynode *outs = cpli_ymap_get(n, "outputs");
  const cpli_ynode *ins = cpli_ymap_get(n, "inputs");
  if (outs) parse_ports(s, outs, 1, c);
  if (ins) parse_ports(s, ins, 0, c);
  if (c->kind == CPL_KIND_SINK && outs) err(s, outs, "a sink component has no outputs");
  if (c->kind == CPL_KIND_SOURCE && ins) err(s, ins, "a source component has no inputs");
}

/* ----------------------------------------------------------- links */

/* Resolve "component.port" against the parsed components. */
static int resolve_end(S *s, const cpli_ynode *n, const char *what, int *comp, int *port) {
  const char *str = want_string(s, n, what);
  if (!str) return 0;
  char descbuf[128];
  const char *dot = strchr(str, '.');
  int clean = 1; /* only name characters around the one dot */
  for (const char *p = str; *p && clean; p++) clean = p == dot || valid_name_char(*p);
  if (!dot || dot == str || !dot[1] || strchr(dot + 1, '.') || !clean) {
    err(s, n, "%s must be \"component.port\", got %s", what, DESC(n));
    return 0;
  }
  char cname[CPLI_WF_MAX_NAME + 1];
  size_t clen = (size_t)(dot - str);
  if (clen > CPLI_WF_MAX_NAME) clen = CPLI_WF_MAX_NAME;
  memcpy(cname, str, clen);
  cname[clen] = '\0';
  const char *pname = dot + 1;

  cpli_workflow *wf = s->wf;
  *comp = cpl_workflow_component_index(wf, cname);
  if (*comp < 0) {
    const char *names[64] = {0};
    int nn = 0;
    for (int i = 0; i < wf->ncomps && nn < 64; i++)
      if (wf->comps[i].name) names[nn++] = wf->comps[i].name;
    const char *sug = closest(cname, names, nn);
    if (sug) err(s, n, "%s: unknown component \"%s\" (did you mean \"%s\"?)", what, cname, sug);
    else err(s, n, "%s: unknown component \"%s\"", what, cname);
    return 0;
  }
  const cpli_component *c = &wf->comps[*comp];
  *port = cpli_wf_port_index(c, pname);
  if (*port < 0) {
    const char *names[CPLI_WF_MAX_PORTS] = {0};
    int nn = 0;
    for (int i = 0; i < c->nports; i++)
      if (c->ports[i].name) names[nn++] = c->ports[i].name;
    char list[512];
    join(names, nn, list, sizeof list);
    const char *sug = closest(pname, names, nn);
    if (sug)
      err(s, n,
          "%s: component \"%s\" has no port \"%s\" (did you mean "
          "\"%s\"?)",
          what, cname, pname, sug);
    else
      err(s, n, "%s: component \"%s\" has no port \"%s\" (its ports: %s)", what, cname, pname,
          nn ? list : "none declared");
    return 0;
  }
  return 1;
}

static int parse_policy(S *s, const cpli_ynode *n, cpli_link *l) {
  const char *str = want_string(s, n, "policy");
  if (!str) return 0;
  if (strcmp(str, "all") == 0) {
    l->policy = CPL_POLICY_ALL;
    return 1;
  }
  if (strcmp(str, "latest") == 0) {
    l->policy = CPL_POLICY_LATEST;
    return 1;
  }
  char descbuf[128];
  if (strncmp(str, "every:", 6) == 0) {
    const char *p = str + 6;
    while (*p == ' ') p++;
    long long v = 0;
    int ok = *p && strspn(p, "0123456789") == strlen(p) && strlen(p) <= 9;
    if (ok) v = atoll(p);
    if (!ok || v < 1 || v > CPLI_WF_MAX_EVERY) {
      err(s, n, "policy every:N needs N between 1 and %d, got %s", CPLI_WF_MAX_EVERY, DESC(n));
      return 0;
    }
    l->policy = CPL_POLICY_EVERY;
    l->every = (int)v;
    return 1;
  }
  static const char *const pol[] = {"all", "latest", "every:N"};
  const char *sug = closest(str, pol, 3);
  err(s, n, "unknown policy %s (%s%s%sone of: all, latest, every:N)", DESC(n),
      sug ? "did you mean \"" : "", sug ? sug : "", sug ? "\"? " : "");
  return 0;
}

static void parse_link(S *s, const cpli_ynode *n, cpli_link *l) {
  static const char *const known[] = {"from",   "to",    "inter",   "intra",
                                      "policy", "depth", "timeout", "delivery"};
  l->pos = pos_of(n);
  l->from_comp = l->to_comp = l->from_port = l->to_port = -1;
  l->every = 1;
  l->depth = CPLI_WF_DEFAULT_DEPTH;
  l->timeout = CPLI_WF_DEFAULT_TIMEOUT;
  if (!want_kind(s, n, CPLI_Y_MAP, "a link")) return;
  check_keys(s, n, "link", known, 8);
  const cpli_ynode *from = cpli_ymap_get(n, "from");
  const cpli_ynode *to = cpli_ymap_get(n, "to");
  if (!from) err(s, n, "link needs from: component.port (an output)");
  if (!to) err(s, n, "link needs to: component.port (an input)");
  int ok = 1;
  if (from) ok &= resolve_end(s, from, "from", &l->from_comp, &l->from_port);
  if (to) ok &= resolve_end(s, to, "to", &l->to_comp, &l->to_port);
  if (from && to && !from->bad && !to->bad && from->kind == CPLI_Y_SCALAR &&
      to->kind == CPLI_Y_SCALAR) {
    size_t n1 = strlen(from->str) + strlen(to->str) + 3;
    l->label = malloc(n1);
    if (l->label) snprintf(l->label, n1, "%s->%s", from->str, to->str);
    else s->oom = 1;
  }
  if (!ok) l->from_comp = l->to_comp = -1;

  const cpli_ynode *v;
  int e;
  if ((v = cpli_ymap_get(n, "inter")) &&
      want_enum(s, v, "inter algorithm", cpli_inter_names, CPL_INTER_COUNT, &e)) {
    l->inter = (cpl_inter_algorithm)e;
    l->inter_pos = pos_of(v);
  }
  if ((v = cpli_ymap_get(n, "intra")) &&
      want_enum(s, v, "intra algorithm", cpli_intra_names, CPL_INTRA_COUNT, &e))
    l->intra = (cpl_intra_algorithm)e;
  if ((v = cpli_ymap_get(n, "delivery")) &&
      want_enum(s, v, "delivery", delivery_names, CPLI_DELIVERY_COUNT, &e))
    l->delivery = (cpli_delivery)e;
  if ((v = cpli_ymap_get(n, "policy"))) {
    l->policy_pos = pos_of(v);
    parse_policy(s, v, l);
  }
  long long d;
  if ((v = cpli_ymap_get(n, "depth"))) l->depth_pos = pos_of(v);
  if (v && want_int(s, v, "depth", "a positive integer", 1, CPLI_WF_MAX_DEPTH, &d))
    l->depth = (int)d;
  double t;
  if ((v = cpli_ymap_get(n, "timeout")) && want_seconds(s, v, "timeout", CPLI_WF_MAX_TIMEOUT, &t))
    l->timeout = t;
}

/* ------------------------------------------------------------ top */

/* File name without directory and extension: the default workflow name.
 * It must be a valid name like any other (it is shown in messages and
 * written into generated files): if not, the user adds name:. */
static char *stem(S *s, const char *path) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  size_t n = strcspn(b, ".");
  if (n == 0 || strcmp(path, CPLI_WF_NO_FILE) == 0) return xstrdup(s, "workflow");
  int ok = n <= CPLI_WF_MAX_NAME;
  for (size_t i = 0; ok && i < n; i++) ok = valid_name_char(b[i]);
  if (!ok) {
    cpli_ynode shown = {.kind = CPLI_Y_SCALAR, .str = (char *)b, .len = n, .quoted = 1};
    char descbuf[128];
    cpli_diag_add(s->d, s->file, 0, 0,
                  "the workflow has no name: and the file name %s is not a valid name (1 to %d "
                  "letters, digits, \"_\" or \"-\"): add name: NAME to the file",
                  DESC(&shown), CPLI_WF_MAX_NAME);
    return NULL;
  }
  char *r = malloc(n + 1);
  if (!r) {
    s->oom = 1;
    return NULL;
  }
  memcpy(r, b, n);
  r[n] = '\0';
  return r;
}

int cpli_wf_from_tree(const cpli_ynode *root, const char *file, cpl_diag *d, cpli_workflow **out) {
  static const char *const known[] = {"version", "name", "components", "links", "trace"};
  S s = {.file = file, .d = d};
  *out = NULL;
  int before = cpl_diag_total(d);
  cpli_workflow *wf = s.wf = calloc(1, sizeof *wf);
  if (!wf) return CPL_ERR_NOMEM;

  if (!root || cpli_y_is_null(root)) {
    cpli_diag_add(d, file, root ? root->line : 1, root ? root->col : 1,
                  "empty workflow: expected a mapping with keys name, "
                  "components, links");
    cpli_wf_free(wf);
    return CPL_ERR_CONFIG;
  }
  if (!want_kind(&s, root, CPLI_Y_MAP, "the workflow (top level)")) {
    cpli_wf_free(wf);
    return CPL_ERR_CONFIG;
  }
  check_keys(&s, root, "workflow", known, 5);

  const cpli_ynode *v;
  long long ver;
  if ((v = cpli_ymap_get(root, "version"))) want_int(&s, v, "version", "1", 1, 1, &ver);
  if ((v = cpli_ymap_get(root, "trace"))) {
    /* "chrome:" alone names no file: every process warned at run time */
    const char *t = want_string(&s, v, "trace");
    char descbuf[128];
    if (t && !strcmp(t, "chrome:"))
      err(&s, v, "trace: needs a file name (FILE or chrome:FILE), got %s", DESC(v));
    else if (t && !tilde_path(&s, v, "trace", t + (strncmp(t, "chrome:", 7) ? 0 : 7)))
      wf->trace = xstrdup(&s, t);
  }
  if ((v = cpli_ymap_get(root, "name"))) {
    if (want_name(&s, v, "workflow name")) wf->name = xstrdup(&s, v->str);
  } else {
    wf->name = stem(&s, file);
  }

  const cpli_ynode *comps = cpli_ymap_get(root, "components");
  if (!comps) {
    err(&s, root, "workflow needs components: a list of components");
  } else if (want_kind(&s, comps, CPLI_Y_SEQ, "components")) {
    if (comps->n == 0) err(&s, comps, "components must list at least one component");
    else if (comps->n > CPLI_WF_MAX_COMPONENTS)
      err(&s, comps, "at most %d components", CPLI_WF_MAX_COMPONENTS);
    else if ((wf->comps = xcalloc(&s, comps->n, sizeof *wf->comps))) {
      for (size_t i = 0; i < comps->n; i++)
        parse_component(&s, comps->items[i], &wf->comps[wf->ncomps++]);
    }
  }

  if ((v = cpli_ymap_get(root, "links")) && !cpli_y_is_null(v) &&
      want_kind(&s, v, CPLI_Y_SEQ, "links")) {
    if (v->n > CPLI_WF_MAX_LINKS) err(&s, v, "at most %d links", CPLI_WF_MAX_LINKS);
    else if ((wf->links = xcalloc(&s, v->n, sizeof *wf->links))) {
      for (size_t i = 0; i < v->n; i++) parse_link(&s, v->items[i], &wf->links[wf->nlinks++]);
    }
  }

  if (!s.oom) cpli_wf_check(wf, file, d);
  if (s.oom || cpl_diag_total(d) > before) {
    cpli_wf_free(wf);
    return s.oom ? CPL_ERR_NOMEM : CPL_ERR_CONFIG;
  }
  *out = wf;
  return CPL_OK;
}
