/*
 * types_guid.c: uniqueidentifier (MS-TDS 2.2.5.5.1.6, GUIDTYPE). The 16 wire bytes are the
 * Windows GUID struct: Data1 (u32), Data2 (u16) and Data3 (u16) little-endian, then Data4 as 8
 * bytes in order. The value becomes its canonical upper-case text,
 * XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX, as SQL Server prints it.
 */
#include "tds/tds_int.h"

/* "00" .. "FF": the two hex digits of every byte value, byte b at 2 * b. */
static const char kHexPairs[513] =
    "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"
    "202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F"
    "404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F"
    "606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F"
    "808182838485868788898A8B8C8D8E8F909192939495969798999A9B9C9D9E9F"
    "A0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBF"
    "C0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDF"
    "E0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF";

void mc_tds_format_guid(const uint8_t *p, char *dst) {
  static const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  static const uint8_t at[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
  for (int i = 0; i < 16; i++) memcpy(dst + at[i], kHexPairs + 2 * p[order[i]], 2);
  dst[8] = dst[13] = dst[18] = dst[23] = '-';
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
