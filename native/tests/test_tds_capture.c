/*
 * test_tds_capture.c: decodes responses written by a real SQL Server, taken from
 * nDPI's mssql_tds.pcap test capture (see data/README.md for its source and how the fixtures were
 * extracted: server-to-client TCP payloads, TDS packet headers stripped). Asserts the decoded
 * COLMETADATA (nchar, char, int), ROW values, DONE* and RETURNSTATUS, re-splits every response
 * at every byte, and checks that every cut response reports incomplete instead of crashing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test_tds_support.h"

static tb load(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", MC_TEST_DATA_DIR, name);
  FILE *f = fopen(path, "rb");
  if (f == NULL) fail_msg("cannot open %s", path);
  tb b = {0};
  uint8_t buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) tb_put(&b, buf, n);
  fclose(f);
  return b;
}

static void expect(const char *name, const char *want) {
  tb b = load(name);
  run_result r = run_all_splits(b.p, b.n, 1, NULL);
  if (r.transcript.n != strlen(want) || memcmp(r.transcript.p, want, r.transcript.n) != 0) {
    fail_msg("%s transcript:\n%.*s\nwanted:\n%s", name, (int)r.transcript.n, (char *)r.transcript.p,
             want);
  }
  tb_free(&r.transcript);
  /* Every cut: a clean NEEDMORE (then "truncated" at finish) or a complete prefix. */
  for (size_t cut = 1; cut < b.n; cut++) {
    run_result c = run_decoder(b.p, cut, 0, 0, NULL);
    assert_true(c.status == MC_OK || (c.status == MC_EPROTO && strstr(c.message, "truncated")));
    tb_free(&c.transcript);
  }
  tb_free(&b);
}

static void test_nchar_nchar_nchar_int_with_one_row(void **state) {
  (void)state;
  /* select name, surname, city, id: three nchar with SQL_Latin1_General_CP1_CI_AS, one int */
  char want[2048];
  char z[64], s[64], c[64];
  memset(z, ' ', 30);
  memcpy(z, "zzz", 3);
  z[30] = '\0';
  memset(s, ' ', 30);
  memcpy(s, "bbb", 3);
  s[30] = '\0';
  memset(c, ' ', 40);
  memcpy(c, "cxxx", 4);
  c[40] = '\0';
  char hex[3][256];
  for (int k = 0; k < 3; k++) {
    const char *t = k == 0 ? z : k == 1 ? s : c;
    hex[k][0] = '\0';
    for (size_t i = 0; t[i]; i++) snprintf(hex[k] + 2 * i, 3, "%02x", (unsigned char)t[i]);
  }
  snprintf(want, sizeof want,
           "metadata 4: name[u] surname[u] city[u] id[i]\n"
           "batch rows=1\n"
           " col 0 u len=1 nulls=0\n000000001e000000\n%s\n"
           " col 1 u len=1 nulls=0\n000000001e000000\n%s\n"
           " col 2 u len=1 nulls=0\n0000000028000000\n%s\n"
           " col 3 i len=1 nulls=0\n02000000\n"
           "done ff status=0011 cmd=00c1 rows=1\n"
           "return 0\n"
           "done fe status=0000 cmd=00e0 rows=0\n",
           hex[0], hex[1], hex[2]);
  expect("mssql_tds_frame04.bin", want);
}

static void test_char_columns_three_rows(void **state) {
  (void)state;
  char want[4096];
  char v[3][64];
  const char *words[3] = {"first", "second", "third"};
  for (int k = 0; k < 3; k++) {
    char t[31];
    memset(t, ' ', 30);
    memcpy(t, words[k], strlen(words[k]));
    t[30] = '\0';
    v[k][0] = '\0';
    for (size_t i = 0; i < 30; i++) snprintf(v[k] + 2 * i, 3, "%02x", (unsigned char)t[i]);
  }
  char col[3][512];
  for (int k = 0; k < 3; k++) {
    snprintf(col[k], sizeof col[k],
             " col %d u len=3 nulls=0\n000000001e0000003c0000005a000000\n%s%s%s\n", k, v[k], v[k],
             v[k]);
  }
  snprintf(want, sizeof want,
           "metadata 3: column1[u] column2[u] column3[u]\n"
           "batch rows=3\n%s%s%s"
           "done ff status=0011 cmd=00c1 rows=3\n"
           "return 0\n"
           "done fe status=0000 cmd=00e0 rows=0\n",
           col[0], col[1], col[2]);
  expect("mssql_tds_frame19.bin", want);
}

static void test_done_and_returnstatus_only_responses(void **state) {
  (void)state;
  expect("mssql_tds_frame02.bin",
         "done fd status=0001 cmd=00f9 rows=0\n"
         "done fd status=0000 cmd=00ba rows=0\n");
  expect("mssql_tds_frame12.bin",
         "done ff status=0001 cmd=00c6 rows=0\n"
         "return 0\n"
         "done fe status=0000 cmd=00e0 rows=0\n");
  expect("mssql_tds_frame16.bin",
         "done ff status=0011 cmd=00c3 rows=1\n"
         "return 0\n"
         "return 0\n"
         "done fe status=0081 cmd=00e0 rows=0\n"
         "done ff status=0011 cmd=00c3 rows=1\n"
         "return 0\n"
         "return 0\n"
         "done fe status=0000 cmd=00e0 rows=0\n");
}

static void test_other_responses_decode_cleanly(void **state) {
  (void)state;
  static const char *const names[] = {"mssql_tds_frame10.bin", "mssql_tds_frame14.bin",
                                      "mssql_tds_frame22.bin", "mssql_tds_frame25.bin"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    tb b = load(names[i]);
    run_result r = run_all_splits(b.p, b.n, 1, NULL);
    assert_int_equal(r.status, MC_OK);
    assert_non_null(strstr((char *)r.transcript.p, " status=0000 "));
    tb_free(&r.transcript);
    tb_free(&b);
  }
}

static void test_short_done_is_reported_incomplete(void **state) {
  (void)state;
  /* Frame 6 carries a 9-byte DONE (the pre-7.2 4-byte row count): for a TDS 7.4 decoder the
   * token is cut, so the response is incomplete, never a crash or an over-read. */
  tb b = load("mssql_tds_frame06.bin");
  assert_int_equal(b.n, 9);
  run_result r = run_all_splits(b.p, b.n, 1, NULL);
  assert_int_equal(r.status, MC_EPROTO);
  assert_non_null(strstr(r.message, "truncated"));
  tb_free(&r.transcript);
  tb_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nchar_nchar_nchar_int_with_one_row),
      cmocka_unit_test(test_char_columns_three_rows),
      cmocka_unit_test(test_done_and_returnstatus_only_responses),
      cmocka_unit_test(test_other_responses_decode_cleanly),
      cmocka_unit_test(test_short_done_is_reported_incomplete),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
