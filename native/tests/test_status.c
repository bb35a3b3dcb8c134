/*
 * test_status.c: mc_error_set and status names (status.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mssqlcdc/status.h"
#include "mssqlcdc/version.h"

static void test_error_set_formats_and_returns_status(void **state) {
  (void)state;
  mc_error err;
  assert_int_equal(mc_error_set(&err, MC_EPROTO, "token 0x%02X is %d bytes", 0x81, 7), MC_EPROTO);
  assert_string_equal(err.message, "token 0x81 is 7 bytes");
  /* NULL err is allowed */
  assert_int_equal(mc_error_set(NULL, MC_EINVAL, "ignored"), MC_EINVAL);
}

static void test_error_set_truncates_long_messages(void **state) {
  (void)state;
  char long_text[2 * MC_ERROR_MESSAGE_SIZE];
  memset(long_text, 'a', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = '\0';
  mc_error err;
  mc_error_set(&err, MC_EINVAL, "%s", long_text);
  assert_int_equal(strlen(err.message), MC_ERROR_MESSAGE_SIZE - 1);
}

static void test_status_names(void **state) {
  (void)state;
  assert_string_equal(mc_status_name(MC_OK), "OK");
  assert_string_equal(mc_status_name(MC_NEEDMORE), "NEEDMORE");
  assert_string_equal(mc_status_name(MC_EPROTO), "EPROTO");
  assert_string_equal(mc_status_name((mc_status)99), "UNKNOWN");
}

static void test_versions(void **state) {
  (void)state;
  assert_string_equal(mc_version(), "0.1.0");
  assert_non_null(strstr(mc_tls_library_version(), "OpenSSL"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_set_formats_and_returns_status),
      cmocka_unit_test(test_error_set_truncates_long_messages),
      cmocka_unit_test(test_status_names),
      cmocka_unit_test(test_versions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
