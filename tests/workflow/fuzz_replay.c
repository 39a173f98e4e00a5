/* Replay driver: feed every file named on the command line, or found in a
 * directory named there, through LLVMFuzzerTestOneInput. Lets ctest run the
 * fuzz corpus without libFuzzer. */
#define _XOPEN_SOURCE 700 /* opendir, stat */

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
    return 1;
  }
  size_t cap = 4096, n = 0, got;
  uint8_t *buf = malloc(cap);
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap * 2);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (!buf) return 1;
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  int ran = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "fuzz_replay: no such file or directory: %s\n", argv[i]);
      bad++;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad += run_file(argv[i]);
      ran++;
      continue;
    }
    DIR *dir = opendir(argv[i]);
    if (!dir) {
      bad++;
      continue;
    }
    char **names = NULL;
    size_t nn = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
      if (e->d_name[0] == '.') continue;
      char **v = realloc(names, (nn + 1) * sizeof *v);
      size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
      char *p = malloc(len);
      if (!v || !p) return 2;
      names = v;
      snprintf(p, len, "%s/%s", argv[i], e->d_name);
      names[nn++] = p;
    }
    closedir(dir);
    qsort(names, nn, sizeof *names, cmp); /* same order every run */
    for (size_t k = 0; k < nn; k++) {
      if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) {
        bad += run_file(names[k]);
        ran++;
      }
      free(names[k]);
    }
    free(names);
  }
  printf("fuzz_replay: %d passed, %d failed\n", ran - bad, bad);
  return bad || ran == 0;
}
