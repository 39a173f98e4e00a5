/*
 * Environment snapshot (coll/tuning.h): defaults when unset or empty, the
 * same parsing as before the snapshot existed (a bad timeout is reported),
 * a bad CPL_ALPHA, CPL_BETA, CPL_OVERHEAD, CPL_CHUNK, CPL_FLOW or CPL_RING is reported in
 * file_error naming the variable and the value, and a change made with setenv
 * between two calls is always seen, including a value changed back and a
 * value longer than the remembered length, from the next refresh on.
 */
#define _XOPEN_SOURCE 700 /* putenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll/tuning.h"

static void unset_all(void) {
  const char *v[] = {"CPL_ALPHA",
                     "CPL_BETA",
                     "CPL_CHUNK",
                     "CPL_FLOW",
                     "CPL_RING",
                     "CPL_INTER_ALGORITHM",
                     "CPL_INTRA_ALGORITHM",
                     "CPL_TIMEOUT"};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) unsetenv(v[i]);
}

int main(void) {
  /* no tuning file: a calibrated developer machine must not change this */
  unsetenv("CPL_TUNING_FILE");
  unsetenv("CPL_OVERHEAD");
  setenv("XDG_CONFIG_HOME", "/nonexistent/coupler-test", 1);
  unset_all();
  const cpli_tuning *t = cpli_tuning_refresh();
  CHECK(t->alpha == CPLI_DEFAULT_ALPHA && t->beta == CPLI_DEFAULT_BETA, "model defaults");
  CHECK(t->chunk == (size_t)0 && t->flow == 1, "chunk %zu flow %d", t->chunk, t->flow);
  CHECK(t->ring == -1, "ring unset: %d", t->ring);
  CHECK(!*t->inter && !*t->intra && !t->timeout_set && !t->timeout_bad, "names, timeout unset");

  setenv("CPL_ALPHA", "2e-5", 1);
  setenv("CPL_CHUNK", "128K", 1);
  setenv("CPL_FLOW", "0", 1);
  setenv("CPL_RING", "1", 1);
  setenv("CPL_INTRA_ALGORITHM", "bruck", 1);
  setenv("CPL_TIMEOUT", "2.5", 1);
  setenv("CPL_NODE_ADDR", "10.77.0.1", 1); /* other CPL_ names are ignored */
  t = cpli_tuning_refresh();
  CHECK(t->alpha == 2e-5 && t->beta == CPLI_DEFAULT_BETA, "alpha %g beta %g", t->alpha, t->beta);
  CHECK(t->chunk == 128 * 1024 && t->flow == 0, "chunk %zu flow %d", t->chunk, t->flow);
  CHECK(t->ring == 1, "ring %d", t->ring);
  CHECK(strcmp(t->intra, "bruck") == 0 && !*t->inter, "intra \"%s\"", t->intra);
  CHECK(t->timeout_set && t->timeout == 2.5 && !t->timeout_bad, "timeout %g", t->timeout);

  setenv("CPL_CHUNK", "1M", 1);
  setenv("CPL_TIMEOUT", "soon", 1);
  t = cpli_tuning_refresh();
  CHECK(t->chunk == 1024 * 1024, "chunk changed: %zu", t->chunk);
  CHECK(t->timeout_bad && strcmp(t->timeout_bad, "soon") == 0, "bad timeout kept as text");

  setenv("CPL_CHUNK", "128K", 1); /* back to an earlier value */
  unsetenv("CPL_TIMEOUT");
  t = cpli_tuning_refresh();
  CHECK(t->chunk == 128 * 1024 && !t->timeout_set && !t->timeout_bad, "changed back");

  char long_name[300];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  setenv("CPL_INTER_ALGORITHM", long_name, 1);
  t = cpli_tuning_refresh();
  CHECK(strcmp(t->inter, long_name) == 0, "a long value is passed on whole");
  CHECK(t->chunk == 128 * 1024 && t->ring == 1, "other values with a long one");
  setenv("CPL_INTER_ALGORITHM", "fc", 1);
  t = cpli_tuning_refresh();
  CHECK(strcmp(t->inter, "fc") == 0, "after a long value: \"%s\"", t->inter);

  setenv("CPL_CHUNK", "", 1); /* empty is unset */
  setenv("CPL_FLOW", "", 1);
  t = cpli_tuning_refresh();
  CHECK(t->chunk == (size_t)0 && t->flow == 1, "empty values");
  CHECK(cpli_tuning_refresh() == t, "one snapshot per thread");
  setenv("CPL_CHUNK", "64K", 1); /* seen from the next refresh on */
  CHECK(cpli_tuning_now()->chunk == (size_t)0, "now() does not read the environment");
  CHECK(cpli_tuning_refresh()->chunk == 64 * 1024 && cpli_tuning_now()->chunk == 64 * 1024,
        "refresh reads it");
  unset_all();

  /* Bad model values: an error naming the variable and the value (api.c
   * refuses every call while file_error is set), never a silent default. */
  static const char *const model_vars[] = {"CPL_ALPHA", "CPL_BETA", "CPL_OVERHEAD", "CPL_CHUNK"};
  static const char *const bad_vals[] = {"abc", "-5", "0", "nan", "inf", "1e-3x"};
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < sizeof bad_vals / sizeof *bad_vals; j++) {
      setenv(model_vars[i], bad_vals[j], 1);
      t = cpli_tuning_refresh();
      char want[64];
      snprintf(want, sizeof want, "\"%s\"", bad_vals[j]);
      CHECK(t->file_error && strstr(t->file_error, model_vars[i]) && strstr(t->file_error, want),
            "%s=%s: %s", model_vars[i], bad_vals[j], t->file_error ? t->file_error : "(accepted)");
      unsetenv(model_vars[i]);
      t = cpli_tuning_refresh();
      CHECK(!t->file_error, "%s unset again: %s", model_vars[i],
            t->file_error ? t->file_error : "");
    }
  /* Switches: 0 or 1 (CPL_FLOW=no ran the dataflow plans, silently). */
  static const char *const switches[] = {"CPL_FLOW", "CPL_RING"};
  static const char *const bad_flags[] = {"no", "false", "2", "01", " 0"};
  for (size_t i = 0; i < 2; i++) {
    for (size_t j = 0; j < sizeof bad_flags / sizeof *bad_flags; j++) {
      setenv(switches[i], bad_flags[j], 1);
      t = cpli_tuning_refresh();
      char want[64];
      snprintf(want, sizeof want, "%s: expected 0 or 1, got \"%s\"", switches[i], bad_flags[j]);
      CHECK(t->file_error && strstr(t->file_error, want), "%s=%s: %s", switches[i], bad_flags[j],
            t->file_error ? t->file_error : "(accepted)");
    }
    setenv(switches[i], "0", 1);
    t = cpli_tuning_refresh();
    CHECK(!t->file_error, "%s=0: %s", switches[i], t->file_error ? t->file_error : "");
    unsetenv(switches[i]);
  }
  /* CPL_CHUNK: whole bytes, CPLI_CHUNK_MIN (chunk 1 crashed MPICH) to 10^15 */
  static const char *const bad_chunks[] = {"1", "511", "700.5", "-1K", "2e15"};
  for (size_t j = 0; j < sizeof bad_chunks / sizeof *bad_chunks; j++) {
    setenv("CPL_CHUNK", bad_chunks[j], 1);
    t = cpli_tuning_refresh();
    CHECK(t->file_error && strstr(t->file_error, "CPL_CHUNK") &&
              strstr(t->file_error, "from 512 to 10^15"),
          "CPL_CHUNK=%s: %s", bad_chunks[j], t->file_error ? t->file_error : "(accepted)");
  }
  setenv("CPL_CHUNK", "512", 1);
  t = cpli_tuning_refresh();
  CHECK(!t->file_error && t->chunk == 512, "CPL_CHUNK=512: %zu", t->chunk);
  setenv("CPL_OVERHEAD", "2e-6", 1);
  setenv("CPL_BETA", "1e-9", 1);
  t = cpli_tuning_refresh();
  CHECK(!t->file_error && t->overhead == 2e-6 && t->beta == 1e-9, "good values accepted");
  setenv("CPL_ALPHA", "abc", 1);
  setenv("CPL_BETA", "0", 1);
  t = cpli_tuning_refresh();
  CHECK(t->file_error &&
            strstr(t->file_error, "CPL_ALPHA: expected a number of seconds from 1e-09 to 10, "
                                  "got \"abc\""),
        "first bad one reported: %s", t->file_error ? t->file_error : "(none)");
  /* a typo's absurd value is refused too (it was planned with) */
  static const char *const absurd[][2] = {
      {"CPL_ALPHA", "1e300"}, {"CPL_BETA", "1e-300"}, {"CPL_OVERHEAD", "100"}};
  for (size_t j = 0; j < sizeof absurd / sizeof *absurd; j++) {
    unset_all();
    setenv(absurd[j][0], absurd[j][1], 1);
    t = cpli_tuning_refresh();
    CHECK(t->file_error && strstr(t->file_error, absurd[j][0]) && strstr(t->file_error, "from 1e-"),
          "%s=%s: %s", absurd[j][0], absurd[j][1], t->file_error ? t->file_error : "(accepted)");
  }
  unsetenv("CPL_OVERHEAD");
  unset_all();

  /* refresh skips the parse while the environment is unchanged: changes
   * it must still see. A putenv'd string, changed in place (the entry's
   * address stays) and then renamed; a variable set twice to values of
   * the same length; environ replaced by the program. */
  static char chunk_var[] = "CPL_CHUNK=4096";
  putenv(chunk_var);
  CHECK(cpli_tuning_refresh()->chunk == 4096, "putenv: %zu", cpli_tuning_now()->chunk);
  memcpy(chunk_var + 10, "8192", 4);
  CHECK(cpli_tuning_refresh()->chunk == 8192, "putenv'd value changed in place: %zu",
        cpli_tuning_now()->chunk);
  chunk_var[4] = 'X'; /* CPL_XHUNK: no longer CPL_CHUNK */
  CHECK(cpli_tuning_refresh()->chunk == 0, "putenv'd name changed in place: %zu",
        cpli_tuning_now()->chunk);
  unsetenv("CPL_XHUNK");
  setenv("CPL_ALPHA", "3e-5", 1);
  CHECK(cpli_tuning_refresh()->alpha == 3e-5, "alpha %g", cpli_tuning_now()->alpha);
  setenv("CPL_ALPHA", "4e-5", 1);
  CHECK(cpli_tuning_refresh()->alpha == 4e-5, "same length, new value: %g",
        cpli_tuning_now()->alpha);
  extern char **environ;
  char **saved = environ, *mine[] = {"CPL_ALPHA=5e-5", NULL};
  environ = mine;
  const double own = cpli_tuning_refresh()->alpha;
  environ = saved;
  CHECK(own == 5e-5, "environ replaced: alpha %g", own);
  CHECK(cpli_tuning_refresh()->alpha == 4e-5, "environ restored: alpha %g",
        cpli_tuning_now()->alpha);
  unset_all();
  return failures != 0;
}
