/*
 * test_lsn.c: LSN parse / format / compare / increment / decrement (lsn.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mssqlcdc/lsn.h"

static mc_lsn parse_ok(const char *text) {
  mc_lsn lsn;
  mc_error err;
  mc_status st = mc_lsn_parse(text, strlen(text), &lsn, &err);
  if (st != MC_OK) {
    fail_msg("parse(\"%s\") failed: %s", text, err.message);
  }
  return lsn;
}

static void expect_error(const char *text, const char *fragment) {
  mc_lsn lsn = mc_lsn_from_parts(1, 2, 3);
  mc_error err;
  err.message[0] = '\0';
  assert_int_equal(mc_lsn_parse(text, strlen(text), &lsn, &err), MC_EINVAL);
  if (strstr(err.message, fragment) == NULL) {
    fail_msg("parse(\"%s\") said \"%s\", expected it to mention \"%s\"", text, err.message,
             fragment);
  }
  /* *out is untouched on error */
  assert_int_equal(mc_lsn_vlf(&lsn), 1);
  assert_int_equal(mc_lsn_block(&lsn), 2);
  assert_int_equal(mc_lsn_slot(&lsn), 3);
}

static void format_is(const mc_lsn *lsn, const char *expected) {
  char text[MC_LSN_TEXT_SIZE];
  mc_lsn_format(lsn, text);
  assert_string_equal(text, expected);
}

static void test_parse_canonical_example(void **state) {
  (void)state;
  /* docs/reference/sql-server-cdc.md: VLF 42, block 500, slot 3 */
  mc_lsn lsn = parse_ok("0x0000002A000001F40003");
  static const unsigned char expected[10] = {0, 0, 0, 0x2A, 0, 0, 0x01, 0xF4, 0, 3};
  assert_memory_equal(lsn.bytes, expected, 10);
  assert_int_equal(mc_lsn_vlf(&lsn), 42);
  assert_int_equal(mc_lsn_block(&lsn), 500);
  assert_int_equal(mc_lsn_slot(&lsn), 3);
  format_is(&lsn, "0x0000002A000001F40003");
}

static void test_parse_accepts_case_prefix_and_short_forms(void **state) {
  (void)state;
  mc_lsn a = parse_ok("0x0000002a000001f40003");
  mc_lsn b = parse_ok("0000002A000001F40003");
  mc_lsn c = parse_ok("0X2a000001F40003");
  mc_lsn d = parse_ok("2A000001F40003");
  assert_int_equal(mc_lsn_compare(&a, &b), 0);
  assert_int_equal(mc_lsn_compare(&a, &c), 0);
  assert_int_equal(mc_lsn_compare(&a, &d), 0);
  mc_lsn one = parse_ok("1");
  format_is(&one, "0x00000000000000000001");
  mc_lsn zero = parse_ok("0x0");
  format_is(&zero, "0x00000000000000000000");
  mc_lsn odd = parse_ok("0xABC");
  format_is(&odd, "0x00000000000000000ABC");
}

static void test_parse_parts_form(void **state) {
  (void)state;
  mc_lsn lsn = parse_ok("0000002a:000001f4:0003");
  format_is(&lsn, "0x0000002A000001F40003");
  mc_lsn short_parts = parse_ok("2A:1f4:3");
  assert_int_equal(mc_lsn_compare(&lsn, &short_parts), 0);
  char parts[MC_LSN_PARTS_TEXT_SIZE];
  mc_lsn_format_parts(&lsn, parts);
  assert_string_equal(parts, "0000002a:000001f4:0003");
  mc_lsn max = parse_ok("FFFFFFFF:ffffffff:FFFF");
  format_is(&max, "0xFFFFFFFFFFFFFFFFFFFF");
}

static void test_parse_errors_say_what_was_wrong(void **state) {
  (void)state;
  expect_error("", "empty");
  expect_error("0x", "no hex digits");
  expect_error("0x0000002G000001F40003", "'G' at position 9");
  expect_error("0x 12", "' ' at position 2");
  expect_error("12 ", "' ' at position 2");
  expect_error("0x000000000000000000001", "21 hex digits");
  expect_error("xx", "'x' at position 0");
  expect_error("\x01", "\\x01 at position 0");
  expect_error("1:2", "three parts");
  expect_error("1:2:3:4", "more than three parts");
  expect_error("1::3", "empty block part");
  expect_error("123456789:0:0", "9 hex digits in its VLF part");
  expect_error("0:0:12345", "5 hex digits in its slot part");
  expect_error("0x1:2:3", "'x' at position 1");
}

static void test_parse_does_not_read_past_len(void **state) {
  (void)state;
  /* The length, not a NUL, ends the text. */
  const char text[] = "0x2AFF";
  mc_lsn lsn;
  mc_error err;
  assert_int_equal(mc_lsn_parse(text, 4, &lsn, &err), MC_OK);
  format_is(&lsn, "0x0000000000000000002A");
}

static void test_compare_is_byte_order(void **state) {
  (void)state;
  mc_lsn a = mc_lsn_from_parts(42, 500, 3);
  mc_lsn b = mc_lsn_from_parts(42, 500, 4);
  mc_lsn c = mc_lsn_from_parts(42, 501, 0);
  mc_lsn d = mc_lsn_from_parts(43, 0, 0);
  assert_true(mc_lsn_compare(&a, &b) < 0);
  assert_true(mc_lsn_compare(&b, &c) < 0);
  assert_true(mc_lsn_compare(&c, &d) < 0);
  assert_true(mc_lsn_compare(&d, &a) > 0);
  assert_int_equal(mc_lsn_compare(&a, &a), 0);
  /* unsigned: 0x80 sorts after 0x7F */
  mc_lsn hi = mc_lsn_from_parts(0x80000000u, 0, 0);
  mc_lsn lo = mc_lsn_from_parts(0x7FFFFFFFu, 0xFFFFFFFFu, 0xFFFF);
  assert_true(mc_lsn_compare(&lo, &hi) < 0);
}

static void test_increment_carries_slot_block_vlf(void **state) {
  (void)state;
  mc_lsn lsn = parse_ok("0x0000002A000001F40003");
  mc_error err;
  assert_int_equal(mc_lsn_increment(&lsn, &lsn, &err), MC_OK);
  format_is(&lsn, "0x0000002A000001F40004");

  mc_lsn slot_full = mc_lsn_from_parts(42, 500, 0xFFFF);
  mc_lsn next;
  assert_int_equal(mc_lsn_increment(&slot_full, &next, &err), MC_OK);
  format_is(&next, "0x0000002A000001F50000");

  mc_lsn block_full = mc_lsn_from_parts(42, 0xFFFFFFFFu, 0xFFFF);
  assert_int_equal(mc_lsn_increment(&block_full, &next, &err), MC_OK);
  format_is(&next, "0x0000002B000000000000");

  mc_lsn max = parse_ok("0xFFFFFFFFFFFFFFFFFFFF");
  mc_lsn untouched = mc_lsn_from_parts(7, 7, 7);
  assert_int_equal(mc_lsn_increment(&max, &untouched, &err), MC_ERANGE);
  assert_non_null(strstr(err.message, "largest LSN"));
  assert_int_equal(mc_lsn_vlf(&untouched), 7);
}

static void test_decrement_borrows_and_stops_at_zero(void **state) {
  (void)state;
  mc_error err;
  mc_lsn lsn = parse_ok("0x0000002B000000000000");
  mc_lsn prev;
  assert_int_equal(mc_lsn_decrement(&lsn, &prev, &err), MC_OK);
  format_is(&prev, "0x0000002AFFFFFFFFFFFF");
  mc_lsn back;
  assert_int_equal(mc_lsn_increment(&prev, &back, &err), MC_OK);
  assert_int_equal(mc_lsn_compare(&back, &lsn), 0);

  mc_lsn zero = parse_ok("0");
  assert_int_equal(mc_lsn_decrement(&zero, &prev, &err), MC_ERANGE);
  assert_non_null(strstr(err.message, "zero LSN"));
}

static void test_from_parts_round_trip(void **state) {
  (void)state;
  mc_lsn lsn = mc_lsn_from_parts(0xDEADBEEFu, 0x01020304u, 0xCAFE);
  format_is(&lsn, "0xDEADBEEF01020304CAFE");
  assert_int_equal(mc_lsn_vlf(&lsn), 0xDEADBEEFu);
  assert_int_equal(mc_lsn_block(&lsn), 0x01020304u);
  assert_int_equal(mc_lsn_slot(&lsn), 0xCAFE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_canonical_example),
      cmocka_unit_test(test_parse_accepts_case_prefix_and_short_forms),
      cmocka_unit_test(test_parse_parts_form),
      cmocka_unit_test(test_parse_errors_say_what_was_wrong),
      cmocka_unit_test(test_parse_does_not_read_past_len),
      cmocka_unit_test(test_compare_is_byte_order),
      cmocka_unit_test(test_increment_carries_slot_block_vlf),
      cmocka_unit_test(test_decrement_borrows_and_stops_at_zero),
      cmocka_unit_test(test_from_parts_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
