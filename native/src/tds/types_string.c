/*
 * types_string.c: character and binary values (MS-TDS 2.2.5.4.3 BIGCHAR/BIGVARCHAR/NCHAR/
 * NVARCHAR/BIGBINARY/BIGVARBINARY, text/ntext/image, xml and the (max) types after PLP
 * gathering) into Arrow utf8 / binary.
 *
 *  - UTF-16LE (nchar, nvarchar, ntext, xml) -> UTF-8. Surrogate pairs combine into one code
 *    point; a lone high or low surrogate, or an odd trailing byte, becomes U+FFFD, never an
 *    error, so one bad value cannot stop a result stream.
 *  - char data in a UTF-8 collation is copied, with invalid sequences replaced by U+FFFD
 *    (Arrow utf8 must be valid UTF-8).
 *  - Windows-1252 char data is mapped through the code page's table (written from the
 *    Windows-1252 definition): 0x00-0x7F and 0xA0-0xFF equal U+0000-U+00FF; 0x80-0x9F hold the
 *    typographic characters; the five unassigned bytes 0x81, 0x8D, 0x8F, 0x90, 0x9D map to the
 *    C1 controls of the same value, as Windows' own conversion does.
 *  - binary, varbinary, image, timestamp/rowversion and CLR UDT bytes are copied unchanged.
 */
#include "tds/tds_int.h"

static const uint16_t kCp1252High[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,  /* 0x80 */
    0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,  /* 0x88 */
    0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,  /* 0x90 */
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178}; /* 0x98 */

/* Writes code point cp (< 0x110000, not a surrogate) as UTF-8; returns the bytes written. */
static inline size_t put_utf8(uint8_t *dst, uint32_t cp) {
  if (cp < 0x80) {
    dst[0] = (uint8_t)cp;
    return 1;
  }
  if (cp < 0x800) {
    dst[0] = (uint8_t)(0xC0 | (cp >> 6));
    dst[1] = (uint8_t)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    dst[0] = (uint8_t)(0xE0 | (cp >> 12));
    dst[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    dst[2] = (uint8_t)(0x80 | (cp & 0x3F));
    return 3;
  }
  dst[0] = (uint8_t)(0xF0 | (cp >> 18));
  dst[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
  dst[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
  dst[3] = (uint8_t)(0x80 | (cp & 0x3F));
  return 4;
}

#define REPLACEMENT_CHAR 0xFFFDu

size_t mc_tds_utf16_to_utf8(const uint8_t *src, size_t n, uint8_t *dst) {
  size_t units = n / 2;
  size_t o = 0;
  size_t i = 0;
  while (i < units) {
    if (i + 4 <= units) { /* four ASCII code units at a time */
      uint64_t x = mc_load_u64(src + 2 * i);
      if ((x & 0xFF80FF80FF80FF80ull) == 0) {
        dst[o] = (uint8_t)x;
        dst[o + 1] = (uint8_t)(x >> 16);
        dst[o + 2] = (uint8_t)(x >> 32);
        dst[o + 3] = (uint8_t)(x >> 48);
        o += 4;
        i += 4;
        continue;
      }
    }
    uint32_t u = mc_load_u16(src + 2 * i);
    if (u < 0x80) { /* ASCII run */
      dst[o++] = (uint8_t)u;
      i++;
      continue;
    }
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (i + 1 < units) {
        uint32_t lo = mc_load_u16(src + 2 * (i + 1));
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          o += put_utf8(dst + o, 0x10000u + ((u - 0xD800u) << 10) + (lo - 0xDC00u));
          i += 2;
          continue;
        }
      }
      u = REPLACEMENT_CHAR; /* high surrogate without its low half */
    } else if (u >= 0xDC00 && u <= 0xDFFF) {
      u = REPLACEMENT_CHAR; /* low surrogate without a high half */
    }
    o += put_utf8(dst + o, u);
    i++;
  }
  if (n & 1) o += put_utf8(dst + o, REPLACEMENT_CHAR);
  return o;
}

size_t mc_tds_cp1252_to_utf8(const uint8_t *src, size_t n, uint8_t *dst) {
  size_t o = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) { /* eight ASCII bytes at a time */
    uint64_t x;
    memcpy(&x, src + i, 8);
    if (x & 0x8080808080808080ull) break;
    memcpy(dst + o, &x, 8);
    o += 8;
  }
  for (; i < n; i++) {
    uint8_t b = src[i];
    if (b < 0x80) {
      dst[o++] = b;
    } else if (b < 0xA0) {
      o += put_utf8(dst + o, kCp1252High[b - 0x80]);
    } else {
      o += put_utf8(dst + o, b);
    }
  }
  return o;
}

/* Length of the valid UTF-8 sequence at s (left bytes available), or 0 if invalid. */
static size_t utf8_valid_len(const uint8_t *s, size_t left) {
  uint8_t b = s[0];
  if (b < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
    cp = b & 0x1Fu;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    cp = b & 0x0Fu;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    cp = b & 0x07u;
  } else {
    return 0;
  }
  if (len > left) return 0;
  for (size_t k = 1; k < len; k++) {
    if ((s[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3Fu);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
    return 0;
  }
  return len;
}

size_t mc_tds_utf8_sanitize(const uint8_t *src, size_t n, uint8_t *dst) {
  size_t o = 0;
  size_t i = 0;
  while (i < n) {
    size_t len = utf8_valid_len(src + i, n - i);
    if (len == 0) {
      o += put_utf8(dst + o, REPLACEMENT_CHAR);
      i++;
    } else {
      memcpy(dst + o, src + i, len);
      o += len;
      i += len;
    }
  }
  return o;
}

mc_status mc_tds_decode_utf16(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                              size_t n, mc_error *err) {
  (void)c;
  MC_RETURN_NOT_OK(mc_tds_reserve_data(out, mc_tds_utf16_max_utf8(n), err));
  size_t len = mc_tds_utf16_to_utf8(p, n, mc_arrow_column_data_tail(out));
  mc_arrow_column_commit_bytes_unsafe(out, len);
  return MC_OK;
}

mc_status mc_tds_decode_utf8(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                             size_t n, mc_error *err) {
  (void)c;
  if (n > MC_ARROW_MAX_DATA_BYTES / 3) {
    return mc_error_set(err, MC_ERANGE, "a batch column would exceed 2 GiB");
  }
  MC_RETURN_NOT_OK(mc_tds_reserve_data(out, n * 3, err));
  size_t len = mc_tds_utf8_sanitize(p, n, mc_arrow_column_data_tail(out));
  mc_arrow_column_commit_bytes_unsafe(out, len);
  return MC_OK;
}

mc_status mc_tds_decode_cp1252(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                               size_t n, mc_error *err) {
  (void)c;
  if (n > MC_ARROW_MAX_DATA_BYTES / 3) {
    return mc_error_set(err, MC_ERANGE, "a batch column would exceed 2 GiB");
  }
  MC_RETURN_NOT_OK(mc_tds_reserve_data(out, n * 3, err));
  size_t len = mc_tds_cp1252_to_utf8(p, n, mc_arrow_column_data_tail(out));
  mc_arrow_column_commit_bytes_unsafe(out, len);
  return MC_OK;
}

mc_status mc_tds_decode_binary(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                               size_t n, mc_error *err) {
  (void)c;
  MC_RETURN_NOT_OK(mc_tds_reserve_data(out, n, err));
  if (n > 0) memcpy(mc_arrow_column_data_tail(out), p, n);
  mc_arrow_column_commit_bytes_unsafe(out, n);
  return MC_OK;
}
