/*
 * test_alloc_failure.c: allocation failure injected at every allocation of a decode
 * (SQLite-style): for N = 1, 2, ... the N-th malloc/calloc/realloc made while decoding a
 * representative response returns NULL. Each run must end in a clean MC_ENOMEM with a message
 * (never a crash, a wrong status or a half-made batch), and everything must be freed: under
 * `make native-asan` LeakSanitizer fails the test on any leak. The loop ends at the first N past
 * the decode's last allocation, whose run must give exactly the transcript of an uninjected run.
 *
 * The library calls malloc, calloc and realloc directly; this executable is linked with
 * -Wl,--wrap for the three (tests/CMakeLists.txt), so every call made by the library's objects
 * (linked statically into it) goes through the __wrap_ functions below, which count only while
 * armed, i.e. inside the decoder's calls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_tds_support.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static bool armed;
static long fail_at; /* the allocation to fail, counted from 1 while armed */
static long seen;    /* allocations while armed */
static bool failed;  /* the injected failure happened */

static bool inject(void) {
  if (!armed) return false;
  if (++seen != fail_at) return false;
  failed = true;
  return true;
}

void *__wrap_malloc(size_t n) { return inject() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return inject() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return inject() ? NULL : __real_realloc(p, n); }

#define ARMED(expr) (armed = true, (expr))

typedef struct outcome {
  mc_status status; /* MC_OK, or the first failure */
  const char *where;
  char message[MC_ERROR_MESSAGE_SIZE];
  tb transcript; /* metadata, batches, DONEs: equal to the uninjected run's when MC_OK */
} outcome;

static mc_status record(outcome *o, mc_status st, const char *where, const mc_error *err) {
  o->status = st;
  o->where = where;
  snprintf(o->message, sizeof o->message, "%s", err->message);
  return st;
}

/* Decodes `bytes` fed in pieces of `chunk` bytes (each a NEEDMORE point), exporting every schema
 * and batch, as the client does. The decoder's own calls are armed; the transcript's are not. */
static outcome decode(const uint8_t *bytes, size_t n, size_t chunk, const mc_tds_options *opts) {
  outcome o;
  memset(&o, 0, sizeof o);
  mc_error err;
  err.message[0] = '\0';
  mc_tds_decoder *d = ARMED(mc_tds_decoder_new(opts));
  armed = false;
  if (d == NULL) {
    o.status = MC_ENOMEM;
    o.where = "new";
    snprintf(o.message, sizeof o.message, "decoder_new returned NULL");
    return o;
  }
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  size_t pos = 0;
  mc_status st = MC_OK;
  while (st == MC_OK && pos < n) {
    size_t take = n - pos < chunk ? n - pos : chunk;
    st = ARMED(mc_tds_decoder_feed(d, bytes + pos, take, &err));
    armed = false;
    pos += take;
    if (st != MC_OK) {
      record(&o, st, "feed", &err);
      break;
    }
    for (;;) {
      mc_tds_event ev;
      st = ARMED(mc_tds_decoder_next(d, &ev, &err));
      armed = false;
      if (st == MC_NEEDMORE) {
        st = MC_OK;
        break;
      }
      if (st != MC_OK) {
        record(&o, st, "next", &err);
        break;
      }
      if (ev == MC_TDS_EVENT_METADATA) {
        if (schema.release) schema.release(&schema);
        st = ARMED(mc_tds_decoder_export_schema(d, &schema, &err));
        armed = false;
        if (st != MC_OK) {
          assert_null(schema.release); /* nothing half made */
          record(&o, st, "export_schema", &err);
          break;
        }
        tr_printf(&o.transcript, "metadata %lld\n", (long long)schema.n_children);
      } else if (ev == MC_TDS_EVENT_BATCH) {
        struct ArrowArray a;
        memset(&a, 0, sizeof a);
        st = ARMED(mc_tds_decoder_take_batch(d, &a, &err));
        armed = false;
        if (st != MC_OK) {
          assert_null(a.release);
          record(&o, st, "take_batch", &err);
          break;
        }
        tr_array(&o.transcript, &schema, &a);
        a.release(&a);
      } else if (ev == MC_TDS_EVENT_DONE) {
        tr_printf(&o.transcript, "done rows=%llu\n",
                  (unsigned long long)mc_tds_decoder_done(d)->row_count);
      } else if (ev == MC_TDS_EVENT_MESSAGE) {
        tr_printf(&o.transcript, "message %d\n", (int)mc_tds_decoder_message(d)->number);
      }
    }
  }
  if (st == MC_OK) {
    st = mc_tds_decoder_finish(d, &err);
    if (st != MC_OK) record(&o, st, "finish", &err);
  }
  if (schema.release) schema.release(&schema);
  mc_tds_decoder_free(d);
  return o;
}

/* Fails each allocation of the decode in turn; returns how many allocations the decode made. */
static long fail_every_allocation(const tb *response, size_t chunk, const mc_tds_options *opts) {
  outcome clean = decode(response->p, response->n, chunk, opts);
  if (clean.status != MC_OK) fail_msg("uninjected decode failed: %s", clean.message);
  long total = seen;
  seen = 0;
  for (long n = 1;; n++) {
    fail_at = n;
    seen = 0;
    failed = false;
    outcome o = decode(response->p, response->n, chunk, opts);
    fail_at = 0;
    if (!failed) { /* past the last allocation: the run must be the clean one */
      assert_int_equal(o.status, MC_OK);
      assert_int_equal(o.transcript.n, clean.transcript.n);
      assert_memory_equal(o.transcript.p, clean.transcript.p, clean.transcript.n);
      tb_free(&o.transcript);
      assert_int_equal(n - 1, total);
      break;
    }
    if (o.status != MC_ENOMEM) {
      fail_msg("allocation %ld of %ld failed: %s in %s (%s), wanted ENOMEM", n, total,
               mc_status_name(o.status), o.where ? o.where : "?", o.message);
    }
    assert_true(o.message[0] != '\0');
    tb_free(&o.transcript);
  }
  tb_free(&clean.transcript);
  seen = 0;
  return total;
}

/* A PLP value of `data` in chunks of `chunk` bytes. */
static void tb_plp(tb *b, const uint8_t *data, size_t n, size_t chunk) {
  tb_u64(b, n);
  for (size_t i = 0; i < n; i += chunk) {
    size_t k = n - i < chunk ? n - i : chunk;
    tb_u32(b, (uint32_t)k);
    tb_put(b, data + i, k);
  }
  tb_u32(b, 0);
}

/* A change-table-like result: fixed, decimal, temporal, guid, strings (UTF-16, code page 1252
 * and 1251 through iconv), (max) values, xml, sql_variant and NULLs, in several batches, then an
 * error message and a second result set. */
static tb representative(void) {
  tb b = {0};
  tb_colmeta(&b, 11);
  tb_column(&b, "38", "id");
  tb_column(&b, "6A112602", "amount");
  tb_column(&b, "2A07", "at");
  tb_column(&b, "2410", "guid");
  tb_column(&b, "E7C800" COLL_1252, "name");
  tb_column(&b, "A76400" COLL_1252, "code");
  tb_column(&b,
            "A76400"
            "1904D00000",
            "cyr");
  tb_column(&b, "E7FFFF" COLL_1252, "note");
  tb_column(&b, "A5FFFF", "blob");
  tb_column(&b, "F1 00", "doc");
  tb_column(&b, "62 501F0000", "v");
  uint8_t blob[3000];
  for (size_t i = 0; i < sizeof blob; i++) blob[i] = (uint8_t)(i * 7);
  static const uint8_t note[] = {'h', 0, 'i', 0, 0x3D, 0xD8, 0x00, 0xDE};
  static const uint8_t xml[] = {'<', 0, 'a', 0, '/', 0, '>', 0};
  for (int row = 0; row < 5; row++) {
    tb_u8(&b, 0xD1);
    tb_u32(&b, (uint32_t)row);
    tb_hex(&b, "11 01 39300000000000000000000000000000");
    tb_hex(&b, "08 0000000000 DAB937");
    tb_hex(&b, "10 000102030405060708090A0B0C0D0E0F");
    tb_hex(&b, "0600 6100 6200 E900");
    if (row == 2) {
      tb_hex(&b, "FFFF"); /* NULL varchar */
    } else {
      tb_hex(&b, "0300 41E9FF");
    }
    tb_hex(&b, "0200 C0FF");
    tb_plp(&b, note, sizeof note, 3);
    tb_plp(&b, blob, sizeof blob, 1000 + (size_t)row);
    tb_plp(&b, xml, sizeof xml, 5);
    tb_hex(&b, row % 2 ? "09000000 6A 02 0502 01 39300000" : "06000000 38 00 D6FFFFFF");
  }
  tb_done(&b, 0xFD, 0x11, 5);
  tb_u8(&b, 0xAA); /* ERROR 8134, "Divide by zero" */
  tb_u16(&b, 4 + 1 + 1 + 2 + 2 * 22 + 1 + 2 * 3 + 1 + 4);
  tb_u32(&b, 8134);
  tb_u8(&b, 1);
  tb_u8(&b, 16);
  tb_usvarchar(&b, "Divide by zero error e");
  tb_bvarchar(&b, "emu");
  tb_bvarchar(&b, "");
  tb_u32(&b, 1);
  tb_colmeta(&b, 1);
  tb_column(&b, "26 08", "n");
  tb_hex(&b, "D1 08 0100000000000000");
  tb_done(&b, 0xFD, 0x10, 1);
  tb_done(&b, 0xFD, 0x00, 0);
  return b;
}

static void test_every_allocation_of_a_representative_decode(void **state) {
  (void)state;
  tb b = representative();
  mc_tds_options opts = {.batch_rows = 2};
  long whole = fail_every_allocation(&b, b.n, &opts);
  assert_true(whole > 20); /* the loop really covered the decode's allocations */
  /* Fed in small pieces: NEEDMORE points, the input buffer growing and compacting. */
  long pieces = fail_every_allocation(&b, 257, &opts);
  assert_true(pieces >= whole);
  tb_free(&b);
}

static void test_every_allocation_with_default_batches(void **state) {
  (void)state;
  tb b = representative();
  fail_every_allocation(&b, 4096, NULL);
  tb_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_allocation_of_a_representative_decode),
      cmocka_unit_test(test_every_allocation_with_default_batches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
