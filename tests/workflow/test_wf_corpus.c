/* Bad-file corpus check: every FILE must fail to load, and each of its
 * "# expect: [LINE:COL: ]FRAGMENT" lines must match a message (at that
 * position, when given). Every message
 * must start with "FILE:" (positioned errors with "FILE:LINE:COL: "). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coupler.h"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *nb = realloc(buf, 2 * cap + 1);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  *len = n;
  return buf;
}

static int check_file(const char *path) {
  size_t len = 0;
  char *text = slurp(path, &len);
  if (!text) {
    fprintf(stderr, "%s: cannot read\n", path);
    return 1;
  }
  cpl_diag *d = NULL;
  if (cpl_diag_create(&d) != CPL_OK) return 1;
  cpl_workflow *wf = NULL;
  int rc = cpl_workflow_load(path, d, &wf);
  int fail = 0;
  if (rc == CPL_OK || wf) {
    fprintf(stderr, "%s: loaded, but it is in the bad corpus\n", path);
    fail = 1;
  }
  if (cpl_diag_count(d) == 0) {
    fprintf(stderr, "%s: failed without any message\n", path);
    fail = 1;
  }
  size_t plen = strlen(path);
  for (int i = 0; i < cpl_diag_count(d); i++) {
    const char *m = cpl_diag_message(d, i);
    if (strncmp(m, path, plen) != 0 || m[plen] != ':') {
      fprintf(stderr, "%s: message does not start with the file name: %s\n", path, m);
      fail = 1;
    }
  }
  int nexpect = 0;
  /* Expectations sit in leading comment lines (before any NUL byte). */
  for (char *line = text; line && *line;) {
    char *eol = strchr(line, '\n');
    if (eol) *eol = '\0';
    const char *tag = "# expect: ";
    if (strncmp(line, tag, strlen(tag)) == 0) {
      const char *frag = line + strlen(tag);
      nexpect++;
      /* "L:C: text": a message at file:L:C: that contains text. */
      char at[64] = "";
      int l = 0, c = 0, used = 0;
      if (sscanf(frag, "%d:%d: %n", &l, &c, &used) == 2 && used > 0) {
        snprintf(at, sizeof at, ":%d:%d: ", l, c);
        frag += used;
      }
      int found = 0;
      for (int i = 0; i < cpl_diag_count(d) && !found; i++) {
        const char *m = cpl_diag_message(d, i);
        found = strstr(m, frag) != NULL && (!at[0] || strncmp(m + plen, at, strlen(at)) == 0);
      }
      if (!found) {
        fprintf(stderr, "%s: no message%s%s contains \"%s\"\n", path, at[0] ? " at " : "", at,
                frag);
        fail = 1;
      }
    }
    line = eol ? eol + 1 : NULL;
  }
  if (nexpect == 0 && len > 0) {
    fprintf(stderr, "%s: no '# expect: ' line\n", path);
    fail = 1;
  }
  if (fail) {
    fprintf(stderr, "  messages were:\n");
    for (int i = 0; i < cpl_diag_count(d); i++) fprintf(stderr, "    %s\n", cpl_diag_message(d, i));
  }
  cpl_workflow_destroy(wf);
  cpl_diag_destroy(d);
  free(text);
  return fail;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_wf_corpus BAD.yaml...\n");
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; i++) failed += check_file(argv[i]);
  printf("%d passed, %d failed\n", argc - 1 - failed, failed);
  return failed ? 1 : 0;
}
