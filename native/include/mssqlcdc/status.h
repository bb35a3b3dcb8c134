/*
 * status.h: return codes and the error message struct shared by every part of the
 * mssqlcdc C library.
 *
 * Functions that can fail return an mc_status (0 on success) and, when the caller passes a
 * non-NULL mc_error, write one human-readable sentence into it. When SQL Server itself refused
 * (MC_ESERVER, MC_ELOGIN) the error also holds the server's ERROR token as data (number, state,
 * class, text, server, procedure, line), so no caller parses the sentence. The message never
 * holds a secret (password, access token): callers build messages from names and sizes, not
 * values. The library never calls exit() or abort() (a build check runs nm on its objects).
 */
#ifndef MSSQLCDC_STATUS_H
#define MSSQLCDC_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MC_NODISCARD __attribute__((warn_unused_result))
#define MC_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define MC_NODISCARD
#define MC_PRINTF(fmt_idx, arg_idx)
#endif

/* Outcome of a call. "Need more" is kept apart from "corrupt", and "corrupt" from "not
 * supported" and "too large" (STYLE.md, libpq): a caller retries none of the three the same
 * way. The values are stable; MC_STATUS_COUNT is one past the last. */
typedef enum mc_status {
  MC_OK = 0,
  MC_EINVAL = 1,        /* bad argument or bad input text from the caller */
  MC_ERANGE = 2,        /* a value or a batch too large to hold (overflow, underflow) */
  MC_ENOMEM = 3,        /* allocation failed */
  MC_EPROTO = 4,        /* malformed or truncated server stream */
  MC_NEEDMORE = 5,      /* not enough bytes yet; not an error for streaming parsers */
  MC_EIO = 6,           /* socket failure */
  MC_ETIMEOUT = 7,      /* a deadline passed */
  MC_ESERVER = 8,       /* the server answered a request with an ERROR token */
  MC_ETLS = 9,          /* TLS handshake or certificate verification failed */
  MC_ECLOSED = 10,      /* the server closed the connection */
  MC_EUNSUPPORTED = 11, /* well-formed data this library does not decode (a data type, a code
                           page): the same request fails the same way again */
  MC_ELOGIN = 12,       /* the server answered the login with an ERROR token (e.g. 18456) */
  MC_STATUS_COUNT = 13
} mc_status;

#define MC_ERROR_MESSAGE_SIZE 512
#define MC_SERVER_TEXT_SIZE 4096 /* an ERROR token's message, UTF-8 (truncated beyond) */
#define MC_SERVER_NAME_SIZE 256  /* an ERROR token's server or procedure name, UTF-8 */

/* An ERROR token (MS-TDS 2.2.7.10) as data. */
typedef struct mc_server_error {
  int32_t number;   /* e.g. 18456, 1205, 229 */
  uint8_t state;    /* the error state */
  uint8_t severity; /* the error class, 11-25 for errors */
  uint32_t line;    /* line of the batch or procedure */
  char message[MC_SERVER_TEXT_SIZE];
  char server[MC_SERVER_NAME_SIZE];    /* "" if the token names none */
  char procedure[MC_SERVER_NAME_SIZE]; /* "" if the token names none */
} mc_server_error;

/* One error, written by status.c only. Stack-allocate it; no cleanup needed. */
typedef struct mc_error {
  char message[MC_ERROR_MESSAGE_SIZE]; /* one sentence, for people and logs */
  bool has_server;                     /* server holds the ERROR token (MC_ESERVER, MC_ELOGIN) */
  mc_server_error server;
} mc_error;

/* Writes a formatted message into err (if err is not NULL), clears has_server and returns
 * status, so callers can write `return mc_error_set(err, MC_EINVAL, "...", ...);`. */
mc_status mc_error_set(mc_error *err, mc_status status, const char *fmt, ...) MC_PRINTF(3, 4);

/* Writes the server's error into err (if not NULL): the fields as data, and the sentence
 * "[number] message (procedure p, line n)" (the procedure part only when one is named); NULL
 * strings count as "". Returns status (MC_ESERVER or MC_ELOGIN). */
mc_status mc_error_set_server(mc_error *err, mc_status status, int32_t number, uint8_t state,
                              uint8_t severity, const char *message, const char *server,
                              const char *procedure, uint32_t line);

/* A short constant name for a status ("EINVAL"), for logs, tests and the Python binding
 * (which maps names to exception classes); "UNKNOWN" outside the enum. */
const char *mc_status_name(mc_status status);

#define MC_RETURN_NOT_OK(expr)         \
  do {                                 \
    mc_status mc_status_tmp_ = (expr); \
    if (mc_status_tmp_ != MC_OK) {     \
      return mc_status_tmp_;           \
    }                                  \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_STATUS_H */
