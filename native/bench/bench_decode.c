/*
 * bench_decode.c: the TDS decoder alone, from memory. Reads a recorded response token stream
 * (e.g. build/bench/change-1000000.tds, written by bench/decode.py), feeds it to a decoder in
 * packet-sized pieces as the client does, takes and releases every batch, and prints the best
 * of N runs next to a memcpy of the same bytes. No socket, no Python: the decoder's own cost.
 *
 *   build/rel/native/bench_decode build/bench/change-1000000.tds [runs] [piece bytes] [decode]
 *
 * With a fourth argument "decode" it skips the memcpy measurements (for a profile of the
 * decoder alone: perf record build/rel/native/bench_decode FILE 8 32759 decode).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mssqlcdc/tds.h"

/* CPU time of the process: the machine this runs on is often shared, and wall time then
 * measures the other jobs too. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int decode_all(mc_tds_decoder *d, const uint8_t *p, size_t n, size_t piece, int64_t *rows) {
  mc_error err;
  size_t off = 0;
  *rows = 0;
  mc_tds_decoder_reset(d);
  for (;;) {
    mc_tds_event ev;
    mc_status st = mc_tds_decoder_next(d, &ev, &err);
    if (st == MC_NEEDMORE) {
      if (off == n) return mc_tds_decoder_finish(d, &err) == MC_OK ? 0 : -1;
      size_t k = n - off < piece ? n - off : piece;
      if (mc_tds_decoder_feed(d, p + off, k, &err) != MC_OK) return -1;
      off += k;
      continue;
    }
    if (st != MC_OK) {
      fprintf(stderr, "decode failed: %s\n", err.message);
      return -1;
    }
    if (ev == MC_TDS_EVENT_BATCH) {
      struct ArrowArray a;
      if (mc_tds_decoder_take_batch(d, &a, &err) != MC_OK) return -1;
      *rows += a.length;
      a.release(&a);
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE [runs] [piece] [decode]\n", argv[0]);
    return 2;
  }
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  size_t piece = argc > 3 ? (size_t)atol(argv[3]) : 32767 - 8;
  int decode_only = argc > 4 && strcmp(argv[4], "decode") == 0;
  FILE *f = fopen(argv[1], "rb");
  if (f == NULL) return 2;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *data = malloc((size_t)len);
  if (data == NULL || fread(data, 1, (size_t)len, f) != (size_t)len) return 2;
  fclose(f);
  mc_tds_decoder *d = mc_tds_decoder_new(NULL);
  double best = 1e9, best_copy = 1e9, best_fresh = 1e9;
  int64_t rows = 0;
  uint8_t *copy = malloc((size_t)len);
  memset(copy, 0, (size_t)len);
  for (int r = 0; r < runs; r++) {
    double t = now();
    if (decode_all(d, data, (size_t)len, piece, &rows) != 0) return 1;
    t = now() - t;
    if (t < best) best = t;
    if (decode_only) continue;
    t = now();
    memcpy(copy, data, (size_t)len);
    t = now() - t;
    if (t < best_copy) best_copy = t;
    t = now();
    uint8_t *volatile fresh = malloc((size_t)len);
    if (fresh == NULL) return 2;
    memcpy(fresh, data, (size_t)len);
    t = now() - t;
    free(fresh);
    if (t < best_fresh) best_fresh = t;
  }
  if (decode_only) {
    printf("%lld rows, %.1f MB: decode %.4f s (%.1f ns/row)\n", (long long)rows, (double)len / 1e6,
           best, best * 1e9 / (double)rows);
  } else {
    printf(
        "%lld rows, %.1f MB: decode %.4f s (%.1f ns/row), memcpy %.4f s, fresh memcpy %.4f "
        "s, decode/memcpy %.2f, decode/fresh %.2f\n",
        (long long)rows, (double)len / 1e6, best, best * 1e9 / (double)rows, best_copy, best_fresh,
        best / best_copy, best / best_fresh);
  }
  mc_tds_decoder_free(d);
  free(copy);
  free(data);
  return 0;
}
