/*
 * conn_io.h (private): the connection's byte I/O and response bookkeeping (conn_io.c), the
 * layer conn.c and result.c both stand on.
 */
#ifndef MSSQLCDC_CONN_IO_H
#define MSSQLCDC_CONN_IO_H

#include "conn_int.h"

/* Sends payload as one message of the given packet type (negotiated packet size). */
MC_NODISCARD mc_status mc_conn_send(mc_conn *c, uint8_t type, const uint8_t *payload, size_t len,
                                    mc_error *err);

/* Starts reading a new response message. */
void mc_conn_begin_response(mc_conn *c);

/* The next decoder event of the response; MC_TDS_EVENT_NONE at its clean end. Reads from the
 * network as needed. Any failure marks the connection broken. */
MC_NODISCARD mc_status mc_conn_next_event(mc_conn *c, mc_tds_event *ev, mc_error *err);

/* The deadline of the next network wait: the login's or the current request's (absolute). */
double mc_conn_deadline(const mc_conn *c);

/* Copies the decoder's current ERROR token into the connection. */
void mc_conn_keep_message(mc_conn *c);

/* Applies an ENVCHANGE (packet size, database, transaction, routing). */
void mc_conn_apply_envchange(mc_conn *c);

/* Marks the connection unusable with st and err's message; returns st. */
mc_status mc_conn_fail(mc_conn *c, mc_status st, mc_error *err);

#endif /* MSSQLCDC_CONN_IO_H */
