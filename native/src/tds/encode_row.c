/*
 * encode_row.c: Arrow record batches to TDS ROW / NBCROW tokens (tds_encode.h).
 *
 * Wire forms (MS-TDS): ROW 0xD1 is the values in column order (2.2.7.19); NBCROW 0xD2 is a
 * null bitmap of ceil(columns / 8) bytes, bit i set for a NULL in column i, then the non-NULL
 * values only (2.2.7.17). A nullable fixed-length type is its N type (a length byte, 0 for
 * NULL); a NOT NULL one has no length byte (2.2.5.4.1/2.2.5.4.2). Variable-length values have
 * a USHORT length (0xFFFF for NULL) or, for (max) types, are PLP: a u64 total length
 * (all ones for NULL), chunks of u32 length plus data, a zero-length terminator (2.2.5.2.3).
 * decimal is a sign byte (1 = positive) and the magnitude (2.2.5.5.1.6); money the high then
 * the low 32 bits of the int64 count of 1/10000 (2.2.5.5.1.4); uniqueidentifier the GUID's
 * mixed-endian bytes (2.2.5.5.1.7).
 *
 * The Arrow arrays come through the C data interface; their buffers are trusted to be as long
 * as their length and offsets say (the producer's contract), but offsets are checked to be
 * non-decreasing and every write to the output is bounds-checked.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mssqlcdc/tds_encode.h"

#define PLP_CHUNK 8000u
#define TOKEN_ROW 0xD1u
#define TOKEN_NBCROW 0xD2u

void mc_enc_buffer_free(mc_enc_buffer *b) {
  if (b == NULL) return;
  free(b->data);
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
}

mc_status mc_enc_buffer_reserve(mc_enc_buffer *b, size_t n, mc_error *err) {
  if (b->cap - b->len >= n) return MC_OK;
  if (n > SIZE_MAX / 2 - b->len) return mc_error_set(err, MC_ERANGE, "encoded rows too large");
  size_t need = b->len + n;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < need) cap *= 2;
  uint8_t *data = realloc(b->data, cap);
  if (data == NULL) return mc_error_set(err, MC_ENOMEM, "out of memory for %zu bytes", cap);
  b->data = data;
  b->cap = cap;
  return MC_OK;
}

static inline mc_status need(mc_enc_buffer *b, size_t n, mc_error *err) {
  if (b->cap - b->len >= n) return MC_OK;
  return mc_enc_buffer_reserve(b, n, err);
}

/* Unchecked appends, each after a need() that covers them. Each writes through a local pointer
 * and updates len once: a store through uint8_t * may alias b->len, so writing byte by byte
 * through b would reload and store len for every byte. */
static inline void put_u8(mc_enc_buffer *b, uint8_t v) {
  size_t at = b->len;
  b->data[at] = v;
  b->len = at + 1;
}
static inline void put_le(mc_enc_buffer *b, uint64_t v, size_t n) {
  uint8_t *w = b->data + b->len;
  for (size_t i = 0; i < n; i++) w[i] = (uint8_t)(v >> (8 * i));
  b->len += n;
}
static inline void put_bytes(mc_enc_buffer *b, const void *p, size_t n) {
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
}

/* ---------------------------------------------------------------------------------------- */
/* Arrow input columns                                                                        */

typedef struct col_in {
  char fmt;       /* 'n' null, 'b' bool, c/C/s/S/i/I/l/L ints, f/g floats, 'd' decimal128,
                     'u'/'U' strings, 'z'/'Z' binary, 'w' fixed binary */
  int32_t dscale; /* decimal scale */
  int32_t fwidth; /* fixed binary width */
  int64_t off;    /* index of row 0 in the child's buffers */
  int64_t length;
  const uint8_t *valid; /* NULL when no value is NULL */
  const uint8_t *data;  /* values, or offsets of a variable-length type */
  const uint8_t *vdata; /* bytes of a variable-length type */
} col_in;

static mc_status parse_format(const char *f, col_in *c, mc_error *err) {
  if (f == NULL || f[0] == '\0') return mc_error_set(err, MC_EINVAL, "Arrow column without format");
  c->fmt = f[0];
  switch (f[0]) {
    case 'n':
    case 'b':
    case 'c':
    case 'C':
    case 's':
    case 'S':
    case 'i':
    case 'I':
    case 'l':
    case 'L':
    case 'f':
    case 'g':
    case 'u':
    case 'U':
    case 'z':
    case 'Z':
      if (f[1] != '\0') break;
      return MC_OK;
    case 'd': {
      /* d:precision,scale[,bitwidth] */
      int p = 0, s = 0, w = 128;
      const char *q = f + 1;
      if (*q++ != ':') break;
      char *endp;
      long v = strtol(q, &endp, 10);
      if (endp == q || *endp != ',') break;
      p = (int)v;
      q = endp + 1;
      v = strtol(q, &endp, 10);
      if (endp == q) break;
      s = (int)v;
      if (*endp == ',') {
        q = endp + 1;
        v = strtol(q, &endp, 10);
        if (endp == q) break;
        w = (int)v;
      }
      if (*endp != '\0' || w != 128 || p < 1 || p > 38) break;
      c->dscale = s;
      return MC_OK;
    }
    case 'w': {
      if (f[1] != ':') break;
      char *endp;
      long v = strtol(f + 2, &endp, 10);
      if (endp == f + 2 || *endp != '\0' || v <= 0 || v > INT32_MAX) break;
      c->fwidth = (int32_t)v;
      return MC_OK;
    }
    default: break;
  }
  return mc_error_set(err, MC_EUNSUPPORTED, "Arrow format \"%s\" is not encoded", f);
}

static mc_status open_column(const struct ArrowSchema *s, const struct ArrowArray *a,
                             int64_t parent_off, int64_t rows, col_in *c, mc_error *err) {
  memset(c, 0, sizeof *c);
  if (s == NULL || a == NULL || a->release == NULL)
    return mc_error_set(err, MC_EINVAL, "released or missing Arrow column");
  MC_RETURN_NOT_OK(parse_format(s->format, c, err));
  if (s->dictionary != NULL || a->dictionary != NULL)
    return mc_error_set(err, MC_EUNSUPPORTED, "dictionary-encoded Arrow column");
  if (a->offset < 0 || parent_off < 0 || a->length < 0 || a->length - parent_off < rows)
    return mc_error_set(err, MC_EINVAL, "Arrow column shorter than its batch");
  c->off = a->offset + parent_off;
  c->length = rows;
  if (c->fmt == 'n') return MC_OK;
  int64_t want = (c->fmt == 'u' || c->fmt == 'U' || c->fmt == 'z' || c->fmt == 'Z') ? 3 : 2;
  if (a->n_buffers != want || a->buffers == NULL)
    return mc_error_set(err, MC_EINVAL, "Arrow column with %lld buffers", (long long)a->n_buffers);
  c->valid = a->null_count == 0 ? NULL : a->buffers[0];
  c->data = a->buffers[1];
  if (want == 3) c->vdata = a->buffers[2];
  if (c->data == NULL && rows > 0) return mc_error_set(err, MC_EINVAL, "Arrow column without data");
  return MC_OK;
}

static inline bool is_null(const col_in *c, int64_t i) {
  if (c->fmt == 'n') return true;
  if (c->valid == NULL) return false;
  int64_t j = c->off + i;
  return ((c->valid[j >> 3] >> (j & 7)) & 1) == 0;
}

/* The bytes of a string or binary value. */
static mc_status get_var(const col_in *c, int64_t i, const uint8_t **p, size_t *n, mc_error *err) {
  int64_t j = c->off + i;
  int64_t start, end;
  if (c->fmt == 'u' || c->fmt == 'z') {
    int32_t s32, e32;
    memcpy(&s32, c->data + 4 * j, 4);
    memcpy(&e32, c->data + 4 * (j + 1), 4);
    start = s32;
    end = e32;
  } else if (c->fmt == 'U' || c->fmt == 'Z') {
    memcpy(&start, c->data + 8 * j, 8);
    memcpy(&end, c->data + 8 * (j + 1), 8);
  } else if (c->fmt == 'w') {
    start = (int64_t)c->fwidth * j;
    end = start + c->fwidth;
    *p = c->data + start;
    *n = (size_t)c->fwidth;
    return MC_OK;
  } else {
    return mc_error_set(err, MC_EUNSUPPORTED, "Arrow format '%c' where bytes were expected",
                        c->fmt);
  }
  if (start < 0 || end < start) return mc_error_set(err, MC_EINVAL, "bad Arrow offsets");
  *p = (end > start) ? c->vdata + start : (const uint8_t *)"";
  if (end > start && c->vdata == NULL)
    return mc_error_set(err, MC_EINVAL, "Arrow column without bytes");
  *n = (size_t)(end - start);
  return MC_OK;
}

static mc_status get_int(const col_in *c, int64_t i, int64_t *v, mc_error *err) {
  int64_t j = c->off + i;
  const uint8_t *p = c->data;
  switch (c->fmt) {
    case 'c': {
      int8_t x;
      memcpy(&x, p + j, 1);
      *v = x;
      return MC_OK;
    }
    case 'C': {
      uint8_t x;
      memcpy(&x, p + j, 1);
      *v = x;
      return MC_OK;
    }
    case 's': {
      int16_t x;
      memcpy(&x, p + 2 * j, 2);
      *v = x;
      return MC_OK;
    }
    case 'S': {
      uint16_t x;
      memcpy(&x, p + 2 * j, 2);
      *v = x;
      return MC_OK;
    }
    case 'i': {
      int32_t x;
      memcpy(&x, p + 4 * j, 4);
      *v = x;
      return MC_OK;
    }
    case 'I': {
      uint32_t x;
      memcpy(&x, p + 4 * j, 4);
      *v = x;
      return MC_OK;
    }
    case 'l': {
      memcpy(v, p + 8 * j, 8);
      return MC_OK;
    }
    case 'L': {
      uint64_t x;
      memcpy(&x, p + 8 * j, 8);
      if (x > (uint64_t)INT64_MAX) return mc_error_set(err, MC_ERANGE, "integer out of range");
      *v = (int64_t)x;
      return MC_OK;
    }
    case 'b': *v = (p[j >> 3] >> (j & 7)) & 1; return MC_OK;
    default:
      return mc_error_set(err, MC_EUNSUPPORTED, "Arrow format '%c' where an integer was expected",
                          c->fmt);
  }
}

/* A decimal128 as sign and 128-bit magnitude (hi, lo). */
static void get_dec(const col_in *c, int64_t i, bool *neg, uint64_t *hi, uint64_t *lo) {
  uint64_t w[2];
  memcpy(w, c->data + 16 * (c->off + i), 16);
  *lo = w[0];
  *hi = w[1];
  *neg = (*hi >> 63) != 0;
  if (*neg) {
    *lo = ~*lo + 1;
    *hi = ~*hi + (*lo == 0 ? 1 : 0);
  }
}

/* |value| < 10^precision for a magnitude (hi, lo). */
static bool fits_precision(uint64_t hi, uint64_t lo, int precision) {
  uint64_t phi = 0, plo = 1;
  for (int k = 0; k < precision; k++) {
    /* (phi, plo) *= 10 */
    uint64_t lo_lo = (plo & 0xFFFFFFFFu) * 10, lo_hi = (plo >> 32) * 10;
    uint64_t mid = (lo_lo >> 32) + lo_hi;
    plo = (mid << 32) | (lo_lo & 0xFFFFFFFFu);
    phi = phi * 10 + (mid >> 32);
  }
  return hi < phi || (hi == phi && lo < plo);
}

/* ---------------------------------------------------------------------------------------- */
/* Values                                                                                     */

/* UTF-16 code units of valid UTF-8 text; MC_EINVAL for invalid text. */
static mc_status utf16_units(const uint8_t *s, size_t n, size_t *units, mc_error *err) {
  size_t u = 0, i = 0;
  while (i < n) {
    uint8_t b = s[i];
    if (b < 0x80) {
      i++;
      u++;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if ((b & 0xE0) == 0xC0) {
      len = 2;
      cp = b & 0x1Fu;
      min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3;
      cp = b & 0x0Fu;
      min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4;
      cp = b & 0x07u;
      min = 0x10000;
    } else
      return mc_error_set(err, MC_EINVAL, "invalid UTF-8 text");
    if (n - i < len) return mc_error_set(err, MC_EINVAL, "truncated UTF-8 text");
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return mc_error_set(err, MC_EINVAL, "invalid UTF-8 text");
      cp = (cp << 6) | (s[i + k] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return mc_error_set(err, MC_EINVAL, "invalid UTF-8 text");
    u += len == 4 ? 2 : 1;
    i += len;
  }
  *units = u;
  return MC_OK;
}

/* Writes valid UTF-8 text as UTF-16LE at dst (room for 2 * units bytes checked by caller). */
static void utf8_to_utf16(const uint8_t *s, size_t n, uint8_t *dst) {
  size_t i = 0;
  while (i < n) {
    uint8_t b = s[i];
    uint32_t cp;
    if (b < 0x80) {
      *dst++ = b;
      *dst++ = 0;
      i++;
      continue;
    }
    if ((b & 0xE0) == 0xC0) {
      cp = ((b & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
      i += 2;
    } else if ((b & 0xF0) == 0xE0) {
      cp = ((b & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
      i += 3;
    } else {
      cp = ((b & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) |
           (s[i + 3] & 0x3Fu);
      i += 4;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      uint32_t hi = 0xD800 + (cp >> 10), lo = 0xDC00 + (cp & 0x3FF);
      *dst++ = (uint8_t)hi;
      *dst++ = (uint8_t)(hi >> 8);
      *dst++ = (uint8_t)lo;
      *dst++ = (uint8_t)(lo >> 8);
    } else {
      *dst++ = (uint8_t)cp;
      *dst++ = (uint8_t)(cp >> 8);
    }
  }
}

/* Splits `n` payload bytes already written at b->data[start + 12] into PLP chunks: the u64
 * total at start, a u32 length before each chunk of up to 8000 bytes, a zero terminator.
 * Room for the chunk headers and the terminator was reserved by the caller. */
static void plp_frame(mc_enc_buffer *b, size_t start, size_t n) {
  uint8_t *base = b->data + start;
  size_t chunks = n == 0 ? 0 : (n + PLP_CHUNK - 1) / PLP_CHUNK;
  for (int i = 0; i < 8; i++) base[i] = (uint8_t)((uint64_t)n >> (8 * i));
  /* chunk k's data sits at 12 + k * 8000 and belongs at 12 + k * 8004; move from the last */
  for (size_t k = chunks; k-- > 0;) {
    size_t len = (k + 1 == chunks) ? n - k * PLP_CHUNK : PLP_CHUNK;
    uint8_t *dst = base + 8 + k * (PLP_CHUNK + 4);
    if (k > 0) memmove(dst + 4, base + 12 + k * PLP_CHUNK, len);
    for (int i = 0; i < 4; i++) dst[i] = (uint8_t)(len >> (8 * i));
  }
  size_t end = 8 + chunks * 4 + n;
  memset(base + end, 0, 4);
  b->len = start + end + 4;
}

static size_t plp_room(size_t n) { return 8 + (n / PLP_CHUNK + 1) * 4 + n + 4; }

/* Character or binary data: `s` (n bytes, or n UTF-16 units from UTF-8 text when wide). */
static mc_status put_data(const mc_enc_column *col, mc_enc_buffer *b, const uint8_t *s, size_t n,
                          bool wide, uint8_t pad, mc_error *err) {
  size_t units = n;
  if (wide) MC_RETURN_NOT_OK(utf16_units(s, n, &units, err));
  size_t bytes = wide ? units * 2 : n;
  if (col->plp) {
    MC_RETURN_NOT_OK(need(b, plp_room(bytes), err));
    size_t start = b->len;
    if (wide)
      utf8_to_utf16(s, n, b->data + start + 12);
    else if (n)
      memcpy(b->data + start + 12, s, n);
    plp_frame(b, start, bytes);
    return MC_OK;
  }
  size_t width = col->width;
  size_t total = width ? width : bytes;
  if (total > 0xFFFF)
    return mc_error_set(err, MC_ERANGE, "value of %zu bytes without (max)", total);
  size_t room = 2 + (bytes > total ? bytes : total);
  MC_RETURN_NOT_OK(need(b, room, err));
  size_t start = b->len;
  put_le(b, total, 2);
  if (wide)
    utf8_to_utf16(s, n, b->data + b->len);
  else if (n)
    memcpy(b->data + b->len, s, n);
  if (bytes >= total) {
    b->len += total; /* truncated to the width */
  } else {
    b->len += bytes;
    size_t step = wide ? 2 : 1;
    for (size_t k = bytes; k + step <= total; k += step) {
      put_u8(b, pad);
      if (wide) put_u8(b, 0);
    }
    /* an odd remainder cannot occur: nchar widths are even */
    b->len = start + 2 + total;
  }
  return MC_OK;
}

/* Hex digit values plus one; 0 for a byte that is not a hex digit. */
static const uint8_t hex_table[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16};

static mc_status put_guid(const col_in *c, int64_t i, mc_enc_buffer *b, mc_error *err) {
  const uint8_t *p;
  size_t n;
  MC_RETURN_NOT_OK(get_var(c, i, &p, &n, err));
  uint8_t be[16];
  if (c->fmt == 'w') {
    if (n != 16) return mc_error_set(err, MC_EUNSUPPORTED, "GUID of %zu bytes", n);
    memcpy(be, p, 16);
  } else {
    if (n != 36 || p[8] != '-' || p[13] != '-' || p[18] != '-' || p[23] != '-')
      return mc_error_set(err, MC_EUNSUPPORTED, "GUID text not in the 8-4-4-4-12 form");
    /* the text's byte pairs, in the GUID's byte order */
    static const uint8_t at[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
    bool bad = false;
    for (int k = 0; k < 16; k++) {
      uint8_t hv = hex_table[p[at[k]]], lv = hex_table[p[at[k] + 1]];
      bad |= hv == 0 || lv == 0;
      be[k] = (uint8_t)(((hv - 1) << 4) | ((lv - 1) & 0x0F));
    }
    if (bad) return mc_error_set(err, MC_EUNSUPPORTED, "GUID text not hex");
  }
  static const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  uint8_t wire[17];
  wire[0] = 16;
  for (int k = 0; k < 16; k++) wire[k + 1] = be[order[k]];
  MC_RETURN_NOT_OK(need(b, 17, err));
  put_bytes(b, wire, 17);
  return MC_OK;
}

static mc_status put_value(const mc_enc_column *col, const col_in *c, int64_t i, mc_enc_buffer *b,
                           mc_error *err) {
  switch (col->kind) {
    case MC_ENC_INT: {
      int64_t v;
      MC_RETURN_NOT_OK(get_int(c, i, &v, err));
      bool ok = col->size == 1   ? (v >= 0 && v <= 255)
                : col->size == 2 ? (v >= INT16_MIN && v <= INT16_MAX)
                : col->size == 4 ? (v >= INT32_MIN && v <= INT32_MAX)
                                 : col->size == 8;
      if (!ok) return mc_error_set(err, MC_ERANGE, "integer out of range of %u bytes", col->size);
      MC_RETURN_NOT_OK(need(b, 9, err));
      if (col->nullable) put_u8(b, col->size);
      put_le(b, (uint64_t)v, col->size);
      return MC_OK;
    }
    case MC_ENC_BIT: {
      int64_t v;
      MC_RETURN_NOT_OK(get_int(c, i, &v, err));
      MC_RETURN_NOT_OK(need(b, 2, err));
      if (col->nullable) put_u8(b, 1);
      put_u8(b, v != 0);
      return MC_OK;
    }
    case MC_ENC_FLOAT: {
      double d;
      int64_t j = c->off + i;
      if (c->fmt == 'g') {
        memcpy(&d, c->data + 8 * j, 8);
      } else if (c->fmt == 'f') {
        float f;
        memcpy(&f, c->data + 4 * j, 4);
        d = f;
      } else {
        return mc_error_set(err, MC_EUNSUPPORTED, "Arrow format '%c' for a float column", c->fmt);
      }
      MC_RETURN_NOT_OK(need(b, 9, err));
      if (col->nullable) put_u8(b, col->size);
      if (col->size == 4) {
        float f = (float)d;
        if (isinf(f) && !isinf(d)) return mc_error_set(err, MC_ERANGE, "float out of real's range");
        uint32_t u;
        memcpy(&u, &f, 4);
        put_le(b, u, 4);
      } else {
        uint64_t u;
        memcpy(&u, &d, 8);
        put_le(b, u, 8);
      }
      return MC_OK;
    }
    case MC_ENC_DECIMAL:
    case MC_ENC_MONEY: {
      if (c->fmt != 'd' || c->dscale != col->scale)
        return mc_error_set(err, MC_EUNSUPPORTED,
                            "decimal column from another Arrow type or scale");
      bool neg;
      uint64_t hi, lo;
      get_dec(c, i, &neg, &hi, &lo);
      /* the length byte, the sign byte and up to 16 magnitude bytes (decimal(38) is size 17) */
      MC_RETURN_NOT_OK(need(b, 18, err));
      if (col->kind == MC_ENC_DECIMAL) {
        if (!fits_precision(hi, lo, col->precision))
          return mc_error_set(err, MC_ERANGE, "decimal above precision %u", col->precision);
        put_u8(b, col->size);
        put_u8(b, neg && (hi | lo) ? 0 : 1);
        size_t m = (size_t)col->size - 1;
        put_le(b, lo, m < 8 ? m : 8);
        if (m > 8) put_le(b, hi, m - 8);
        return MC_OK;
      }
      /* money: the signed count of 1/10000 must fit int64 (money) or int32 (smallmoney) */
      uint64_t limit = col->size == 8 ? (uint64_t)INT64_MAX : (uint64_t)INT32_MAX;
      if (hi != 0 || lo > limit + (neg ? 1 : 0))
        return mc_error_set(err, MC_ERANGE, "money out of range");
      uint64_t units = neg ? (uint64_t)0 - lo : lo; /* two's complement */
      if (col->nullable) put_u8(b, col->size);
      if (col->size == 8) {
        put_le(b, units >> 32, 4);
        put_le(b, units & 0xFFFFFFFFu, 4);
      } else {
        put_le(b, units & 0xFFFFFFFFu, 4);
      }
      return MC_OK;
    }
    case MC_ENC_GUID: return put_guid(c, i, b, err);
    case MC_ENC_BINARY: {
      if (c->fmt != 'z' && c->fmt != 'Z' && c->fmt != 'w')
        return mc_error_set(err, MC_EUNSUPPORTED, "Arrow format '%c' for a binary column", c->fmt);
      const uint8_t *p;
      size_t n;
      MC_RETURN_NOT_OK(get_var(c, i, &p, &n, err));
      return put_data(col, b, p, n, false, 0x00, err);
    }
    case MC_ENC_ROWVERSION: {
      if (c->fmt != 'z' && c->fmt != 'Z' && c->fmt != 'w')
        return mc_error_set(err, MC_EUNSUPPORTED, "Arrow format '%c' for a rowversion", c->fmt);
      const uint8_t *p;
      size_t n;
      MC_RETURN_NOT_OK(get_var(c, i, &p, &n, err));
      if (n > 8) n = 8;
      MC_RETURN_NOT_OK(need(b, 10, err));
      put_le(b, 8, 2);
      for (size_t k = n; k < 8; k++) put_u8(b, 0);
      put_bytes(b, p, n);
      return MC_OK;
    }
    case MC_ENC_NCHAR:
    case MC_ENC_CHAR: {
      if (c->fmt != 'u' && c->fmt != 'U')
        return mc_error_set(err, MC_EUNSUPPORTED, "Arrow format '%c' for a character column",
                            c->fmt);
      const uint8_t *p;
      size_t n;
      MC_RETURN_NOT_OK(get_var(c, i, &p, &n, err));
      bool wide = col->kind == MC_ENC_NCHAR;
      if (!wide && !col->utf8) {
        for (size_t k = 0; k < n; k++)
          if (p[k] >= 0x80)
            return mc_error_set(err, MC_EUNSUPPORTED, "non-ASCII text for a code page");
      }
      return put_data(col, b, p, n, wide, 0x20, err);
    }
    case MC_ENC_RAW: {
      if (c->fmt != 'z' && c->fmt != 'Z')
        return mc_error_set(err, MC_EUNSUPPORTED, "Arrow format '%c' for encoded values", c->fmt);
      const uint8_t *p;
      size_t n;
      MC_RETURN_NOT_OK(get_var(c, i, &p, &n, err));
      MC_RETURN_NOT_OK(need(b, n, err));
      put_bytes(b, p, n);
      return MC_OK;
    }
    case MC_ENC_DATE:
    case MC_ENC_TIME:
    case MC_ENC_DATETIME2:
    case MC_ENC_DATETIMEOFFSET:
    case MC_ENC_DATETIME:
    case MC_ENC_SMALLDATETIME: {
      if (c->fmt != 'u' && c->fmt != 'U')
        return mc_error_set(err, MC_EUNSUPPORTED, "Arrow format '%c' for a date/time column",
                            c->fmt);
      const uint8_t *p;
      size_t n;
      MC_RETURN_NOT_OK(get_var(c, i, &p, &n, err));
      uint8_t v[10];
      size_t len;
      MC_RETURN_NOT_OK(mc_tds_encode_temporal_text(col, (const char *)p, n, v, &len, err));
      MC_RETURN_NOT_OK(need(b, 11, err));
      bool fixed = col->kind == MC_ENC_DATETIME || col->kind == MC_ENC_SMALLDATETIME;
      if (col->nullable || !fixed) put_u8(b, (uint8_t)len);
      put_bytes(b, v, len);
      return MC_OK;
    }
  }
  return mc_error_set(err, MC_EINVAL, "unknown column kind %d", (int)col->kind);
}

/* NULL in ROW form. */
static mc_status put_null(const mc_enc_column *col, mc_enc_buffer *b, mc_error *err) {
  MC_RETURN_NOT_OK(need(b, 8, err));
  switch (col->kind) {
    case MC_ENC_INT:
    case MC_ENC_BIT:
    case MC_ENC_FLOAT:
    case MC_ENC_MONEY:
    case MC_ENC_DATETIME:
    case MC_ENC_SMALLDATETIME:
      if (!col->nullable) return mc_error_set(err, MC_EINVAL, "NULL in a NOT NULL column");
      put_u8(b, 0);
      return MC_OK;
    case MC_ENC_DECIMAL:
    case MC_ENC_GUID:
    case MC_ENC_DATE:
    case MC_ENC_TIME:
    case MC_ENC_DATETIME2:
    case MC_ENC_DATETIMEOFFSET: put_u8(b, 0); return MC_OK;
    case MC_ENC_ROWVERSION: put_le(b, 0xFFFF, 2); return MC_OK;
    case MC_ENC_BINARY:
    case MC_ENC_NCHAR:
    case MC_ENC_CHAR:
      if (col->plp)
        put_le(b, UINT64_MAX, 8);
      else
        put_le(b, 0xFFFF, 2);
      return MC_OK;
    case MC_ENC_RAW:
      return mc_error_set(err, MC_EINVAL, "NULL where an encoded value was expected");
  }
  return mc_error_set(err, MC_EINVAL, "unknown column kind %d", (int)col->kind);
}

static mc_status check_column(const mc_enc_column *col, mc_error *err) {
  switch (col->kind) {
    case MC_ENC_INT:
      if (col->size != 1 && col->size != 2 && col->size != 4 && col->size != 8) break;
      return MC_OK;
    case MC_ENC_FLOAT:
    case MC_ENC_MONEY:
      if (col->size != 4 && col->size != 8) break;
      if (col->kind == MC_ENC_MONEY && col->scale != 4) break;
      return MC_OK;
    case MC_ENC_DECIMAL: {
      int p = col->precision;
      int size = p <= 9 ? 5 : (p <= 19 ? 9 : (p <= 28 ? 13 : 17));
      if (p < 1 || p > 38 || col->scale > p || col->size != size) break;
      return MC_OK;
    }
    case MC_ENC_TIME:
    case MC_ENC_DATETIME2:
    case MC_ENC_DATETIMEOFFSET:
      if (col->scale > 7) break;
      return MC_OK;
    case MC_ENC_NCHAR:
      if (col->width % 2) break;
      return MC_OK;
    case MC_ENC_BIT:
    case MC_ENC_GUID:
    case MC_ENC_BINARY:
    case MC_ENC_ROWVERSION:
    case MC_ENC_CHAR:
    case MC_ENC_DATE:
    case MC_ENC_DATETIME:
    case MC_ENC_SMALLDATETIME:
    case MC_ENC_RAW: return MC_OK;
  }
  return mc_error_set(err, MC_EINVAL, "bad column description (kind %d, size %u, scale %u)",
                      (int)col->kind, col->size, col->scale);
}

mc_status mc_tds_encode_rows(const mc_enc_column *cols, size_t ncols,
                             const struct ArrowSchema *schema, const struct ArrowArray *batch,
                             bool nbcrow, mc_enc_buffer *out, mc_error *err) {
  if (cols == NULL || schema == NULL || batch == NULL || out == NULL)
    return mc_error_set(err, MC_EINVAL, "NULL argument");
  if (ncols == 0 || ncols > 4096) return mc_error_set(err, MC_EINVAL, "%zu columns", ncols);
  if (schema->format == NULL || strcmp(schema->format, "+s") != 0 || batch->release == NULL)
    return mc_error_set(err, MC_EINVAL, "the batch is not an Arrow struct array");
  if (schema->n_children != (int64_t)ncols || batch->n_children != (int64_t)ncols ||
      schema->children == NULL || batch->children == NULL)
    return mc_error_set(err, MC_EINVAL, "the batch has %lld columns, the description %zu",
                        (long long)batch->n_children, ncols);
  if (batch->null_count != 0 || batch->length < 0 || batch->offset < 0)
    return mc_error_set(err, MC_EUNSUPPORTED, "a struct batch with NULL rows");
  int64_t rows = batch->length;
  col_in *in = calloc(ncols, sizeof *in); /* one allocation per batch */
  if (in == NULL) return mc_error_set(err, MC_ENOMEM, "out of memory for %zu columns", ncols);
  mc_status st = MC_OK;
  for (size_t k = 0; k < ncols && st == MC_OK; k++) {
    st = check_column(&cols[k], err);
    if (st == MC_OK)
      st = open_column(schema->children[k], batch->children[k], batch->offset, rows, &in[k], err);
  }
  size_t entry = out->len;
  size_t bitmap = (ncols + 7) / 8;
  for (int64_t i = 0; i < rows && st == MC_OK; i++) {
    st = need(out, 1 + bitmap, err);
    if (st != MC_OK) break;
    if (!nbcrow) {
      put_u8(out, TOKEN_ROW);
      for (size_t k = 0; k < ncols && st == MC_OK; k++) {
        st = is_null(&in[k], i) ? put_null(&cols[k], out, err)
                                : put_value(&cols[k], &in[k], i, out, err);
      }
      continue;
    }
    put_u8(out, TOKEN_NBCROW);
    size_t bits = out->len;
    memset(out->data + bits, 0, bitmap);
    out->len += bitmap;
    for (size_t k = 0; k < ncols && st == MC_OK; k++) {
      if (is_null(&in[k], i)) {
        const mc_enc_column *col = &cols[k];
        bool fixed = col->kind == MC_ENC_INT || col->kind == MC_ENC_BIT ||
                     col->kind == MC_ENC_FLOAT || col->kind == MC_ENC_MONEY ||
                     col->kind == MC_ENC_DATETIME || col->kind == MC_ENC_SMALLDATETIME;
        if ((fixed && !col->nullable) || col->kind == MC_ENC_RAW)
          st = mc_error_set(err, MC_EINVAL, "NULL in a NOT NULL column or an encoded column");
        out->data[bits + k / 8] |= (uint8_t)(1u << (k % 8));
      } else {
        st = put_value(&cols[k], &in[k], i, out, err);
      }
    }
  }
  if (st != MC_OK) out->len = entry;
  free(in);
  return st;
}
