/*
 * login7.c: build the LOGIN7 message (login7.h; MS-TDS 2.2.6.4).
 *
 * Layout: the 94-byte fixed header of TDS 7.4, then the UTF-16LE strings in header order
 * (host, user, password, app, server, the 4-byte FeatureExt offset, library, language,
 * database), then the FeatureExt block. Every (offset, length) pair counts from the start of
 * the message; string lengths are in UTF-16 code units, the extension's in bytes.
 */
#include "mssqlcdc/login7.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

enum {
  kOptionFlags1 = 0xE0, /* fUseDB | fDatabase (fatal) | fSetLang */
  kOptionFlags2 = 0x03, /* fLanguage (fatal) | fODBC: ODBC session defaults (ANSI_NULLS ...) */
  kReadOnlyIntent = 0x20,
  kOptionFlags3Extension = 0x10,
  kFedAuthLibSecurityToken = 0x01
};

static void put_le16(uint8_t *p, size_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

void mc_login7_mangle_password(uint8_t *bytes, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint8_t b = bytes[i];
    bytes[i] = (uint8_t)((((b & 0x0F) << 4) | (b >> 4)) ^ 0xA5);
  }
}

void mc_login7_free(uint8_t *buf, size_t len) {
  if (buf == NULL) return;
  OPENSSL_cleanse(buf, len);
  free(buf);
}

/* The strings of the message, in the order their (offset, length) pairs appear. */
enum { kHost, kUser, kPassword, kApp, kServer, kLibrary, kLanguage, kDatabase, kFieldCount };

static const char *const kFieldNames[kFieldCount] = {"host name",        "user",        "password",
                                                     "application name", "server name", "library",
                                                     "language",         "database"};

/* Header offsets of each field's (offset, length) pair. */
static const size_t kPairOffset[kFieldCount] = {36, 40, 44, 48, 52, 60, 64, 68};

mc_status mc_login7_build(const mc_login7_request *req, uint8_t **out, size_t *out_len,
                          mc_error *err) {
  bool token = req->access_token != NULL;
  const char *text[kFieldCount] = {req->host_name,
                                   token ? NULL : req->user,
                                   token ? NULL : req->password,
                                   req->app_name,
                                   req->server_name,
                                   req->library,
                                   NULL,
                                   req->database};
  size_t units[kFieldCount];
  size_t strings_bytes = 0;
  for (int f = 0; f < kFieldCount; f++) {
    const char *s = text[f] != NULL ? text[f] : "";
    mc_status st = mc_utf8_to_utf16le(s, strlen(s), NULL, 0, &units[f], err);
    if (st != MC_OK) {
      return mc_error_set(err, MC_EINVAL, "LOGIN7: the %s is not valid UTF-8", kFieldNames[f]);
    }
    if (units[f] > 128) {
      return mc_error_set(err, MC_EINVAL, "LOGIN7: the %s is %zu characters; at most 128 fit",
                          kFieldNames[f], units[f]);
    }
    strings_bytes += 2 * units[f];
  }
  size_t token_units = 0;
  if (token) {
    mc_status st =
        mc_utf8_to_utf16le(req->access_token, req->access_token_len, NULL, 0, &token_units, err);
    if (st != MC_OK) return mc_error_set(err, MC_EINVAL, "LOGIN7: the access token is not UTF-8");
  }
  /* FeatureExt: [FEDAUTH: id, len u32, options, token len u32, token] UTF8: id, len, 1; 0xFF */
  size_t fedauth_bytes = token ? 1 + 4 + 1 + 4 + 2 * token_units : 0;
  size_t feature_bytes = fedauth_bytes + 1 + 4 + 1 + 1;
  size_t total = MC_LOGIN7_FIXED_SIZE + strings_bytes + 4 + feature_bytes;
  if (total > MC_LOGIN7_MAX_SIZE) {
    return mc_error_set(err, MC_EINVAL, "LOGIN7 would be %zu bytes; at most 131071 are allowed",
                        total);
  }
  uint8_t *m = calloc(1, total);
  if (m == NULL) return mc_error_set(err, MC_ENOMEM, "out of memory building LOGIN7");

  put_le32(m + 0, (uint32_t)total);
  put_le32(m + 4, req->tds_version != 0 ? req->tds_version : MC_TDS_VERSION_74);
  put_le32(m + 8, req->packet_size);
  put_le32(m + 12, 0x00010000u); /* ClientProgVer */
  put_le32(m + 16, req->client_pid);
  put_le32(m + 20, 0); /* ConnectionID */
  m[24] = kOptionFlags1;
  m[25] = kOptionFlags2;
  m[26] = req->read_only_intent ? kReadOnlyIntent : 0x00;
  m[27] = kOptionFlags3Extension;
  put_le32(m + 28, 0);      /* ClientTimeZone (unused by the server) */
  put_le32(m + 32, 0x0409); /* ClientLCID: en-US */

  size_t pos = MC_LOGIN7_FIXED_SIZE;
  size_t extension_pos = 0;
  for (int f = 0; f < kFieldCount; f++) {
    if (f == kLibrary) { /* the FeatureExt offset sits between server name and library */
      extension_pos = pos;
      put_le16(m + 56, pos);
      put_le16(m + 58, 4);
      pos += 4;
    }
    const char *s = text[f] != NULL ? text[f] : "";
    size_t n = 0;
    mc_status st = mc_utf8_to_utf16le(s, strlen(s), m + pos, total - pos, &n, err);
    if (st != MC_OK) {
      mc_login7_free(m, total);
      return st;
    }
    put_le16(m + kPairOffset[f], pos);
    put_le16(m + kPairOffset[f] + 2, n);
    if (f == kPassword) mc_login7_mangle_password(m + pos, 2 * n);
    pos += 2 * n;
  }
  /* ClientID (72..77), SSPI, AtchDBFile, ChangePassword: zero-length, pointing at the end of
   * the strings so that every offset lies inside the message. */
  put_le16(m + 78, pos);
  put_le16(m + 82, pos);
  put_le16(m + 86, pos);
  put_le32(m + 90, 0);

  put_le32(m + extension_pos, (uint32_t)pos);
  if (token) {
    m[pos++] = MC_FEATURE_FEDAUTH;
    put_le32(m + pos, (uint32_t)(fedauth_bytes - 5));
    pos += 4;
    m[pos++] = (uint8_t)((kFedAuthLibSecurityToken << 1) | (req->fedauth_echo ? 1 : 0));
    put_le32(m + pos, (uint32_t)(2 * token_units));
    pos += 4;
    size_t n = 0;
    mc_status st =
        mc_utf8_to_utf16le(req->access_token, req->access_token_len, m + pos, total - pos, &n, err);
    if (st != MC_OK) {
      mc_login7_free(m, total);
      return st;
    }
    pos += 2 * n;
  }
  m[pos++] = MC_FEATURE_UTF8_SUPPORT;
  put_le32(m + pos, 1);
  pos += 4;
  m[pos++] = 0x01;
  m[pos++] = MC_FEATURE_TERMINATOR;
  *out = m;
  *out_len = pos;
  return MC_OK;
}
