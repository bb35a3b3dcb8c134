/*
 * prelogin.c: build the client PRELOGIN, parse the server's, and decide how TLS is used
 * (prelogin.h; MS-TDS 2.2.6.5). The option table's offsets and lengths are big-endian, unlike
 * the rest of TDS.
 */
#include "mssqlcdc/prelogin.h"

#include <string.h>

/* The version this client reports: 0.1.0.0 (informational only for the server). */
static const uint8_t kClientVersion[6] = {0x00, 0x01, 0x00, 0x00, 0x00, 0x00};

static void put_be16(uint8_t *p, size_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

size_t mc_prelogin_build(uint8_t encrypt_value, bool fedauth,
                         uint8_t out[MC_PRELOGIN_REQUEST_MAX]) {
  struct {
    uint8_t token;
    uint8_t data[6];
    size_t len;
  } options[6] = {
      {MC_PRELOGIN_VERSION, {0}, 6},    {MC_PRELOGIN_ENCRYPTION, {encrypt_value}, 1},
      {MC_PRELOGIN_INSTOPT, {0x00}, 1}, {MC_PRELOGIN_THREADID, {0, 0, 0, 0}, 4},
      {MC_PRELOGIN_MARS, {0x00}, 1},    {MC_PRELOGIN_FEDAUTHREQUIRED, {0x01}, 1},
  };
  memcpy(options[0].data, kClientVersion, 6);
  size_t count = fedauth ? 6 : 5;
  size_t table = count * 5 + 1;
  size_t data_off = table;
  size_t t = 0;
  for (size_t i = 0; i < count; i++) {
    out[t] = options[i].token;
    put_be16(out + t + 1, data_off);
    put_be16(out + t + 3, options[i].len);
    memcpy(out + data_off, options[i].data, options[i].len);
    t += 5;
    data_off += options[i].len;
  }
  out[t] = MC_PRELOGIN_TERMINATOR;
  return data_off;
}

mc_status mc_prelogin_parse(const uint8_t *payload, size_t len, mc_prelogin_reply *out,
                            mc_error *err) {
  mc_prelogin_reply r;
  memset(&r, 0, sizeof r);
  bool has_encryption = false;
  size_t table_end = 0;
  while (table_end < len && payload[table_end] != MC_PRELOGIN_TERMINATOR) table_end += 5;
  if (table_end >= len) {
    return mc_error_set(err, MC_EPROTO, "PRELOGIN reply has no option terminator (0xFF)");
  }
  for (size_t t = 0; t < table_end; t += 5) {
    uint8_t token = payload[t];
    size_t off = ((size_t)payload[t + 1] << 8) | payload[t + 2];
    size_t n = ((size_t)payload[t + 3] << 8) | payload[t + 4];
    if (off <= table_end || off > len || n > len - off) {
      return mc_error_set(err, MC_EPROTO,
                          "PRELOGIN option 0x%02X points at bytes %zu..%zu of a %zu-byte reply",
                          (unsigned)token, off, off + n, len);
    }
    const uint8_t *d = payload + off;
    switch (token) {
      case MC_PRELOGIN_VERSION:
        if (n < 6) return mc_error_set(err, MC_EPROTO, "PRELOGIN VERSION is %zu bytes, not 6", n);
        memcpy(r.version, d, 6);
        break;
      case MC_PRELOGIN_ENCRYPTION:
        if (n < 1) return mc_error_set(err, MC_EPROTO, "PRELOGIN ENCRYPTION is empty");
        r.encryption = d[0];
        has_encryption = true;
        break;
      case MC_PRELOGIN_FEDAUTHREQUIRED:
        if (n >= 1) r.fedauth_required = d[0] == 0x01;
        break;
      case MC_PRELOGIN_NONCE:
        if (n != 32) return mc_error_set(err, MC_EPROTO, "PRELOGIN NONCE is %zu bytes, not 32", n);
        memcpy(r.nonce, d, 32);
        r.has_nonce = true;
        break;
      default: break; /* INSTOPT, THREADID, MARS, TRACEID, and options of later versions */
    }
  }
  if (!has_encryption) {
    return mc_error_set(err, MC_EPROTO, "PRELOGIN reply has no ENCRYPTION option");
  }
  *out = r;
  return MC_OK;
}

uint8_t mc_prelogin_client_encryption(mc_encrypt mode) {
  return mode == MC_ENCRYPT_OPTIONAL ? MC_PRELOGIN_ENCRYPT_OFF : MC_PRELOGIN_ENCRYPT_ON;
}

mc_status mc_prelogin_plan(mc_encrypt mode, uint8_t server_encryption, mc_tls_plan *plan,
                           mc_error *err) {
  if (mode == MC_ENCRYPT_STRICT) {
    *plan = MC_TLS_FULL;
    return MC_OK;
  }
  if (mode == MC_ENCRYPT_OPTIONAL) {
    switch (server_encryption) {
      case MC_PRELOGIN_ENCRYPT_OFF: *plan = MC_TLS_LOGIN_ONLY; return MC_OK;
      case MC_PRELOGIN_ENCRYPT_ON:
      case MC_PRELOGIN_ENCRYPT_REQ: *plan = MC_TLS_FULL; return MC_OK;
      case MC_PRELOGIN_ENCRYPT_NOT_SUP: *plan = MC_TLS_NONE; return MC_OK;
      default: break;
    }
  } else {
    switch (server_encryption) {
      case MC_PRELOGIN_ENCRYPT_ON:
      case MC_PRELOGIN_ENCRYPT_REQ: *plan = MC_TLS_FULL; return MC_OK;
      case MC_PRELOGIN_ENCRYPT_OFF:
      case MC_PRELOGIN_ENCRYPT_NOT_SUP:
        return mc_error_set(err, MC_EIO,
                            "the server does not offer encryption, and Encrypt=yes requires it "
                            "(use Encrypt=optional to allow a plaintext session)");
      default: break;
    }
  }
  return mc_error_set(err, MC_EPROTO, "PRELOGIN reply has ENCRYPTION value 0x%02X",
                      (unsigned)server_encryption);
}
