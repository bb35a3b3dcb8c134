/*
 * conn_io.c: the connection's byte I/O, shared by conn.c (the login) and result.c (requests):
 * sending a message in packets, reading a response's packets into the decoder (MS-TDS 2.2.3.1
 * framing, 2.2.1.7 for bytes past a response's end), the broken state, and the bookkeeping of
 * the ERROR and ENVCHANGE tokens any response may carry (MS-TDS 2.2.7.10, 2.2.7.9).
 *
 * Neither conn.c nor result.c calls the other: both call down into this file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "conn_int.h"
#include "conn_io.h"

mc_status mc_conn_fail(mc_conn *c, mc_status st, mc_error *err) {
  if (st == MC_OK || st == MC_ESERVER) return st;
  c->broken = true;
  c->broken_status = st;
  snprintf(c->broken_message, sizeof c->broken_message, "%s",
           err != NULL ? err->message : "connection failed");
  return st;
}

double mc_conn_deadline(const mc_conn *c) {
  if (c->login_deadline > 0) return c->login_deadline;
  return c->request_deadline;
}

mc_status mc_conn_send(mc_conn *c, uint8_t type, const uint8_t *payload, size_t len,
                       mc_error *err) {
  size_t cap = mc_tds_framed_size(len, c->packet_size);
  uint8_t *framed = malloc(cap);
  if (framed == NULL) return mc_error_set(err, MC_ENOMEM, "out of memory sending a request");
  size_t written = 0;
  mc_status st = mc_tds_frame(type, payload, len, c->packet_size, 1, framed, cap, &written, err);
  if (st == MC_OK) {
    st = mc_transport_write(&c->t, framed, written, mc_conn_deadline(c), err);
  }
  OPENSSL_cleanse(framed, cap); /* LOGIN7 holds secrets */
  free(framed);
  if (st == MC_OK) c->round_trips++;
  return mc_conn_fail(c, st, err);
}

void mc_conn_keep_message(mc_conn *c) {
  const mc_tds_message *m = mc_tds_decoder_message(c->dec);
  if (m == NULL || !m->is_error) return;
  if (c->has_message) return; /* the first error is the cause; later ones follow from it */
  c->has_message = true;
  c->message = *m;
  snprintf(c->message_text, sizeof c->message_text, "%s", m->message ? m->message : "");
  snprintf(c->message_server, sizeof c->message_server, "%s", m->server ? m->server : "");
  snprintf(c->message_procedure, sizeof c->message_procedure, "%s",
           m->procedure ? m->procedure : "");
  c->message.message = c->message_text;
  c->message.server = c->message_server;
  c->message.procedure = c->message_procedure;
}

void mc_conn_apply_envchange(mc_conn *c) {
  const mc_tds_envchange *e = mc_tds_decoder_envchange(c->dec);
  if (e == NULL) return;
  switch (e->type) {
    case MC_TDS_ENV_PACKET_SIZE:
      if (e->packet_size >= MC_TDS_MIN_PACKET && e->packet_size <= MC_TDS_MAX_PACKET) {
        c->packet_size = e->packet_size;
      }
      break;
    case MC_TDS_ENV_DATABASE:
      snprintf(c->database, sizeof c->database, "%s", e->new_value ? e->new_value : "");
      break;
    case MC_TDS_ENV_BEGIN_TRAN:
      if (e->new_len == 8) memcpy(c->transaction, e->new_bytes, 8);
      break;
    case MC_TDS_ENV_COMMIT_TRAN:
    case MC_TDS_ENV_ROLLBACK_TRAN: memset(c->transaction, 0, 8); break;
    case MC_TDS_ENV_ROUTING:
      if (e->routing_server != NULL) {
        snprintf(c->routing_host, sizeof c->routing_host, "%s", e->routing_server);
        c->routing_port = e->routing_port;
      }
      break;
    default: break;
  }
}

void mc_conn_begin_response(mc_conn *c) {
  c->packets_before += c->deframer.packets;
  mc_tds_deframer_init(&c->deframer, MC_TDS_REPLY, MC_TDS_MAX_PACKET);
  mc_tds_decoder_reset(c->dec);
  c->response_done = false;
  c->finished = false;
  c->in_request = true;
  c->has_result = false;
}

/* Reads once from the network into the decoder (MS-TDS 2.2.3.1 framing). Payload bytes go
 * from the socket straight into the decoder's input buffer, with no copy in between: inside a
 * packet it reads the rest of the packet's payload plus, unless the packet is the last, the
 * next packet's 8-byte header, which lands behind the payload and is moved to the deframer.
 * It never reads past the last packet of the response, so the next message (an Attention
 * acknowledgement, MS-TDS 2.2.1.7) stays in the socket for the next response. */
static mc_status pump(mc_conn *c, mc_error *err) {
  mc_tds_deframer *f = &c->deframer;
  size_t got = 0;
  if (!f->in_packet) { /* a header, or the rest of one */
    MC_RETURN_NOT_OK(mc_transport_read(&c->t, f->header + f->header_have,
                                       MC_TDS_HEADER_SIZE - f->header_have, &got,
                                       mc_conn_deadline(c), err));
    f->header_have += got;
    if (f->header_have == MC_TDS_HEADER_SIZE) MC_RETURN_NOT_OK(mc_tds_deframer_take_header(f, err));
  } else {
    size_t ask = f->payload_left + (f->last_packet ? 0 : MC_TDS_HEADER_SIZE);
    uint8_t *space;
    size_t room;
    MC_RETURN_NOT_OK(mc_tds_decoder_space(c->dec, ask, &space, &room, err));
    MC_RETURN_NOT_OK(mc_transport_read(&c->t, space, ask, &got, mc_conn_deadline(c), err));
    size_t payload = got < f->payload_left ? got : f->payload_left;
    mc_tds_decoder_commit(c->dec, payload);
    f->payload_left -= payload;
    if (f->payload_left == 0) {
      f->in_packet = false;
      if (f->last_packet) f->done = true;
      size_t extra = got - payload; /* the start of the next header */
      memcpy(f->header, space + payload, extra);
      f->header_have = extra;
      if (extra == MC_TDS_HEADER_SIZE) MC_RETURN_NOT_OK(mc_tds_deframer_take_header(f, err));
    }
  }
  if (f->done) c->response_done = true;
  return MC_OK;
}

mc_status mc_conn_next_event(mc_conn *c, mc_tds_event *ev, mc_error *err) {
  if (c->broken) return mc_error_set(err, c->broken_status, "%s", c->broken_message);
  for (;;) {
    double start = mc_now();
    mc_status st = mc_tds_decoder_next(c->dec, ev, err);
    c->decode_seconds += mc_now() - start;
    if (st == MC_OK) return MC_OK;
    if (st != MC_NEEDMORE) return mc_conn_fail(c, st, err);
    if (c->response_done) {
      st = mc_tds_decoder_finish(c->dec, err);
      if (st != MC_OK) return mc_conn_fail(c, st, err);
      c->finished = true;
      c->in_request = false;
      c->has_result = false;
      *ev = MC_TDS_EVENT_NONE;
      return MC_OK;
    }
    st = pump(c, err);
    if (st == MC_ETIMEOUT && c->login_deadline == 0 && c->request_deadline > 0) {
      st = mc_error_set(err, MC_ETIMEOUT,
                        "the request did not finish within its deadline of %.3g s "
                        "(query_timeout); the connection is closed",
                        c->request_timeout);
    }
    if (st != MC_OK) return mc_conn_fail(c, st, err);
  }
}
