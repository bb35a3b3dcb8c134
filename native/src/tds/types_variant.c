/*
 * types_variant.c: sql_variant values (MS-TDS 2.2.5.5.4: a base type byte, a property byte
 * count, the properties, then the value) rendered as text the way
 * CAST(value AS nvarchar(4000)) renders them in SQL Server (MS-TDS 2.2.5.5.4;
 * docs/reference/bronze-schema.md):
 *
 *  - integers, bit ("0"/"1"), decimal/numeric (all scale digits), uniqueidentifier (upper case);
 *  - money/smallmoney: style 0, two decimals, rounded half away from zero ("1234.57");
 *  - float/real: style 0, at most 6 significant digits, scientific with a 3-digit exponent when
 *    C's %g would switch ("1.23457e+006");
 *  - datetime/smalldatetime: style 0, "Mon dd yyyy hh:miAM" (no seconds);
 *  - date "yyyy-mm-dd"; time(n) "hh:mm:ss[.f]"; datetime2(n) "yyyy-mm-dd hh:mm:ss[.f]";
 *    datetimeoffset(n) in its own offset: "yyyy-mm-dd hh:mm:ss[.f] +hh:mm";
 *  - char/varchar in Windows-1252 or UTF-8 collations, nchar/nvarchar: the text;
 *  - binary/varbinary: LIMIT: "0x" + upper-case hex (SQL Server's CAST would reinterpret the
 *    bytes as UTF-16 text, which is rarely meaningful).
 * Other code pages of char data inside a variant are an MC_EUNSUPPORTED "not supported yet".
 */
#include <stdio.h>

#include "tds/tds_int.h"

/* Proleptic Gregorian y/m/d of a day count since 1970-01-01. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  uint64_t doe = (uint64_t)(z - era * 146097);
  uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  uint64_t mp = (5 * doy + 2) / 153;
  *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
  *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
  *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static size_t format_date(int64_t days_since_1970, char *dst) {
  int64_t y;
  unsigned m, d;
  civil_from_days(days_since_1970, &y, &m, &d);
  int n = snprintf(dst, 16, "%04lld-%02u-%02u", (long long)y, m, d);
  return n > 0 ? (size_t)n : 0;
}

static uint64_t load_uint(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

static size_t format_i64(int64_t v, char *dst) {
  int n = snprintf(dst, 24, "%lld", (long long)v);
  return n > 0 ? (size_t)n : 0;
}

/* %.6g with the exponent widened to three digits, as SQL Server's style 0. */
static size_t format_float(double v, char *dst) {
  char tmp[40];
  int n = snprintf(tmp, sizeof tmp, "%.6g", v);
  if (n <= 0) return 0;
  const char *e = strchr(tmp, 'e');
  if (e == NULL) {
    memcpy(dst, tmp, (size_t)n);
    return (size_t)n;
  }
  size_t mant = (size_t)(e - tmp);
  memcpy(dst, tmp, mant);
  size_t o = mant;
  dst[o++] = 'e';
  dst[o++] = e[1]; /* sign */
  const char *digits = e + 2;
  size_t nd = strlen(digits);
  for (size_t k = nd; k < 3; k++) dst[o++] = '0';
  memcpy(dst + o, digits, nd);
  return o + nd;
}

static size_t format_money(int64_t units, char *dst) {
  int64_t q = units / 100, r = units % 100;
  if (r >= 50) q++;
  if (r <= -50) q--;
  uint8_t v[16];
  uint64_t u = (uint64_t)q;
  for (int i = 0; i < 8; i++) v[i] = (uint8_t)(u >> (8 * i));
  memset(v + 8, q < 0 ? 0xFF : 0, 8);
  return mc_tds_format_decimal(v, 2, dst);
}

static size_t format_datetime_style0(int64_t days_since_1970, unsigned minute_of_day, char *dst) {
  static const char *const kMonths[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  int64_t y;
  unsigned m, d;
  civil_from_days(days_since_1970, &y, &m, &d);
  unsigned h = minute_of_day / 60, mi = minute_of_day % 60;
  unsigned h12 = h % 12 == 0 ? 12 : h % 12;
  int n = snprintf(dst, 32, "%s %2u %lld %2u:%02u%s", kMonths[m - 1], d, (long long)y, h12, mi,
                   h < 12 ? "AM" : "PM");
  return n > 0 ? (size_t)n : 0;
}

static size_t format_hex(const uint8_t *p, size_t n, char *dst) {
  static const char hex[] = "0123456789ABCDEF";
  dst[0] = '0';
  dst[1] = 'x';
  for (size_t i = 0; i < n; i++) {
    dst[2 + 2 * i] = hex[p[i] >> 4];
    dst[3 + 2 * i] = hex[p[i] & 15];
  }
  return 2 + 2 * n;
}

/* Renders the variant's value at dst (room: 3 * vn + 64). */
static mc_status render(uint8_t base, const uint8_t *props, size_t np, const uint8_t *v, size_t vn,
                        char *dst, size_t *len, mc_error *err) {
#define NEED(props_n, value_ok)                                                          \
  do {                                                                                   \
    if (np != (props_n) || !(value_ok)) {                                                \
      return MC_TDS_CORRUPT(err,                                                         \
                            "sql_variant of base type 0x%02X with %zu property and %zu " \
                            "value bytes",                                               \
                            base, np, vn);                                               \
    }                                                                                    \
  } while (0)
  switch (base) {
    case MC_SQL_INT1:
      NEED(0, vn == 1);
      *len = format_i64(v[0], dst);
      return MC_OK;
    case MC_SQL_INT2: {
      NEED(0, vn == 2);
      uint16_t u = mc_load_u16(v);
      *len = format_i64((int64_t)u - ((u & 0x8000u) ? 65536 : 0), dst);
      return MC_OK;
    }
    case MC_SQL_INT4:
      NEED(0, vn == 4);
      *len = format_i64(mc_i32_from_u32(mc_load_u32(v)), dst);
      return MC_OK;
    case MC_SQL_INT8:
      NEED(0, vn == 8);
      *len = format_i64(mc_i64_from_u64(mc_load_u64(v)), dst);
      return MC_OK;
    case MC_SQL_BIT:
      NEED(0, vn == 1);
      dst[0] = v[0] ? '1' : '0';
      *len = 1;
      return MC_OK;
    case MC_SQL_FLT4: {
      NEED(0, vn == 4);
      uint32_t u = mc_load_u32(v);
      float f;
      memcpy(&f, &u, sizeof f);
      *len = format_float((double)f, dst);
      return MC_OK;
    }
    case MC_SQL_FLT8: {
      NEED(0, vn == 8);
      uint64_t u = mc_load_u64(v);
      double f;
      memcpy(&f, &u, sizeof f);
      *len = format_float(f, dst);
      return MC_OK;
    }
    case MC_SQL_MONEY: {
      NEED(0, vn == 8);
      uint64_t hi = mc_load_u32(v), lo = mc_load_u32(v + 4);
      *len = format_money(mc_i64_from_u64((hi << 32) | lo), dst);
      return MC_OK;
    }
    case MC_SQL_MONEY4:
      NEED(0, vn == 4);
      *len = format_money(mc_i32_from_u32(mc_load_u32(v)), dst);
      return MC_OK;
    case MC_SQL_DATETIME: {
      NEED(0, vn == 8);
      int64_t days = mc_i32_from_u32(mc_load_u32(v));
      uint64_t ticks = mc_load_u32(v + 4);
      if (ticks >= 25920000u)
        return MC_TDS_CORRUPT(err, "sql_variant datetime ticks %llu", (unsigned long long)ticks);
      *len = format_datetime_style0(days - 25567, (unsigned)(ticks / 18000), dst);
      return MC_OK;
    }
    case MC_SQL_DATETIM4: {
      NEED(0, vn == 4);
      unsigned minutes = mc_load_u16(v + 2);
      if (minutes >= 1440)
        return MC_TDS_CORRUPT(err, "sql_variant smalldatetime minutes %u", minutes);
      *len = format_datetime_style0((int64_t)mc_load_u16(v) - 25567, minutes, dst);
      return MC_OK;
    }
    case MC_SQL_DATEN:
      NEED(0, vn == 3);
      *len = format_date((int64_t)load_uint(v, 3) - 719162, dst);
      return MC_OK;
    case MC_SQL_TIMEN:
    case MC_SQL_DATETIME2N:
    case MC_SQL_DATETIMEOFFSETN: {
      if (np != 1 || props[0] > 7) NEED(1, false);
      uint8_t scale = props[0];
      size_t tb = mc_tds_time_bytes(scale);
      size_t want = tb + (base == MC_SQL_TIMEN ? 0 : base == MC_SQL_DATETIME2N ? 3 : 5);
      NEED(1, vn == want);
      static const uint64_t kPow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
      uint64_t per_day = 86400ull * kPow10[scale];
      uint64_t units = load_uint(v, tb);
      if (units >= per_day) return MC_TDS_CORRUPT(err, "sql_variant time past the end of a day");
      if (base == MC_SQL_TIMEN) {
        *len = mc_tds_format_time(units, scale, dst);
        return MC_OK;
      }
      int64_t days = (int64_t)load_uint(v + tb, 3) - 719162;
      int offset = 0;
      if (base == MC_SQL_DATETIMEOFFSETN) {
        uint16_t u = mc_load_u16(v + tb + 3);
        offset = (int)u - ((u & 0x8000u) ? 65536 : 0);
        if (offset < -840 || offset > 840)
          return MC_TDS_CORRUPT(err, "datetimeoffset offset %d", offset);
        /* local time = UTC + offset */
        int64_t total = (int64_t)units + (int64_t)offset * 60 * (int64_t)kPow10[scale];
        while (total < 0) {
          total += (int64_t)per_day;
          days--;
        }
        while ((uint64_t)total >= per_day) {
          total -= (int64_t)per_day;
          days++;
        }
        units = (uint64_t)total;
      }
      size_t o = format_date(days, dst);
      dst[o++] = ' ';
      o += mc_tds_format_time(units, scale, dst + o);
      if (base == MC_SQL_DATETIMEOFFSETN) {
        unsigned a = (unsigned)(offset < 0 ? -offset : offset);
        int n = snprintf(dst + o, 16, " %c%02u:%02u", offset < 0 ? '-' : '+', a / 60, a % 60);
        if (n > 0) o += (size_t)n;
      }
      *len = o;
      return MC_OK;
    }
    case MC_SQL_DECIMALN:
    case MC_SQL_NUMERICN: {
      NEED(2, vn >= 2 && vn <= 17 && props[1] <= props[0] && props[0] <= 38);
      uint8_t x[16];
      MC_RETURN_NOT_OK(mc_tds_decimal_to_le128(v[0], v + 1, vn - 1, x, err));
      *len = mc_tds_format_decimal(x, props[1], dst);
      return MC_OK;
    }
    case MC_SQL_GUID:
      NEED(0, vn == 16);
      mc_tds_format_guid(v, dst);
      *len = 36;
      return MC_OK;
    case MC_SQL_BIGVARBINARY:
    case MC_SQL_BIGBINARY:
      NEED(2, true);
      *len = format_hex(v, vn, dst);
      return MC_OK;
    case MC_SQL_NVARCHAR:
    case MC_SQL_NCHAR:
      NEED(7, true);
      *len = mc_tds_utf16_to_utf8(v, vn, (uint8_t *)dst);
      return MC_OK;
    case MC_SQL_BIGVARCHAR:
    case MC_SQL_BIGCHAR: {
      NEED(7, true);
      uint16_t cp = mc_tds_collation_code_page(props);
      if (cp == MC_CP_UTF8) {
        *len = mc_tds_utf8_sanitize(v, vn, (uint8_t *)dst);
      } else if (cp == MC_CP_1252) {
        *len = mc_tds_cp1252_to_utf8(v, vn, (uint8_t *)dst);
      } else if (cp != 0) {
        MC_RETURN_NOT_OK(mc_tds_codepage_to_utf8(cp, v, vn, (uint8_t *)dst, len, err));
      } else {
        return MC_TDS_UNSUPPORTED(err, "sql_variant char data with an unknown code page");
      }
      return MC_OK;
    }
    default: return MC_TDS_CORRUPT(err, "sql_variant with base type 0x%02X", base);
  }
#undef NEED
}

mc_status mc_tds_decode_variant(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                size_t n, mc_error *err) {
  (void)c;
  if (n < 2 || (size_t)p[1] + 2 > n) {
    return MC_TDS_CORRUPT(err, "sql_variant of %zu bytes with %u property bytes", n,
                          n >= 2 ? p[1] : 0u);
  }
  size_t np = p[1];
  size_t vn = n - 2 - np;
  MC_RETURN_NOT_OK(mc_tds_reserve_data(out, 3 * vn + 64, err));
  size_t len = 0;
  MC_RETURN_NOT_OK(
      render(p[0], p + 2, np, p + 2 + np, vn, (char *)mc_arrow_column_data_tail(out), &len, err));
  mc_arrow_column_commit_bytes_unsafe(out, len);
  return MC_OK;
}
