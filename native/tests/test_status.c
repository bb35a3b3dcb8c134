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

/* Every status has its own name: the Python binding maps names to exception classes. */
static void test_every_status_has_a_distinct_name(void **state) {
  (void)state;
  for (int i = 0; i < MC_STATUS_COUNT; i++) {
    const char *name = mc_status_name((mc_status)i);
    assert_string_not_equal(name, "UNKNOWN");
    for (int j = 0; j < i; j++) assert_string_not_equal(name, mc_status_name((mc_status)j));
  }
  assert_string_equal(mc_status_name(MC_EUNSUPPORTED), "EUNSUPPORTED");
  assert_string_equal(mc_status_name(MC_ELOGIN), "ELOGIN");
  assert_string_equal(mc_status_name(MC_STATUS_COUNT), "UNKNOWN");
}

/* A server's error keeps its fields as data; a later plain error clears them. */
static void test_server_error_keeps_the_token_fields(void **state) {
  (void)state;
  mc_error err;
  assert_int_equal(mc_error_set_server(&err, MC_ELOGIN, 18456, 1, 14, "Login failed for user 'sa'.",
                                       "db1", NULL, 1),
                   MC_ELOGIN);
  assert_true(err.has_server);
  assert_int_equal(err.server.number, 18456);
  assert_int_equal(err.server.state, 1);
  assert_int_equal(err.server.severity, 14);
  assert_int_equal(err.server.line, 1);
  assert_string_equal(err.server.message, "Login failed for user 'sa'.");
  assert_string_equal(err.server.server, "db1");
  assert_string_equal(err.server.procedure, "");
  assert_string_equal(err.message, "login failed: [18456] Login failed for user 'sa'.");

  assert_int_equal(
      mc_error_set_server(&err, MC_ESERVER, 229, 5, 16, "denied", "db1", "cdc.fn_x", 7),
      MC_ESERVER);
  assert_string_equal(err.message, "[229] denied (procedure cdc.fn_x, line 7)");
  assert_string_equal(err.server.procedure, "cdc.fn_x");

  mc_error_set(&err, MC_EIO, "socket closed");
  assert_false(err.has_server);
  assert_int_equal(mc_error_set_server(NULL, MC_ESERVER, 1, 0, 16, "x", NULL, NULL, 0), MC_ESERVER);
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
      cmocka_unit_test(test_every_status_has_a_distinct_name),
      cmocka_unit_test(test_server_error_keeps_the_token_fields),
      cmocka_unit_test(test_versions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
