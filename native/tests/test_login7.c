/*
 * test_login7.c: LOGIN7 building, password obfuscation and UTF-8 to UTF-16LE (login7.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mssqlcdc/login7.h"

static size_t le16(const uint8_t *p) { return (size_t)p[0] | ((size_t)p[1] << 8); }
static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Reads the ASCII string of the pair at header offset pair_off (test strings are ASCII). */
static void field(const uint8_t *m, size_t len, size_t pair_off, char *out, size_t cap) {
  size_t off = le16(m + pair_off);
  size_t n = le16(m + pair_off + 2);
  assert_true(off >= MC_LOGIN7_FIXED_SIZE && off + 2 * n <= len && n < cap);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(m[off + 2 * i + 1], 0);
    out[i] = (char)m[off + 2 * i];
  }
  out[n] = '\0';
}

static mc_login7_request base_request(void) {
  mc_login7_request r;
  memset(&r, 0, sizeof r);
  r.packet_size = 32767;
  r.host_name = "worker-1";
  r.user = "sa";
  r.password = "Pa55w0rd!";
  r.app_name = "mssql-cdc";
  r.server_name = "127.0.0.1";
  r.library = "mssql-cdc";
  r.database = "sales";
  r.client_pid = 4242;
  return r;
}

static void test_sql_login_layout(void **state) {
  (void)state;
  mc_login7_request req = base_request();
  uint8_t *m = NULL;
  size_t len = 0;
  mc_error err;
  assert_int_equal(mc_login7_build(&req, &m, &len, &err), MC_OK);
  assert_int_equal(le32(m), len);
  static const uint8_t version[4] = {0x04, 0x00, 0x00, 0x74};
  assert_memory_equal(m + 4, version, 4);
  assert_int_equal(le32(m + 8), 32767);
  assert_int_equal(le32(m + 16), 4242);
  assert_int_equal(m[24], 0xE0);
  assert_int_equal(m[25], 0x03);
  assert_int_equal(m[26], 0x00);
  assert_int_equal(m[27], 0x10);
  assert_int_equal(le16(m + 36), MC_LOGIN7_FIXED_SIZE); /* ibHostName starts the data */
  char s[256];
  field(m, len, 36, s, sizeof s);
  assert_string_equal(s, "worker-1");
  field(m, len, 40, s, sizeof s);
  assert_string_equal(s, "sa");
  field(m, len, 48, s, sizeof s);
  assert_string_equal(s, "mssql-cdc");
  field(m, len, 52, s, sizeof s);
  assert_string_equal(s, "127.0.0.1");
  field(m, len, 68, s, sizeof s);
  assert_string_equal(s, "sales");
  assert_int_equal(le16(m + 66), 0); /* language */
  /* The password is obfuscated on the wire and mangling twice... is not identity: undo it. */
  size_t poff = le16(m + 44), pn = le16(m + 46);
  assert_int_equal(pn, 9);
  uint8_t pw[18];
  memcpy(pw, m + poff, sizeof pw);
  assert_int_not_equal(pw[0], 'P');
  for (size_t i = 0; i < sizeof pw; i++) {
    uint8_t b = (uint8_t)(pw[i] ^ 0xA5);
    pw[i] = (uint8_t)(((b & 0x0F) << 4) | (b >> 4));
  }
  static const uint8_t expected_pw[18] = {'P', 0,   'a', 0,   '5', 0,   '5', 0,   'w',
                                          0,   '0', 0,   'r', 0,   'd', 0,   '!', 0};
  assert_memory_equal(pw, expected_pw, sizeof pw);
  /* FeatureExt: ibExtension -> u32 offset -> UTF8_SUPPORT then terminator, at the very end. */
  assert_int_equal(le16(m + 58), 4);
  uint32_t feat = le32(m + le16(m + 56));
  assert_int_equal(feat, len - 7);
  static const uint8_t utf8[7] = {0x0A, 0x01, 0x00, 0x00, 0x00, 0x01, 0xFF};
  assert_memory_equal(m + feat, utf8, 7);
  mc_login7_free(m, len);
}

static void test_strict_login_says_tds_8_0(void **state) {
  (void)state;
  mc_login7_request req = base_request();
  req.tds_version = MC_TDS_VERSION_80;
  uint8_t *m = NULL;
  size_t len = 0;
  mc_error err;
  assert_int_equal(mc_login7_build(&req, &m, &len, &err), MC_OK);
  static const uint8_t version[4] = {0x00, 0x00, 0x00, 0x08};
  assert_memory_equal(m + 4, version, 4);
  mc_login7_free(m, len);
}

static void test_access_token_login_sends_fedauth_and_no_password(void **state) {
  (void)state;
  mc_login7_request req = base_request();
  req.access_token = "eyJ0.abc";
  req.access_token_len = 8;
  req.fedauth_echo = true;
  req.read_only_intent = true;
  uint8_t *m = NULL;
  size_t len = 0;
  mc_error err;
  assert_int_equal(mc_login7_build(&req, &m, &len, &err), MC_OK);
  assert_int_equal(le16(m + 42), 0); /* no user */
  assert_int_equal(le16(m + 46), 0); /* no password */
  assert_int_equal(m[26], 0x20);     /* ReadOnly intent */
  uint32_t feat = le32(m + le16(m + 56));
  assert_int_equal(m[feat], 0x02);                  /* FEDAUTH */
  assert_int_equal(le32(m + feat + 1), 1 + 4 + 16); /* options + length + 8 UTF-16 units */
  assert_int_equal(m[feat + 5], (0x01 << 1) | 1);   /* SECURITYTOKEN, echo */
  assert_int_equal(le32(m + feat + 6), 16);
  assert_int_equal(m[feat + 10], 'e');
  assert_int_equal(m[feat + 11], 0);
  assert_int_equal(m[feat + 26], 0x0A); /* then UTF8_SUPPORT */
  assert_int_equal(m[len - 1], 0xFF);
  mc_login7_free(m, len);
}

static void test_errors_name_the_field_not_the_value(void **state) {
  (void)state;
  mc_login7_request req = base_request();
  req.password = "bad\xC3";
  uint8_t *m = NULL;
  size_t len = 0;
  mc_error err;
  assert_int_equal(mc_login7_build(&req, &m, &len, &err), MC_EINVAL);
  assert_string_equal(err.message, "LOGIN7: the password is not valid UTF-8");
  char long_db[200];
  memset(long_db, 'd', sizeof long_db - 1);
  long_db[sizeof long_db - 1] = '\0';
  req = base_request();
  req.database = long_db;
  assert_int_equal(mc_login7_build(&req, &m, &len, &err), MC_EINVAL);
  assert_non_null(strstr(err.message, "database is 199 characters"));
  assert_null(strstr(err.message, "ddd"));
}

static void test_utf8_to_utf16le(void **state) {
  (void)state;
  uint8_t out[16];
  size_t units = 0;
  mc_error err;
  /* "é😀": U+00E9, U+1F600 (surrogate pair D83D DE00) */
  assert_int_equal(mc_utf8_to_utf16le("\xC3\xA9\xF0\x9F\x98\x80", 6, out, sizeof out, &units, &err),
                   MC_OK);
  assert_int_equal(units, 3);
  static const uint8_t expected[6] = {0xE9, 0x00, 0x3D, 0xD8, 0x00, 0xDE};
  assert_memory_equal(out, expected, 6);
  const char *bad[] = {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82", "\xFF", "\x80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(mc_utf8_to_utf16le(bad[i], strlen(bad[i]), NULL, 0, &units, &err), MC_EINVAL);
  }
  assert_int_equal(mc_utf8_to_utf16le("abc", 3, out, 4, &units, &err), MC_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sql_login_layout),
      cmocka_unit_test(test_strict_login_says_tds_8_0),
      cmocka_unit_test(test_access_token_login_sends_fedauth_and_no_password),
      cmocka_unit_test(test_errors_name_the_field_not_the_value),
      cmocka_unit_test(test_utf8_to_utf16le),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
