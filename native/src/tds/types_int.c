/*
 * types_int.c: integer, bit and floating-point values (MS-TDS 2.2.5.4.1 fixed-length types
 * INT1/INT2/INT4/INT8/BIT/FLT4/FLT8 and 2.2.5.4.2 INTN/BITN/FLTN). All little-endian.
 * tinyint (INT1, or INTN of length 1) is UNSIGNED 0..255 and is widened into the column's
 * Arrow type (int16 by the type map), never read as a signed byte.
 */
#include "tds/tds_int.h"

/* Stores v in the column's integer width (the slot was reserved by the row loop). */
static void store_int(mc_arrow_column *out, int64_t v) {
  switch (out->type) {
    case MC_ARROW_INT8: {
      int8_t x = (int8_t)v;
      mc_arrow_column_append_fixed_unsafe(out, &x, 1);
      return;
    }
    case MC_ARROW_UINT8: {
      uint8_t x = (uint8_t)v;
      mc_arrow_column_append_fixed_unsafe(out, &x, 1);
      return;
    }
    case MC_ARROW_INT16: {
      int16_t x = (int16_t)v;
      mc_arrow_column_append_fixed_unsafe(out, &x, 2);
      return;
    }
    case MC_ARROW_INT32: {
      int32_t x = (int32_t)v;
      mc_arrow_column_append_fixed_unsafe(out, &x, 4);
      return;
    }
    default: mc_arrow_column_append_fixed_unsafe(out, &v, 8); return;
  }
}

mc_status mc_tds_decode_int(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                            size_t n, mc_error *err) {
  (void)c;
  int64_t v;
  switch (n) {
    case 1: v = p[0]; break; /* unsigned */
    case 2: {
      uint16_t u = mc_load_u16(p);
      v = (int64_t)u - ((u & 0x8000u) ? 65536 : 0);
      break;
    }
    case 4: v = mc_i32_from_u32(mc_load_u32(p)); break;
    case 8: v = mc_i64_from_u64(mc_load_u64(p)); break;
    default: return MC_TDS_CORRUPT(err, "integer of %zu bytes", n);
  }
  store_int(out, v);
  return MC_OK;
}

mc_status mc_tds_decode_bit(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                            size_t n, mc_error *err) {
  (void)c;
  if (n != 1) return MC_TDS_CORRUPT(err, "bit of %zu bytes", n);
  mc_arrow_column_append_bool_unsafe(out, p[0] != 0);
  return MC_OK;
}

mc_status mc_tds_decode_float(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                              size_t n, mc_error *err) {
  (void)c;
  if (n == 4 && out->type == MC_ARROW_FLOAT32) {
    uint32_t u = mc_load_u32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    mc_arrow_column_append_fixed_unsafe(out, &f, 4);
    return MC_OK;
  }
  if (n == 8 && out->type == MC_ARROW_FLOAT64) {
    uint64_t u = mc_load_u64(p);
    double f;
    memcpy(&f, &u, sizeof f);
    mc_arrow_column_append_fixed_unsafe(out, &f, 8);
    return MC_OK;
  }
  return MC_TDS_CORRUPT(err, "float of %zu bytes", n);
}
