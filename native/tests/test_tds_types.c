/*
 * test_tds_types.c: every SQL Server type the decoder reads, through hand-built responses:
 * exact Arrow buffer bytes (validity bitmaps, values, offsets, data) including NULLs and each
 * type's extremes, and for every response the same result when the bytes arrive split at every
 * byte boundary and in 1/7/512/4096/32767-byte chunks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test_tds_support.h"

/* Builds: COLMETADATA(1 column) + one ROW per value (hex of the value's wire bytes) + DONE. */
static void one_column(tb *b, const char *type_info, const char *const *rows, size_t nrows) {
  tb_colmeta(b, 1);
  tb_column(b, type_info, "c");
  for (size_t i = 0; i < nrows; i++) {
    tb_u8(b, 0xD1);
    tb_hex(b, rows[i]);
  }
  tb_done(b, 0xFD, 0x10, nrows);
}

static void hex_to(const char *hex, uint8_t *out, size_t *n) {
  tb b = {0};
  tb_hex(&b, hex);
  memcpy(out, b.p, b.n);
  *n = b.n;
  tb_free(&b);
}

/* Decodes (checking every split) and returns the single column's array; caller releases. */
static void decode_column(tb *b, const char *format, struct ArrowSchema *schema,
                          struct ArrowArray *array) {
  run_result r = run_all_splits(b->p, b->n, b->n > 4000 ? 997 : 1, NULL);
  if (r.status != MC_OK) fail_msg("decode failed: %s", r.message);
  tb_free(&r.transcript);
  decode_first_batch(b->p, b->n, schema, array);
  assert_int_equal(array->n_children, 1);
  assert_string_equal(schema->children[0]->format, format);
}

/* Checks a fixed-width or bool column: validity (hex, NULL = no NULLs) and values (hex). */
static void check_fixed(const char *type_info, const char *const *rows, size_t nrows,
                        const char *format, const char *validity_hex, const char *values_hex) {
  tb b = {0};
  one_column(&b, type_info, rows, nrows);
  struct ArrowSchema schema;
  struct ArrowArray array;
  decode_column(&b, format, &schema, &array);
  const struct ArrowArray *c = array.children[0];
  assert_int_equal(c->length, (int64_t)nrows);
  uint8_t want[4096];
  size_t n;
  if (validity_hex == NULL) {
    assert_int_equal(c->null_count, 0);
    assert_null(c->buffers[0]);
  } else {
    hex_to(validity_hex, want, &n);
    assert_memory_equal(c->buffers[0], want, n);
  }
  hex_to(values_hex, want, &n);
  assert_memory_equal(c->buffers[1], want, n);
  array.release(&array);
  schema.release(&schema);
  tb_free(&b);
}

/* Checks an utf8/binary column: offsets and concatenated data. */
static void check_var_tb(tb *b, const char *format, const char *validity_hex,
                         const int32_t *offsets, size_t nrows, const void *data, size_t data_len) {
  struct ArrowSchema schema;
  struct ArrowArray array;
  decode_column(b, format, &schema, &array);
  const struct ArrowArray *c = array.children[0];
  assert_int_equal(c->length, (int64_t)nrows);
  if (validity_hex == NULL) {
    assert_int_equal(c->null_count, 0);
  } else {
    uint8_t want[64];
    size_t n;
    hex_to(validity_hex, want, &n);
    assert_memory_equal(c->buffers[0], want, n);
  }
  assert_memory_equal(c->buffers[1], offsets, (nrows + 1) * sizeof(int32_t));
  if (data_len > 0) assert_memory_equal(c->buffers[2], data, data_len);
  array.release(&array);
  schema.release(&schema);
}

static void check_var(const char *type_info, const char *const *rows, size_t nrows,
                      const char *format, const char *validity_hex, const int32_t *offsets,
                      const void *data, size_t data_len) {
  tb b = {0};
  one_column(&b, type_info, rows, nrows);
  check_var_tb(&b, format, validity_hex, offsets, nrows, data, data_len);
  tb_free(&b);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_tinyint_is_unsigned_int16(void **state) {
  (void)state;
  static const char *const rows[] = {"0100", "01FF", "00", "017F"};
  check_fixed("2601", rows, N(rows), "s", "0B", "0000 FF00 0000 7F00");
  static const char *const fixed_rows[] = {"FF", "00"};
  check_fixed("30", fixed_rows, N(fixed_rows), "s", NULL, "FF00 0000");
}

static void test_smallint_int_bigint_extremes(void **state) {
  (void)state;
  static const char *const s[] = {"020080", "02FF7F", "00"};
  check_fixed("2602", s, N(s), "s", "03", "0080 FF7F 0000");
  static const char *const i[] = {"00000080", "FFFFFF7F", "FFFFFFFF"};
  check_fixed("38", i, N(i), "i", NULL, "00000080 FFFFFF7F FFFFFFFF");
  static const char *const l[] = {"080000000000000080", "08FFFFFFFFFFFFFF7F", "00"};
  check_fixed("2608", l, N(l), "l", "03", "0000000000000080 FFFFFFFFFFFFFF7F 0000000000000000");
  static const char *const l8[] = {"0100000000000000"};
  check_fixed("7F", l8, N(l8), "l", NULL, "0100000000000000");
}

static void test_bit_is_bit_packed(void **state) {
  (void)state;
  static const char *const rows[] = {"0101", "0100", "00",   "0101", "0101",
                                     "0101", "0101", "0101", "0101", "00"};
  /* values 1,0,-,1,1,1,1,1 | 1,- ; validity 1,1,0,1,1,1,1,1 | 1,0 */
  check_fixed("6801", rows, N(rows), "b", "FB01", "F901");
  static const char *const fixed[] = {"01", "00", "02"};
  check_fixed("32", fixed, N(fixed), "b", NULL, "05");
}

static void test_real_and_float(void **state) {
  (void)state;
  static const char *const r[] = {"040000C03F", "00"};
  check_fixed("6D04", r, N(r), "f", "01", "0000C03F 00000000");
  static const char *const f[] = {"00000000000002C0"};
  check_fixed("3E", f, N(f), "g", NULL, "00000000000002C0");
  static const char *const f4[] = {"0000803F"};
  check_fixed("3B", f4, N(f4), "f", NULL, "0000803F");
}

static void test_decimal_38_0_extremes(void **state) {
  (void)state;
  static const char *const rows[] = {"1101FFFFFFFF3F228A097AC4865AA84C3B4B",
                                     "1100FFFFFFFF3F228A097AC4865AA84C3B4B", "00",
                                     "110000000000000000000000000000000000"};
  check_fixed("6A112600", rows, N(rows), "d:38,0", "0B",
              "FFFFFFFF3F228A097AC4865AA84C3B4B"
              "01000000C0DD75F6853B79A557B3C4B4"
              "00000000000000000000000000000000"
              "00000000000000000000000000000000");
}

static void test_decimal_38_38_and_small_widths(void **state) {
  (void)state;
  static const char *const r38[] = {"1101000000002011C5043D62432D54A69D25"};
  check_fixed("6A112626", r38, N(r38), "d:38,38", NULL, "000000002011C5043D62432D54A69D25");
  /* decimal(5,2): -123.45 and -0 */
  static const char *const r5[] = {"050039300000", "050000000000"};
  check_fixed("6A050502", r5, N(r5), "d:5,2", NULL,
              "C7CFFFFFFFFFFFFFFFFFFFFFFFFFFFFF 00000000000000000000000000000000");
  /* numeric(19,4), 9-byte form, and (28,2), 13-byte form */
  static const char *const r19[] = {"09010100000000000000"};
  check_fixed("6C091304", r19, N(r19), "d:19,4", NULL, "01000000000000000000000000000000");
  static const char *const r28[] = {"0D01FFFFFFFFFFFFFFFFFFFFFFFF"};
  check_fixed("6A0D1C02", r28, N(r28), "d:28,2", NULL, "FFFFFFFFFFFFFFFFFFFFFFFF00000000");
}

static void test_money_and_smallmoney_limits(void **state) {
  (void)state;
  /* money: high 32 bits first, then low 32 bits */
  static const char *const m[] = {"08FFFFFF7FFFFFFFFF", "080000008000000000", "00",
                                  "080000000010270000"};
  check_fixed("6E08", m, N(m), "d:19,4", "0B",
              "FFFFFFFFFFFFFF7F0000000000000000"
              "0000000000000080FFFFFFFFFFFFFFFF"
              "00000000000000000000000000000000"
              "10270000000000000000000000000000");
  static const char *const sm[] = {"00000080", "FFFFFF7F"};
  check_fixed("7A", sm, N(sm), "d:10,4", NULL,
              "00000080FFFFFFFFFFFFFFFFFFFFFFFF FFFFFF7F000000000000000000000000");
  static const char *const m8[] = {"FFFFFFFFFFFFFFFF"}; /* -1/10000 */
  check_fixed("3C", m8, N(m8), "d:19,4", NULL, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF");
}

static void hex_i64(int64_t v, char *out) {
  uint64_t u = (uint64_t)v;
  for (int i = 0; i < 8; i++) snprintf(out + 2 * i, 3, "%02X", (unsigned)((u >> (8 * i)) & 0xFF));
}

static void test_datetime_and_smalldatetime(void **state) {
  (void)state;
  char want[64];
  char h1[17], h2[17], h3[17];
  hex_i64(-2208988800000000LL, h1);
  hex_i64(253402300799997000LL, h2);
  hex_i64(-2208988800000000LL + 3000, h3); /* 1 tick = 1/300 s shows as .003 */
  snprintf(want, sizeof want, "%s%s%s", h1, h2, h3);
  static const char *const rows[] = {"080000000000000000", "087F242D00FF818B01",
                                     "080000000001000000"};
  check_fixed("6F08", rows, N(rows), "tsu:", NULL, want);
  /* smalldatetime 2079-06-06 23:59 */
  hex_i64((65535LL - 25567) * 86400000000LL + 1439LL * 60000000LL, h1);
  static const char *const sd[] = {"FFFF9F05"};
  check_fixed("3A", sd, N(sd), "tsu:", NULL, h1);
  static const char *const sdn[] = {"04FFFF9F05", "00"};
  snprintf(want, sizeof want, "%s0000000000000000", h1);
  check_fixed("6F04", sdn, N(sdn), "tsu:", "01", want);
}

static void test_date(void **state) {
  (void)state;
  /* 0001-01-01 = -719162 days, 9999-12-31 = 2932896 days since 1970 */
  static const char *const rows[] = {"03000000", "03DAB937", "00"};
  check_fixed("28", rows, N(rows), "tdD", "03", "C606F5FF A0C02C00 00000000");
}

/* Little-endian hex of v in n bytes. */
static void hex_le(uint64_t v, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02X", (unsigned)((v >> (8 * i)) & 0xFF));
}

static const uint64_t kP10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

static void test_time_every_scale_is_text(void **state) {
  (void)state;
  for (unsigned s = 0; s <= 7; s++) {
    size_t tb_len = s <= 2 ? 3 : s <= 4 ? 4 : 5;
    uint64_t max_units = 86399 * kP10[s] + kP10[s] - 1;
    char ti[8], row[32], row2[32];
    snprintf(ti, sizeof ti, "29%02X", s);
    snprintf(row, sizeof row, "%02X", (unsigned)tb_len);
    hex_le(max_units, tb_len, row + 2);
    /* 01:02:03 and one unit */
    snprintf(row2, sizeof row2, "%02X", (unsigned)tb_len);
    hex_le(3723 * kP10[s] + (s > 0 ? 1 : 0), tb_len, row2 + 2);
    const char *rows[] = {row, row2, "00"};
    char text[64] = "23:59:59";
    char text2[64] = "01:02:03";
    if (s > 0) {
      strcat(text, ".");
      strcat(text2, ".");
      for (unsigned k = 0; k < s; k++) {
        strcat(text, "9");
        strcat(text2, k + 1 == s ? "1" : "0");
      }
    }
    char data[128];
    snprintf(data, sizeof data, "%s%s", text, text2);
    int32_t off[4] = {0, (int32_t)strlen(text), (int32_t)strlen(data), (int32_t)strlen(data)};
    check_var(ti, rows, 3, "u", "03", off, data, strlen(data));
  }
}

static void test_datetime2_every_scale_truncates_to_us(void **state) {
  (void)state;
  for (unsigned s = 0; s <= 7; s++) {
    size_t tb_len = s <= 2 ? 3 : s <= 4 ? 4 : 5;
    uint64_t max_units = 86399 * kP10[s] + kP10[s] - 1;
    char ti[8], row[40], row2[40], want[80];
    snprintf(ti, sizeof ti, "2A%02X", s);
    snprintf(row, sizeof row, "%02X", (unsigned)tb_len + 3);
    hex_le(max_units, tb_len, row + 2);
    hex_le(3652058, 3, row + 2 + 2 * tb_len); /* 9999-12-31 */
    /* 2024-01-02 03:04:05 exactly: datetime2(0) must keep the time of day */
    snprintf(row2, sizeof row2, "%02X", (unsigned)tb_len + 3);
    hex_le(11045 * kP10[s], tb_len, row2 + 2);
    hex_le(738886, 3, row2 + 2 + 2 * tb_len);
    int64_t frac = s == 0 ? 0 : s <= 6 ? (int64_t)((kP10[s] - 1) * kP10[6 - s]) : 999999;
    hex_i64(253402300799000000LL + frac, want);
    hex_i64(1704164645000000LL, want + 16);
    const char *rows[] = {row, row2};
    check_fixed(ti, rows, 2, "tsu:", NULL, want);
  }
}

static void test_datetimeoffset_is_utc_instant(void **state) {
  (void)state;
  for (unsigned s = 0; s <= 7; s++) {
    size_t tb_len = s <= 2 ? 3 : s <= 4 ? 4 : 5;
    char ti[8], row[48], row2[48], want[80];
    snprintf(ti, sizeof ti, "2B%02X", s);
    /* 2024-01-01 05:00:00 UTC, offset -05:00 (local midnight) */
    snprintf(row, sizeof row, "%02X", (unsigned)tb_len + 5);
    hex_le(5 * 3600 * kP10[s], tb_len, row + 2);
    hex_le(738885, 3, row + 2 + 2 * tb_len);
    hex_le(0xFED4, 2, row + 2 + 2 * tb_len + 6); /* -300 minutes */
    /* 9999-12-31 23:59:59.99.. UTC, offset +14:00 */
    snprintf(row2, sizeof row2, "%02X", (unsigned)tb_len + 5);
    hex_le(86399 * kP10[s] + kP10[s] - 1, tb_len, row2 + 2);
    hex_le(3652058, 3, row2 + 2 + 2 * tb_len);
    hex_le(840, 2, row2 + 2 + 2 * tb_len + 6);
    int64_t frac = s == 0 ? 0 : s <= 6 ? (int64_t)((kP10[s] - 1) * kP10[6 - s]) : 999999;
    hex_i64(1704085200000000LL, want);
    hex_i64(253402300799000000LL + frac, want + 16);
    const char *rows[] = {row, row2, "00"};
    char want3[120];
    snprintf(want3, sizeof want3, "%s0000000000000000", want);
    check_fixed(ti, rows, 3, "tsu:UTC", "03", want3);
  }
}

static void test_uniqueidentifier_is_mixed_endian_upper_text(void **state) {
  (void)state;
  static const char *const rows[] = {"10000102030405060708090A0B0C0D0E0F", "00",
                                     "10FFEEDDCCBBAA99887766554433221100"};
  static const char data[] =
      "03020100-0504-0706-0809-0A0B0C0D0E0F"
      "CCDDEEFF-AABB-8899-7766-554433221100";
  static const int32_t off[] = {0, 36, 36, 72};
  check_var("2410", rows, N(rows), "u", "05", off, data, 72);
}

static void test_nvarchar_surrogates_and_lone_halves(void **state) {
  (void)state;
  /* "hé" + U+1F600 (D83D DE00), then a lone high D800 + "a", then a lone low DC00, empty, NULL */
  static const char *const rows[] = {"0800 6800 E900 3DD8 00DE", "0400 00D8 6100", "0200 00DC",
                                     "0000", "FFFF"};
  static const char data[] =
      "h\xC3\xA9\xF0\x9F\x98\x80"
      "\xEF\xBF\xBD"
      "a"
      "\xEF\xBF\xBD";
  static const int32_t off[] = {0, 7, 11, 14, 14, 14};
  check_var("E7C800" COLL_1252, rows, N(rows), "u", "0F", off, data, 14);
  /* nchar(2) */
  static const char *const nc[] = {"0400 4100 2000"};
  static const int32_t off2[] = {0, 2};
  check_var("EF0400" COLL_1252, nc, N(nc), "u", NULL, off2, "A ", 2);
}

static void test_varchar_cp1252_and_utf8_collations(void **state) {
  (void)state;
  static const char *const rows[] = {"0500 41 80 E9 81 9F", "FFFF"};
  static const char data[] = "A\xE2\x82\xAC\xC3\xA9\xC2\x81\xC5\xB8";
  static const int32_t off[] = {0, 10, 10};
  check_var("A76400" COLL_1252, rows, N(rows), "u", "01", off, data, 10);
  static const char *const ch[] = {"0300 61 FF 20"};
  static const int32_t offc[] = {0, 4};
  check_var("AF0300" COLL_1252, ch, N(ch), "u", NULL, offc, "a\xC3\xBF ", 4);
  /* UTF-8 collation: bytes pass through; an invalid byte becomes U+FFFD */
  static const char *const u8[] = {"0400 C3A9 FF 41"};
  static const int32_t offu[] = {0, 6};
  check_var("A76400" COLL_UTF8, u8, N(u8), "u", NULL, offu,
            "\xC3\xA9\xEF\xBF\xBD"
            "A",
            6);
}

static void test_other_code_pages_decode_through_iconv(void **state) {
  (void)state;
  /* Cyrillic_General_CI_AS: LCID 0x0419 -> code page 1251; 0xC0 0xFF = U+0410 U+044F */
  static const char *const cyr[] = {"0200 C0FF"};
  static const int32_t off1[] = {0, 4};
  check_var(
      "A76400"
      "1904D00000",
      cyr, N(cyr), "u", NULL, off1, "\xD0\x90\xD1\x8F", 4);
  /* Chinese_PRC_CI_AS: LCID 0x0804 -> code page 936 (double-byte): D6D0 = U+4E2D; a lead
   * byte cut off at the end of the value becomes U+FFFD. */
  static const char *const gbk[] = {"0300 41D6D0", "0100 D6"};
  static const int32_t off2[] = {0, 4, 7};
  check_var(
      "A76400"
      "0408D00000",
      gbk, N(gbk), "u", NULL, off2, "A\xE4\xB8\xAD\xEF\xBF\xBD", 7);
  /* Japanese_CI_AS: LCID 0x0411 -> code page 932: 8341 = U+30A2 (katakana A) */
  static const char *const sjis[] = {"0200 8341"};
  static const int32_t off3[] = {0, 3};
  check_var(
      "A76400"
      "1104D00000",
      sjis, N(sjis), "u", NULL, off3, "\xE3\x82\xA2", 3);
}

/* Not a corrupt stream (MC_EPROTO would be retried as transient): the same data fails again. */
static void test_unknown_code_page_is_a_clean_error(void **state) {
  (void)state;
  tb b = {0};
  /* LCID 0x007F (invariant) with sort id 0 names no code page */
  static const char *const rows[] = {"0100 41"};
  one_column(&b,
             "A76400"
             "7F00D00000",
             rows, 1);
  run_result r = run_all_splits(b.p, b.n, 1, NULL);
  assert_int_equal(r.status, MC_EUNSUPPORTED);
  assert_non_null(strstr(r.message, "unknown code page"));
  tb_free(&r.transcript);
  tb_free(&b);
}

static void test_binary_varbinary_and_rowversion(void **state) {
  (void)state;
  static const char *const rows[] = {"0A00 00010203040506070809", "FFFF", "0000"};
  static const int32_t off[] = {0, 10, 10, 10};
  check_var("A50A00", rows, N(rows), "z", "05", off, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09",
            10);
  /* timestamp/rowversion: BIGBINARY(8) with user type 80 */
  tb b = {0};
  tb_colmeta(&b, 1);
  tb_u32(&b, 80);
  tb_u16(&b, 0x0008);
  tb_hex(&b, "AD0800");
  tb_bvarchar(&b, "rv");
  tb_hex(&b, "D1 0800 00000000000007D1");
  tb_done(&b, 0xFD, 0x10, 1);
  static const int32_t off2[] = {0, 8};
  check_var_tb(&b, "z", NULL, off2, 1, "\x00\x00\x00\x00\x00\x00\x07\xD1", 8);
  tb_free(&b);
}

/* A PLP value of `data` split into chunks of `chunk` bytes (known total length). */
static void tb_plp(tb *b, const uint8_t *data, size_t n, size_t chunk, int unknown_len) {
  tb_u64(b, unknown_len ? 0xFFFFFFFFFFFFFFFEull : n);
  for (size_t i = 0; i < n; i += chunk) {
    size_t k = n - i < chunk ? n - i : chunk;
    tb_u32(b, (uint32_t)k);
    tb_put(b, data + i, k);
  }
  tb_u32(b, 0);
}

static void test_plp_nvarchar_max_chunks_split_anywhere(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 1);
  tb_column(&b, "E7FFFF" COLL_1252, "c");
  /* "A" + U+1F600 + "b" in 1-byte chunks: the surrogate pair is split across 4 chunks */
  static const uint8_t v1[] = {0x41, 0, 0x3D, 0xD8, 0x00, 0xDE, 0x62, 0};
  tb_u8(&b, 0xD1);
  tb_plp(&b, v1, sizeof v1, 1, 0);
  tb_u8(&b, 0xD1); /* empty: total 0, terminator */
  tb_plp(&b, v1, 0, 1, 0);
  tb_u8(&b, 0xD1); /* NULL */
  tb_u64(&b, 0xFFFFFFFFFFFFFFFFull);
  tb_u8(&b, 0xD1); /* unknown length, odd chunking (3 bytes) */
  tb_plp(&b, v1, sizeof v1, 3, 1);
  tb_done(&b, 0xFD, 0x10, 4);
  static const char data[] =
      "A\xF0\x9F\x98\x80"
      "bA\xF0\x9F\x98\x80"
      "b";
  static const int32_t off[] = {0, 6, 6, 6, 12};
  check_var_tb(&b, "u", "0B", off, 4, data, 12);
  tb_free(&b);
}

static void test_plp_varbinary_max_100kb(void **state) {
  (void)state;
  size_t n = 100 * 1024;
  uint8_t *v = malloc(n);
  for (size_t i = 0; i < n; i++) v[i] = (uint8_t)(i * 31 + 7);
  tb b = {0};
  tb_colmeta(&b, 2);
  tb_column(&b, "A5FFFF", "blob");
  tb_column(&b, "38", "n");
  tb_u8(&b, 0xD1);
  tb_plp(&b, v, n, 8000, 0);
  tb_hex(&b, "2A000000");
  tb_done(&b, 0xFD, 0x10, 1);
  struct ArrowSchema schema;
  struct ArrowArray array;
  run_result r = run_all_splits(b.p, b.n, 997, NULL);
  assert_int_equal(r.status, MC_OK);
  tb_free(&r.transcript);
  decode_first_batch(b.p, b.n, &schema, &array);
  const int32_t *off = array.children[0]->buffers[1];
  assert_int_equal(off[1], (int32_t)n);
  assert_memory_equal(array.children[0]->buffers[2], v, n);
  assert_int_equal(((const int32_t *)array.children[1]->buffers[1])[0], 42);
  array.release(&array);
  schema.release(&schema);
  tb_free(&b);
  free(v);
}

static void test_plp_total_mismatch_is_eproto(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 1);
  tb_column(&b, "A5FFFF", "c");
  tb_hex(&b, "D1 0500000000000000 02000000 ABCD 00000000");
  tb_done(&b, 0xFD, 0, 1);
  run_result r = run_all_splits(b.p, b.n, 1, NULL);
  assert_int_equal(r.status, MC_EPROTO);
  assert_non_null(strstr(r.message, "PLP"));
  tb_free(&r.transcript);
  tb_free(&b);
}

static void test_text_ntext_image_textptr(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 3);
  tb_u32(&b, 0);
  tb_u16(&b, 0x0009);
  tb_hex(&b, "23 FFFFFF7F" COLL_1252);
  tb_u8(&b, 2); /* table name in two parts */
  tb_usvarchar(&b, "dbo");
  tb_usvarchar(&b, "t");
  tb_bvarchar(&b, "t");
  tb_u32(&b, 0);
  tb_u16(&b, 0x0009);
  tb_hex(&b, "63 FEFFFF7F" COLL_1252);
  tb_u8(&b, 1);
  tb_usvarchar(&b, "t");
  tb_bvarchar(&b, "nt");
  tb_u32(&b, 0);
  tb_u16(&b, 0x0009);
  tb_hex(&b, "22 FFFFFF7F");
  tb_u8(&b, 1);
  tb_usvarchar(&b, "t");
  tb_bvarchar(&b, "img");
  /* row 1: text "hi\xE9", ntext "ok", image 0xCAFE */
  tb_u8(&b, 0xD1);
  const char *ptr = "10 00112233445566778899AABBCCDDEEFF 0102030405060708";
  tb_hex(&b, ptr);
  tb_hex(&b, "03000000 6869E9");
  tb_hex(&b, ptr);
  tb_hex(&b, "04000000 6F006B00");
  tb_hex(&b, ptr);
  tb_hex(&b, "02000000 CAFE");
  /* row 2: all NULL (text pointer length 0) */
  tb_hex(&b, "D1 00 00 00");
  tb_done(&b, 0xFD, 0x10, 2);
  struct ArrowSchema schema;
  struct ArrowArray array;
  run_result r = run_all_splits(b.p, b.n, 1, NULL);
  assert_int_equal(r.status, MC_OK);
  tb_free(&r.transcript);
  decode_first_batch(b.p, b.n, &schema, &array);
  assert_string_equal(schema.children[0]->format, "u");
  assert_string_equal(schema.children[2]->format, "z");
  assert_memory_equal(array.children[0]->buffers[2], "hi\xC3\xA9", 4);
  assert_memory_equal(array.children[1]->buffers[2], "ok", 2);
  assert_memory_equal(array.children[2]->buffers[2], "\xCA\xFE", 2);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(array.children[i]->null_count, 1);
    assert_int_equal(((const uint8_t *)array.children[i]->buffers[0])[0], 0x01);
  }
  array.release(&array);
  schema.release(&schema);
  tb_free(&b);
}

static void test_xml_and_udt(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 2);
  tb_column(&b, "F1 01 02 6400 6200 03 6400 6200 6F00 0100 7800",
            "x"); /* with a schema collection */
  tb_u32(&b, 0);
  tb_u16(&b, 0x0009);
  tb_hex(&b, "F0 FFFF");
  tb_bvarchar(&b, "db");
  tb_bvarchar(&b, "sys");
  tb_bvarchar(&b, "hierarchyid");
  tb_usvarchar(&b, "Microsoft.SqlServer.Types.SqlHierarchyId");
  tb_bvarchar(&b, "h");
  static const uint8_t xml[] = {'<', 0, 'a', 0, '/', 0, '>', 0};
  static const uint8_t hid[] = {0x58};
  tb_u8(&b, 0xD1);
  tb_plp(&b, xml, sizeof xml, 5, 0);
  tb_plp(&b, hid, 1, 1, 0);
  tb_done(&b, 0xFD, 0x10, 1);
  struct ArrowSchema schema;
  struct ArrowArray array;
  run_result r = run_all_splits(b.p, b.n, 1, NULL);
  assert_int_equal(r.status, MC_OK);
  tb_free(&r.transcript);
  decode_first_batch(b.p, b.n, &schema, &array);
  assert_string_equal(schema.children[0]->format, "u");
  assert_string_equal(schema.children[1]->format, "z");
  assert_memory_equal(array.children[0]->buffers[2], "<a/>", 4);
  assert_memory_equal(array.children[1]->buffers[2], "\x58", 1);
  array.release(&array);
  schema.release(&schema);
  tb_free(&b);
}

static void test_sql_variant_renders_as_nvarchar_cast(void **state) {
  (void)state;
  static const char *const rows[] = {
      "06000000 38 00 D6FFFFFF",                         /* int -42 */
      "09000000 6A 02 0502 01 39300000",                 /* decimal(5,2) 123.45 */
      "0D000000 E7 07 0904D00034 0800 6100 6200",        /* nvarchar 'ab' */
      "0A000000 A7 07 0904D00034 0800 E9",               /* varchar 0xE9 'é' */
      "0B000000 2A 01 07 0000000000 DAB937",             /* datetime2(7) 9999-12-31 00:00 */
      "12000000 24 00 000102030405060708090A0B0C0D0E0F", /* guid */
      "0A000000 3C 00 00000000 40E20100",                /* money 12.3456 -> 12.35 */
      "0A000000 3E 00 000000008E883441",                 /* float 1345678 -> 1.34568e+006 */
      "03000000 32 00 01",                               /* bit */
      "05000000 28 00 DAB937",                           /* date */
      "06000000 A5 02 0800 CAFE",                        /* varbinary */
      "0A000000 3D 00 00000000 00000000",                /* datetime 1900-01-01 */
      "0B000000 2B 01 00 000000 DAB937 3C00",            /* datetimeoffset(0) +01:00 */
      "00000000",                                        /* NULL */
  };
  static const char *const texts[] = {"-42",
                                      "123.45",
                                      "ab",
                                      "\xC3\xA9",
                                      "9999-12-31 00:00:00.0000000",
                                      "03020100-0504-0706-0809-0A0B0C0D0E0F",
                                      "12.35",
                                      "1.34568e+006",
                                      "1",
                                      "9999-12-31",
                                      "0xCAFE",
                                      "Jan  1 1900 12:00AM",
                                      "9999-12-31 01:00:00 +01:00",
                                      ""};
  char data[512] = "";
  int32_t off[32];
  off[0] = 0;
  for (size_t i = 0; i < N(texts); i++) {
    strcat(data, texts[i]);
    off[i + 1] = (int32_t)strlen(data);
  }
  check_var("62 501F0000", rows, N(rows), "u", "FF1F", off, data, strlen(data));
}

static void test_nbcrow_null_bitmap(void **state) {
  (void)state;
  tb b = {0};
  tb_colmeta(&b, 3);
  tb_column(&b, "2604", "a");
  tb_column(&b, "E71400" COLL_1252, "b");
  tb_column(&b, "38", "c");
  /* NBCROW: bitmap 0b010 -> b is NULL and absent */
  tb_hex(&b, "D2 02 04 07000000 05000000");
  tb_hex(&b, "D1 04 08000000 0200 7800 09000000");
  tb_done(&b, 0xFD, 0x10, 2);
  struct ArrowSchema schema;
  struct ArrowArray array;
  run_result r = run_all_splits(b.p, b.n, 1, NULL);
  assert_int_equal(r.status, MC_OK);
  tb_free(&r.transcript);
  decode_first_batch(b.p, b.n, &schema, &array);
  static const int32_t a[] = {7, 8}, c[] = {5, 9}, off[] = {0, 0, 1};
  assert_memory_equal(array.children[0]->buffers[1], a, 8);
  assert_int_equal(array.children[1]->null_count, 1);
  assert_int_equal(((const uint8_t *)array.children[1]->buffers[0])[0], 0x02);
  assert_memory_equal(array.children[1]->buffers[1], off, 12);
  assert_memory_equal(array.children[2]->buffers[1], c, 8);
  array.release(&array);
  schema.release(&schema);
  tb_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tinyint_is_unsigned_int16),
      cmocka_unit_test(test_smallint_int_bigint_extremes),
      cmocka_unit_test(test_bit_is_bit_packed),
      cmocka_unit_test(test_real_and_float),
      cmocka_unit_test(test_decimal_38_0_extremes),
      cmocka_unit_test(test_decimal_38_38_and_small_widths),
      cmocka_unit_test(test_money_and_smallmoney_limits),
      cmocka_unit_test(test_datetime_and_smalldatetime),
      cmocka_unit_test(test_date),
      cmocka_unit_test(test_time_every_scale_is_text),
      cmocka_unit_test(test_datetime2_every_scale_truncates_to_us),
      cmocka_unit_test(test_datetimeoffset_is_utc_instant),
      cmocka_unit_test(test_uniqueidentifier_is_mixed_endian_upper_text),
      cmocka_unit_test(test_nvarchar_surrogates_and_lone_halves),
      cmocka_unit_test(test_varchar_cp1252_and_utf8_collations),
      cmocka_unit_test(test_other_code_pages_decode_through_iconv),
      cmocka_unit_test(test_unknown_code_page_is_a_clean_error),
      cmocka_unit_test(test_binary_varbinary_and_rowversion),
      cmocka_unit_test(test_plp_nvarchar_max_chunks_split_anywhere),
      cmocka_unit_test(test_plp_varbinary_max_100kb),
      cmocka_unit_test(test_plp_total_mismatch_is_eproto),
      cmocka_unit_test(test_text_ntext_image_textptr),
      cmocka_unit_test(test_xml_and_udt),
      cmocka_unit_test(test_sql_variant_renders_as_nvarchar_cast),
      cmocka_unit_test(test_nbcrow_null_bitmap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
