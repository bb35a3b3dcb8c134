/*
 * lsn.c: parse, format, compare and step SQL Server LSNs (lsn.h).
 *
 * The arithmetic treats the 10 bytes as one 80-bit big-endian unsigned integer: that is what
 * "the next possible LSN, with none in between" means for sys.fn_cdc_increment_lsn, since a slot
 * of 0xFFFF is followed by slot 0 of the next block
 * (docs/reference/sql-server-cdc.md#log-sequence-numbers).
 */
#include "mssqlcdc/lsn.h"

#include <string.h>

static const char kUpperHex[] = "0123456789ABCDEF";
static const char kLowerHex[] = "0123456789abcdef";

/* Value of one hex digit, or -1. */
static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Reports the first character that is not a hex digit, printable or as \xNN. */
static mc_status bad_char(mc_error *err, const char *what, size_t pos, char c) {
  unsigned char u = (unsigned char)c;
  if (u >= 0x20 && u < 0x7f && u != '\'') {
    return mc_error_set(err, MC_EINVAL, "%s has '%c' at position %zu, which is not a hex digit",
                        what, c, pos);
  }
  return mc_error_set(err, MC_EINVAL,
                      "%s has byte \\x%02X at position %zu, which is not a hex digit", what,
                      (unsigned)u, pos);
}

/*
 * Accumulates n hex digits (n <= 20) from text into the low end of a 10-byte big-endian
 * buffer that starts zeroed: digit i from the right lands in nibble i.
 */
static void put_digits(const char *digits, size_t n, unsigned char *dst, size_t dst_len) {
  for (size_t i = 0; i < n; i++) {
    size_t nibble = i; /* counted from the least significant end */
    int v = hex_value(digits[n - 1 - i]);
    size_t byte = dst_len - 1 - nibble / 2;
    if (nibble % 2 == 0) {
      dst[byte] = (unsigned char)(dst[byte] | (unsigned)v);
    } else {
      dst[byte] = (unsigned char)(dst[byte] | ((unsigned)v << 4));
    }
  }
}

/* Checks that text[0..n) is all hex; pos0 is the offset of text in the caller's input. */
static mc_status check_hex(const char *text, size_t n, size_t pos0, mc_error *err) {
  for (size_t i = 0; i < n; i++) {
    if (hex_value(text[i]) < 0) {
      return bad_char(err, "LSN text", pos0 + i, text[i]);
    }
  }
  return MC_OK;
}

static mc_status parse_parts(const char *text, size_t len, mc_lsn *out, mc_error *err) {
  static const size_t kMax[3] = {8, 8, 4};
  static const char *const kName[3] = {"VLF", "block", "slot"};
  static const size_t kOffset[3] = {0, 4, 8};
  static const size_t kWidth[3] = {4, 4, 2};
  mc_lsn result;
  memset(&result, 0, sizeof result);
  size_t start = 0;
  for (int part = 0; part < 3; part++) {
    size_t end = start;
    while (end < len && text[end] != ':') end++;
    if (part < 2 && end == len) {
      return mc_error_set(err, MC_EINVAL,
                          "LSN text in vlf:block:slot form needs three parts separated by ':'");
    }
    if (part == 2 && end != len) {
      return mc_error_set(err, MC_EINVAL,
                          "LSN text in vlf:block:slot form has more than three parts");
    }
    size_t n = end - start;
    if (n == 0) {
      return mc_error_set(err, MC_EINVAL, "LSN text has an empty %s part", kName[part]);
    }
    MC_RETURN_NOT_OK(check_hex(text + start, n, start, err));
    if (n > kMax[part]) {
      return mc_error_set(err, MC_EINVAL,
                          "LSN text has %zu hex digits in its %s part; at most %zu fit", n,
                          kName[part], kMax[part]);
    }
    put_digits(text + start, n, result.bytes + kOffset[part], kWidth[part]);
    start = end + 1;
  }
  *out = result;
  return MC_OK;
}

mc_status mc_lsn_parse(const char *text, size_t len, mc_lsn *out, mc_error *err) {
  if (text == NULL || out == NULL) {
    return mc_error_set(err, MC_EINVAL, "LSN text is NULL");
  }
  if (memchr(text, ':', len) != NULL) {
    return parse_parts(text, len, out, err);
  }
  size_t pos = 0;
  if (len >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    pos = 2;
  }
  size_t n = len - pos;
  if (n == 0) {
    return mc_error_set(err, MC_EINVAL,
                        len == 0 ? "LSN text is empty; expected up to 20 hex digits, "
                                   "optionally after 0x"
                                 : "LSN text has no hex digits after 0x");
  }
  MC_RETURN_NOT_OK(check_hex(text + pos, n, pos, err));
  if (n > 2 * MC_LSN_SIZE) {
    return mc_error_set(err, MC_EINVAL, "LSN text has %zu hex digits; at most 20 fit in binary(10)",
                        n);
  }
  mc_lsn result;
  memset(&result, 0, sizeof result);
  put_digits(text + pos, n, result.bytes, MC_LSN_SIZE);
  *out = result;
  return MC_OK;
}

void mc_lsn_format(const mc_lsn *lsn, char out[MC_LSN_TEXT_SIZE]) {
  out[0] = '0';
  out[1] = 'x';
  for (size_t i = 0; i < MC_LSN_SIZE; i++) {
    out[2 + 2 * i] = kUpperHex[lsn->bytes[i] >> 4];
    out[3 + 2 * i] = kUpperHex[lsn->bytes[i] & 0x0F];
  }
  out[MC_LSN_TEXT_SIZE - 1] = '\0';
}

void mc_lsn_format_parts(const mc_lsn *lsn, char out[MC_LSN_PARTS_TEXT_SIZE]) {
  size_t o = 0;
  for (size_t i = 0; i < MC_LSN_SIZE; i++) {
    if (i == 4 || i == 8) out[o++] = ':';
    out[o++] = kLowerHex[lsn->bytes[i] >> 4];
    out[o++] = kLowerHex[lsn->bytes[i] & 0x0F];
  }
  out[o] = '\0';
}

int mc_lsn_compare(const mc_lsn *a, const mc_lsn *b) {
  return memcmp(a->bytes, b->bytes, MC_LSN_SIZE);
}

mc_status mc_lsn_increment(const mc_lsn *in, mc_lsn *out, mc_error *err) {
  mc_lsn r = *in;
  for (size_t i = MC_LSN_SIZE; i-- > 0;) {
    if (r.bytes[i] != 0xFF) {
      r.bytes[i]++;
      *out = r;
      return MC_OK;
    }
    r.bytes[i] = 0x00;
  }
  return mc_error_set(err, MC_ERANGE, "the largest LSN (0xFFFFFFFFFFFFFFFFFFFF) has no next LSN");
}

mc_status mc_lsn_decrement(const mc_lsn *in, mc_lsn *out, mc_error *err) {
  mc_lsn r = *in;
  for (size_t i = MC_LSN_SIZE; i-- > 0;) {
    if (r.bytes[i] != 0x00) {
      r.bytes[i]--;
      *out = r;
      return MC_OK;
    }
    r.bytes[i] = 0xFF;
  }
  return mc_error_set(err, MC_ERANGE, "the zero LSN (0x00000000000000000000) has no previous LSN");
}

static uint32_t be32(const unsigned char *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

uint32_t mc_lsn_vlf(const mc_lsn *lsn) { return be32(lsn->bytes); }
uint32_t mc_lsn_block(const mc_lsn *lsn) { return be32(lsn->bytes + 4); }
uint16_t mc_lsn_slot(const mc_lsn *lsn) {
  return (uint16_t)(((unsigned)lsn->bytes[8] << 8) | lsn->bytes[9]);
}

mc_lsn mc_lsn_from_parts(uint32_t vlf, uint32_t block, uint16_t slot) {
  mc_lsn r;
  for (int i = 0; i < 4; i++) {
    r.bytes[i] = (unsigned char)(vlf >> (24 - 8 * i));
    r.bytes[4 + i] = (unsigned char)(block >> (24 - 8 * i));
  }
  r.bytes[8] = (unsigned char)(slot >> 8);
  r.bytes[9] = (unsigned char)slot;
  return r;
}
