/*
 * test_conn_live.c: the C client end to end (conn.h) against a live server, so that TLS, the
 * transport, requests and result reading run under ASan/UBSan and valgrind too.
 *
 * The server comes from MSSQL_CDC_TEST_CONNSTR (an ODBC connection string with credentials);
 * `make native-test` and friends start the emulator and set it (scripts/with-emulator.sh).
 * Without it every test is skipped.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mssqlcdc/conn.h"

static const char *connstr(void) { return getenv("MSSQL_CDC_TEST_CONNSTR"); }

static mc_conn *open_or_fail(const char *extra) {
  char text[2048];
  snprintf(text, sizeof text, "%s%s", connstr(), extra);
  mc_conn_params p;
  mc_conn_params_init(&p);
  mc_error err;
  if (mc_conn_params_parse(&p, text, strlen(text), &err) != MC_OK) fail_msg("%s", err.message);
  mc_conn *c = NULL;
  mc_status st = mc_conn_open(&p, NULL, &c, &err);
  mc_conn_params_clear(&p);
  if (st != MC_OK) fail_msg("open failed (%s): %s", mc_status_name(st), err.message);
  return c;
}

static void exec_ok(mc_conn *c, const char *sql) {
  mc_error err;
  mc_status st = mc_conn_execute(c, sql, strlen(sql), NULL, 0, NULL, &err);
  if (st != MC_OK) fail_msg("%s: %s", sql, err.message);
}

/* Reads every batch of the open result; returns the row count. */
static int64_t drain_rows(mc_conn *c) {
  int64_t total = 0;
  for (;;) {
    struct ArrowArray a;
    mc_error err;
    mc_status st = mc_conn_next_batch(c, &a, &err);
    if (st != MC_OK) fail_msg("next_batch: %s", err.message);
    if (a.release == NULL) return total;
    total += a.length;
    a.release(&a);
  }
}

static int skip_without_server(void **state) {
  (void)state;
  if (connstr() == NULL) {
    print_message("MSSQL_CDC_TEST_CONNSTR is not set: skipping live tests\n");
    skip();
  }
  return 0;
}

static void test_query_schema_and_rows(void **state) {
  (void)state;
  mc_conn *c = open_or_fail(";Encrypt=yes;TrustServerCertificate=yes");
  exec_ok(c, "SELECT 1 AS a, N'x' AS b UNION ALL SELECT 2, N'y'");
  assert_true(mc_conn_has_result(c));
  struct ArrowSchema s;
  mc_error err;
  assert_int_equal(mc_conn_schema(c, &s, &err), MC_OK);
  assert_string_equal(s.format, "+s");
  assert_int_equal(s.n_children, 2);
  assert_string_equal(s.children[0]->name, "a");
  assert_string_equal(s.children[0]->format, "i");
  assert_string_equal(s.children[1]->format, "u");
  s.release(&s);
  assert_int_equal(drain_rows(c), 2);
  assert_false(mc_conn_has_result(c));
  mc_conn_stats stats;
  mc_conn_stats_get(c, &stats);
  assert_true(stats.round_trips >= 3);
  assert_true(stats.bytes_received > 0);
  mc_conn_close(c);
}

static void test_strict_and_optional_modes(void **state) {
  (void)state;
  mc_conn *c = open_or_fail(";Encrypt=strict;TrustServerCertificate=yes");
  exec_ok(c, "SELECT 1 AS a");
  assert_int_equal(drain_rows(c), 1);
  mc_conn_close(c);
  c = open_or_fail(";Encrypt=optional");
  exec_ok(c, "SELECT 1 AS a");
  assert_int_equal(drain_rows(c), 1);
  mc_conn_close(c);
}

static void test_rpc_parameters(void **state) {
  (void)state;
  mc_conn *c = open_or_fail(";Encrypt=yes;TrustServerCertificate=yes");
  static const uint8_t lsn[10] = {0, 0, 0, 0x2A, 0, 0, 0x01, 0xF4, 0, 3};
  mc_param params[3] = {
      {.type = MC_PARAM_INT64, .i64 = 42},
      {.type = MC_PARAM_TEXT, .bytes = (const uint8_t *)"h\xC3\xA9", .len = 3},
      {.type = MC_PARAM_BINARY, .bytes = lsn, .len = 10},
  };
  const char *sql = "SELECT @P1 AS n, @P2 AS t, @P3 AS l";
  mc_error err;
  assert_int_equal(mc_conn_execute(c, sql, strlen(sql), params, 3, NULL, &err), MC_OK);
  struct ArrowArray a;
  assert_int_equal(mc_conn_next_batch(c, &a, &err), MC_OK);
  assert_int_equal(a.length, 1);
  assert_int_equal(a.n_children, 3);
  assert_int_equal(a.children[0]->n_buffers, 2);
  const int64_t *n = a.children[0]->buffers[1];
  assert_int_equal(n[0], 42);
  const int32_t *offsets = a.children[1]->buffers[1];
  assert_int_equal(offsets[1] - offsets[0], 3);
  assert_memory_equal((const char *)a.children[1]->buffers[2] + offsets[0], "h\xC3\xA9", 3);
  a.release(&a);
  assert_int_equal(drain_rows(c), 0);
  mc_conn_close(c);
}

static void test_server_error_then_usable(void **state) {
  (void)state;
  mc_conn *c = open_or_fail(";Encrypt=yes;TrustServerCertificate=yes");
  const char *sql = "SELECT * FROM dbo.no_such_table_live";
  mc_error err;
  assert_int_equal(mc_conn_execute(c, sql, strlen(sql), NULL, 0, NULL, &err), MC_ESERVER);
  assert_true(err.has_server); /* the token's fields as data */
  assert_int_equal(err.server.number, 208);
  const mc_tds_message *m = mc_conn_last_message(c);
  assert_non_null(m);
  assert_int_equal(m->number, 208);
  assert_non_null(strstr(err.message, "[208]"));
  exec_ok(c, "SELECT 3 AS x");
  assert_int_equal(drain_rows(c), 1);
  mc_conn_close(c);
}

/* Creates dbo.<stem>_<pid> (id int) holding 1..300; its name goes to table[size]. */
static void make_ids_table(mc_conn *c, const char *stem, char *table, size_t size) {
  char sql[8192];
  snprintf(table, size, "dbo.%s_%ld", stem, (long)getpid());
  snprintf(sql, sizeof sql, "CREATE TABLE %s (id int)", table);
  exec_ok(c, sql);
  size_t off = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s (id) VALUES (1)", table);
  for (int i = 2; i <= 300; i++) off += (size_t)snprintf(sql + off, sizeof sql - off, ",(%d)", i);
  exec_ok(c, sql);
}

/* Runs sql with batches of 1,000 rows, reads the first batch, then cancels the rest. */
static void cancel_after_first_batch(mc_conn *c, const char *sql) {
  mc_exec_options opts = {.batch_rows = 1000};
  mc_error err;
  assert_int_equal(mc_conn_execute(c, sql, strlen(sql), NULL, 0, &opts, &err), MC_OK);
  struct ArrowArray a;
  assert_int_equal(mc_conn_next_batch(c, &a, &err), MC_OK);
  assert_int_equal(a.length, 1000);
  a.release(&a);
  assert_int_equal(mc_conn_cancel(c, &err), MC_OK);
}

static void test_cancel_mid_result(void **state) {
  (void)state;
  mc_conn *c = open_or_fail(";Encrypt=yes;TrustServerCertificate=yes");
  char sql[8192];
  char table[64];
  make_ids_table(c, "live", table, sizeof table);
  snprintf(sql, sizeof sql, "SELECT a.id, b.id FROM %s a CROSS JOIN %s b", table, table);
  cancel_after_first_batch(c, sql);
  exec_ok(c, "SELECT 1 AS one");
  assert_int_equal(drain_rows(c), 1);
  mc_conn_close(c);
}

/* A cancelled batch whose later statement begins a transaction: afterwards the client's
 * transaction descriptor agrees with the server. SQL Server stops at the Attention (the BEGIN
 * may never run); a server that ran it reports it (ENVCHANGE) before the acknowledgement,
 * which the cancel applies. */
static void test_cancel_keeps_the_servers_transaction(void **state) {
  (void)state;
  mc_conn *c = open_or_fail(";Encrypt=yes;TrustServerCertificate=yes");
  char sql[8192];
  char table[64];
  make_ids_table(c, "live_tran", table, sizeof table);
  assert_false(mc_conn_in_transaction(c));
  snprintf(sql, sizeof sql,
           "SELECT a.id, b.id FROM %s a CROSS JOIN %s b CROSS JOIN (SELECT TOP 20 id FROM %s) c; "
           "BEGIN TRANSACTION",
           table, table, table);
  cancel_after_first_batch(c, sql);
  bool client = mc_conn_in_transaction(c);
  exec_ok(c, "SELECT 1 AS open_transaction WHERE @@TRANCOUNT > 0");
  assert_int_equal(drain_rows(c), client ? 1 : 0);
  print_message("after the cancel, a transaction is open: %s\n", client ? "yes" : "no");
  mc_conn_close(c);
}

static void test_wrong_password(void **state) {
  (void)state;
  char text[2048];
  snprintf(text, sizeof text, "%s;PWD={wrong-password-xyz};Encrypt=yes;TrustServerCertificate=yes",
           connstr());
  mc_conn_params p;
  mc_conn_params_init(&p);
  mc_error err;
  assert_int_equal(mc_conn_params_parse(&p, text, strlen(text), &err), MC_OK);
  mc_conn *c = NULL;
  /* MC_ELOGIN (was MC_ESERVER): a refused login has a status of its own, so one map from
   * status to exception class gives LoginError; the server's error is data, not only text. */
  assert_int_equal(mc_conn_open(&p, NULL, &c, &err), MC_ELOGIN);
  assert_null(c);
  assert_non_null(strstr(err.message, "18456"));
  assert_null(strstr(err.message, "wrong-password-xyz"));
  assert_true(err.has_server);
  assert_int_equal(err.server.number, 18456);
  assert_int_equal(err.server.severity, 14);
  assert_non_null(strstr(err.server.message, "Login failed"));
  assert_null(strstr(err.server.message, "wrong-password-xyz"));
  mc_conn_params_clear(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_query_schema_and_rows, skip_without_server),
      cmocka_unit_test_setup(test_strict_and_optional_modes, skip_without_server),
      cmocka_unit_test_setup(test_rpc_parameters, skip_without_server),
      cmocka_unit_test_setup(test_server_error_then_usable, skip_without_server),
      cmocka_unit_test_setup(test_cancel_mid_result, skip_without_server),
      cmocka_unit_test_setup(test_cancel_keeps_the_servers_transaction, skip_without_server),
      cmocka_unit_test_setup(test_wrong_password, skip_without_server),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
