/*
 * prelogin.h: the PRELOGIN message (MS-TDS 2.2.6.5) and encryption negotiation.
 *
 * The client's PRELOGIN says which version it speaks, whether it wants encryption and whether
 * it will log in with a federated-authentication token; the server's answer says what it will
 * do. In TDS 7.x the TLS handshake then rides inside PRELOGIN packets; in TDS 8.0 ("strict")
 * TLS comes first and PRELOGIN travels inside it (MS-TDS 2.2.6.5, 3.2.5.1).
 */
#ifndef MSSQLCDC_PRELOGIN_H
#define MSSQLCDC_PRELOGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mssqlcdc/connstr.h"
#include "mssqlcdc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* B_FENCRYPTION values. */
enum {
  MC_PRELOGIN_ENCRYPT_OFF = 0x00,
  MC_PRELOGIN_ENCRYPT_ON = 0x01,
  MC_PRELOGIN_ENCRYPT_NOT_SUP = 0x02,
  MC_PRELOGIN_ENCRYPT_REQ = 0x03
};

/* Option tokens. */
enum {
  MC_PRELOGIN_VERSION = 0x00,
  MC_PRELOGIN_ENCRYPTION = 0x01,
  MC_PRELOGIN_INSTOPT = 0x02,
  MC_PRELOGIN_THREADID = 0x03,
  MC_PRELOGIN_MARS = 0x04,
  MC_PRELOGIN_TRACEID = 0x05,
  MC_PRELOGIN_FEDAUTHREQUIRED = 0x06,
  MC_PRELOGIN_NONCE = 0x07,
  MC_PRELOGIN_TERMINATOR = 0xFF
};

/* The client PRELOGIN payload is never larger than this. */
#define MC_PRELOGIN_REQUEST_MAX 64

/*
 * Writes the client PRELOGIN payload (without packet header) into out: VERSION, ENCRYPTION
 * (encrypt_value, one of MC_PRELOGIN_ENCRYPT_*), INSTOPT (default instance), THREADID 0, MARS
 * off and, with fedauth, FEDAUTHREQUIRED = 1. Returns the number of bytes written.
 */
size_t mc_prelogin_build(uint8_t encrypt_value, bool fedauth, uint8_t out[MC_PRELOGIN_REQUEST_MAX]);

/* What the server's PRELOGIN answer says. */
typedef struct mc_prelogin_reply {
  uint8_t version[6]; /* major, minor, build (2, big-endian), sub-build (2) */
  uint8_t encryption; /* MC_PRELOGIN_ENCRYPT_* */
  bool fedauth_required;
  bool has_nonce;
  uint8_t nonce[32];
} mc_prelogin_reply;

/*
 * Parses a server PRELOGIN payload. Every option's offset and length must lie inside the
 * payload, after the option table; unknown options are skipped. MC_EPROTO if the table has no
 * terminator, an option points outside the payload, or ENCRYPTION is missing.
 */
MC_NODISCARD mc_status mc_prelogin_parse(const uint8_t *payload, size_t len, mc_prelogin_reply *out,
                                         mc_error *err);

/* What the connection does after PRELOGIN. */
typedef enum mc_tls_plan {
  MC_TLS_NONE = 0,       /* plaintext throughout (Encrypt=optional, server cannot encrypt) */
  MC_TLS_LOGIN_ONLY = 1, /* TLS for the LOGIN7 packet only, then plaintext (both OFF) */
  MC_TLS_FULL = 2        /* TLS for the whole session */
} mc_tls_plan;

/* The ENCRYPTION value the client sends for an Encrypt mode. */
uint8_t mc_prelogin_client_encryption(mc_encrypt mode);

/*
 * Combines the client's mode and the server's answer (MS-TDS 2.2.6.5, ENCRYPTION table):
 * client OFF + server OFF = login only; + REQ = full; + NOT_SUP = none. Client ON + server ON
 * or REQ = full; anything else with Encrypt=yes is MC_EIO with a message saying the server
 * cannot encrypt. In strict mode TLS already wraps everything: always MC_TLS_FULL.
 */
MC_NODISCARD mc_status mc_prelogin_plan(mc_encrypt mode, uint8_t server_encryption,
                                        mc_tls_plan *plan, mc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_PRELOGIN_H */
