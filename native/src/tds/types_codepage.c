/*
 * types_codepage.c: char/varchar/text data in code pages other than Windows-1252 and UTF-8
 * (1250-1258, 874, 437, 850 and the double-byte 932, 936, 949, 950), converted to UTF-8 with
 * the C library's iconv (glibc ships every code page a SQL Server collation can name).
 *
 * The converter is opened once per column at COLMETADATA (mc_tds_codepage_open) and closed
 * with the column. A byte sequence the code page does not define becomes U+FFFD, as a lone
 * surrogate does in UTF-16 data: decoding never fails on the data itself.
 */
#include <errno.h>
#include <iconv.h>
#include <stdio.h>
#include <string.h>

#include "tds/tds_int.h"

static const uint8_t kReplacement[3] = {0xEF, 0xBF, 0xBD}; /* U+FFFD */

mc_status mc_tds_codepage_open(mc_tds_column *c, mc_error *err) {
  char name[16];
  snprintf(name, sizeof name, "CP%u", (unsigned)c->code_page);
  iconv_t cd = iconv_open("UTF-8", name);
  if (cd == (iconv_t)-1) {
    return MC_TDS_UNSUPPORTED(err,
                              "char data in code page %u cannot be converted (iconv has no %s)",
                              (unsigned)c->code_page, name);
  }
  c->iconv = (void *)cd;
  return MC_OK;
}

void mc_tds_codepage_close(mc_tds_column *c) {
  if (c->iconv != NULL) iconv_close((iconv_t)c->iconv);
  c->iconv = NULL;
}

/* Converts n bytes at src into dst (room for 3 * n bytes); returns the bytes written. */
static size_t convert(iconv_t cd, const uint8_t *src, size_t n, uint8_t *dst) {
  char *in = (char *)(uintptr_t)src; /* iconv does not write its input */
  size_t in_left = n;
  char *out = (char *)dst;
  size_t out_left = 3 * n;
  iconv(cd, NULL, NULL, NULL, NULL); /* initial state */
  while (in_left > 0) {
    if (iconv(cd, &in, &in_left, &out, &out_left) != (size_t)-1) break;
    if ((errno != EILSEQ && errno != EINVAL) || out_left < 3) break;
    memcpy(out, kReplacement, 3); /* an undefined or cut sequence: U+FFFD, skip one byte */
    out += 3;
    out_left -= 3;
    in++;
    in_left--;
  }
  return (size_t)(out - (char *)dst);
}

mc_status mc_tds_decode_codepage(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                 size_t n, mc_error *err) {
  if (n > MC_ARROW_MAX_DATA_BYTES / 3) {
    return mc_error_set(err, MC_ERANGE, "a batch column would exceed 2 GiB");
  }
  MC_RETURN_NOT_OK(mc_tds_reserve_data(out, n * 3, err));
  size_t len = convert((iconv_t)c->iconv, p, n, mc_arrow_column_data_tail(out));
  mc_arrow_column_commit_bytes_unsafe(out, len);
  return MC_OK;
}

mc_status mc_tds_codepage_to_utf8(uint16_t code_page, const uint8_t *src, size_t n, uint8_t *dst,
                                  size_t *len, mc_error *err) {
  mc_tds_column c;
  memset(&c, 0, sizeof c);
  c.code_page = code_page;
  MC_RETURN_NOT_OK(mc_tds_codepage_open(&c, err));
  *len = convert((iconv_t)c.iconv, src, n, dst);
  mc_tds_codepage_close(&c);
  return MC_OK;
}
