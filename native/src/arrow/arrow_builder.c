/*
 * arrow_builder.c: column and batch builders (arrow.h): init, reserve, NULLs with a lazily
 * allocated validity bitmap, row roll-back, and the checked append helpers. The hot-path
 * appends are the inline ...Unsafe functions in arrow.h.
 *
 * Bitmaps (validity and booleans) are zero-filled when they grow and every append writes its
 * own bit, so exported bitmaps have deterministic padding bits.
 */
#include <stdlib.h>

#include "mssqlcdc/arrow.h"

static bool is_var(mc_arrow_type type) { return type == MC_ARROW_UTF8 || type == MC_ARROW_BINARY; }

/* Grows a bitmap buffer to hold `bits` bits, zero-filling new bytes. */
static mc_status bitmap_reserve(mc_arrow_buffer *buf, int64_t bits) {
  size_t bytes = (size_t)((bits + 7) >> 3);
  if (bytes <= buf->capacity) return MC_OK;
  size_t old_cap = buf->capacity;
  size_t old_size = buf->size;
  buf->size = old_cap; /* reserve relative to the allocated end */
  mc_status st = mc_arrow_buffer_reserve(buf, bytes - old_cap);
  buf->size = old_size;
  if (st != MC_OK) return st;
  memset(buf->data + old_cap, 0, buf->capacity - old_cap);
  return MC_OK;
}

mc_status mc_arrow_column_init(mc_arrow_column *col, mc_arrow_type type, const char *name,
                               size_t name_len, int32_t precision, int32_t scale) {
  memset(col, 0, sizeof *col);
  col->type = type;
  col->width = (uint32_t)mc_arrow_type_width(type);
  col->precision = precision;
  col->scale = scale;
  col->name = malloc(name_len + 1);
  if (col->name == NULL) return MC_ENOMEM;
  if (name_len > 0) memcpy(col->name, name, name_len);
  col->name[name_len] = '\0';
  if (is_var(type)) {
    if (mc_arrow_buffer_reserve(&col->offsets, sizeof(int32_t)) != MC_OK) {
      mc_arrow_column_free(col);
      return MC_ENOMEM;
    }
    memset(col->offsets.data, 0, sizeof(int32_t));
    col->offsets.size = sizeof(int32_t);
  }
  return MC_OK;
}

void mc_arrow_column_free(mc_arrow_column *col) {
  free(col->name);
  col->name = NULL;
  mc_arrow_buffer_free(&col->validity);
  mc_arrow_buffer_free(&col->offsets);
  mc_arrow_buffer_free(&col->values);
  col->length = 0;
  col->null_count = 0;
}

mc_status mc_arrow_column_reserve(mc_arrow_column *col, int64_t n, size_t data_bytes) {
  if (col->validity.data != NULL) MC_RETURN_NOT_OK(bitmap_reserve(&col->validity, col->length + n));
  switch (col->type) {
    case MC_ARROW_BOOL: return bitmap_reserve(&col->values, col->length + n);
    case MC_ARROW_UTF8:
    case MC_ARROW_BINARY:
      MC_RETURN_NOT_OK(mc_arrow_buffer_reserve(&col->offsets, (size_t)n * sizeof(int32_t)));
      return mc_arrow_buffer_reserve(&col->values, data_bytes);
    default:
      return mc_arrow_buffer_reserve(&col->values, (size_t)n * mc_arrow_type_width(col->type));
  }
}

/* Values the column's fixed-size buffers (values of a fixed-width type, offsets, bits) hold
 * without growing. */
static int64_t row_capacity(const mc_arrow_column *col) {
  switch (col->type) {
    case MC_ARROW_BOOL: return (int64_t)(col->values.capacity * 8);
    case MC_ARROW_UTF8:
    case MC_ARROW_BINARY:
      return col->offsets.capacity < sizeof(int32_t)
                 ? 0
                 : (int64_t)(col->offsets.capacity / sizeof(int32_t)) - 1;
    default: return col->width == 0 ? 0 : (int64_t)(col->values.capacity / col->width);
  }
}

/* Gives buf room for `need` bytes in all. A buffer holding at most a few bytes (empty after an
 * export) is replaced by a pooled or exactly-sized one, those bytes copied over; a bitmap's
 * (zero) new bytes are zero-filled. Others grow geometrically. */
static mc_status reserve_total(mc_arrow_buffer *buf, size_t need, mc_arrow_pool *pool, bool zero) {
  if (need <= buf->capacity) return MC_OK;
  if (buf->size > 64) {
    size_t old_cap = buf->capacity;
    MC_RETURN_NOT_OK(mc_arrow_buffer_reserve(buf, need - buf->size));
    if (zero) memset(buf->data + old_cap, 0, buf->capacity - old_cap);
    return MC_OK;
  }
  size_t cap = 0;
  uint8_t *p = mc_arrow_pool_take(pool, need, &cap);
  if (p == NULL) {
    p = malloc(need);
    if (p == NULL) return MC_ENOMEM;
    cap = need;
  }
  if (buf->size > 0) memcpy(p, buf->data, buf->size);
  if (zero) memset(p + buf->size, 0, cap - buf->size);
  free(buf->data);
  buf->data = p;
  buf->capacity = cap;
  return MC_OK;
}

mc_status mc_arrow_column_reserve_rows(mc_arrow_column *col, int64_t rows, size_t data_bytes,
                                       mc_arrow_pool *pool) {
  if (rows < 0 || (uint64_t)rows > (SIZE_MAX - 8) / 16) return MC_ENOMEM;
  size_t n = (size_t)rows;
  size_t bits = (n + 7) / 8;
  if (col->validity.data != NULL) MC_RETURN_NOT_OK(reserve_total(&col->validity, bits, pool, true));
  switch (col->type) {
    case MC_ARROW_BOOL: return reserve_total(&col->values, bits, pool, true);
    case MC_ARROW_UTF8:
    case MC_ARROW_BINARY:
      MC_RETURN_NOT_OK(reserve_total(&col->offsets, (n + 1) * sizeof(int32_t), pool, false));
      return reserve_total(&col->values, data_bytes, pool, false);
    default: return reserve_total(&col->values, n * col->width, pool, false);
  }
}

mc_status mc_arrow_column_append_null(mc_arrow_column *col) {
  MC_RETURN_NOT_OK(mc_arrow_column_reserve(col, 1, 0));
  if (col->validity.data == NULL) {
    /* First NULL: allocate the bitmap for every slot the other buffers hold (the appends a
     * caller reserved for need no allocation) and mark every earlier value valid. */
    int64_t bits = row_capacity(col);
    if (bits < col->length + 1) bits = col->length + 1;
    MC_RETURN_NOT_OK(bitmap_reserve(&col->validity, bits));
    int64_t full = col->length >> 3;
    memset(col->validity.data, 0xFF, (size_t)full);
    for (int64_t i = full * 8; i < col->length; i++) {
      col->validity.data[i >> 3] = (uint8_t)(col->validity.data[i >> 3] | (1u << (i & 7)));
    }
  }
  int64_t i = col->length;
  col->validity.data[i >> 3] = (uint8_t)(col->validity.data[i >> 3] & ~(1u << (i & 7)));
  col->validity.size = (size_t)((i + 1 + 7) >> 3);
  switch (col->type) {
    case MC_ARROW_BOOL:
      col->values.data[i >> 3] = (uint8_t)(col->values.data[i >> 3] & ~(1u << (i & 7)));
      col->values.size = (size_t)((i + 1 + 7) >> 3);
      break;
    case MC_ARROW_UTF8:
    case MC_ARROW_BINARY: {
      int32_t end = (int32_t)col->values.size;
      memcpy(col->offsets.data + col->offsets.size, &end, sizeof end);
      col->offsets.size += sizeof end;
      break;
    }
    default: {
      size_t w = mc_arrow_type_width(col->type);
      memset(col->values.data + col->values.size, 0, w);
      col->values.size += w;
      break;
    }
  }
  col->length++;
  col->null_count++;
  return MC_OK;
}

/* Clears the bits at and above `length` in the last used byte of a bitmap. */
static void bitmap_truncate(mc_arrow_buffer *buf, int64_t length) {
  if (buf->data == NULL) return;
  size_t bytes = (size_t)((length + 7) >> 3);
  if (bytes < buf->size) memset(buf->data + bytes, 0, buf->size - bytes);
  if ((length & 7) != 0) {
    buf->data[length >> 3] = (uint8_t)(buf->data[length >> 3] & ((1u << (length & 7)) - 1u));
  }
  buf->size = bytes;
}

void mc_arrow_column_truncate(mc_arrow_column *col, int64_t length, int64_t null_count) {
  if (length >= col->length) return;
  bitmap_truncate(&col->validity, length);
  switch (col->type) {
    case MC_ARROW_BOOL: bitmap_truncate(&col->values, length); break;
    case MC_ARROW_UTF8:
    case MC_ARROW_BINARY: {
      int32_t end;
      memcpy(&end, col->offsets.data + (size_t)length * sizeof end, sizeof end);
      col->values.size = (size_t)end;
      col->offsets.size = (size_t)(length + 1) * sizeof end;
      break;
    }
    default: col->values.size = (size_t)length * mc_arrow_type_width(col->type); break;
  }
  col->length = length;
  col->null_count = null_count;
}

mc_status mc_arrow_column_append_bytes(mc_arrow_column *col, const void *bytes, size_t n) {
  if (n > MC_ARROW_MAX_DATA_BYTES - col->values.size) return MC_ERANGE;
  MC_RETURN_NOT_OK(mc_arrow_column_reserve(col, 1, n));
  if (n > 0) memcpy(mc_arrow_column_data_tail(col), bytes, n);
  mc_arrow_column_commit_bytes_unsafe(col, n);
  return MC_OK;
}

mc_status mc_arrow_column_append_fixed(mc_arrow_column *col, const void *value) {
  MC_RETURN_NOT_OK(mc_arrow_column_reserve(col, 1, 0));
  mc_arrow_column_append_fixed_unsafe(col, value, mc_arrow_type_width(col->type));
  return MC_OK;
}

mc_status mc_arrow_column_append_bool(mc_arrow_column *col, bool value) {
  MC_RETURN_NOT_OK(mc_arrow_column_reserve(col, 1, 0));
  mc_arrow_column_append_bool_unsafe(col, value);
  return MC_OK;
}

mc_status mc_arrow_batch_init(mc_arrow_batch *batch, int64_t n_columns) {
  batch->length = 0;
  batch->n_columns = 0;
  batch->columns = NULL;
  batch->pool = NULL;
  if (n_columns <= 0) return MC_OK;
  batch->columns = calloc((size_t)n_columns, sizeof *batch->columns);
  if (batch->columns == NULL) return MC_ENOMEM;
  batch->n_columns = n_columns;
  return MC_OK;
}

void mc_arrow_batch_free(mc_arrow_batch *batch) {
  for (int64_t i = 0; i < batch->n_columns; i++) mc_arrow_column_free(&batch->columns[i]);
  free(batch->columns);
  batch->columns = NULL;
  batch->n_columns = 0;
  batch->length = 0;
}

size_t mc_arrow_batch_bytes(const mc_arrow_batch *batch) {
  size_t total = 0;
  for (int64_t i = 0; i < batch->n_columns; i++) {
    const mc_arrow_column *c = &batch->columns[i];
    total += c->validity.size + c->offsets.size + c->values.size;
  }
  return total;
}
