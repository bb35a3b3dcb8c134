/*
 * test_arrow_builder.c: the Arrow builders and their C Data Interface export (arrow.h):
 * exact buffer bytes (lazy validity back-fill, bit-packed booleans, offsets), roll-back,
 * format strings, release semantics (children moved out, release set to NULL) and the
 * in-memory ArrowArrayStream.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mssqlcdc/arrow.h"

static void test_format_strings(void **state) {
  (void)state;
  char f[32];
  static const struct {
    mc_arrow_type t;
    const char *s;
  } cases[] = {{MC_ARROW_BOOL, "b"},
               {MC_ARROW_INT8, "c"},
               {MC_ARROW_UINT8, "C"},
               {MC_ARROW_INT16, "s"},
               {MC_ARROW_INT32, "i"},
               {MC_ARROW_INT64, "l"},
               {MC_ARROW_FLOAT32, "f"},
               {MC_ARROW_FLOAT64, "g"},
               {MC_ARROW_TIMESTAMP_US, "tsu:"},
               {MC_ARROW_TIMESTAMP_UTC, "tsu:UTC"},
               {MC_ARROW_DATE32, "tdD"},
               {MC_ARROW_UTF8, "u"},
               {MC_ARROW_BINARY, "z"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_int_equal(mc_arrow_type_format(cases[i].t, 0, 0, f, sizeof f), MC_OK);
    assert_string_equal(f, cases[i].s);
  }
  assert_int_equal(mc_arrow_type_format(MC_ARROW_DECIMAL128, 38, 0, f, sizeof f), MC_OK);
  assert_string_equal(f, "d:38,0");
  assert_int_equal(mc_arrow_type_format(MC_ARROW_DECIMAL128, 10, 4, f, sizeof f), MC_OK);
  assert_string_equal(f, "d:10,4");
  assert_int_equal(mc_arrow_type_format(MC_ARROW_UTF8, 0, 0, f, 1), MC_EINVAL);
}

static void test_validity_is_lazy_and_back_filled(void **state) {
  (void)state;
  mc_arrow_column col;
  assert_int_equal(mc_arrow_column_init(&col, MC_ARROW_INT32, "x", 1, 0, 0), MC_OK);
  for (int32_t i = 0; i < 9; i++) {
    assert_int_equal(mc_arrow_column_append_fixed(&col, &i), MC_OK);
  }
  assert_null(col.validity.data); /* no NULL yet: no bitmap */
  assert_int_equal(mc_arrow_column_append_null(&col), MC_OK);
  int32_t v = 42;
  assert_int_equal(mc_arrow_column_append_fixed(&col, &v), MC_OK);
  assert_int_equal(mc_arrow_column_append_null(&col), MC_OK);
  assert_int_equal(col.length, 12);
  assert_int_equal(col.null_count, 2);
  /* rows 0-8 valid, 9 NULL, 10 valid, 11 NULL: 0xFF, 0b00000101 */
  static const uint8_t want[] = {0xFF, 0x05};
  assert_int_equal(col.validity.size, 2);
  assert_memory_equal(col.validity.data, want, 2);
  int32_t *vals = (int32_t *)col.values.data;
  assert_int_equal(vals[9], 0); /* NULL slots are zeroed */
  assert_int_equal(vals[10], 42);
  /* roll back to 10 rows (one NULL) */
  mc_arrow_column_truncate(&col, 10, 1);
  static const uint8_t want2[] = {0xFF, 0x01};
  assert_memory_equal(col.validity.data, want2, 2);
  assert_int_equal(col.values.size, 40);
  mc_arrow_column_free(&col);
}

static void test_bool_and_utf8_layout(void **state) {
  (void)state;
  mc_arrow_batch batch;
  assert_int_equal(mc_arrow_batch_init(&batch, 2), MC_OK);
  assert_int_equal(mc_arrow_column_init(&batch.columns[0], MC_ARROW_BOOL, "b", 1, 0, 0), MC_OK);
  assert_int_equal(mc_arrow_column_init(&batch.columns[1], MC_ARROW_UTF8, "s", 1, 0, 0), MC_OK);
  static const int bools[] = {1, 0, -1, 1, 1};
  static const char *const strs[] = {"ab", NULL, "", "xyz", "\xC3\xA9"};
  for (int i = 0; i < 5; i++) {
    if (bools[i] < 0) {
      assert_int_equal(mc_arrow_column_append_null(&batch.columns[0]), MC_OK);
    } else {
      assert_int_equal(mc_arrow_column_append_bool(&batch.columns[0], bools[i] != 0), MC_OK);
    }
    if (strs[i] == NULL) {
      assert_int_equal(mc_arrow_column_append_null(&batch.columns[1]), MC_OK);
    } else {
      assert_int_equal(mc_arrow_column_append_bytes(&batch.columns[1], strs[i], strlen(strs[i])),
                       MC_OK);
    }
    batch.length++;
  }
  struct ArrowSchema schema;
  struct ArrowArray array;
  mc_error err;
  assert_int_equal(mc_arrow_batch_export_schema(&batch, &schema, &err), MC_OK);
  assert_int_equal(mc_arrow_batch_export(&batch, &array, &err), MC_OK);
  assert_string_equal(schema.format, "+s");
  assert_int_equal(schema.n_children, 2);
  assert_string_equal(schema.children[0]->format, "b");
  assert_string_equal(schema.children[1]->name, "s");
  assert_int_equal(schema.children[1]->flags, ARROW_FLAG_NULLABLE);
  assert_int_equal(array.length, 5);
  assert_int_equal(array.n_buffers, 1);
  const struct ArrowArray *b = array.children[0];
  assert_int_equal(b->n_buffers, 2);
  assert_int_equal(((const uint8_t *)b->buffers[0])[0], 0x1B); /* 1,1,0,1,1 */
  assert_int_equal(((const uint8_t *)b->buffers[1])[0], 0x19); /* 1,0,0,1,1 */
  const struct ArrowArray *s = array.children[1];
  assert_int_equal(s->n_buffers, 3);
  assert_int_equal(s->null_count, 1);
  assert_int_equal(((const uint8_t *)s->buffers[0])[0], 0x1D);
  static const int32_t off[] = {0, 2, 2, 2, 5, 7};
  assert_memory_equal(s->buffers[1], off, sizeof off);
  assert_memory_equal(s->buffers[2], "abxyz\xC3\xA9", 7);
  /* the builder is empty again and reusable */
  assert_int_equal(batch.length, 0);
  assert_int_equal(batch.columns[1].length, 0);
  assert_int_equal(mc_arrow_column_append_bytes(&batch.columns[1], "q", 1), MC_OK);
  /* move a child out, release the parent, then the child */
  struct ArrowArray moved = *array.children[1];
  array.children[1]->release = NULL;
  array.release(&array);
  assert_null(array.release);
  assert_memory_equal(moved.buffers[2], "abxyz", 5);
  moved.release(&moved);
  assert_null(moved.release);
  schema.release(&schema);
  assert_null(schema.release);
  mc_arrow_batch_free(&batch);
}

static void test_empty_batch_has_no_null_data_buffers(void **state) {
  (void)state;
  mc_arrow_batch batch;
  assert_int_equal(mc_arrow_batch_init(&batch, 2), MC_OK);
  assert_int_equal(mc_arrow_column_init(&batch.columns[0], MC_ARROW_INT64, "a", 1, 0, 0), MC_OK);
  assert_int_equal(mc_arrow_column_init(&batch.columns[1], MC_ARROW_BINARY, "b", 1, 0, 0), MC_OK);
  struct ArrowArray array;
  mc_error err;
  assert_int_equal(mc_arrow_batch_export(&batch, &array, &err), MC_OK);
  assert_int_equal(array.length, 0);
  assert_non_null(array.children[0]->buffers[1]);
  assert_non_null(array.children[1]->buffers[1]);
  assert_non_null(array.children[1]->buffers[2]);
  assert_int_equal(((const int32_t *)array.children[1]->buffers[1])[0], 0);
  array.release(&array);
  mc_arrow_batch_free(&batch);
}

static void test_decimal_and_timestamp_values(void **state) {
  (void)state;
  mc_arrow_column col;
  assert_int_equal(mc_arrow_column_init(&col, MC_ARROW_DECIMAL128, "d", 1, 38, 2), MC_OK);
  uint8_t v[16];
  memset(v, 0xFF, 16);
  assert_int_equal(mc_arrow_column_append_fixed(&col, v), MC_OK);
  assert_int_equal(mc_arrow_column_append_null(&col), MC_OK);
  assert_int_equal(col.values.size, 32);
  assert_memory_equal(col.values.data, v, 16);
  mc_arrow_column_free(&col);
}

static void test_stream_from_arrays(void **state) {
  (void)state;
  mc_arrow_batch batch;
  assert_int_equal(mc_arrow_batch_init(&batch, 1), MC_OK);
  assert_int_equal(mc_arrow_column_init(&batch.columns[0], MC_ARROW_INT16, "v", 1, 0, 0), MC_OK);
  struct ArrowSchema schema;
  struct ArrowArray arrays[2];
  mc_error err;
  assert_int_equal(mc_arrow_batch_export_schema(&batch, &schema, &err), MC_OK);
  for (int k = 0; k < 2; k++) {
    int16_t x = (int16_t)(k + 1);
    assert_int_equal(mc_arrow_column_append_fixed(&batch.columns[0], &x), MC_OK);
    batch.length = 1;
    assert_int_equal(mc_arrow_batch_export(&batch, &arrays[k], &err), MC_OK);
  }
  struct ArrowArrayStream stream;
  assert_int_equal(mc_arrow_stream_from_arrays(&schema, arrays, 2, &stream), MC_OK);
  assert_null(schema.release);
  struct ArrowSchema got;
  assert_int_equal(stream.get_schema(&stream, &got), 0);
  assert_string_equal(got.format, "+s");
  assert_string_equal(got.children[0]->format, "s");
  got.release(&got);
  struct ArrowArray a;
  assert_int_equal(stream.get_next(&stream, &a), 0);
  assert_int_equal(((const int16_t *)a.children[0]->buffers[1])[0], 1);
  a.release(&a);
  assert_int_equal(stream.get_next(&stream, &a), 0);
  assert_int_equal(((const int16_t *)a.children[0]->buffers[1])[0], 2);
  a.release(&a);
  assert_int_equal(stream.get_next(&stream, &a), 0);
  assert_null(a.release); /* end of stream */
  assert_null(stream.get_last_error(&stream));
  stream.release(&stream);
  assert_null(stream.release);
  mc_arrow_batch_free(&batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format_strings),
      cmocka_unit_test(test_validity_is_lazy_and_back_filled),
      cmocka_unit_test(test_bool_and_utf8_layout),
      cmocka_unit_test(test_empty_batch_has_no_null_data_buffers),
      cmocka_unit_test(test_decimal_and_timestamp_values),
      cmocka_unit_test(test_stream_from_arrays),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
