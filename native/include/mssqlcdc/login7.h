/*
 * login7.h: the LOGIN7 message (MS-TDS 2.2.6.4).
 *
 * A fixed 94-byte header (TDS 7.4), then UTF-16LE strings the header points at, then the
 * FeatureExt block: UTF8_SUPPORT always, FEDAUTH (security token) when logging in with an
 * Entra ID access token. The password is sent obfuscated (each byte's nibbles swapped, then
 * XOR 0xA5), which is no protection: LOGIN7 is always sent inside TLS by this client.
 */
#ifndef MSSQLCDC_LOGIN7_H
#define MSSQLCDC_LOGIN7_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mssqlcdc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_TDS_VERSION_74 0x74000004u
/* TDS 8.0, sent in LOGIN7 over Encrypt=strict (as mssql-jdbc's TDS 8.0 login does). */
#define MC_TDS_VERSION_80 0x08000000u
#define MC_LOGIN7_FIXED_SIZE 94
#define MC_LOGIN7_MAX_SIZE (128 * 1024 - 1)

/* FeatureExt ids (MS-TDS 2.2.6.4). */
enum { MC_FEATURE_FEDAUTH = 0x02, MC_FEATURE_UTF8_SUPPORT = 0x0A, MC_FEATURE_TERMINATOR = 0xFF };

/* Inputs of a LOGIN7; strings are UTF-8 and NUL-terminated, NULL means empty. */
typedef struct mc_login7_request {
  uint32_t tds_version; /* MC_TDS_VERSION_74, or MC_TDS_VERSION_80 under strict; 0 = 7.4 */
  uint32_t packet_size;
  const char *host_name; /* the client machine */
  const char *user;      /* SQL login; ignored with access_token */
  const char *password;  /* ignored with access_token */
  const char *app_name;
  const char *server_name;  /* as the client addressed it */
  const char *library;      /* client interface name */
  const char *database;     /* initial database, "" = the login's default */
  const char *access_token; /* Entra ID JWT, or NULL for SQL authentication */
  size_t access_token_len;
  bool fedauth_echo; /* the server's PRELOGIN said FEDAUTHREQUIRED */
  bool read_only_intent;
  uint32_t client_pid;
} mc_login7_request;

/*
 * Builds the LOGIN7 payload (no packet header) into a buffer it allocates; *out and *out_len
 * receive it. The caller must wipe (it holds the obfuscated password or the token) and free it
 * with mc_login7_free. MC_EINVAL for a string that is not valid UTF-8 or a message over 128 KiB
 * (the message names the field, never its value); MC_ENOMEM.
 */
MC_NODISCARD mc_status mc_login7_build(const mc_login7_request *req, uint8_t **out, size_t *out_len,
                                       mc_error *err);

/* Wipes and frees a buffer from mc_login7_build. */
void mc_login7_free(uint8_t *buf, size_t len);

/* Obfuscates n bytes of UTF-16LE password in place (swap nibbles, XOR 0xA5). */
void mc_login7_mangle_password(uint8_t *bytes, size_t n);

/*
 * Encodes UTF-8 text (len bytes) as UTF-16LE into out (capacity out_cap bytes); *units gets
 * the number of UTF-16 code units. With out == NULL only counts. MC_EINVAL for invalid UTF-8
 * (overlong forms, surrogates, code points above U+10FFFF, truncated sequences).
 */
MC_NODISCARD mc_status mc_utf8_to_utf16le(const char *text, size_t len, uint8_t *out,
                                          size_t out_cap, size_t *units, mc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_LOGIN7_H */
