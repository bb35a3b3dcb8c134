/*
 * types_datetime.c: date and time values (MS-TDS 2.2.5.5.1.7 datetime/smalldatetime,
 * 2.2.5.5.1.8 date, time, datetime2, datetimeoffset).
 *
 * Conventions (docs/reference/bronze-schema.md; MS-TDS 2.2.5.5.1.8):
 *  - datetime (days since 1900-01-01 + 1/300 s ticks) -> timestamp[us], rounded to the
 *    millisecond as SQL Server itself displays it (.003, .007; ticks * 10/3 rounded).
 *  - smalldatetime (days since 1900 + minutes) -> timestamp[us].
 *  - date (3-byte days since 0001-01-01) -> date32 (days since 1970).
 *  - time(n) -> utf8 "HH:MM:SS" plus "." and n fraction digits when n > 0 (CAST to nvarchar).
 *  - datetime2(n) -> timestamp[us]; at n = 7 the 7th fraction digit (100 ns) is TRUNCATED, so
 *    9999-12-31 23:59:59.9999999 becomes ...59.999999, never rolls over into year 10000.
 *  - datetimeoffset(n) -> timestamp[us, UTC]: the wire carries the UTC date and time, then the
 *    offset in minutes, which is dropped (the instant is kept; same truncation as datetime2).
 */
#include "tds/tds_int.h"

#define US_PER_DAY 86400000000LL
#define DAYS_0001_TO_1970 719162LL
#define DAYS_1900_TO_1970 25567LL

static const uint64_t kPow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

size_t mc_tds_time_bytes(uint8_t scale) { return scale <= 2 ? 3 : scale <= 4 ? 4 : 5; }

/* Little-endian unsigned integer of n <= 8 bytes. */
static uint64_t load_uint(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

int64_t mc_tds_us_from_days_units(int64_t days_since_0001, uint64_t units, uint8_t scale) {
  int64_t us = scale <= 6 ? (int64_t)(units * kPow10[6 - scale]) : (int64_t)(units / 10);
  return (days_since_0001 - DAYS_0001_TO_1970) * US_PER_DAY + us;
}

size_t mc_tds_format_time(uint64_t units, uint8_t scale, char *dst) {
  uint64_t secs = units / kPow10[scale];
  uint64_t frac = units % kPow10[scale];
  unsigned h = (unsigned)((secs / 3600) % 100), m = (unsigned)(secs / 60 % 60),
           s = (unsigned)(secs % 60);
  dst[0] = (char)('0' + h / 10);
  dst[1] = (char)('0' + h % 10);
  dst[2] = ':';
  dst[3] = (char)('0' + m / 10);
  dst[4] = (char)('0' + m % 10);
  dst[5] = ':';
  dst[6] = (char)('0' + s / 10);
  dst[7] = (char)('0' + s % 10);
  if (scale == 0) return 8;
  dst[8] = '.';
  for (size_t i = scale; i > 0; i--) {
    dst[8 + i] = (char)('0' + frac % 10);
    frac /= 10;
  }
  return 9 + scale;
}

/* Reads the time part (units of 10^-scale s) and checks it is within a day. */
static mc_status read_time(const mc_tds_column *c, const uint8_t *p, size_t tb, uint64_t *units,
                           mc_error *err) {
  *units = load_uint(p, tb);
  if (*units >= 86400ull * kPow10[c->scale]) {
    return MC_TDS_CORRUPT(err, "time value %llu is past the end of a day at scale %u",
                          (unsigned long long)*units, c->scale);
  }
  return MC_OK;
}

mc_status mc_tds_decode_datetime(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                 size_t n, mc_error *err) {
  (void)c;
  int64_t us;
  if (n == 8) {
    int64_t days = mc_i32_from_u32(mc_load_u32(p));
    uint64_t ticks = mc_load_u32(p + 4);
    if (ticks >= 25920000u)
      return MC_TDS_CORRUPT(err, "datetime with %llu ticks in a day", (unsigned long long)ticks);
    int64_t ms = (int64_t)((ticks * 10 + 1) / 3);
    us = (days - DAYS_1900_TO_1970) * US_PER_DAY + ms * 1000;
  } else if (n == 4) {
    int64_t days = mc_load_u16(p);
    int64_t minutes = mc_load_u16(p + 2);
    if (minutes >= 1440)
      return MC_TDS_CORRUPT(err, "smalldatetime with %lld minutes", (long long)minutes);
    us = (days - DAYS_1900_TO_1970) * US_PER_DAY + minutes * 60000000LL;
  } else {
    return MC_TDS_CORRUPT(err, "datetime of %zu bytes", n);
  }
  mc_arrow_column_append_fixed_unsafe(out, &us, 8);
  return MC_OK;
}

mc_status mc_tds_decode_date(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                             size_t n, mc_error *err) {
  (void)c;
  if (n != 3) return MC_TDS_CORRUPT(err, "date of %zu bytes", n);
  int32_t days = (int32_t)((int64_t)load_uint(p, 3) - DAYS_0001_TO_1970);
  mc_arrow_column_append_fixed_unsafe(out, &days, 4);
  return MC_OK;
}

mc_status mc_tds_decode_time(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                             size_t n, mc_error *err) {
  size_t tb = mc_tds_time_bytes(c->scale);
  if (n != tb) return MC_TDS_CORRUPT(err, "time(%u) of %zu bytes", c->scale, n);
  uint64_t units;
  MC_RETURN_NOT_OK(read_time(c, p, tb, &units, err));
  MC_RETURN_NOT_OK(mc_tds_reserve_data(out, 17, err));
  size_t len = mc_tds_format_time(units, c->scale, (char *)mc_arrow_column_data_tail(out));
  mc_arrow_column_commit_bytes_unsafe(out, len);
  return MC_OK;
}

mc_status mc_tds_decode_datetime2(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                  size_t n, mc_error *err) {
  size_t tb = mc_tds_time_bytes(c->scale);
  size_t want = tb + 3 + (c->type == MC_SQL_DATETIMEOFFSETN ? 2 : 0);
  if (n != want)
    return MC_TDS_CORRUPT(err, "datetime2/datetimeoffset(%u) of %zu bytes", c->scale, n);
  uint64_t units;
  MC_RETURN_NOT_OK(read_time(c, p, tb, &units, err));
  int64_t us = mc_tds_us_from_days_units((int64_t)load_uint(p + tb, 3), units, c->scale);
  mc_arrow_column_append_fixed_unsafe(out, &us, 8);
  return MC_OK;
}
