/* File names as the system resolves them (path.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "core/path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t cpli_path_fs_prefix(const char *path) {
  static const char *const fs[] = {"ufs",    "nfs",  "xfs",    "pvfs2", "gpfs",      "panfs",
                                   "lustre", "daos", "testfs", "ime",   "quobytefs", "gridftp"};
  const char *colon = strchr(path, ':');
  for (size_t i = 0; colon && i < sizeof fs / sizeof *fs; i++)
    if ((size_t)(colon - path) == strlen(fs[i]) && strncmp(path, fs[i], strlen(fs[i])) == 0)
      return strlen(fs[i]) + 1;
  return 0;
}

/* Append the components of `rest` to the absolute name `out` (room for
 * them), lexically. */
static void append_lexical(char *out, char *rest) {
  size_t o = strlen(out);
  for (char *save = NULL, *part = strtok_r(rest, "/", &save); part;
       part = strtok_r(NULL, "/", &save)) {
    if (strcmp(part, ".") == 0) continue;
    if (strcmp(part, "..") == 0) { /* "/.." is "/" */
      char *last = strrchr(out, '/');
      o = last == out ? 1 : (size_t)(last - out);
      out[o] = '\0';
      continue;
    }
    if (out[o - 1] != '/') out[o++] = '/';
    o += (size_t)sprintf(out + o, "%s", part);
  }
}

char *cpli_path_resolve(const char *workdir, const char *path) {
  path += cpli_path_fs_prefix(path);
  char cwd[PATH_MAX], *wd = NULL;
  if (path[0] != '/' && (!workdir || workdir[0] != '/')) {
    if (!getcwd(cwd, sizeof cwd)) return NULL;
  } else {
    cwd[0] = '\0';
  }
  if (path[0] != '/' && workdir) { /* the workdir's own relative name is from cwd */
    size_t n = strlen(cwd) + strlen(workdir) + 2;
    if (!(wd = malloc(n))) return NULL;
    snprintf(wd, n, "%s%s%s", workdir[0] == '/' ? "" : cwd, workdir[0] == '/' ? "" : "/", workdir);
  }
  const char *base = path[0] == '/' ? "" : wd ? wd : cwd;
  const size_t n = strlen(base) + strlen(path) + PATH_MAX + 2;
  char *full = malloc(n), *out = malloc(n);
  if (!full || !out) {
    free(wd), free(full), free(out);
    return NULL;
  }
  snprintf(full, n, "%s/%s", base, path);
  free(wd);
  /* The longest existing prefix, cut at a '/', resolved by the system. */
  size_t cut = strlen(full);
  for (;;) {
    char c = full[cut];
    full[cut] = '\0';
    char *r = cut ? realpath(full, out) : NULL;
    full[cut] = c;
    if (r || cut == 0) break;
    while (cut > 0 && full[--cut] != '/') {
    }
  }
  if (cut == 0) snprintf(out, n, "/");
  append_lexical(out, full + cut);
  free(full);
  return out;
}
