/*
 * types_decimal.c: decimal/numeric (MS-TDS 2.2.5.5.1.4: a sign byte, 1 = positive, 0 =
 * negative, then an unsigned little-endian magnitude of 4, 8, 12 or 16 bytes) and money
 * (2.2.5.5.1.3: money is the high 32 bits then the low 32 bits of an int64 count of 1/10000;
 * smallmoney is an int32 count of 1/10000). Both become Arrow decimal128 (16 bytes,
 * little-endian two's complement) with exact integer arithmetic: never through a double.
 */
#include "tds/tds_int.h"

/* Two's-complement negation of a 16-byte little-endian integer. */
static void negate128(uint8_t v[16]) {
  unsigned carry = 1;
  for (int i = 0; i < 16; i++) {
    unsigned x = (unsigned)(uint8_t)~v[i] + carry;
    v[i] = (uint8_t)x;
    carry = x >> 8;
  }
}

mc_status mc_tds_decimal_to_le128(uint8_t sign, const uint8_t *mag, size_t mag_len, uint8_t out[16],
                                  mc_error *err) {
  if (mag_len == 0 || mag_len > 16)
    return MC_TDS_CORRUPT(err, "decimal magnitude of %zu bytes", mag_len);
  memset(out, 0, 16);
  memcpy(out, mag, mag_len);
  if (out[15] & 0x80) return MC_TDS_CORRUPT(err, "decimal magnitude above 2^127 - 1");
  if (sign == 0) {
    negate128(out);
  } else if (sign != 1) {
    return MC_TDS_CORRUPT(err, "decimal sign byte %u (must be 0 or 1)", sign);
  }
  return MC_OK;
}

mc_status mc_tds_decode_decimal(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                size_t n, mc_error *err) {
  (void)c;
  uint8_t v[16];
  if (n < 2) return MC_TDS_CORRUPT(err, "decimal of %zu bytes", n);
  MC_RETURN_NOT_OK(mc_tds_decimal_to_le128(p[0], p + 1, n - 1, v, err));
  mc_arrow_column_append_fixed_unsafe(out, v, 16);
  return MC_OK;
}

/* Sign-extends an int64 into 16 little-endian bytes. */
static void i64_to_le128(int64_t x, uint8_t out[16]) {
  uint64_t u = (uint64_t)x;
  for (int i = 0; i < 8; i++) out[i] = (uint8_t)(u >> (8 * i));
  memset(out + 8, x < 0 ? 0xFF : 0x00, 8);
}

mc_status mc_tds_decode_money(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                              size_t n, mc_error *err) {
  (void)c;
  int64_t units;
  if (n == 8) {
    uint64_t hi = mc_load_u32(p);
    uint64_t lo = mc_load_u32(p + 4);
    units = mc_i64_from_u64((hi << 32) | lo);
  } else if (n == 4) {
    units = mc_i32_from_u32(mc_load_u32(p));
  } else {
    return MC_TDS_CORRUPT(err, "money of %zu bytes", n);
  }
  uint8_t v[16];
  i64_to_le128(units, v);
  mc_arrow_column_append_fixed_unsafe(out, v, 16);
  return MC_OK;
}

/* Divides the 128-bit unsigned value (two 64-bit halves) by 10, returning the remainder. */
static unsigned divmod10(uint64_t *hi, uint64_t *lo) {
  uint64_t h = *hi, l = *lo;
  uint64_t qh = h / 10;
  uint64_t r = h % 10;
  /* (r * 2^64 + l) / 10, done 32 bits at a time. */
  uint64_t mid = (r << 32) | (l >> 32);
  uint64_t qm = mid / 10;
  r = mid % 10;
  uint64_t low = (r << 32) | (l & 0xFFFFFFFFu);
  uint64_t ql = low / 10;
  r = low % 10;
  *hi = qh;
  *lo = (qm << 32) | ql;
  return (unsigned)r;
}

size_t mc_tds_format_decimal(const uint8_t v[16], uint8_t scale, char *dst) {
  uint8_t m[16];
  memcpy(m, v, 16);
  bool neg = (m[15] & 0x80) != 0;
  if (neg) negate128(m);
  uint64_t lo = 0, hi = 0;
  for (int i = 7; i >= 0; i--) lo = (lo << 8) | m[i];
  for (int i = 15; i >= 8; i--) hi = (hi << 8) | m[i];
  char digits[48];
  size_t nd = 0;
  do {
    digits[nd++] = (char)('0' + divmod10(&hi, &lo));
  } while ((hi != 0 || lo != 0) && nd < 40);
  while (nd <= scale) digits[nd++] = '0'; /* at least one digit before the point */
  size_t o = 0;
  if (neg) dst[o++] = '-';
  for (size_t i = nd; i-- > 0;) {
    dst[o++] = digits[i];
    if (i == scale && scale > 0) dst[o++] = '.';
  }
  return o;
}
