/*
 * encode_temporal.c: date/time values from their canonical text to the TDS wire forms
 * (MS-TDS 2.2.5.5.1.8: date is 3 bytes of days since 0001-01-01; time(s) is 3-5 bytes of
 * 10^-s second units; datetime2 is time then date; datetimeoffset is the UTC time and date then
 * the offset in minutes as int16; 2.2.5.5.1.2: datetime is int32 days since 1900-01-01 and
 * uint32 1/300 s ticks, smalldatetime uint16 days and uint16 minutes).
 *
 * The emulator keeps date/time values as text. The grammar taken here is a strict subset of
 * what it accepts: optional spaces, YYYY-MM-DD, a space or T, H[H]:MM[:SS[.f{0,9}]], an
 * optional Z or +H[H]:MM / -H[H]:MM, optional spaces. Anything else is MC_EUNSUPPORTED (the
 * caller keeps its own parser for it). Rounding follows "datetime2 (Transact-SQL)" and
 * "datetime (Transact-SQL)": half up to the scale, datetime to 1/300 s, carrying into the date.
 */
#include <string.h>

#include "mssqlcdc/tds_encode.h"

#define TICKS_PER_SECOND 10000000LL
#define TICKS_PER_DAY (86400LL * TICKS_PER_SECOND)
#define DAYS_TO_1900 693595 /* 1900-01-01 counted from 0001-01-01 */

static const int64_t POW10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

typedef struct parsed {
  bool has_date, has_time, has_offset;
  int64_t days;  /* since 0001-01-01 */
  int64_t ticks; /* 100 ns since midnight, rounded from nanoseconds */
  int32_t offset;
} parsed;

typedef struct cursor {
  const char *p;
  const char *end;
} cursor;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Reads between min and max digits; false if fewer than min. */
static bool digits(cursor *c, int min, int max, int64_t *value, int *count) {
  int n = 0;
  int64_t v = 0;
  while (n < max && c->p < c->end && is_digit(*c->p)) {
    v = v * 10 + (*c->p - '0');
    c->p++;
    n++;
  }
  if (count) *count = n;
  *value = v;
  return n >= min;
}

static bool take(cursor *c, char ch) {
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

static void skip_spaces(cursor *c) {
  while (c->p < c->end && *c->p == ' ') c->p++;
}

static bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Days from 0001-01-01 to y-m-d (proleptic Gregorian), as Python's date.toordinal() - 1. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  static const int before[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  int64_t py = y - 1;
  int64_t days = py * 365 + py / 4 - py / 100 + py / 400 + before[m - 1] + (d - 1);
  if (m > 2 && is_leap(y)) days++;
  return days;
}

static mc_status parse_date(cursor *c, parsed *out, mc_error *err) {
  int64_t y, m, d;
  int n;
  if (!digits(c, 4, 4, &y, &n) || !take(c, '-') || !digits(c, 1, 2, &m, &n) || !take(c, '-') ||
      !digits(c, 1, 2, &d, &n)) {
    return mc_error_set(err, MC_EUNSUPPORTED, "date text not in the canonical form");
  }
  static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1 || m < 1 || m > 12 || d < 1 || d > dim[m - 1] + (m == 2 && is_leap(y) ? 1 : 0)) {
    return mc_error_set(err, MC_EINVAL, "date out of range");
  }
  out->has_date = true;
  out->days = days_from_civil(y, m, d);
  return MC_OK;
}

static mc_status parse_time(cursor *c, parsed *out, mc_error *err) {
  int64_t h, mi, s = 0, frac = 0;
  int n, nfrac = 0;
  if (!digits(c, 1, 2, &h, &n) || !take(c, ':') || !digits(c, 2, 2, &mi, &n)) {
    return mc_error_set(err, MC_EUNSUPPORTED, "time text not in the canonical form");
  }
  if (take(c, ':')) {
    if (!digits(c, 2, 2, &s, &n))
      return mc_error_set(err, MC_EUNSUPPORTED, "time text not in the canonical form");
    if (take(c, '.')) {
      (void)digits(c, 0, 9, &frac, &nfrac);
      if (c->p < c->end && is_digit(*c->p))
        return mc_error_set(err, MC_EUNSUPPORTED, "more than 9 fractional digits");
    }
  }
  if (h > 23 || mi > 59 || s > 59) return mc_error_set(err, MC_EINVAL, "time out of range");
  int64_t nanos = frac;
  for (int i = nfrac; i < 9; i++) nanos *= 10;
  out->has_time = true;
  out->ticks = (h * 3600 + mi * 60 + s) * TICKS_PER_SECOND + (nanos + 50) / 100;
  return MC_OK;
}

static mc_status parse_offset(cursor *c, parsed *out, mc_error *err) {
  if (take(c, 'Z') || take(c, 'z')) {
    out->has_offset = true;
    out->offset = 0;
    return MC_OK;
  }
  int sign = 0;
  if (take(c, '+')) {
    sign = 1;
  } else if (take(c, '-')) {
    sign = -1;
  } else {
    return MC_OK;
  }
  int64_t h, m;
  int n;
  if (!digits(c, 1, 2, &h, &n) || !take(c, ':') || !digits(c, 2, 2, &m, &n)) {
    return mc_error_set(err, MC_EUNSUPPORTED, "offset text not in the canonical form");
  }
  out->has_offset = true;
  out->offset = (int32_t)(sign * (h * 60 + m));
  return MC_OK;
}

static mc_status parse(const char *text, size_t len, parsed *out, mc_error *err) {
  cursor c = {text, text + len};
  memset(out, 0, sizeof *out);
  skip_spaces(&c);
  /* a date has a '-' at position 4; a time has ':' at position 1 or 2 */
  if (c.end - c.p >= 5 && c.p[4] == '-') {
    MC_RETURN_NOT_OK(parse_date(&c, out, err));
    if (take(&c, 'T')) {
      MC_RETURN_NOT_OK(parse_time(&c, out, err));
    } else if (take(&c, ' ') && c.p < c.end && is_digit(*c.p)) {
      MC_RETURN_NOT_OK(parse_time(&c, out, err));
    }
  } else {
    MC_RETURN_NOT_OK(parse_time(&c, out, err));
  }
  skip_spaces(&c);
  MC_RETURN_NOT_OK(parse_offset(&c, out, err));
  skip_spaces(&c);
  if (c.p != c.end) return mc_error_set(err, MC_EUNSUPPORTED, "date/time text not canonical");
  if (!out->has_date && !out->has_time)
    return mc_error_set(err, MC_EUNSUPPORTED, "empty date/time text");
  return MC_OK;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static void put_le(uint8_t *out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = (uint8_t)(v >> (8 * i));
}

static size_t time_size(uint8_t scale) { return scale <= 2 ? 3 : (scale <= 4 ? 4 : 5); }

/* Round ticks half up to `unit`, carrying a full day into the date. */
static void round_ticks(parsed *v, int64_t unit) {
  if (!v->has_time) return;
  v->ticks = (v->ticks + unit / 2) / unit * unit;
  if (v->ticks >= TICKS_PER_DAY) {
    v->ticks -= TICKS_PER_DAY;
    if (v->has_date) v->days++;
  }
}

static mc_status encode_datetime(parsed *v, uint8_t out[10], size_t *n, mc_error *err) {
  int64_t days = v->has_date ? v->days : 0;
  int64_t ticks = 0;
  if (v->has_time) {
    int64_t th = (v->ticks * 300 + TICKS_PER_SECOND / 2) / TICKS_PER_SECOND;
    if (th >= 86400LL * 300) {
      th -= 86400LL * 300;
      days++;
    }
    ticks = (th * TICKS_PER_SECOND + 150) / 300;
  }
  int64_t d1900 = days - DAYS_TO_1900;
  int64_t th = (ticks * 300 + TICKS_PER_SECOND / 2) / TICKS_PER_SECOND;
  if (d1900 < INT32_MIN || d1900 > INT32_MAX)
    return mc_error_set(err, MC_ERANGE, "datetime out of range");
  put_le(out, (uint64_t)(uint32_t)(int32_t)d1900, 4);
  put_le(out + 4, (uint64_t)th, 4);
  *n = 8;
  return MC_OK;
}

static mc_status encode_smalldatetime(parsed *v, uint8_t out[10], size_t *n, mc_error *err) {
  round_ticks(v, TICKS_PER_SECOND);
  int64_t d1900 = (v->has_date ? v->days : 0) - DAYS_TO_1900;
  int64_t minutes = ((v->has_time ? v->ticks : 0) / TICKS_PER_SECOND + 30) / 60;
  if (d1900 < 0 || d1900 > 0xFFFF || minutes > 0xFFFF)
    return mc_error_set(err, MC_ERANGE, "smalldatetime out of range");
  put_le(out, (uint64_t)d1900, 2);
  put_le(out + 2, (uint64_t)minutes, 2);
  *n = 4;
  return MC_OK;
}

mc_status mc_tds_encode_temporal_text(const mc_enc_column *col, const char *text, size_t len,
                                      uint8_t out[10], size_t *n, mc_error *err) {
  parsed v;
  MC_RETURN_NOT_OK(parse(text, len, &v, err));
  switch (col->kind) {
    case MC_ENC_DATE:
      put_le(out, (uint64_t)(v.has_date ? v.days : 0), 3);
      *n = 3;
      return MC_OK;
    case MC_ENC_DATETIME: return encode_datetime(&v, out, n, err);
    case MC_ENC_SMALLDATETIME: return encode_smalldatetime(&v, out, n, err);
    case MC_ENC_TIME:
    case MC_ENC_DATETIME2:
    case MC_ENC_DATETIMEOFFSET: break;
    default:
      return mc_error_set(err, MC_EINVAL, "column kind %d is not a date/time kind", (int)col->kind);
  }
  if (col->scale > 7) return mc_error_set(err, MC_EINVAL, "scale %u above 7", col->scale);
  round_ticks(&v, POW10[7 - col->scale]);
  if (col->kind == MC_ENC_DATETIMEOFFSET && v.has_offset && v.has_time) {
    int64_t total = (v.has_date ? v.days : 0) * TICKS_PER_DAY + v.ticks -
                    (int64_t)v.offset * 60 * TICKS_PER_SECOND;
    v.days = floor_div(total, TICKS_PER_DAY);
    v.ticks = total - v.days * TICKS_PER_DAY;
    v.has_date = true;
  }
  size_t ts = time_size(col->scale);
  put_le(out, (uint64_t)((v.has_time ? v.ticks : 0) / POW10[7 - col->scale]), ts);
  *n = ts;
  if (col->kind == MC_ENC_TIME) return MC_OK;
  int64_t days = v.has_date ? v.days : 0;
  if (days < 0 || days > 0xFFFFFF) return mc_error_set(err, MC_ERANGE, "date out of range");
  put_le(out + ts, (uint64_t)days, 3);
  *n = ts + 3;
  if (col->kind == MC_ENC_DATETIME2) return MC_OK;
  int32_t offset = v.has_offset ? v.offset : 0;
  if (offset < INT16_MIN || offset > INT16_MAX)
    return mc_error_set(err, MC_ERANGE, "offset out of range");
  put_le(out + ts + 3, (uint64_t)(uint16_t)(int16_t)offset, 2);
  *n = ts + 5;
  return MC_OK;
}
