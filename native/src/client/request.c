/*
 * request.c: SQLBatch and RPC (sp_executesql) payloads (MS-TDS 2.2.6.7, 2.2.6.6).
 *
 * Both start with ALL_HEADERS holding one transaction-descriptor header (MS-TDS 2.2.5.3): the
 * descriptor of the open transaction (from ENVCHANGE 8) or zeros, and an outstanding-request
 * count of 1. The RPC calls procedure id 10 (sp_executesql) with @stmt, @params and one value
 * per parameter, named @P1, @P2, ...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"
#include "mssqlcdc/login7.h"

enum {
  kAllHeadersSize = 22,
  kSpExecuteSql = 10,
  kTypeIntN = 0x26,
  kTypeBitN = 0x68,
  kTypeFltN = 0x6D,
  kTypeBigVarBinary = 0xA5,
  kTypeBigBinary = 0xAD,
  kTypeNVarChar = 0xE7,
  kShortMax = 8000
};

/* Latin1_General_CI_AS, the collation sent with nvarchar parameters (it does not change how
 * UTF-16 text is read). */
static const uint8_t kCollation[5] = {0x09, 0x04, 0xD0, 0x00, 0x34};

/* A growable output buffer; on ENOMEM it stays failed and later writes do nothing. */
typedef struct {
  uint8_t *p;
  size_t len, cap;
  bool failed;
} outbuf;

static void reserve(outbuf *b, size_t n) {
  if (b->failed || b->len + n <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + n) cap *= 2;
  uint8_t *p = realloc(b->p, cap);
  if (p == NULL) {
    b->failed = true;
    return;
  }
  b->p = p;
  b->cap = cap;
}

static void put(outbuf *b, const void *src, size_t n) {
  reserve(b, n);
  if (b->failed) return;
  memcpy(b->p + b->len, src, n);
  b->len += n;
}

static void put_u8(outbuf *b, uint8_t v) { put(b, &v, 1); }

static void put_le(outbuf *b, uint64_t v, size_t n) {
  uint8_t tmp[8];
  for (size_t i = 0; i < n; i++) tmp[i] = (uint8_t)(v >> (8 * i));
  put(b, tmp, n);
}

static void put_all_headers(outbuf *b, const uint8_t transaction[8]) {
  put_le(b, kAllHeadersSize, 4); /* total */
  put_le(b, 18, 4);              /* this header */
  put_le(b, 2, 2);               /* transaction descriptor */
  put(b, transaction, 8);
  put_le(b, 1, 4); /* outstanding requests */
}

/* Appends text as UTF-16LE; *units gets its length in code units. */
static mc_status put_utf16(outbuf *b, const char *text, size_t len, size_t *units, mc_error *err) {
  size_t n = 0;
  MC_RETURN_NOT_OK(mc_utf8_to_utf16le(text, len, NULL, 0, &n, err));
  reserve(b, 2 * n);
  if (b->failed) return mc_error_set(err, MC_ENOMEM, "out of memory building a request");
  MC_RETURN_NOT_OK(mc_utf8_to_utf16le(text, len, b->p + b->len, b->cap - b->len, &n, err));
  b->len += 2 * n;
  *units = n;
  return MC_OK;
}

static mc_status finish(outbuf *b, uint8_t **out, size_t *out_len, mc_error *err) {
  if (b->failed) {
    free(b->p);
    return mc_error_set(err, MC_ENOMEM, "out of memory building a request");
  }
  *out = b->p;
  *out_len = b->len;
  return MC_OK;
}

mc_status mc_request_sqlbatch(const uint8_t transaction[8], const char *sql, size_t len,
                              uint8_t **out, size_t *out_len, mc_error *err) {
  outbuf b = {0};
  put_all_headers(&b, transaction);
  size_t units = 0;
  mc_status st = put_utf16(&b, sql, len, &units, err);
  if (st != MC_OK) {
    free(b.p);
    return st == MC_EINVAL ? mc_error_set(err, MC_EINVAL, "the SQL text is not valid UTF-8") : st;
  }
  return finish(&b, out, out_len, err);
}

/* An nvarchar or varbinary value of n bytes: short form (u16 length) or PLP for (max). */
static void put_var_value(outbuf *b, const uint8_t *bytes, size_t n) {
  if (n <= kShortMax) {
    put_le(b, n, 2);
    put(b, bytes, n);
    return;
  }
  put_le(b, n, 8); /* PLP: total length, one chunk, terminator */
  put_le(b, n, 4);
  put(b, bytes, n);
  put_le(b, 0, 4);
}

/* Appends a B_VARCHAR parameter name (ASCII here) and the status byte. */
static void put_param_name(outbuf *b, const char *name) {
  size_t n = strlen(name);
  put_u8(b, (uint8_t)n);
  for (size_t i = 0; i < n; i++) {
    put_u8(b, (uint8_t)name[i]);
    put_u8(b, 0);
  }
  put_u8(b, 0); /* status: input parameter */
}

/* Appends an nvarchar parameter holding UTF-8 text. */
static mc_status put_nvarchar_param(outbuf *b, const char *name, const char *text, size_t len,
                                    mc_error *err) {
  size_t units = 0;
  MC_RETURN_NOT_OK(mc_utf8_to_utf16le(text, len, NULL, 0, &units, err));
  uint8_t *tmp = malloc(2 * units + 1);
  if (tmp == NULL) return mc_error_set(err, MC_ENOMEM, "out of memory building a request");
  mc_status st = mc_utf8_to_utf16le(text, len, tmp, 2 * units + 1, &units, err);
  if (st == MC_OK) {
    put_param_name(b, name);
    put_u8(b, kTypeNVarChar);
    put_le(b, 2 * units <= kShortMax ? kShortMax : 0xFFFF, 2);
    put(b, kCollation, 5);
    put_var_value(b, tmp, 2 * units);
  }
  free(tmp);
  return st;
}

/* The declaration of one parameter in @params, e.g. "@P1 binary(10)". */
static void declare(char *out, size_t cap, size_t i, const mc_param *p) {
  const char *type = "nvarchar(1)";
  char sized[32];
  switch (p->type) {
    case MC_PARAM_NULL: break;
    case MC_PARAM_INT64: type = "bigint"; break;
    case MC_PARAM_FLOAT64: type = "float"; break;
    case MC_PARAM_BOOL: type = "bit"; break;
    case MC_PARAM_TEXT: type = "nvarchar(max)"; break;
    case MC_PARAM_BINARY:
      if (p->len == 10) {
        type = "binary(10)";
      } else if (p->len <= kShortMax) {
        snprintf(sized, sizeof sized, "varbinary(%u)", (unsigned)kShortMax);
        type = sized;
      } else {
        type = "varbinary(max)";
      }
      break;
  }
  snprintf(out, cap, "%s@P%zu %s", i == 0 ? "" : ",", i + 1, type);
}

mc_status mc_request_rpc_executesql(const uint8_t transaction[8], const char *sql, size_t len,
                                    const mc_param *params, size_t nparams, uint8_t **out,
                                    size_t *out_len, mc_error *err) {
  outbuf b = {0};
  outbuf decl = {0};
  mc_status st = MC_OK;
  put_all_headers(&b, transaction);
  put_le(&b, 0xFFFF, 2);
  put_le(&b, kSpExecuteSql, 2);
  put_le(&b, 0, 2); /* option flags */
  for (size_t i = 0; i < nparams; i++) {
    char one[64];
    declare(one, sizeof one, i, &params[i]);
    put(&decl, one, strlen(one));
  }
  st = put_nvarchar_param(&b, "@stmt", sql, len, err);
  if (st == MC_OK) {
    st = put_nvarchar_param(&b, "@params", decl.p ? (const char *)decl.p : "", decl.len, err);
  }
  for (size_t i = 0; i < nparams && st == MC_OK; i++) {
    const mc_param *p = &params[i];
    char name[32];
    snprintf(name, sizeof name, "@P%zu", i + 1);
    switch (p->type) {
      case MC_PARAM_NULL:
        put_param_name(&b, name);
        put_u8(&b, kTypeNVarChar);
        put_le(&b, 2, 2);
        put(&b, kCollation, 5);
        put_le(&b, 0xFFFF, 2); /* NULL */
        break;
      case MC_PARAM_INT64:
        put_param_name(&b, name);
        put_u8(&b, kTypeIntN);
        put_u8(&b, 8);
        put_u8(&b, 8);
        put_le(&b, (uint64_t)p->i64, 8);
        break;
      case MC_PARAM_FLOAT64: {
        uint64_t bits;
        memcpy(&bits, &p->f64, 8);
        put_param_name(&b, name);
        put_u8(&b, kTypeFltN);
        put_u8(&b, 8);
        put_u8(&b, 8);
        put_le(&b, bits, 8);
        break;
      }
      case MC_PARAM_BOOL:
        put_param_name(&b, name);
        put_u8(&b, kTypeBitN);
        put_u8(&b, 1);
        put_u8(&b, 1);
        put_u8(&b, p->i64 != 0);
        break;
      case MC_PARAM_TEXT:
        st = put_nvarchar_param(&b, name, (const char *)p->bytes, p->len, err);
        if (st == MC_EINVAL) st = mc_error_set(err, MC_EINVAL, "parameter %zu is not UTF-8", i + 1);
        break;
      case MC_PARAM_BINARY:
        put_param_name(&b, name);
        if (p->len == 10) {
          put_u8(&b, kTypeBigBinary);
          put_le(&b, 10, 2);
          put_le(&b, 10, 2);
          put(&b, p->bytes, 10);
        } else {
          put_u8(&b, kTypeBigVarBinary);
          put_le(&b, p->len <= kShortMax ? kShortMax : 0xFFFF, 2);
          put_var_value(&b, p->bytes, p->len);
        }
        break;
    }
  }
  if (st == MC_OK && decl.failed) st = mc_error_set(err, MC_ENOMEM, "out of memory");
  free(decl.p);
  if (st != MC_OK) {
    free(b.p);
    return st;
  }
  return finish(&b, out, out_len, err);
}
