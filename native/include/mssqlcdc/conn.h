/*
 * conn.h: a TDS client connection (blocking, with deadlines) and its result stream.
 *
 *   mc_conn *c;
 *   mc_conn_open(&params, &auth, &c, &err);             // TCP, PRELOGIN, TLS, LOGIN7
 *   mc_conn_execute(c, sql, len, NULL, 0, &opts, &err); // SQLBatch, or RPC sp_executesql
 *   while (mc_conn_next_batch(c, &array, &err) == MC_OK && array.release != NULL) { ... }
 *   mc_conn_close(c);
 *
 * One request at a time. A result set's rows arrive as Arrow struct arrays of at most
 * batch_rows rows / batch_bytes TDS bytes; the schema is mc_conn_schema's. A server ERROR ends
 * the request with MC_ESERVER, err->server (and mc_conn_last_message) holding number, state,
 * class, text, server, procedure and line; the connection stays usable after it. MC_ECLOSED,
 * MC_EIO, MC_ETIMEOUT, MC_EPROTO, MC_EUNSUPPORTED, MC_ERANGE and MC_ETLS leave it broken:
 * close it and open a new one.
 */
#ifndef MSSQLCDC_CONN_H
#define MSSQLCDC_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mssqlcdc/arrow.h"
#include "mssqlcdc/connstr.h"
#include "mssqlcdc/status.h"
#include "mssqlcdc/tds.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mc_conn mc_conn;

/* Credentials that override the connection string's. NULL fields keep its values. */
typedef struct mc_conn_auth {
  const char *user;
  const char *password;
  const char *access_token; /* Entra ID access token (JWT); replaces user and password */
} mc_conn_auth;

/* Counters of one connection since it opened. */
typedef struct mc_conn_stats {
  uint64_t bytes_received;
  uint64_t bytes_sent;
  uint64_t packets_received;
  uint64_t round_trips;
  double network_wait_seconds;
  double decode_seconds;
} mc_conn_stats;

/* A typed parameter of an RPC call (sp_executesql). */
typedef enum mc_param_type {
  MC_PARAM_NULL = 0, /* sent as nvarchar(1) NULL */
  MC_PARAM_INT64,    /* bigint */
  MC_PARAM_FLOAT64,  /* float */
  MC_PARAM_BOOL,     /* bit */
  MC_PARAM_TEXT,     /* nvarchar(n) or nvarchar(max), from UTF-8 */
  MC_PARAM_BINARY    /* varbinary(n) or varbinary(max); binary(10) when 10 bytes */
} mc_param_type;

typedef struct mc_param {
  mc_param_type type;
  int64_t i64;
  double f64;
  const uint8_t *bytes; /* TEXT: UTF-8; BINARY: raw */
  size_t len;
} mc_param;

typedef struct mc_exec_options {
  int64_t batch_rows;     /* 0 = 65536 */
  size_t batch_bytes;     /* 0 = 64 MiB */
  double timeout_seconds; /* 0 = none: a deadline for the whole request, from its start until
                           * its last byte arrives (not per read: a server that trickles bytes
                           * cannot hold it open longer) */
  size_t max_buffer;      /* 0 = the connection's (mc_conn_params.max_buffer): the most bytes of
                           * one row or token (so one value) held; past it MC_EPROTO */
} mc_exec_options;

/* Connects and logs in. On failure *out is NULL and err says why; a login refused by the
 * server is MC_ELOGIN with the server's ERROR token as data in err->server (e.g. 18456, state,
 * class, message, server name), so the caller never parses the message. Follows one routing
 * ENVCHANGE. */
MC_NODISCARD mc_status mc_conn_open(const mc_conn_params *params, const mc_conn_auth *auth,
                                    mc_conn **out, mc_error *err);

/* Sends sql (UTF-8) as a SQLBatch, or with params as RPC sp_executesql (@P1, @P2, ...), and
 * reads up to the first result set or the end. mc_conn_has_result tells which. */
MC_NODISCARD mc_status mc_conn_execute(mc_conn *c, const char *sql, size_t len,
                                       const mc_param *params, size_t nparams,
                                       const mc_exec_options *options, mc_error *err);

/* True while a result set is open (its schema is available and batches may follow). */
bool mc_conn_has_result(const mc_conn *c);

/* Exports the open result set's schema. */
MC_NODISCARD mc_status mc_conn_schema(mc_conn *c, struct ArrowSchema *out, mc_error *err);

/* The next batch of the open result set; out->release is NULL at its end (then the request
 * is drained to its last DONE, so the connection is ready for the next one). */
MC_NODISCARD mc_status mc_conn_next_batch(mc_conn *c, struct ArrowArray *out, mc_error *err);

/* Discards the rest of the request: sends Attention if rows are still coming and waits for the
 * server's acknowledgement, leaving the connection usable. */
MC_NODISCARD mc_status mc_conn_cancel(mc_conn *c, mc_error *err);

/* The last ERROR token of the request (valid until the next request), or NULL. */
const mc_tds_message *mc_conn_last_message(const mc_conn *c);

/* Rows affected by the last statement that reported a count (DONE with COUNT), or -1. */
int64_t mc_conn_rows_affected(const mc_conn *c);

void mc_conn_stats_get(const mc_conn *c, mc_conn_stats *out);

/* The server's product version ("16.0.1000") and the current database. */
const char *mc_conn_server_version(const mc_conn *c);
const char *mc_conn_database(const mc_conn *c);

/* Whether the server's last transaction ENVCHANGE left a transaction open on this connection
 * (a BEGIN reported, no COMMIT or ROLLBACK since): the descriptor sent with each request. */
bool mc_conn_in_transaction(const mc_conn *c);

/* Makes a read blocked in another thread return at once (MC_ECLOSED or MC_EIO) by shutting the
 * socket down; the connection is unusable afterwards. The only call that may run while another
 * thread uses the connection. */
void mc_conn_interrupt(mc_conn *c);

/* Closes the socket and frees everything. NULL is ignored. */
void mc_conn_close(mc_conn *c);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_CONN_H */
