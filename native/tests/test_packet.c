/*
 * test_packet.c: TDS packet headers, framing and deframing (packet.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mssqlcdc/packet.h"

static void test_header_round_trip_is_big_endian(void **state) {
  (void)state;
  mc_tds_header h = {MC_TDS_REPLY, MC_TDS_STATUS_EOM, 0x0102, 0x0034, 7, 0};
  uint8_t raw[8];
  mc_tds_header_write(&h, raw);
  static const uint8_t expected[8] = {0x04, 0x01, 0x01, 0x02, 0x00, 0x34, 0x07, 0x00};
  assert_memory_equal(raw, expected, 8);
  mc_tds_header back;
  mc_error err;
  assert_int_equal(mc_tds_header_read(raw, 4096, &back, &err), MC_OK);
  assert_int_equal(back.length, 0x0102);
  assert_int_equal(back.spid, 0x34);
  assert_int_equal(back.packet_id, 7);
}

static void test_header_length_is_checked(void **state) {
  (void)state;
  uint8_t raw[8] = {0x04, 0x01, 0x00, 0x07, 0, 0, 1, 0};
  mc_tds_header h;
  mc_error err;
  assert_int_equal(mc_tds_header_read(raw, 4096, &h, &err), MC_EPROTO);
  assert_non_null(strstr(err.message, "declares 7 bytes"));
  raw[2] = 0x10;
  raw[3] = 0x01; /* 4097 */
  assert_int_equal(mc_tds_header_read(raw, 4096, &h, &err), MC_EPROTO);
  assert_non_null(strstr(err.message, "8 to 4096"));
}

static void test_frame_splits_into_numbered_packets_with_eom_last(void **state) {
  (void)state;
  uint8_t payload[1200];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)i;
  size_t cap = mc_tds_framed_size(sizeof payload, 512);
  assert_int_equal(cap, 1200 + 3 * 8); /* 504 + 504 + 192 */
  uint8_t *out = malloc(cap);
  size_t written = 0;
  mc_error err;
  assert_int_equal(
      mc_tds_frame(MC_TDS_SQLBATCH, payload, sizeof payload, 512, 255, out, cap, &written, &err),
      MC_OK);
  assert_int_equal(written, cap);
  static const uint8_t h1[8] = {0x01, 0x00, 0x02, 0x00, 0, 0, 255, 0};
  static const uint8_t h2[8] = {0x01, 0x00, 0x02, 0x00, 0, 0, 0, 0};
  static const uint8_t h3[8] = {0x01, 0x01, 0x00, 0xC8, 0, 0, 1, 0};
  assert_memory_equal(out, h1, 8);
  assert_memory_equal(out + 512, h2, 8);
  assert_memory_equal(out + 1024, h3, 8);
  assert_memory_equal(out + 8, payload, 504);
  assert_memory_equal(out + 1032, payload + 1008, 192);
  free(out);
}

static void test_frame_of_empty_payload_is_one_header(void **state) {
  (void)state;
  uint8_t out[8];
  size_t written = 0;
  mc_error err;
  assert_int_equal(
      mc_tds_frame(MC_TDS_ATTENTION, NULL, 0, 4096, 1, out, sizeof out, &written, &err), MC_OK);
  static const uint8_t expected[8] = {0x06, 0x01, 0x00, 0x08, 0, 0, 1, 0};
  assert_memory_equal(out, expected, 8);
  assert_int_equal(mc_tds_frame(MC_TDS_ATTENTION, NULL, 0, 100, 1, out, sizeof out, &written, &err),
                   MC_EINVAL);
  uint8_t small[4];
  assert_int_equal(
      mc_tds_frame(MC_TDS_ATTENTION, NULL, 0, 512, 1, small, sizeof small, &written, &err),
      MC_EINVAL);
}

/* Deframes msg fed in pieces of the given sizes (cycled), collecting the payload. */
static size_t deframe_in_pieces(const uint8_t *msg, size_t len, const size_t *pieces,
                                size_t npieces, uint8_t *out, mc_tds_deframer *d) {
  size_t pos = 0, got = 0, k = 0;
  while (pos < len) {
    size_t n = pieces[k++ % npieces];
    if (n > len - pos) n = len - pos;
    const uint8_t *chunk = msg + pos;
    size_t left = n;
    while (left > 0) {
      size_t consumed = 0;
      const uint8_t *payload = NULL;
      size_t payload_len = 0;
      mc_error err;
      mc_status st = mc_tds_deframe(d, chunk, left, &consumed, &payload, &payload_len, &err);
      if (st != MC_OK) fail_msg("deframe failed: %s", err.message);
      assert_true(consumed > 0);
      if (payload_len > 0) {
        assert_true(payload >= chunk && payload + payload_len <= chunk + left);
        memcpy(out + got, payload, payload_len);
        got += payload_len;
      }
      chunk += consumed;
      left -= consumed;
    }
    pos += n;
  }
  return got;
}

static void test_deframe_at_every_split_and_byte_by_byte(void **state) {
  (void)state;
  uint8_t payload[1500];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)(i * 7 + 3);
  size_t cap = mc_tds_framed_size(sizeof payload, 512);
  uint8_t *msg = malloc(cap);
  uint8_t *out = malloc(sizeof payload);
  size_t written = 0;
  mc_error err;
  assert_int_equal(
      mc_tds_frame(MC_TDS_REPLY, payload, sizeof payload, 512, 1, msg, cap, &written, &err), MC_OK);
  for (size_t split = 1; split < written; split++) {
    size_t pieces[2] = {split, written};
    mc_tds_deframer d;
    mc_tds_deframer_init(&d, MC_TDS_REPLY, 512);
    memset(out, 0, sizeof payload);
    assert_int_equal(deframe_in_pieces(msg, written, pieces, 2, out, &d), sizeof payload);
    assert_memory_equal(out, payload, sizeof payload);
    assert_true(d.done);
  }
  size_t one[1] = {1};
  size_t odd[3] = {3, 511, 9};
  size_t *patterns[2] = {one, odd};
  size_t counts[2] = {1, 3};
  for (int p = 0; p < 2; p++) {
    mc_tds_deframer d;
    mc_tds_deframer_init(&d, MC_TDS_REPLY, 512);
    assert_int_equal(deframe_in_pieces(msg, written, patterns[p], counts[p], out, &d),
                     sizeof payload);
    assert_memory_equal(out, payload, sizeof payload);
    assert_true(d.done);
  }
  free(msg);
  free(out);
}

static void test_deframe_rejects_wrong_type_and_trailing_bytes(void **state) {
  (void)state;
  uint8_t msg[20] = {0x12, 0x01, 0x00, 0x0A, 0, 0, 1, 0, 0xAA, 0xBB, 0x04};
  mc_tds_deframer d;
  mc_tds_deframer_init(&d, MC_TDS_REPLY, 4096);
  size_t consumed = 0;
  const uint8_t *payload = NULL;
  size_t n = 0;
  mc_error err;
  assert_int_equal(mc_tds_deframe(&d, msg, 10, &consumed, &payload, &n, &err), MC_EPROTO);
  assert_non_null(strstr(err.message, "type 0x12 where 0x04"));

  mc_tds_deframer_init(&d, 0, 4096);
  assert_int_equal(mc_tds_deframe(&d, msg, 11, &consumed, &payload, &n, &err), MC_OK);
  assert_int_equal(consumed, 10);
  assert_int_equal(n, 2);
  assert_int_equal(payload[0], 0xAA);
  assert_true(d.done);
  assert_int_equal(mc_tds_deframe(&d, msg + 10, 1, &consumed, &payload, &n, &err), MC_EPROTO);
  assert_non_null(strstr(err.message, "after the end"));
}

static void test_deframe_header_only_eom_packet(void **state) {
  (void)state;
  uint8_t msg[8] = {0x04, 0x01, 0x00, 0x08, 0, 0, 1, 0};
  mc_tds_deframer d;
  mc_tds_deframer_init(&d, MC_TDS_REPLY, 4096);
  size_t consumed = 0;
  const uint8_t *payload = NULL;
  size_t n = 99;
  mc_error err;
  assert_int_equal(mc_tds_deframe(&d, msg, 8, &consumed, &payload, &n, &err), MC_OK);
  assert_int_equal(consumed, 8);
  assert_int_equal(n, 0);
  assert_true(d.done);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_round_trip_is_big_endian),
      cmocka_unit_test(test_header_length_is_checked),
      cmocka_unit_test(test_frame_splits_into_numbered_packets_with_eom_last),
      cmocka_unit_test(test_frame_of_empty_payload_is_one_header),
      cmocka_unit_test(test_deframe_at_every_split_and_byte_by_byte),
      cmocka_unit_test(test_deframe_rejects_wrong_type_and_trailing_bytes),
      cmocka_unit_test(test_deframe_header_only_eom_packet),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
