/*
 * test_tds_tokens.c: the token loop: DONE*, ERROR/INFO, ENVCHANGE, LOGINACK, RETURNSTATUS,
 * RETURNVALUE/ORDER/FEATUREEXTACK/unknown tokens skipped, batch boundaries by rows and bytes,
 * truncated and corrupt input (MC_EPROTO with a message, never a crash), and the sticky broken
 * state. Every stream is also checked split at every byte and in chunks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test_tds_support.h"

static void expect_transcript(const tb *b, const mc_tds_options *opts, const char *want) {
  run_result r = run_all_splits(b->p, b->n, 1, opts);
  if (r.transcript.n != strlen(want) || memcmp(r.transcript.p, want, r.transcript.n) != 0) {
    fail_msg("transcript:\n%.*s\nwanted:\n%s", (int)r.transcript.n, (char *)r.transcript.p, want);
  }
  tb_free(&r.transcript);
}

static void tb_message(tb *b, unsigned token, uint32_t number, const char *msg) {
  tb body = {0};
  tb_u32(&body, number);
  tb_u8(&body, 1);  /* state */
  tb_u8(&body, 16); /* class */
  tb_usvarchar(&body, msg);
  tb_bvarchar(&body, "srv");
  tb_bvarchar(&body, "proc");
  tb_u32(&body, 7);
  tb_u8(b, token);
  tb_u16(b, (unsigned)body.n);
  tb_put(b, body.p, body.n);
  tb_free(&body);
}

static void test_messages_envchange_loginack(void **state) {
  (void)state;
  tb b = {0};
  /* LOGINACK: interface 1, TDS 7.4 (big-endian), "Microsoft SQL Server", 16.0.1000.6 */
  tb body = {0};
  tb_u8(&body, 1);
  tb_hex(&body, "74000004");
  tb_bvarchar(&body, "Microsoft SQL Server");
  tb_hex(&body, "100003E8");
  tb_u8(&b, 0xAD);
  tb_u16(&b, (unsigned)body.n);
  tb_put(&b, body.p, body.n);
  tb_free(&body);
  /* ENVCHANGE database master -> cdc */
  tb_hex(&b, "E3 0B00 01 03 6300 6400 6300 01 6D00");
  /* ENVCHANGE packet size 4096 -> 32767 (old "4096") */
  tb_hex(&b, "E3 1500 04 05 3300 3200 3700 3600 3700 04 3400 3000 3900 3600");
  /* ENVCHANGE collation (bytes) */
  tb_hex(&b, "E3 0D00 07 05 0904D00034 05 0904D00034");
  /* ENVCHANGE routing to "h" port 1434 */
  tb_hex(&b, "E3 0C00 14 0700 00 9A05 0100 6800 0000");
  tb_message(&b, 0xAB, 5701, "changed");
  tb_message(&b, 0xAA, 18456, "Login failed");
  /* FEATUREEXTACK: UTF8_SUPPORT (0x0A, 1 byte), then 0xFF */
  tb_hex(&b, "AE 0A 01000000 01 FF");
  tb_hex(&b, "79 FEFFFFFF"); /* RETURNSTATUS -2 */
  tb_done(&b, 0xFD, 0x0002, 0);
  expect_transcript(&b, NULL,
                    "loginack 1 74000004 'Microsoft SQL Server' 100003e8\n"
                    "env 1 new='cdc' old='m' bytes=0 size=0 route=:0\n"
                    "env 4 new='32767' old='4096' bytes=0 size=32767 route=:0\n"
                    "env 7 new='' old='' bytes=5 size=0 route=:0\n"
                    "env 20 new='' old='' bytes=0 size=0 route=h:1434\n"
                    "info 5701 state=1 class=16 'changed' server='srv' proc='proc' line=7\n"
                    "error-token 18456 state=1 class=16 'Login failed' server='srv' proc='proc' "
                    "line=7\n"
                    "return -2\n"
                    "done fd status=0002 cmd=00c1 rows=0\n");
  tb_free(&b);
}

static void test_skipped_tokens_and_batches_by_rows(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 1);
  tb_column(&b, "38", "n");
  tb_hex(&b, "A9 0200 0100");   /* ORDER by column 1 */
  tb_hex(&b, "E5 0300 AABBCC"); /* unknown variable-length token */
  tb_hex(&b, "50");             /* unknown zero-length token (xx01xxxx) */
  tb_hex(&b, "F8 11223344");    /* unknown fixed-length token: 4 bytes */
  for (uint32_t i = 1; i <= 5; i++) {
    tb_u8(&b, 0xD1);
    tb_u32(&b, i);
  }
  /* RETURNVALUE: ordinal 0, name "@p", status 1, user type, flags, INTN(4), value 9 */
  tb_hex(&b, "AC 0000 02 4000 7000 01 00000000 0000 2604 04 09000000");
  /* RETURNVALUE of nvarchar(max) PLP */
  tb_hex(&b,
         "AC 0100 00 01 00000000 0000 E7FFFF 0904D00034 0200000000000000 02000000 6100 "
         "00000000");
  tb_done(&b, 0xFF, 0x0011, 5);
  tb_done(&b, 0xFE, 0x0000, 0);
  mc_tds_options opts = {.batch_rows = 2};
  expect_transcript(&b, &opts,
                    "metadata 1: n[i]\n"
                    "batch rows=2\n col 0 i len=2 nulls=0\n0100000002000000\n"
                    "batch rows=2\n col 0 i len=2 nulls=0\n0300000004000000\n"
                    "batch rows=1\n col 0 i len=1 nulls=0\n05000000\n"
                    "done ff status=0011 cmd=00c1 rows=5\n"
                    "done fe status=0000 cmd=00c1 rows=0\n");
  tb_free(&b);
}

static void test_batches_by_bytes(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 1);
  tb_column(&b, "38", "n");
  for (uint32_t i = 1; i <= 3; i++) {
    tb_u8(&b, 0xD1);
    tb_u32(&b, i);
  }
  tb_done(&b, 0xFD, 0x10, 3);
  mc_tds_options opts = {.batch_bytes = 10}; /* a row is 5 TDS bytes */
  expect_transcript(&b, &opts,
                    "metadata 1: n[i]\n"
                    "batch rows=2\n col 0 i len=2 nulls=0\n0100000002000000\n"
                    "batch rows=1\n col 0 i len=1 nulls=0\n03000000\n"
                    "done fd status=0010 cmd=00c1 rows=3\n");
  tb_free(&b);
}

/* Takes the next batch, feeding the rest of `bytes` when asked. */
static void next_batch(mc_tds_decoder *d, const tb *b, size_t *fed, struct ArrowArray *out) {
  mc_error err;
  for (;;) {
    mc_tds_event ev;
    mc_status st = mc_tds_decoder_next(d, &ev, &err);
    if (st == MC_NEEDMORE) {
      assert_true(*fed < b->n);
      assert_int_equal(mc_tds_decoder_feed(d, b->p + *fed, b->n - *fed, &err), MC_OK);
      *fed = b->n;
      continue;
    }
    assert_int_equal(st, MC_OK);
    if (ev == MC_TDS_EVENT_BATCH) {
      assert_int_equal(mc_tds_decoder_take_batch(d, out, &err), MC_OK);
      return;
    }
  }
}

/* A released batch's buffers serve the next batch; a batch held past the decoder's end stays
 * valid and is freed by its own release (ASan and valgrind check the memory). */
static void test_released_buffers_are_reused_and_batches_outlive_the_decoder(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 2);
  tb_column(&b, "38", "n");
  tb_column(&b, "A50A00", "v"); /* varbinary(10) */
  for (uint32_t i = 0; i < 6000; i++) {
    tb_u8(&b, 0xD1);
    tb_u32(&b, i);
    tb_u16(&b, 3);
    tb_u8(&b, i & 0xFF);
    tb_u8(&b, 1);
    tb_u8(&b, 2);
  }
  tb_done(&b, 0xFD, 0x10, 6000);
  mc_tds_options opts = {.batch_rows = 2000};
  mc_tds_decoder *d = mc_tds_decoder_new(&opts);
  assert_non_null(d);
  size_t fed = 0;
  struct ArrowArray first, second, third;
  next_batch(d, &b, &fed, &first);
  assert_int_equal(first.length, 2000);
  const void *first_values = first.children[0]->buffers[1];
  first.release(&first); /* back to the pool */
  next_batch(d, &b, &fed, &second);
  assert_int_equal(second.length, 2000);
  assert_ptr_equal(second.children[0]->buffers[1], first_values); /* the same memory again */
  next_batch(d, &b, &fed, &third);
  assert_int_equal(third.length, 2000);
  int32_t v;
  memcpy(&v, (const uint8_t *)third.children[0]->buffers[1] + 4 * 1999, 4);
  assert_int_equal(v, 5999);
  mc_tds_decoder_free(d); /* the batches are still held */
  memcpy(&v, (const uint8_t *)second.children[0]->buffers[1] + 4 * 5, 4);
  assert_int_equal(v, 2005);
  second.release(&second);
  third.release(&third);
  tb_free(&b);
}

static void test_two_result_sets(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 1);
  tb_column(&b, "38", "a");
  tb_hex(&b, "D1 01000000");
  tb_done(&b, 0xFD, 0x11, 1);
  tb_colmeta(&b, 1);
  tb_column(&b, "E70A00" COLL_1252, "s");
  tb_hex(&b, "D1 0200 7A00");
  tb_done(&b, 0xFD, 0x10, 1);
  expect_transcript(&b, NULL,
                    "metadata 1: a[i]\n"
                    "batch rows=1\n col 0 i len=1 nulls=0\n01000000\n"
                    "done fd status=0011 cmd=00c1 rows=1\n"
                    "metadata 1: s[u]\n"
                    "batch rows=1\n col 0 u len=1 nulls=0\n0000000001000000\n7a\n"
                    "done fd status=0010 cmd=00c1 rows=1\n");
  tb_free(&b);
}

/* Decodes bytes in one piece and expects a failure mentioning `fragment`. */
static void expect_failure(const tb *b, mc_status want, const char *fragment) {
  run_result r = run_all_splits(b->p, b->n, 1, NULL);
  if (r.status != want || strstr(r.message, fragment) == NULL) {
    fail_msg("status %s message '%s', wanted %s '%s'", mc_status_name(r.status), r.message,
             mc_status_name(want), fragment);
  }
  tb_free(&r.transcript);
}

static void test_corrupt_streams_are_eproto(void **state) {
  (void)state;
  tb b = {0};
  tb_hex(&b, "D1 01000000"); /* row before metadata */
  expect_failure(&b, MC_EPROTO, "before any COLMETADATA");
  tb_free(&b);

  tb_hex(&b, "AA 0300 010203"); /* ERROR shorter than its fields */
  expect_failure(&b, MC_EPROTO, "shorter than its fields");
  tb_free(&b);

  tb_hex(&b, "88 0000"); /* a variable-count token we do not know */
  expect_failure(&b, MC_EPROTO, "unknown token 0x88");
  tb_free(&b);

  tb_colmeta(&b, 1);
  tb_column(&b, "2604", "x");
  tb_hex(&b, "D1 03 010203"); /* INTN(4) value of 3 bytes */
  expect_failure(&b, MC_EPROTO, "length 3");
  tb_free(&b);

  tb_colmeta(&b, 1);
  tb_column(&b, "E70A00" COLL_1252, "s");
  tb_hex(&b, "D1 0C00 000000000000000000000000"); /* 12 bytes in nvarchar(5) */
  expect_failure(&b, MC_EPROTO, "12 bytes");
  tb_free(&b);

  tb_colmeta(&b, 1);
  tb_column(&b, "6A051400", "d");  /* decimal with scale 0 but precision 20 in 5 bytes: ok */
  tb_hex(&b, "D1 05 02 01000000"); /* sign byte 2 */
  expect_failure(&b, MC_EPROTO, "sign byte 2");
  tb_free(&b);

  tb_colmeta(&b, 1);
  tb_column(&b, "2907", "t");
  tb_hex(&b, "D1 05 FFFFFFFFFF"); /* time past the end of the day */
  expect_failure(&b, MC_EPROTO, "past the end of a day");
  tb_free(&b);

  tb_hex(&b, "E3 0B00 04 02 3100 3000 02 3100 3000"); /* packet size 10 */
  expect_failure(&b, MC_EPROTO, "packet size");
  tb_free(&b);
}

/* A type this decoder does not know is not a corrupt stream: retrying cannot help. */
static void test_unsupported_type_is_eunsupported_not_eproto(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 1);
  tb_column(&b, "99", "x"); /* unknown type */
  expect_failure(&b, MC_EUNSUPPORTED, "unknown or unsupported data type 0x99");
  tb_free(&b);
}

static void test_truncated_input_needs_more_then_finish_fails(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 2);
  tb_column(&b, "38", "a");
  tb_column(&b, "E7FFFF" COLL_1252, "s");
  tb_hex(&b, "D1 01000000 0400000000000000 04000000 6100 6200 00000000");
  tb_done(&b, 0xFD, 0x10, 1);
  /* Every proper prefix: no crash, no over-read; ends incomplete unless it ends on a token. */
  for (size_t cut = 1; cut < b.n; cut++) {
    run_result r = run_decoder(b.p, cut, 0, 0, NULL);
    bool on_boundary = cut == 30 || cut == 55; /* after COLMETADATA, after the row */
    if (on_boundary) {
      assert_int_equal(r.status, MC_OK);
    } else {
      assert_int_equal(r.status, MC_EPROTO);
      assert_non_null(strstr(r.message, "truncated"));
    }
    tb_free(&r.transcript);
  }
  /* A row is never half-appended: feed all but the last byte of the row, nothing is pending. */
  mc_tds_decoder *d = mc_tds_decoder_new(NULL);
  mc_error err;
  mc_tds_event ev;
  size_t row_end = b.n - 13;
  assert_int_equal(mc_tds_decoder_feed(d, b.p, row_end - 1, &err), MC_OK);
  assert_int_equal(mc_tds_decoder_next(d, &ev, &err), MC_OK);
  assert_int_equal(ev, MC_TDS_EVENT_METADATA);
  assert_int_equal(mc_tds_decoder_next(d, &ev, &err), MC_NEEDMORE);
  assert_int_equal(mc_tds_decoder_pending_rows(d), 0);
  assert_int_equal(mc_tds_decoder_feed(d, b.p + row_end - 1, 1, &err), MC_OK);
  assert_int_equal(mc_tds_decoder_next(d, &ev, &err), MC_NEEDMORE);
  assert_int_equal(mc_tds_decoder_pending_rows(d), 1);
  mc_tds_decoder_free(d);
  tb_free(&b);
}

static void test_broken_decoder_stays_broken(void **state) {
  (void)state;
  mc_tds_decoder *d = mc_tds_decoder_new(NULL);
  mc_error err;
  mc_tds_event ev;
  static const uint8_t bad[] = {0x88, 0x00};
  assert_int_equal(mc_tds_decoder_feed(d, bad, sizeof bad, &err), MC_OK);
  assert_int_equal(mc_tds_decoder_next(d, &ev, &err), MC_EPROTO);
  err.message[0] = '\0';
  assert_int_equal(mc_tds_decoder_next(d, &ev, &err), MC_EPROTO);
  assert_non_null(strstr(err.message, "0x88"));
  assert_int_equal(mc_tds_decoder_feed(d, bad, 1, &err), MC_EPROTO);
  mc_tds_decoder_reset(d);
  static const uint8_t ok[] = {0x79, 1, 0, 0, 0};
  assert_int_equal(mc_tds_decoder_feed(d, ok, sizeof ok, &err), MC_OK);
  assert_int_equal(mc_tds_decoder_next(d, &ev, &err), MC_OK);
  assert_int_equal(ev, MC_TDS_EVENT_RETURN_STATUS);
  assert_int_equal(mc_tds_decoder_return_status(d), 1);
  assert_int_equal(mc_tds_decoder_finish(d, &err), MC_OK);
  mc_tds_decoder_free(d);
}

static void test_max_buffer_limits_one_token(void **state) {
  (void)state;
  mc_tds_options opts = {.max_buffer = 64};
  mc_tds_decoder *d = mc_tds_decoder_new(&opts);
  mc_error err;
  uint8_t big[100];
  memset(big, 0, sizeof big);
  big[0] = 0xAB;
  big[1] = 0xFF;
  big[2] = 0xFF;
  assert_int_equal(mc_tds_decoder_feed(d, big, 60, &err), MC_OK);
  assert_int_equal(mc_tds_decoder_feed(d, big, 40, &err), MC_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "max_buffer"));
  mc_tds_decoder_free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_messages_envchange_loginack),
      cmocka_unit_test(test_skipped_tokens_and_batches_by_rows),
      cmocka_unit_test(test_batches_by_bytes),
      cmocka_unit_test(test_released_buffers_are_reused_and_batches_outlive_the_decoder),
      cmocka_unit_test(test_two_result_sets),
      cmocka_unit_test(test_corrupt_streams_are_eproto),
      cmocka_unit_test(test_unsupported_type_is_eunsupported_not_eproto),
      cmocka_unit_test(test_truncated_input_needs_more_then_finish_fails),
      cmocka_unit_test(test_broken_decoder_stays_broken),
      cmocka_unit_test(test_max_buffer_limits_one_token),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
