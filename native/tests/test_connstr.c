/*
 * test_connstr.c: ODBC connection-string parsing (connstr.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mssqlcdc/connstr.h"

static mc_conn_params parse_ok(const char *text) {
  mc_conn_params p;
  mc_conn_params_init(&p);
  mc_error err;
  if (mc_conn_params_parse(&p, text, strlen(text), &err) != MC_OK) {
    fail_msg("parse(\"%s\") failed: %s", text, err.message);
  }
  return p;
}

static void expect_error(const char *text, const char *fragment) {
  mc_conn_params p;
  mc_conn_params_init(&p);
  mc_error err;
  err.message[0] = '\0';
  assert_int_equal(mc_conn_params_parse(&p, text, strlen(text), &err), MC_EINVAL);
  if (strstr(err.message, fragment) == NULL) {
    fail_msg("parse(\"%s\") said \"%s\"; expected \"%s\"", text, err.message, fragment);
  }
}

static void test_defaults_follow_odbc_driver_18(void **state) {
  (void)state;
  mc_conn_params p = parse_ok("");
  assert_string_equal(p.host, "");
  assert_int_equal(p.port, 1433);
  assert_int_equal(p.encrypt, MC_ENCRYPT_MANDATORY);
  assert_false(p.trust_server_certificate);
  assert_int_equal(p.packet_size, 32767);
  assert_true(p.login_timeout_seconds == 30.0);
  assert_string_equal(p.application_name, "mssql-cdc");
  assert_false(p.read_only_intent);
  assert_false(p.has_user);
  assert_false(p.has_password);
}

static void test_full_string(void **state) {
  (void)state;
  mc_conn_params p = parse_ok(
      "Server=tcp:sqlhost,14330;Database=sales;UID=cdc_reader;PWD=s3cret;Encrypt=strict;"
      "TrustServerCertificate=yes;HostNameInCertificate=sql.example.com;"
      "Connection Timeout=5;Packet Size=4096;Application Name=orders job;"
      "ApplicationIntent=ReadOnly");
  assert_string_equal(p.host, "sqlhost");
  assert_int_equal(p.port, 14330);
  assert_string_equal(p.database, "sales");
  assert_string_equal(p.user, "cdc_reader");
  assert_string_equal(p.password, "s3cret");
  assert_true(p.has_user && p.has_password);
  assert_int_equal(p.encrypt, MC_ENCRYPT_STRICT);
  assert_true(p.trust_server_certificate);
  assert_string_equal(p.host_name_in_certificate, "sql.example.com");
  assert_true(p.login_timeout_seconds == 5.0);
  assert_int_equal(p.packet_size, 4096);
  assert_string_equal(p.application_name, "orders job");
  assert_true(p.read_only_intent);
  assert_string_equal(p.unknown_keys, "");
}

static void test_keys_ignore_case_and_spaces_and_aliases(void **state) {
  (void)state;
  mc_conn_params p = parse_ok(
      "  data source = host1 ; INITIAL CATALOG=db ; user id= u ; password = p ;encrypt=No");
  assert_string_equal(p.host, "host1");
  assert_string_equal(p.database, "db");
  assert_string_equal(p.user, "u");
  assert_string_equal(p.password, "p");
  assert_int_equal(p.encrypt, MC_ENCRYPT_OPTIONAL);
  p = parse_ok("Encrypt=Mandatory;Address=h");
  assert_int_equal(p.encrypt, MC_ENCRYPT_MANDATORY);
  p = parse_ok("Encrypt=optional");
  assert_int_equal(p.encrypt, MC_ENCRYPT_OPTIONAL);
}

static void test_braced_values_keep_semicolons_and_doubled_braces(void **state) {
  (void)state;
  mc_conn_params p = parse_ok("PWD={a;b}}c};UID={ spaced user }");
  assert_string_equal(p.password, "a;b}c");
  assert_string_equal(p.user, " spaced user ");
  p = parse_ok("PWD={}");
  assert_string_equal(p.password, "");
  assert_true(p.has_password);
  p = parse_ok("PWD={x=y} ;Database=d");
  assert_string_equal(p.password, "x=y");
  assert_string_equal(p.database, "d");
}

static void test_server_forms(void **state) {
  (void)state;
  mc_conn_params p = parse_ok("Server=[::1],1500");
  assert_string_equal(p.host, "::1");
  assert_int_equal(p.port, 1500);
  p = parse_ok("Server=.");
  assert_string_equal(p.host, "localhost");
  p = parse_ok("Server=(local), 1444");
  assert_string_equal(p.host, "localhost");
  assert_int_equal(p.port, 1444);
  p = parse_ok("Server=TCP:db.internal");
  assert_string_equal(p.host, "db.internal");
  assert_int_equal(p.port, 1433);
}

static void test_last_value_wins_and_unknown_keys_are_listed(void **state) {
  (void)state;
  mc_conn_params p = parse_ok("Database=a;Database=b;Foo=1;MultiSubnetFailover=yes;;Driver={ODBC}");
  assert_string_equal(p.database, "b");
  assert_string_equal(p.unknown_keys, "Foo, MultiSubnetFailover");
}

static void test_errors_name_the_keyword_and_what_is_allowed(void **state) {
  (void)state;
  expect_error("Encrypt=maybe", "Encrypt=maybe is not valid; allowed: yes, no, mandatory");
  expect_error("TrustServerCertificate=sure", "TrustServerCertificate=sure");
  expect_error("Packet Size=100", "Packet Size=100 is not valid; allowed: an integer from 512");
  expect_error("Packet Size=40000", "from 512 to 32767");
  expect_error("Connection Timeout=-1", "Connection Timeout=-1");
  expect_error("Server=h,0", "Server port=0");
  expect_error("Server=h,70000", "Server port=70000");
  expect_error("Server=h\\SQLEXPRESS", "Server=host,port");
  expect_error("Server=", "allowed: host or host,port");
  expect_error("ApplicationIntent=Sometimes", "ReadOnly, ReadWrite");
  expect_error("justtext", "attribute at offset 0 has no '='");
  expect_error("PWD=abc;secretTail", "offset 8 has no '='");
  expect_error("=value", "no key");
  expect_error("PWD={open", "has no closing '}'");
  expect_error("PWD={a}b", "unexpected text after the braced value of 'PWD'");
}

static void test_password_is_never_quoted(void **state) {
  (void)state;
  const char *secrets[] = {"PWD={hunter2", "PWD={hunter2}x", "Password={hunter2}}",
                           "PWD=abc;hunter2"};
  for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
    mc_conn_params p;
    mc_conn_params_init(&p);
    mc_error err;
    assert_int_not_equal(mc_conn_params_parse(&p, secrets[i], strlen(secrets[i]), &err), MC_OK);
    assert_null(strstr(err.message, "hunter2"));
  }
  char long_password[600];
  memcpy(long_password, "PWD=", 4);
  memset(long_password + 4, 'z', sizeof long_password - 5);
  long_password[sizeof long_password - 1] = '\0';
  mc_conn_params p;
  mc_conn_params_init(&p);
  mc_error err;
  assert_int_equal(mc_conn_params_parse(&p, long_password, strlen(long_password), &err), MC_EINVAL);
  assert_non_null(strstr(err.message, "PWD is 595 bytes long"));
  assert_null(strstr(err.message, "zzz"));
}

static void test_clear_wipes_the_password(void **state) {
  (void)state;
  mc_conn_params p = parse_ok("PWD=topsecret");
  mc_conn_params_clear(&p);
  assert_null(memchr(p.password, 't', sizeof p.password));
}

static void test_length_not_nul_ends_the_text(void **state) {
  (void)state;
  const char text[] = "Database=abc;Database=zzz";
  mc_conn_params p;
  mc_conn_params_init(&p);
  mc_error err;
  assert_int_equal(mc_conn_params_parse(&p, text, 12, &err), MC_OK);
  assert_string_equal(p.database, "abc");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults_follow_odbc_driver_18),
      cmocka_unit_test(test_full_string),
      cmocka_unit_test(test_keys_ignore_case_and_spaces_and_aliases),
      cmocka_unit_test(test_braced_values_keep_semicolons_and_doubled_braces),
      cmocka_unit_test(test_server_forms),
      cmocka_unit_test(test_last_value_wins_and_unknown_keys_are_listed),
      cmocka_unit_test(test_errors_name_the_keyword_and_what_is_allowed),
      cmocka_unit_test(test_password_is_never_quoted),
      cmocka_unit_test(test_clear_wipes_the_password),
      cmocka_unit_test(test_length_not_nul_ends_the_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
