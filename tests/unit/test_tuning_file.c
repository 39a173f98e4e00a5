/*
 * The tuning file (coll/tuning_file.h): what is written is read back;
 * every kind of bad line is refused naming file:line; the library reads
 * CPL_TUNING_FILE, else $XDG_CONFIG_HOME/coupler/tuning; the environment
 * wins over the file, the file over the defaults; a broken named file is
 * reported in the snapshot (api.c refuses every call with it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "coll/tuning.h"
#include "coll/tuning_file.h"
#include "coupler.h"

static char dir[256];

static const char *write_text(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(text, f);
  fclose(f);
  return path;
}

static void bad(const char *text, const char *line, const char *what) {
  const char *path = write_text("bad", text);
  cpli_tuning_vals v;
  char err[600], want[600];
  const int rc = cpli_tuning_file_read(path, &v, err, sizeof err);
  snprintf(want, sizeof want, "%s:%s: ", path, line);
  CHECK(rc == CPL_ERR_PARSE && strstr(err, want) == err && strstr(err, what),
        "bad file %s: rc %d, \"%s\" (want \"%s...%s\")", text, rc, err, want, what);
  CHECK(v.alpha == 0 && v.beta == 0 && v.overhead == 0 && v.chunk == 0, "no values kept");
}

static void refresh_with(const char *file) {
  if (file) setenv("CPL_TUNING_FILE", file, 1);
  else unsetenv("CPL_TUNING_FILE");
  cpli_tuning_file_forget();
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/cpl-tuning-test.%ld", (long)getpid());
  if (mkdir(dir, 0700)) return perror(dir), 1;
  unsetenv("CPL_ALPHA"), unsetenv("CPL_BETA"), unsetenv("CPL_OVERHEAD"), unsetenv("CPL_CHUNK");
  unsetenv("CPL_INTER_ROOT_MAX"), unsetenv("CPL_INTRA_ROOT_BYTES");

  /* round trip, directory created */
  char path[512], err[600];
  snprintf(path, sizeof path, "%s/sub/dir/tuning", dir);
  const cpli_tuning_vals w = {.alpha = 1.25e-5,
                              .beta = 2.0915e-8,
                              .overhead = 3e-6,
                              .inter_root_max = 0,
                              .inter_root_max_set = 1};
  CHECK(cpli_tuning_file_write(path, &w, "made by a test\nsecond line", err, sizeof err) == CPL_OK,
        "write: %s", err);
  cpli_tuning_vals r;
  CHECK(cpli_tuning_file_read(path, &r, err, sizeof err) == CPL_OK, "read back: %s", err);
  CHECK(r.alpha == 1.25e-5 && r.beta == 2.0915e-8 && r.overhead == 3e-6 && r.chunk == 0 &&
            r.inter_root_max_set && r.inter_root_max == 0,
        "round trip: %g %g %g %zu, inter_root_max %zu (%s)", r.alpha, r.beta, r.overhead, r.chunk,
        r.inter_root_max, r.inter_root_max_set ? "set" : "not set");
  char ok[512]; /* write_text returns its own buffer */
  snprintf(ok, sizeof ok, "%s",
           write_text("ok",
                      "# comment\n\n  alpha=2e-6 # trailing\nchunk = 64K\ninter_root_max = 2K\n"
                      "intra_root_bytes = 1K\n"));
  CHECK(cpli_tuning_file_read(ok, &r, err, sizeof err) == CPL_OK && r.alpha == 2e-6 &&
            r.chunk == 65536 && r.beta == 0 && r.inter_root_max == 2048 && r.inter_root_max_set &&
            r.intra_root_bytes == 1024 && r.intra_root_bytes_set,
        "partial file: %s", err);

  bad("alpha = 1e-5\nalfa = 2\n", "2", "unknown key \"alfa\"");
  bad("beta 2e-8\n", "1", "expected \"key = value\"");
  bad("\n\nalpha = -1\n", "3", "alpha: expected a number of seconds from 1e-09 to 10");
  bad("beta = 1e-8x\n", "1", "expected a number of seconds per byte from 1e-13 to 0.001");
  bad("overhead = nan\n", "1", "from 1e-09 to 10");
  /* out of the model's range: a typo or a failed measurement */
  bad("alpha = 1e300\n", "1", "alpha: expected a number of seconds from 1e-09 to 10");
  bad("beta = 2e-3\n", "1", "got \"2e-3\"");
  bad("overhead = 1e-10\n", "1", "overhead: expected");
  bad("alpha = 1\nalpha = 2\n", "2", "given twice (first on line 1)");
  bad("chunk = 0\n", "1", "chunk: expected a whole number");
  bad("chunk = 1.5\n", "1", "chunk");
  bad("chunk = 1\n", "1",
      "chunk: expected a whole number of bytes from 512 to 10^15"); /* crashed MPICH */
  bad("alpha = 1e-6\nchunk = 511\n", "2", "from 512 to 10^15");
  bad("alpha =\n", "1", "got \"\"");
  bad("inter_root_max = -1\n", "1",
      "inter_root_max: expected a whole number of bytes up to 10^15 (K or M suffix) or 0");
  bad("inter_root_max = 100.5\n", "1", "inter_root_max");
  bad("intra_root_bytes = x\n", "1", "intra_root_bytes: expected a whole number of bytes");
  bad("inter_root_max = 1K\ninter_root_max = 2K\n", "2", "given twice");
  /* a NUL byte was "line longer than 510 characters" */
  const char *nul = write_text("nul", "alpha = 1e-5\n");
  FILE *nf = fopen(nul, "w");
  if (!nf) abort();
  fwrite("beta = 1e-9\n\0x\nalpha = 1\n", 1, 25, nf);
  fclose(nf);
  CHECK(cpli_tuning_file_read(nul, &r, err, sizeof err) == CPL_ERR_PARSE &&
            strstr(err, ":2: a NUL byte"),
        "NUL byte: %s", err);
  /* a directory was "read error" */
  CHECK(cpli_tuning_file_read(dir, &r, err, sizeof err) == CPL_ERR_IO && strstr(err, "directory"),
        "directory: %s", err);
  CHECK(cpli_tuning_file_read("/nonexistent/x", &r, err, sizeof err) == CPL_ERR_IO &&
            strstr(err, "/nonexistent/x"),
        "missing file: %s", err);

  /* the library: file over defaults, environment over file */
  refresh_with(path);
  const cpli_tuning *t = cpli_tuning_refresh();
  CHECK(t->file && !strcmp(t->file, path) && !t->file_error, "file read: %s",
        t->file_error ? t->file_error : "(none)");
  CHECK(t->alpha == 1.25e-5 && t->beta == 2.0915e-8 && t->overhead == 3e-6 && t->chunk == 0,
        "values from the file: %g %g %g %zu", t->alpha, t->beta, t->overhead, t->chunk);
  CHECK(!strcmp(t->alpha_from, "file") && !strcmp(t->chunk_from, "model"), "sources");
  setenv("CPL_ALPHA", "7e-5", 1);
  setenv("CPL_CHUNK", "128K", 1);
  t = cpli_tuning_refresh();
  CHECK(t->alpha == 7e-5 && !strcmp(t->alpha_from, "CPL_ALPHA") && t->beta == 2.0915e-8 &&
            t->chunk == 131072 && !strcmp(t->chunk_from, "CPL_CHUNK"),
        "environment wins: %g %zu", t->alpha, t->chunk);
  unsetenv("CPL_ALPHA"), unsetenv("CPL_CHUNK");
  t = cpli_tuning_refresh();
  CHECK(t->alpha == 1.25e-5 && t->chunk == 0, "back to the file: %g", t->alpha);
  /* the file's chunk is a fixed cut; overhead defaults to alpha */
  refresh_with(ok);
  t = cpli_tuning_refresh();
  CHECK(t->chunk == 65536 && !strcmp(t->chunk_from, "file") && t->overhead == 2e-6 &&
            !strcmp(t->overhead_from, "alpha") && t->beta == CPLI_DEFAULT_BETA,
        "file chunk %zu, overhead %g", t->chunk, t->overhead);
  /* inter_root_max: the file's, CPL_INTER_ROOT_MAX over it (0 a value), a bad one loud */
  CHECK(t->inter_root_max == 2048 && !strcmp(t->inter_root_max_from, "file") &&
            t->intra_root_bytes == 1024 && !strcmp(t->intra_root_bytes_from, "file"),
        "file inter_root_max %zu, intra_root_bytes %zu", t->inter_root_max, t->intra_root_bytes);
  setenv("CPL_INTRA_ROOT_BYTES", "512", 1);
  t = cpli_tuning_refresh();
  CHECK(t->intra_root_bytes == 512 && !strcmp(t->intra_root_bytes_from, "CPL_INTRA_ROOT_BYTES"),
        "CPL_INTRA_ROOT_BYTES=512: %zu", t->intra_root_bytes);
  unsetenv("CPL_INTRA_ROOT_BYTES");
  setenv("CPL_INTER_ROOT_MAX", "0", 1);
  t = cpli_tuning_refresh();
  CHECK(t->inter_root_max == 0 && !strcmp(t->inter_root_max_from, "CPL_INTER_ROOT_MAX") &&
            !t->file_error,
        "CPL_INTER_ROOT_MAX=0: %zu from %s", t->inter_root_max, t->inter_root_max_from);
  setenv("CPL_INTER_ROOT_MAX", "4k", 1);
  t = cpli_tuning_refresh();
  CHECK(t->inter_root_max == 4096 && !t->file_error, "CPL_INTER_ROOT_MAX=4k: %zu",
        t->inter_root_max);
  setenv("CPL_INTER_ROOT_MAX", "small", 1);
  t = cpli_tuning_refresh();
  CHECK(t->file_error &&
            strstr(t->file_error, "CPL_INTER_ROOT_MAX: expected a whole number of bytes"),
        "CPL_INTER_ROOT_MAX=small: %s", t->file_error ? t->file_error : "(accepted)");
  unsetenv("CPL_INTER_ROOT_MAX");
  refresh_with(path);
  t = cpli_tuning_refresh();
  CHECK(t->inter_root_max == 0 && !strcmp(t->inter_root_max_from, "file"),
        "file inter_root_max 0: %zu from %s", t->inter_root_max, t->inter_root_max_from);

  /* broken or missing named file: loud; missing default file: defaults */
  refresh_with(write_text("broken", "alpha = 1e-5\nbogus\n"));
  t = cpli_tuning_refresh();
  CHECK(t->file_error && strstr(t->file_error, "broken:2:") && t->alpha == CPLI_DEFAULT_ALPHA,
        "broken file: %s", t->file_error ? t->file_error : "(not reported)");
  refresh_with("/nonexistent/tuning");
  t = cpli_tuning_refresh();
  CHECK(t->file_error && strstr(t->file_error, "CPL_TUNING_FILE"), "missing named file: %s",
        t->file_error ? t->file_error : "(not reported)");
  char xdg[300];
  snprintf(xdg, sizeof xdg, "%s/xdg", dir);
  setenv("XDG_CONFIG_HOME", xdg, 1);
  refresh_with(NULL);
  t = cpli_tuning_refresh();
  CHECK(!t->file && !t->file_error && t->alpha == CPLI_DEFAULT_ALPHA, "no default file");
  snprintf(path, sizeof path, "%s/coupler/tuning", xdg);
  CHECK(cpli_tuning_file_write(path, &w, NULL, err, sizeof err) == CPL_OK, "%s", err);
  cpli_tuning_file_forget();
  t = cpli_tuning_refresh();
  CHECK(t->file && !strcmp(t->file, path) && t->alpha == 1.25e-5, "default path %s", path);
  /* read once: a changed file is not seen until the next process */
  const cpli_tuning_vals w2 = {.alpha = 9e-3};
  cpli_tuning_file_write(path, &w2, NULL, err, sizeof err);
  t = cpli_tuning_refresh();
  CHECK(t->alpha == 1.25e-5, "the file is read once per process");

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
  printf("tuning file: %d failures\n", failures);
  return failures != 0;
}
