/*
 * test_tds_encode.c: the row encoder (tds_encode.h): exact bytes per type, NULLs in ROW and
 * NBCROW form, PLP chunking, canonical date/time text and rounding, and errors that leave the
 * output as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mssqlcdc/tds_encode.h"

static void no_release_schema(struct ArrowSchema *s) { s->release = NULL; }
static void no_release_array(struct ArrowArray *a) { a->release = NULL; }

/* A one-column batch over caller-owned buffers. */
typedef struct one_col {
  struct ArrowSchema child_s, parent_s;
  struct ArrowArray child_a, parent_a;
  struct ArrowSchema *cs[1];
  struct ArrowArray *ca[1];
  const void *buffers[3];
} one_col;

static void make_batch(one_col *b, const char *format, int64_t length, int64_t null_count,
                       const void *validity, const void *data, const void *bytes) {
  memset(b, 0, sizeof *b);
  b->child_s.format = format;
  b->child_s.release = no_release_schema;
  b->parent_s.format = "+s";
  b->parent_s.n_children = 1;
  b->cs[0] = &b->child_s;
  b->parent_s.children = b->cs;
  b->parent_s.release = no_release_schema;
  b->buffers[0] = validity;
  b->buffers[1] = data;
  b->buffers[2] = bytes;
  b->child_a.length = length;
  b->child_a.null_count = null_count;
  b->child_a.n_buffers = (format[0] == 'u' || format[0] == 'z') ? 3 : (format[0] == 'n' ? 0 : 2);
  b->child_a.buffers = b->buffers;
  b->child_a.release = no_release_array;
  b->parent_a.length = length;
  b->parent_a.n_children = 1;
  b->ca[0] = &b->child_a;
  b->parent_a.children = b->ca;
  b->parent_a.release = no_release_array;
}

static mc_enc_column column(mc_enc_kind kind, uint8_t size) {
  mc_enc_column c;
  memset(&c, 0, sizeof c);
  c.kind = kind;
  c.nullable = true;
  c.size = size;
  return c;
}

static void encode_ok(const mc_enc_column *col, one_col *b, bool nbc, const uint8_t *want,
                      size_t want_len) {
  mc_enc_buffer out = {0};
  mc_error err;
  mc_status st = mc_tds_encode_rows(col, 1, &b->parent_s, &b->parent_a, nbc, &out, &err);
  if (st != MC_OK) fail_msg("encode failed: %s", err.message);
  assert_int_equal(out.len, want_len);
  assert_memory_equal(out.data, want, want_len);
  mc_enc_buffer_free(&out);
}

static void test_int_nullable_and_not(void **state) {
  (void)state;
  int32_t values[3] = {1, -2, 7};
  uint8_t valid = 0x03; /* row 2 is NULL */
  one_col b;
  make_batch(&b, "i", 3, 1, &valid, values, NULL);
  mc_enc_column c = column(MC_ENC_INT, 4);
  const uint8_t want[] = {0xD1, 4, 1, 0, 0, 0, 0xD1, 4, 0xFE, 0xFF, 0xFF, 0xFF, 0xD1, 0};
  encode_ok(&c, &b, false, want, sizeof want);
  const uint8_t nbc[] = {0xD2, 0, 4, 1, 0, 0, 0, 0xD2, 0, 4, 0xFE, 0xFF, 0xFF, 0xFF, 0xD2, 1};
  encode_ok(&c, &b, true, nbc, sizeof nbc);
  /* NOT NULL: no length byte, and a NULL is refused with the output untouched */
  c.nullable = false;
  mc_enc_buffer out = {0};
  mc_error err;
  assert_int_equal(mc_enc_buffer_reserve(&out, 1, &err), MC_OK);
  out.data[out.len++] = 0xAA;
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err),
                   MC_EINVAL);
  assert_int_equal(out.len, 1);
  b.child_a.null_count = 0;
  b.buffers[0] = NULL;
  out.len = 0;
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err), MC_OK);
  const uint8_t fixed[] = {0xD1, 1, 0, 0, 0, 0xD1, 0xFE, 0xFF, 0xFF, 0xFF, 0xD1, 7, 0, 0, 0};
  assert_int_equal(out.len, sizeof fixed);
  assert_memory_equal(out.data, fixed, sizeof fixed);
  mc_enc_buffer_free(&out);
}

static void test_tinyint_range(void **state) {
  (void)state;
  int32_t values[1] = {256};
  one_col b;
  make_batch(&b, "i", 1, 0, NULL, values, NULL);
  mc_enc_column c = column(MC_ENC_INT, 1);
  mc_enc_buffer out = {0};
  mc_error err;
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err),
                   MC_ERANGE);
  assert_int_equal(out.len, 0);
  mc_enc_buffer_free(&out);
}

static void test_decimal_and_money(void **state) {
  (void)state;
  /* -123.45 as decimal128 scale 2: -12345 */
  int64_t words[2] = {-12345, -1};
  one_col b;
  make_batch(&b, "d:12,2", 1, 0, NULL, words, NULL);
  mc_enc_column c = column(MC_ENC_DECIMAL, 9);
  c.precision = 12;
  c.scale = 2;
  const uint8_t want[] = {0xD1, 9, 0, 0x39, 0x30, 0, 0, 0, 0, 0, 0};
  encode_ok(&c, &b, false, want, sizeof want);
  /* another scale is not taken */
  c.scale = 3;
  mc_enc_buffer out = {0};
  mc_error err;
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err),
                   MC_EUNSUPPORTED);
  /* above the precision */
  c.scale = 2;
  c.precision = 4;
  c.size = 5;
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err),
                   MC_ERANGE);
  /* money -1.2345: units -12345 as high then low 32 bits */
  make_batch(&b, "d:19,4", 1, 0, NULL, words, NULL);
  mc_enc_column m = column(MC_ENC_MONEY, 8);
  m.scale = 4;
  const uint8_t money[] = {0xD1, 8, 0xFF, 0xFF, 0xFF, 0xFF, 0xC7, 0xCF, 0xFF, 0xFF};
  encode_ok(&m, &b, false, money, sizeof money);
  mc_enc_buffer_free(&out);
}

/* A decimal(38) value is 18 bytes on the wire (length, sign, 16 magnitude bytes): the encoder
 * must make room for all of them. Regression: it made room for 17 and wrote one byte past the
 * buffer when the value started 17 bytes before its end (a heap overflow the emulator hit on a
 * result of 20,000 rows). */
static void test_decimal38_room_at_the_buffer_end(void **state) {
  (void)state;
  int64_t words[2] = {42, 0};
  one_col b;
  make_batch(&b, "d:38,0", 1, 0, NULL, words, NULL);
  mc_enc_column c = column(MC_ENC_DECIMAL, 17);
  c.precision = 38;
  mc_enc_buffer out = {0};
  mc_error err;
  assert_int_equal(mc_enc_buffer_reserve(&out, 4096, &err), MC_OK);
  size_t cap = out.cap;
  out.len = cap - 18; /* the token fits, then 17 bytes are left for the 18 of the value */
  memset(out.data, 0, out.len);
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err), MC_OK);
  assert_true(out.len <= out.cap);
  assert_int_equal(out.len, cap - 18 + 19);
  const uint8_t want[] = {0xD1, 17, 1, 42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  assert_memory_equal(out.data + cap - 18, want, sizeof want);
  mc_enc_buffer_free(&out);
}

static void test_nvarchar_and_padding(void **state) {
  (void)state;
  const char text[] = "h\xC3\xA9\xF0\x9F\x98\x80"; /* h, é, U+1F600 */
  int32_t offsets[2] = {0, 7};
  one_col b;
  make_batch(&b, "u", 1, 0, NULL, offsets, text);
  mc_enc_column c = column(MC_ENC_NCHAR, 0);
  const uint8_t want[] = {0xD1, 8, 0, 'h', 0, 0xE9, 0, 0x3D, 0xD8, 0x00, 0xDE};
  encode_ok(&c, &b, false, want, sizeof want);
  /* nchar(6): padded with spaces to 12 bytes */
  c.width = 12;
  const uint8_t padded[] = {0xD1, 12, 0, 'h', 0, 0xE9, 0, 0x3D, 0xD8, 0x00, 0xDE, ' ', 0, ' ', 0};
  encode_ok(&c, &b, false, padded, sizeof padded);
  /* varchar with a code page collation: non-ASCII is left to the caller */
  mc_enc_column v = column(MC_ENC_CHAR, 0);
  mc_enc_buffer out = {0};
  mc_error err;
  assert_int_equal(mc_tds_encode_rows(&v, 1, &b.parent_s, &b.parent_a, false, &out, &err),
                   MC_EUNSUPPORTED);
  v.utf8 = true;
  assert_int_equal(mc_tds_encode_rows(&v, 1, &b.parent_s, &b.parent_a, false, &out, &err), MC_OK);
  assert_int_equal(out.len, 1 + 2 + 7);
  assert_memory_equal(out.data + 3, text, 7);
  mc_enc_buffer_free(&out);
  /* invalid UTF-8 */
  const char bad[] = "\xC3";
  int32_t bad_offsets[2] = {0, 1};
  make_batch(&b, "u", 1, 0, NULL, bad_offsets, bad);
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err),
                   MC_EINVAL);
  mc_enc_buffer_free(&out);
}

static void test_plp_chunks(void **state) {
  (void)state;
  size_t n = 20000;
  uint8_t *data = malloc(n);
  assert_non_null(data);
  for (size_t i = 0; i < n; i++) data[i] = (uint8_t)(i * 7);
  int32_t offsets[3] = {0, (int32_t)n, (int32_t)n};
  uint8_t valid = 0x01; /* row 1 NULL */
  one_col b;
  make_batch(&b, "z", 2, 1, &valid, offsets, data);
  mc_enc_column c = column(MC_ENC_BINARY, 0);
  c.plp = true;
  mc_enc_buffer out = {0};
  mc_error err;
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err), MC_OK);
  /* token, u64 total, 3 chunks (8000, 8000, 4000) with u32 headers, terminator; then NULL row */
  assert_int_equal(out.len, 1 + 8 + 3 * 4 + n + 4 + 1 + 8);
  const uint8_t *p = out.data + 1;
  assert_int_equal(p[0] | (p[1] << 8) | (p[2] << 16), n);
  size_t pos = 8, got = 0;
  for (int k = 0; k < 3; k++) {
    uint32_t len = (uint32_t)(p[pos] | (p[pos + 1] << 8) | (p[pos + 2] << 16));
    assert_int_equal(len, k < 2 ? 8000 : 4000);
    assert_memory_equal(p + pos + 4, data + got, len);
    got += len;
    pos += 4 + len;
  }
  const uint8_t tail[] = {0, 0, 0, 0, 0xD1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  assert_memory_equal(p + pos, tail, sizeof tail);
  mc_enc_buffer_free(&out);
  free(data);
}

static void temporal_is(mc_enc_kind kind, uint8_t scale, const char *text, const uint8_t *want,
                        size_t want_len) {
  mc_enc_column c = column(kind, 0);
  c.scale = scale;
  uint8_t out[10];
  size_t n = 0;
  mc_error err;
  mc_status st = mc_tds_encode_temporal_text(&c, text, strlen(text), out, &n, &err);
  if (st != MC_OK) fail_msg("\"%s\": %s", text, err.message);
  assert_int_equal(n, want_len);
  assert_memory_equal(out, want, want_len);
}

static void test_temporal_text(void **state) {
  (void)state;
  /* 2024-01-01 is day 738885 (0x0B4645) from 0001-01-01 */
  const uint8_t date[] = {0x45, 0x46, 0x0B};
  temporal_is(MC_ENC_DATE, 0, "2024-01-01", date, 3);
  /* datetime2(7) 2024-01-01 00:00:01.0000001: 10000001 ticks */
  const uint8_t dt2[] = {0x81, 0x96, 0x98, 0x00, 0x00, 0x45, 0x46, 0x0B};
  temporal_is(MC_ENC_DATETIME2, 7, "2024-01-01 00:00:01.0000001", dt2, sizeof dt2);
  /* time(0) 23:59:59.6 rounds up to the next day: time 0 */
  const uint8_t t0[] = {0, 0, 0};
  temporal_is(MC_ENC_TIME, 0, "23:59:59.6", t0, 3);
  /* datetimeoffset(0) 2024-01-01 00:30:00 +01:00 is 2023-12-31 23:30:00 UTC, offset 60 */
  const uint8_t dto[] = {0x78, 0x4A, 0x01, 0x44, 0x46, 0x0B, 60, 0};
  temporal_is(MC_ENC_DATETIMEOFFSET, 0, "2024-01-01 00:30:00 +01:00", dto, sizeof dto);
  /* datetime 1900-01-01 00:00:00.002 rounds to 1/300 s tick 1 */
  const uint8_t dtm[] = {0, 0, 0, 0, 1, 0, 0, 0};
  temporal_is(MC_ENC_DATETIME, 0, "1900-01-01 00:00:00.002", dtm, sizeof dtm);
  /* smalldatetime 1900-01-02 00:01:29 rounds to 1 minute... of day 1 */
  const uint8_t sdt[] = {1, 0, 1, 0};
  temporal_is(MC_ENC_SMALLDATETIME, 0, "1900-01-02 00:01:29", sdt, sizeof sdt);
  /* outside the canonical forms, or invalid */
  mc_enc_column c = column(MC_ENC_DATETIME2, 0);
  c.scale = 7;
  uint8_t out[10];
  size_t n;
  mc_error err;
  assert_int_equal(mc_tds_encode_temporal_text(&c, "Jan 1 2024", 10, out, &n, &err),
                   MC_EUNSUPPORTED);
  assert_int_equal(mc_tds_encode_temporal_text(&c, "2024-01-01T", 11, out, &n, &err),
                   MC_EUNSUPPORTED);
  assert_int_equal(mc_tds_encode_temporal_text(&c, "2023-02-29", 10, out, &n, &err), MC_EINVAL);
  assert_int_equal(mc_tds_encode_temporal_text(&c, "24:00:00", 8, out, &n, &err), MC_EINVAL);
}

static void test_guid_text(void **state) {
  (void)state;
  const char text[] = "00112233-4455-6677-8899-aabbccddeeff";
  int32_t offsets[2] = {0, 36};
  one_col b;
  make_batch(&b, "u", 1, 0, NULL, offsets, text);
  mc_enc_column c = column(MC_ENC_GUID, 0);
  const uint8_t want[] = {0xD1, 16,   0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77,
                          0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF};
  encode_ok(&c, &b, false, want, sizeof want);
}

static void test_null_type_and_bad_batch(void **state) {
  (void)state;
  one_col b;
  make_batch(&b, "n", 1, 1, NULL, NULL, NULL);
  mc_enc_column c = column(MC_ENC_NCHAR, 0);
  const uint8_t want[] = {0xD1, 0xFF, 0xFF};
  encode_ok(&c, &b, false, want, sizeof want);
  mc_enc_buffer out = {0};
  mc_error err;
  b.parent_s.format = "i";
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err),
                   MC_EINVAL);
  b.parent_s.format = "+s";
  b.child_s.format = "tdD";
  assert_int_equal(mc_tds_encode_rows(&c, 1, &b.parent_s, &b.parent_a, false, &out, &err),
                   MC_EUNSUPPORTED);
  mc_enc_buffer_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_int_nullable_and_not),
      cmocka_unit_test(test_tinyint_range),
      cmocka_unit_test(test_decimal_and_money),
      cmocka_unit_test(test_decimal38_room_at_the_buffer_end),
      cmocka_unit_test(test_nvarchar_and_padding),
      cmocka_unit_test(test_plp_chunks),
      cmocka_unit_test(test_temporal_text),
      cmocka_unit_test(test_guid_text),
      cmocka_unit_test(test_null_type_and_bad_batch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
