/*
 * connstr.h: ODBC-style SQL Server connection strings.
 *
 * "Server=tcp:sqlhost,1433;Database=sales;UID=reader;PWD={a;b}}c};Encrypt=strict"
 *
 * Pairs are separated by ';', keys are matched ignoring case and surrounding spaces, values are
 * trimmed unless braced; a braced value runs to the matching '}' with "}}" standing for one '}'
 * (the ODBC connection-string grammar). A key given twice keeps its last value. Keywords and
 * defaults follow Microsoft ODBC Driver 18 ("DSN and connection string keywords", Microsoft Learn):
 * Encrypt defaults to yes (mandatory) and the certificate is validated unless
 * TrustServerCertificate=yes.
 *
 * Secrets: the password is held in a fixed buffer that mc_conn_params_clear wipes; no error
 * message ever quotes the value of PWD / Password.
 */
#ifndef MSSQLCDC_CONNSTR_H
#define MSSQLCDC_CONNSTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mssqlcdc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How TLS is used (ODBC Driver 18's Encrypt keyword). */
typedef enum mc_encrypt {
  MC_ENCRYPT_OPTIONAL = 0,  /* "no" / "optional": TLS for the login packet only (TDS 7.x) */
  MC_ENCRYPT_MANDATORY = 1, /* "yes" / "mandatory" (the default): TDS 7.x TLS, whole session */
  MC_ENCRYPT_STRICT = 2     /* "strict": TDS 8.0, TLS before PRELOGIN, ALPN tds/8.0 */
} mc_encrypt;

/* Sizes include the NUL. SQL Server names are at most 128 UTF-16 code units, up to 3 UTF-8
 * bytes each, so 3 * 128 + 1. */
#define MC_CONN_NAME_SIZE 385
#define MC_CONN_HOST_SIZE 256
#define MC_CONN_UNKNOWN_SIZE 256

typedef struct mc_conn_params {
  char host[MC_CONN_HOST_SIZE]; /* "localhost" for "." and "(local)" */
  uint16_t port;                /* default 1433 */
  char database[MC_CONN_NAME_SIZE];
  char user[MC_CONN_NAME_SIZE];
  char password[MC_CONN_NAME_SIZE];
  bool has_user;
  bool has_password;
  mc_encrypt encrypt;                               /* default MC_ENCRYPT_MANDATORY */
  bool trust_server_certificate;                    /* default false */
  char host_name_in_certificate[MC_CONN_HOST_SIZE]; /* "" = use host */
  double login_timeout_seconds;                     /* default 30; 0 = no limit */
  uint32_t packet_size;                             /* default 32767 (512..32767) */
  char application_name[MC_CONN_NAME_SIZE];         /* default "mssql-cdc" */
  bool read_only_intent;                            /* ApplicationIntent=ReadOnly */
  char unknown_keys[MC_CONN_UNKNOWN_SIZE];          /* ", "-separated names, for a warning */
  size_t max_buffer; /* 0 = 1 GiB: the most bytes of one row or token held (not in strings) */
} mc_conn_params;

/* Sets every field to its default. */
void mc_conn_params_init(mc_conn_params *params);

/*
 * Parses a connection string of length len into params (which the caller initialised with
 * mc_conn_params_init; keys not in the string keep their values). Unknown keys are collected
 * in params->unknown_keys, not rejected.
 *
 * Returns MC_OK, or MC_EINVAL with a message naming the keyword and what is allowed (a bad
 * value of a non-secret keyword is quoted; a password never is).
 */
MC_NODISCARD mc_status mc_conn_params_parse(mc_conn_params *params, const char *text, size_t len,
                                            mc_error *err);

/* Wipes the password (and everything else) so no secret stays in memory. */
void mc_conn_params_clear(mc_conn_params *params);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_CONNSTR_H */
