/*
 * The tuning file; see tuning_file.h.
 */
#include "coll/tuning_file.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll/tuning.h"
#include "coupler.h"

static int say(char *err, size_t n, int rc, const char *fmt, ...) {
  if (err && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
  }
  return rc;
}

int cpli_model_value_ok(int beta, double d) {
  return beta ? d >= CPLI_BETA_MIN && d <= CPLI_BETA_MAX
              : d >= CPLI_SECONDS_MIN && d <= CPLI_SECONDS_MAX;
}

const char *cpli_model_range(int beta) {
  /* from the constants, so the words never drift from the check */
  static _Thread_local char text[2][48];
  snprintf(text[beta != 0], sizeof text[0], "from %g to %g",
           beta ? CPLI_BETA_MIN : CPLI_SECONDS_MIN, beta ? CPLI_BETA_MAX : CPLI_SECONDS_MAX);
  return text[beta != 0];
}

int cpli_parse_bytes(const char *s, size_t *out) {
  char *end;
  errno = 0;
  double d = strtod(s, &end);
  if (end == s || errno) return -1;
  if (*end == 'k' || *end == 'K') d *= 1024, end++;
  else if (*end == 'm' || *end == 'M') d *= 1024 * 1024, end++;
  if (*end || !(d >= 1) || d > CPLI_BYTES_MAX || d != floor(d)) return -1;
  *out = (size_t)d;
  return 0;
}

int cpli_parse_bytes0(const char *s, size_t *out) {
  if (strcmp(s, "0") == 0) return *out = 0, 0;
  return cpli_parse_bytes(s, out);
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

int cpli_tuning_file_read(const char *path, cpli_tuning_vals *v, char *err, size_t errlen) {
  *v = (cpli_tuning_vals){0};
  FILE *f = fopen(path, "r");
  if (!f) return say(err, errlen, CPL_ERR_IO, "%s: %s", path, strerror(errno));
  char line[512];
  int lineno = 0, rc = CPL_OK;
  enum { NKEYS = 6 };
  int seen[NKEYS] = {0};
  static const char *const keys[NKEYS] = {"alpha", "beta",           "overhead",
                                          "chunk", "inter_root_max", "intra_root_bytes"};
  /* Zeroed before each read: a newline found past a NUL is this line's,
   * so a NUL byte is told from a line too long for the buffer. */
  while (rc == CPL_OK && (memset(line, 0, sizeof line), fgets(line, sizeof line, f))) {
    lineno++;
    const char *nl = memchr(line, '\n', sizeof line);
    if (nl && memchr(line, '\0', (size_t)(nl - line))) {
      rc = say(err, errlen, CPL_ERR_PARSE, "%s:%d: a NUL byte (not a text file?)", path, lineno);
      break;
    }
    if (!nl && !feof(f)) {
      rc = say(err, errlen, CPL_ERR_PARSE, "%s:%d: line longer than %zu characters", path, lineno,
               sizeof line - 2);
      break;
    }
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *s = trim(line);
    if (!*s) continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      rc = say(err, errlen, CPL_ERR_PARSE, "%s:%d: expected \"key = value\", got \"%s\"", path,
               lineno, s);
      break;
    }
    *eq = '\0';
    char *key = trim(s), *val = trim(eq + 1);
    int k = -1;
    for (int i = 0; i < NKEYS; i++)
      if (!strcmp(key, keys[i])) k = i;
    if (k < 0) {
      rc = say(err, errlen, CPL_ERR_PARSE,
               "%s:%d: unknown key \"%s\" (known: alpha, beta, overhead, chunk, inter_root_max, "
               "intra_root_bytes)",
               path, lineno, key);
      break;
    }
    if (seen[k]) {
      rc = say(err, errlen, CPL_ERR_PARSE, "%s:%d: %s given twice (first on line %d)", path, lineno,
               key, seen[k]);
      break;
    }
    seen[k] = lineno;
    if (k >= 4) { /* the switch points: bytes, or 0 */
      size_t *at = k == 4 ? &v->inter_root_max : &v->intra_root_bytes;
      *(k == 4 ? &v->inter_root_max_set : &v->intra_root_bytes_set) = 1;
      if (cpli_parse_bytes0(val, at))
        rc = say(err, errlen, CPL_ERR_PARSE,
                 "%s:%d: %s: expected a whole number of bytes up to 10^15 (K or M suffix) or 0, "
                 "got \"%s\"",
                 path, lineno, key, val);
      continue;
    }
    if (k == 3) {
      if (cpli_parse_bytes(val, &v->chunk) || v->chunk < CPLI_CHUNK_MIN)
        rc = say(err, errlen, CPL_ERR_PARSE,
                 "%s:%d: chunk: expected a whole number of bytes from %d to 10^15 (K or M suffix), "
                 "got "
                 "\"%s\"",
                 path, lineno, CPLI_CHUNK_MIN, val);
      continue;
    }
    char *end;
    errno = 0;
    const double d = strtod(val, &end);
    if (end == val || *end || errno || !cpli_model_value_ok(k == 1, d)) {
      rc = say(err, errlen, CPL_ERR_PARSE,
               "%s:%d: %s: expected a number of seconds%s %s, got \"%s\"", path, lineno, key,
               k == 1 ? " per byte" : "", cpli_model_range(k == 1), val);
      break;
    }
    *(k == 0 ? &v->alpha : k == 1 ? &v->beta : &v->overhead) = d;
  }
  if (rc == CPL_OK && ferror(f)) /* a directory: EISDIR */
    rc = say(err, errlen, CPL_ERR_IO, "%s: read error: %s", path, strerror(errno));
  fclose(f);
  if (rc != CPL_OK) *v = (cpli_tuning_vals){0};
  return rc;
}

/* mkdir -p of the directory part of path. */
static int make_dirs(const char *path, char *err, size_t errlen) {
  char dir[4096];
  if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
    return say(err, errlen, CPL_ERR_IO, "%s: path too long", path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) return CPL_OK;
  *slash = '\0';
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0777) && errno != EEXIST)
      return say(err, errlen, CPL_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    *p = '/';
  }
  if (mkdir(dir, 0777) && errno != EEXIST)
    return say(err, errlen, CPL_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
  return CPL_OK;
}

int cpli_tuning_file_write(const char *path, const cpli_tuning_vals *v, const char *comment,
                           char *err, size_t errlen) {
  int rc = make_dirs(path, err, errlen);
  if (rc != CPL_OK) return rc;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return say(err, errlen, CPL_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
  if (comment)
    for (const char *c = comment; *c;) {
      const char *nl = strchr(c, '\n');
      const int n = nl ? (int)(nl - c) : (int)strlen(c);
      fprintf(f, "# %.*s\n", n, c);
      c += n + (nl ? 1 : 0);
    }
  if (v->alpha > 0)
    fprintf(f, "alpha = %.6g     # s, start-up of one message in a round\n", v->alpha);
  if (v->beta > 0)
    fprintf(f, "beta = %.6g      # s per byte (%.1f MB/s)\n", v->beta, 1e-6 / v->beta);
  if (v->overhead > 0)
    fprintf(f, "overhead = %.6g  # s per further message of a stream\n", v->overhead);
  if (v->chunk > 0) fprintf(f, "chunk = %zu\n", v->chunk);
  if (v->inter_root_max_set)
    fprintf(f, "inter_root_max = %zu  # bytes per block up to which auto takes root (inter)\n",
            v->inter_root_max);
  if (v->intra_root_bytes_set)
    fprintf(f, "intra_root_bytes = %zu  # most bytes member 0 of root sends for auto to take it\n",
            v->intra_root_bytes);
  const int bad = ferror(f) != 0;
  if (fclose(f) != 0 || bad) {
    remove(tmp);
    return say(err, errlen, CPL_ERR_IO, "cannot write %s", tmp);
  }
  if (rename(tmp, path)) {
    const int e = errno;
    remove(tmp);
    return say(err, errlen, CPL_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
  }
  return CPL_OK;
}

const char *cpli_tuning_file_path(char *buf, size_t n, int *explicit_) {
  const char *e = getenv("CPL_TUNING_FILE");
  *explicit_ = e && *e;
  if (*explicit_) return snprintf(buf, n, "%s", e) < (int)n ? buf : NULL;
  const char *x = getenv("XDG_CONFIG_HOME");
  if (x && *x) return snprintf(buf, n, "%s/coupler/tuning", x) < (int)n ? buf : NULL;
  const char *h = getenv("HOME");
  if (h && *h) return snprintf(buf, n, "%s/.config/coupler/tuning", h) < (int)n ? buf : NULL;
  return NULL;
}
