/*
 * arrow_buffer.c: growable buffers and per-type facts (width, format string) for the Arrow
 * builders (arrow.h). Format strings follow the Arrow C Data Interface specification, section
 * "Data type description -- format strings".
 */
#include <stdio.h>
#include <stdlib.h>

#include "mssqlcdc/arrow.h"

size_t mc_arrow_type_width(mc_arrow_type type) {
  switch (type) {
    case MC_ARROW_INT8:
    case MC_ARROW_UINT8: return 1;
    case MC_ARROW_INT16: return 2;
    case MC_ARROW_INT32:
    case MC_ARROW_FLOAT32:
    case MC_ARROW_DATE32: return 4;
    case MC_ARROW_INT64:
    case MC_ARROW_FLOAT64:
    case MC_ARROW_TIMESTAMP_US:
    case MC_ARROW_TIMESTAMP_UTC: return 8;
    case MC_ARROW_DECIMAL128: return 16;
    case MC_ARROW_BOOL:
    case MC_ARROW_UTF8:
    case MC_ARROW_BINARY: return 0;
  }
  return 0;
}

mc_status mc_arrow_type_format(mc_arrow_type type, int32_t precision, int32_t scale, char *out,
                               size_t size) {
  const char *fixed = NULL;
  switch (type) {
    case MC_ARROW_BOOL: fixed = "b"; break;
    case MC_ARROW_INT8: fixed = "c"; break;
    case MC_ARROW_UINT8: fixed = "C"; break;
    case MC_ARROW_INT16: fixed = "s"; break;
    case MC_ARROW_INT32: fixed = "i"; break;
    case MC_ARROW_INT64: fixed = "l"; break;
    case MC_ARROW_FLOAT32: fixed = "f"; break;
    case MC_ARROW_FLOAT64: fixed = "g"; break;
    case MC_ARROW_TIMESTAMP_US: fixed = "tsu:"; break;
    case MC_ARROW_TIMESTAMP_UTC: fixed = "tsu:UTC"; break;
    case MC_ARROW_DATE32: fixed = "tdD"; break;
    case MC_ARROW_UTF8: fixed = "u"; break;
    case MC_ARROW_BINARY: fixed = "z"; break;
    case MC_ARROW_DECIMAL128: {
      int n = snprintf(out, size, "d:%d,%d", (int)precision, (int)scale);
      return (n < 0 || (size_t)n >= size) ? MC_EINVAL : MC_OK;
    }
  }
  if (fixed == NULL) return MC_EINVAL;
  size_t n = strlen(fixed);
  if (n + 1 > size) return MC_EINVAL;
  memcpy(out, fixed, n + 1);
  return MC_OK;
}

mc_status mc_arrow_buffer_reserve(mc_arrow_buffer *buf, size_t additional) {
  if (additional <= buf->capacity - buf->size) return MC_OK;
  if (additional > SIZE_MAX / 2 - buf->size) return MC_ENOMEM;
  size_t want = buf->size + additional;
  size_t cap = buf->capacity < 64 ? 64 : buf->capacity;
  while (cap < want) cap *= 2;
  uint8_t *p = realloc(buf->data, cap);
  if (p == NULL) return MC_ENOMEM;
  buf->data = p;
  buf->capacity = cap;
  return MC_OK;
}

void mc_arrow_buffer_free(mc_arrow_buffer *buf) {
  free(buf->data);
  buf->data = NULL;
  buf->size = 0;
  buf->capacity = 0;
}
