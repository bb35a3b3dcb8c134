/*
 * status.h: return codes and the error message struct shared by every part of the
 * mssqlcdc C library.
 *
 * Functions that can fail return an mc_status (0 on success) and, when the caller passes a
 * non-NULL mc_error, write one human-readable sentence into it. The message never holds a
 * secret (password, access token): callers build messages from names and sizes, not values.
 * The library never calls exit() or abort().
 */
#ifndef MSSQLCDC_STATUS_H
#define MSSQLCDC_STATUS_H

#include <stddef.h>

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

/* Outcome of a call. "Need more" is kept apart from "corrupt" (STYLE.md, libpq). */
typedef enum mc_status {
  MC_OK = 0,
  MC_EINVAL = 1,   /* bad argument or bad input text from the caller */
  MC_ERANGE = 2,   /* result out of range (overflow, underflow) */
  MC_ENOMEM = 3,   /* allocation failed */
  MC_EPROTO = 4,   /* malformed or truncated server stream */
  MC_NEEDMORE = 5, /* not enough bytes yet; not an error for streaming parsers */
  MC_EIO = 6,      /* socket failure */
  MC_ETIMEOUT = 7, /* a deadline passed */
  MC_ESERVER = 8,  /* the server answered with an ERROR token */
  MC_ETLS = 9,     /* TLS handshake or certificate verification failed */
  MC_ECLOSED = 10  /* the server closed the connection */
} mc_status;

#define MC_ERROR_MESSAGE_SIZE 512

/* One message, written by mc_error_set only. Stack-allocate it; no cleanup needed. */
typedef struct mc_error {
  char message[MC_ERROR_MESSAGE_SIZE];
} mc_error;

/* Writes a formatted message into err (if err is not NULL) and returns status, so callers can
 * write `return mc_error_set(err, MC_EINVAL, "...", ...);`. */
mc_status mc_error_set(mc_error *err, mc_status status, const char *fmt, ...) MC_PRINTF(3, 4);

/* A short constant name for a status ("EINVAL"), for logs and tests. */
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
