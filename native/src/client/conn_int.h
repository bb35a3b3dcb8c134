/*
 * conn_int.h (private): the connection struct shared by conn.c (open, login, close),
 * conn_io.c (byte I/O, conn_io.h), request.c (SQLBatch and RPC payloads) and result.c
 * (reading responses).
 */
#ifndef MSSQLCDC_CONN_INT_H
#define MSSQLCDC_CONN_INT_H

#include "mssqlcdc/conn.h"
#include "mssqlcdc/packet.h"
#include "transport.h"

#define MC_READ_BUFFER 32768

struct mc_conn {
  mc_transport t;
  mc_conn_params params;  /* password wiped after login */
  uint32_t packet_size;   /* negotiated */
  uint8_t transaction[8]; /* ALL_HEADERS transaction descriptor (ENVCHANGE 8/9/10) */

  mc_tds_decoder *dec;
  mc_tds_options dec_options;
  mc_tds_deframer deframer;
  bool response_done; /* the EOM packet of the response has been fed */
  bool finished;      /* mc_tds_decoder_finish ran */
  bool in_request;    /* a response is being read */
  bool has_result;    /* a result set is open */
  bool broken;
  mc_status broken_status;
  char broken_message[MC_ERROR_MESSAGE_SIZE];
  double request_deadline; /* absolute mc_now() deadline of the current request; 0 = none */
  double request_timeout;  /* the seconds that deadline was set from (for the message) */
  double login_deadline;   /* absolute mc_now() deadline during login; 0 = none */

  bool has_message;
  mc_tds_message message;
  char message_text[4096];
  char message_server[256];
  char message_procedure[256];
  int64_t rows_affected;

  uint64_t packets_before; /* packets counted by earlier deframers */
  uint64_t round_trips;
  double decode_seconds;

  char server_version[32];
  char database[MC_CONN_NAME_SIZE];
  char routing_host[MC_CONN_HOST_SIZE];
  uint16_t routing_port;
  uint8_t rbuf[MC_READ_BUFFER]; /* the PRELOGIN reply; responses go straight to the decoder */
};

/* Payload builders (request.c). *out is malloc'd; the caller frees it. */
MC_NODISCARD mc_status mc_request_sqlbatch(const uint8_t transaction[8], const char *sql,
                                           size_t len, uint8_t **out, size_t *out_len,
                                           mc_error *err);
MC_NODISCARD mc_status mc_request_rpc_executesql(const uint8_t transaction[8], const char *sql,
                                                 size_t len, const mc_param *params, size_t nparams,
                                                 uint8_t **out, size_t *out_len, mc_error *err);

#endif /* MSSQLCDC_CONN_INT_H */
