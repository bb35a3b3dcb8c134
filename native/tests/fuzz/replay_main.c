/*
 * replay_main.c: runs a libFuzzer target's entry point over every file of a corpus directory,
 * without libFuzzer, so the committed corpus is replayed in the normal and sanitizer ctest runs
 * (SQLite replays its fuzz corpora the same way).
 *
 * Usage: replay_<target> DIR_OR_FILE...   Exit status 0 when every input ran.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return 1;
  }
  long size = ftell(f);
  if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return 1;
  }
  /* Exact-size heap copy, so ASan flags any read past the input's end. */
  uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
  if (buf == NULL) {
    fclose(f);
    return 1;
  }
  size_t got = fread(buf, 1, (size_t)size, f);
  fclose(f);
  if (got != (size_t)size) {
    free(buf);
    return 1;
  }
  LLVMFuzzerTestOneInput(buf, got);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int failures = 0;
  int inputs = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "no such corpus: %s\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      failures += run_file(argv[i]);
      inputs++;
      continue;
    }
    DIR *dir = opendir(argv[i]);
    if (dir == NULL) return 1;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      int n = snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      if (n < 0 || (size_t)n >= sizeof path) continue;
      failures += run_file(path);
      inputs++;
    }
    closedir(dir);
  }
  printf("replayed %d inputs, %d unreadable\n", inputs, failures);
  return (failures == 0 && inputs > 0) ? 0 : 1;
}
