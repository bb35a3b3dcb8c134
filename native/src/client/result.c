/*
 * result.c: reading responses: requests, result sets as Arrow batches, errors, cancel
 * (conn.h; MS-TDS 2.2.7 token stream, 3.2.5.8 Attention).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"
#include "conn_io.h"

/* Handles the events that are not rows; returns true for METADATA and end of response. */
static bool bookkeeping(mc_conn *c, mc_tds_event ev) {
  switch (ev) {
    case MC_TDS_EVENT_MESSAGE: mc_conn_keep_message(c); return false;
    case MC_TDS_EVENT_ENVCHANGE: mc_conn_apply_envchange(c); return false;
    case MC_TDS_EVENT_DONE: {
      const mc_tds_done *d = mc_tds_decoder_done(c->dec);
      if (d->status & MC_TDS_DONE_COUNT) c->rows_affected = (int64_t)d->row_count;
      return false;
    }
    default: return ev == MC_TDS_EVENT_METADATA || ev == MC_TDS_EVENT_NONE;
  }
}

static mc_status server_error(mc_conn *c, mc_error *err) {
  const mc_tds_message *m = &c->message;
  return mc_error_set_server(err, MC_ESERVER, m->number, m->state, m->severity, m->message,
                             m->server, m->procedure, m->line);
}

/* Reads the rest of the response, dropping rows, keeping errors. */
static mc_status drain(mc_conn *c, mc_error *err) {
  while (c->in_request) {
    mc_tds_event ev;
    MC_RETURN_NOT_OK(mc_conn_next_event(c, &ev, err));
    if (ev == MC_TDS_EVENT_BATCH) {
      struct ArrowArray dropped;
      MC_RETURN_NOT_OK(mc_tds_decoder_take_batch(c->dec, &dropped, err));
      if (dropped.release != NULL) dropped.release(&dropped);
      continue;
    }
    bookkeeping(c, ev);
  }
  return MC_OK;
}

mc_status mc_conn_execute(mc_conn *c, const char *sql, size_t len, const mc_param *params,
                          size_t nparams, const mc_exec_options *options, mc_error *err) {
  if (c->broken) return mc_error_set(err, c->broken_status, "%s", c->broken_message);
  /* The deadline covers the whole request, the cancel of an unfinished previous one included. */
  c->request_timeout = options && options->timeout_seconds > 0 ? options->timeout_seconds : 0;
  c->request_deadline = c->request_timeout > 0 ? mc_now() + c->request_timeout : 0;
  if (c->in_request) MC_RETURN_NOT_OK(mc_conn_cancel(c, err));
  mc_tds_options want = {0};
  want.batch_rows = options && options->batch_rows > 0 ? options->batch_rows : 65536;
  want.batch_bytes = options && options->batch_bytes > 0 ? options->batch_bytes : 64u << 20;
  want.max_buffer = options && options->max_buffer > 0 ? options->max_buffer : c->params.max_buffer;
  if (want.batch_rows != c->dec_options.batch_rows ||
      want.batch_bytes != c->dec_options.batch_bytes ||
      want.max_buffer != c->dec_options.max_buffer) {
    mc_tds_decoder *d = mc_tds_decoder_new(&want);
    if (d == NULL) return mc_error_set(err, MC_ENOMEM, "out of memory");
    mc_tds_decoder_free(c->dec);
    c->dec = d;
    c->dec_options = want;
  }
  c->has_message = false;
  c->rows_affected = -1;
  uint8_t *payload = NULL;
  size_t payload_len = 0;
  uint8_t type = nparams > 0 ? MC_TDS_RPC : MC_TDS_SQLBATCH;
  if (nparams > 0) {
    MC_RETURN_NOT_OK(mc_request_rpc_executesql(c->transaction, sql, len, params, nparams, &payload,
                                               &payload_len, err));
  } else {
    MC_RETURN_NOT_OK(mc_request_sqlbatch(c->transaction, sql, len, &payload, &payload_len, err));
  }
  mc_status st = mc_conn_send(c, type, payload, payload_len, err);
  free(payload);
  MC_RETURN_NOT_OK(st);
  mc_conn_begin_response(c);
  for (;;) {
    mc_tds_event ev;
    MC_RETURN_NOT_OK(mc_conn_next_event(c, &ev, err));
    if (!bookkeeping(c, ev)) continue;
    if (ev == MC_TDS_EVENT_METADATA && !c->has_message) {
      c->has_result = true;
      return MC_OK;
    }
    if (ev == MC_TDS_EVENT_METADATA) continue; /* a result after an error: drained below */
    break;                                     /* end of response */
  }
  if (c->has_message) {
    MC_RETURN_NOT_OK(drain(c, err));
    return server_error(c, err);
  }
  return MC_OK;
}

bool mc_conn_has_result(const mc_conn *c) { return c->has_result; }

mc_status mc_conn_schema(mc_conn *c, struct ArrowSchema *out, mc_error *err) {
  if (!c->has_result) return mc_error_set(err, MC_EINVAL, "no result set is open");
  return mc_tds_decoder_export_schema(c->dec, out, err);
}

mc_status mc_conn_next_batch(mc_conn *c, struct ArrowArray *out, mc_error *err) {
  out->release = NULL;
  if (!c->has_result) return MC_OK;
  for (;;) {
    mc_tds_event ev;
    MC_RETURN_NOT_OK(mc_conn_next_event(c, &ev, err));
    if (ev == MC_TDS_EVENT_BATCH) {
      MC_RETURN_NOT_OK(mc_tds_decoder_take_batch(c->dec, out, err));
      if (out->release != NULL && out->length == 0) {
        out->release(out); /* an empty flush before DONE: keep going */
        continue;
      }
      return MC_OK;
    }
    if (ev == MC_TDS_EVENT_DONE || ev == MC_TDS_EVENT_METADATA || ev == MC_TDS_EVENT_NONE) {
      bookkeeping(c, ev);
      c->has_result = false; /* this result set ended; later ones are not read */
      MC_RETURN_NOT_OK(drain(c, err));
      if (c->has_message) return server_error(c, err);
      return MC_OK;
    }
    bookkeeping(c, ev);
    if (c->has_message) { /* an error in the middle of the rows (e.g. a conversion) */
      c->has_result = false;
      MC_RETURN_NOT_OK(drain(c, err));
      return server_error(c, err);
    }
  }
}

mc_status mc_conn_cancel(mc_conn *c, mc_error *err) {
  if (c->broken) return mc_error_set(err, c->broken_status, "%s", c->broken_message);
  c->has_result = false;
  if (!c->in_request) return MC_OK;
  /* Attention (MS-TDS 2.2.1.7): a header-only packet; then read until a DONE with ATTN,
   * which may come after the end of the current response message. */
  MC_RETURN_NOT_OK(mc_conn_send(c, MC_TDS_ATTENTION, NULL, 0, err));
  bool acknowledged = false;
  while (!acknowledged) {
    mc_tds_event ev;
    MC_RETURN_NOT_OK(mc_conn_next_event(c, &ev, err));
    if (ev == MC_TDS_EVENT_NONE) {
      mc_conn_begin_response(c); /* the acknowledgement comes in a message of its own */
      continue;
    }
    if (ev == MC_TDS_EVENT_BATCH) {
      struct ArrowArray dropped;
      MC_RETURN_NOT_OK(mc_tds_decoder_take_batch(c->dec, &dropped, err));
      if (dropped.release != NULL) dropped.release(&dropped);
    } else if (ev == MC_TDS_EVENT_DONE) {
      acknowledged = (mc_tds_decoder_done(c->dec)->status & MC_TDS_DONE_ATTN) != 0;
    } else if (ev == MC_TDS_EVENT_ENVCHANGE) {
      /* what the statements that ran changed still applies (a transaction begun or ended,
       * another database); their counts and messages are dropped with their rows */
      mc_conn_apply_envchange(c);
    }
  }
  MC_RETURN_NOT_OK(drain(c, err));
  c->has_message = false;
  return MC_OK;
}
