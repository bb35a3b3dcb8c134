/*
 * utf16.c: UTF-8 to UTF-16LE, for the strings TDS sends (login7.h). The other direction, on the
 * hot path of result decoding, lives with the type decoders.
 */
#include <string.h>

#include "mssqlcdc/login7.h"

/* Decodes one code point at s[*i], advancing *i; -1 if the sequence is not valid UTF-8. */
static long next_code_point(const unsigned char *s, size_t len, size_t *i) {
  unsigned char c = s[*i];
  if (c < 0x80) {
    (*i)++;
    return c;
  }
  size_t n;
  long cp;
  long min;
  if ((c & 0xE0) == 0xC0) {
    n = 1;
    cp = c & 0x1F;
    min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 2;
    cp = c & 0x0F;
    min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 3;
    cp = c & 0x07;
    min = 0x10000;
  } else {
    return -1;
  }
  if (len - *i <= n) return -1;
  for (size_t k = 1; k <= n; k++) {
    unsigned char cc = s[*i + k];
    if ((cc & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  *i += n + 1;
  return cp;
}

mc_status mc_utf8_to_utf16le(const char *text, size_t len, uint8_t *out, size_t out_cap,
                             size_t *units, mc_error *err) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0;
  size_t u = 0;
  while (i < len) {
    size_t at = i;
    long cp = next_code_point(s, len, &i);
    if (cp < 0) {
      return mc_error_set(err, MC_EINVAL, "text is not valid UTF-8 at byte %zu", at);
    }
    uint16_t w[2];
    size_t nw = 1;
    if (cp >= 0x10000) {
      long v = cp - 0x10000;
      w[0] = (uint16_t)(0xD800 + (v >> 10));
      w[1] = (uint16_t)(0xDC00 + (v & 0x3FF));
      nw = 2;
    } else {
      w[0] = (uint16_t)cp;
    }
    for (size_t k = 0; k < nw; k++) {
      if (out != NULL) {
        if (2 * (u + 1) > out_cap) {
          return mc_error_set(err, MC_EINVAL, "UTF-16 buffer of %zu bytes is too small", out_cap);
        }
        out[2 * u] = (uint8_t)w[k];
        out[2 * u + 1] = (uint8_t)(w[k] >> 8);
      }
      u++;
    }
  }
  *units = u;
  return MC_OK;
}
