/*
 * types_guid.c: uniqueidentifier (MS-TDS 2.2.5.5.1.6, GUIDTYPE). The 16 wire bytes are the
 * Windows GUID struct: Data1 (u32), Data2 (u16) and Data3 (u16) little-endian, then Data4 as 8
 * bytes in order. The value becomes its canonical upper-case text,
 * XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX, as SQL Server prints it.
 */
#include "tds/tds_int.h"

void mc_tds_format_guid(const uint8_t *p, char *dst) {
  static const char hex[] = "0123456789ABCDEF";
  static const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  size_t o = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) dst[o++] = '-';
    uint8_t b = p[order[i]];
    dst[o++] = hex[b >> 4];
    dst[o++] = hex[b & 15];
  }
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
