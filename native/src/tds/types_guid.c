/*
 * types_guid.c: uniqueidentifier (MS-TDS 2.2.5.5.1.6, GUIDTYPE). The 16 wire bytes are the
 * Windows GUID struct: Data1 (u32), Data2 (u16) and Data3 (u16) little-endian, then Data4 as 8
 * bytes in order. The value becomes its canonical upper-case text,
 * XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX, as SQL Server prints it.
 */
#include "tds/tds_int.h"

/* The 8 upper-case hex digits of 4 bytes, b0's first, as the 8 bytes of a little-endian
 * uint64 (SWAR: one nibble per byte lane, then '0'-'9' / 'A'-'F' by lane arithmetic). */
static inline uint64_t hex8(uint8_t b0, uint8_t b1, uint8_t b2, uint8_t b3) {
  uint64_t u = (uint64_t)b0 | (uint64_t)b1 << 16 | (uint64_t)b2 << 32 | (uint64_t)b3 << 48;
  uint64_t nib = ((u >> 4) & 0x000F000F000F000Full) | ((u & 0x000F000F000F000Full) << 8);
  uint64_t letter = ((nib + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull; /* >= 10 */
  return nib + 0x3030303030303030ull + letter * 7;
}

/* Writes the first n (<= 8) characters of hex8's result. */
static inline void put_hex(char *dst, uint64_t v, int n) {
  for (int k = 0; k < n; k++) dst[k] = (char)(v >> (8 * k));
}

void mc_tds_format_guid(const uint8_t *p, char *dst) {
  uint64_t a = hex8(p[3], p[2], p[1], p[0]);
  uint64_t b = hex8(p[5], p[4], p[7], p[6]);
  uint64_t c = hex8(p[8], p[9], p[10], p[11]);
  uint64_t e = hex8(p[12], p[13], p[14], p[15]);
  put_hex(dst, a, 8);
  dst[8] = '-';
  put_hex(dst + 9, b, 4);
  dst[13] = '-';
  put_hex(dst + 14, b >> 32, 4);
  dst[18] = '-';
  put_hex(dst + 19, c, 4);
  dst[23] = '-';
  put_hex(dst + 24, c >> 32, 4);
  put_hex(dst + 28, e, 8);
}

mc_status mc_tds_decode_guid(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                             size_t n, mc_error *err) {
  (void)c;
  if (n != 16) return MC_TDS_CORRUPT(err, "uniqueidentifier of %zu bytes", n);
  MC_RETURN_NOT_OK(mc_tds_reserve_data(out, 36, err));
  mc_tds_format_guid(p, (char *)mc_arrow_column_data_tail(out));
  mc_arrow_column_commit_bytes_unsafe(out, 36);
  return MC_OK;
}
