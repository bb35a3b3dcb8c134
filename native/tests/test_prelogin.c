/*
 * test_prelogin.c: PRELOGIN build / parse and the encryption decision (prelogin.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mssqlcdc/prelogin.h"

static void test_build_writes_the_option_table_big_endian(void **state) {
  (void)state;
  uint8_t out[MC_PRELOGIN_REQUEST_MAX];
  size_t n = mc_prelogin_build(MC_PRELOGIN_ENCRYPT_ON, false, out);
  static const uint8_t expected[] = {0x00, 0x00, 0x1A, 0x00, 0x06, /* VERSION at 26, 6 bytes */
                                     0x01, 0x00, 0x20, 0x00, 0x01, /* ENCRYPTION at 32 */
                                     0x02, 0x00, 0x21, 0x00, 0x01, /* INSTOPT at 33 */
                                     0x03, 0x00, 0x22, 0x00, 0x04, /* THREADID at 34 */
                                     0x04, 0x00, 0x26, 0x00, 0x01, /* MARS at 38 */
                                     0xFF,                         /* terminator */
                                     0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01,
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  assert_int_equal(n, sizeof expected);
  assert_memory_equal(out, expected, sizeof expected);
}

static void test_build_with_fedauth_adds_the_option(void **state) {
  (void)state;
  uint8_t out[MC_PRELOGIN_REQUEST_MAX];
  size_t n = mc_prelogin_build(MC_PRELOGIN_ENCRYPT_OFF, true, out);
  assert_int_equal(n, 31 + 14);
  assert_int_equal(out[25], MC_PRELOGIN_FEDAUTHREQUIRED);
  assert_int_equal(out[30], 0xFF);
  assert_int_equal(out[n - 1], 0x01);
  /* and the client's own parse of it agrees */
  mc_prelogin_reply r;
  mc_error err;
  assert_int_equal(mc_prelogin_parse(out, n, &r, &err), MC_OK);
  assert_int_equal(r.encryption, MC_PRELOGIN_ENCRYPT_OFF);
  assert_true(r.fedauth_required);
}

static void test_parse_a_server_reply(void **state) {
  (void)state;
  /* SQL Server 2022 (16.0.1000) answering ENCRYPT_REQ, with a NONCE-free reply. */
  static const uint8_t reply[] = {0x00, 0x00, 0x10, 0x00, 0x06, 0x01, 0x00, 0x16,
                                  0x00, 0x01, 0x04, 0x00, 0x17, 0x00, 0x01, 0xFF,
                                  0x10, 0x00, 0x03, 0xE8, 0x00, 0x00, 0x03, 0x00};
  mc_prelogin_reply r;
  mc_error err;
  assert_int_equal(mc_prelogin_parse(reply, sizeof reply, &r, &err), MC_OK);
  assert_int_equal(r.version[0], 16);
  assert_int_equal((r.version[2] << 8) | r.version[3], 1000);
  assert_int_equal(r.encryption, MC_PRELOGIN_ENCRYPT_REQ);
  assert_false(r.fedauth_required);
}

static void test_parse_rejects_bad_tables(void **state) {
  (void)state;
  mc_prelogin_reply r;
  mc_error err;
  static const uint8_t no_terminator[] = {0x01, 0x00, 0x05, 0x00, 0x01};
  assert_int_equal(mc_prelogin_parse(no_terminator, sizeof no_terminator, &r, &err), MC_EPROTO);
  assert_non_null(strstr(err.message, "terminator"));
  static const uint8_t outside[] = {0x01, 0x00, 0x06, 0x00, 0x05, 0xFF, 0x00};
  assert_int_equal(mc_prelogin_parse(outside, sizeof outside, &r, &err), MC_EPROTO);
  assert_non_null(strstr(err.message, "points at bytes 6..11 of a 7-byte reply"));
  static const uint8_t into_table[] = {0x01, 0x00, 0x00, 0x00, 0x01, 0xFF, 0x00};
  assert_int_equal(mc_prelogin_parse(into_table, sizeof into_table, &r, &err), MC_EPROTO);
  static const uint8_t no_encryption[] = {0x04, 0x00, 0x06, 0x00, 0x01, 0xFF, 0x00};
  assert_int_equal(mc_prelogin_parse(no_encryption, sizeof no_encryption, &r, &err), MC_EPROTO);
  assert_non_null(strstr(err.message, "no ENCRYPTION"));
  assert_int_equal(mc_prelogin_parse(NULL, 0, &r, &err), MC_EPROTO);
}

static void test_plan_follows_the_encryption_table(void **state) {
  (void)state;
  mc_tls_plan plan;
  mc_error err;
  assert_int_equal(mc_prelogin_client_encryption(MC_ENCRYPT_OPTIONAL), MC_PRELOGIN_ENCRYPT_OFF);
  assert_int_equal(mc_prelogin_client_encryption(MC_ENCRYPT_MANDATORY), MC_PRELOGIN_ENCRYPT_ON);

  assert_int_equal(mc_prelogin_plan(MC_ENCRYPT_OPTIONAL, MC_PRELOGIN_ENCRYPT_OFF, &plan, &err),
                   MC_OK);
  assert_int_equal(plan, MC_TLS_LOGIN_ONLY);
  assert_int_equal(mc_prelogin_plan(MC_ENCRYPT_OPTIONAL, MC_PRELOGIN_ENCRYPT_REQ, &plan, &err),
                   MC_OK);
  assert_int_equal(plan, MC_TLS_FULL);
  assert_int_equal(mc_prelogin_plan(MC_ENCRYPT_OPTIONAL, MC_PRELOGIN_ENCRYPT_NOT_SUP, &plan, &err),
                   MC_OK);
  assert_int_equal(plan, MC_TLS_NONE);
  assert_int_equal(mc_prelogin_plan(MC_ENCRYPT_MANDATORY, MC_PRELOGIN_ENCRYPT_ON, &plan, &err),
                   MC_OK);
  assert_int_equal(plan, MC_TLS_FULL);
  assert_int_equal(mc_prelogin_plan(MC_ENCRYPT_MANDATORY, MC_PRELOGIN_ENCRYPT_NOT_SUP, &plan, &err),
                   MC_EIO);
  assert_non_null(strstr(err.message, "does not offer encryption"));
  assert_int_equal(mc_prelogin_plan(MC_ENCRYPT_MANDATORY, 0x09, &plan, &err), MC_EPROTO);
  assert_int_equal(mc_prelogin_plan(MC_ENCRYPT_STRICT, MC_PRELOGIN_ENCRYPT_OFF, &plan, &err),
                   MC_OK);
  assert_int_equal(plan, MC_TLS_FULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_build_writes_the_option_table_big_endian),
      cmocka_unit_test(test_build_with_fedauth_adds_the_option),
      cmocka_unit_test(test_parse_a_server_reply),
      cmocka_unit_test(test_parse_rejects_bad_tables),
      cmocka_unit_test(test_plan_follows_the_encryption_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
