/*
 * decoder.c: the decoder's life cycle (tds.h): options, the input buffer that feed() appends
 * to (libpq's inBuffer with start/end: consumed bytes are dropped lazily by moving the
 * unconsumed tail down), the sticky broken state, batch hand-over and the accessors.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tds/tds_int.h"

#define DEFAULT_BATCH_ROWS 65536
#define DEFAULT_BATCH_BYTES ((size_t)64 << 20)
#define DEFAULT_MAX_BUFFER ((size_t)1 << 30)

mc_tds_decoder *mc_tds_decoder_new(const mc_tds_options *options) {
  mc_tds_decoder *d = calloc(1, sizeof *d);
  if (d == NULL) return NULL;
  if (options != NULL) d->opt = *options;
  if (d->opt.batch_rows <= 0) d->opt.batch_rows = DEFAULT_BATCH_ROWS;
  if (d->opt.batch_bytes == 0) d->opt.batch_bytes = DEFAULT_BATCH_BYTES;
  if (d->opt.max_buffer == 0) d->opt.max_buffer = DEFAULT_MAX_BUFFER;
  /* Released batches' buffers are kept for the next ones, up to about two batches. */
  size_t keep = d->opt.batch_bytes > SIZE_MAX / 2 ? SIZE_MAX : d->opt.batch_bytes * 2;
  d->pool = mc_arrow_pool_new(keep);
  if (d->pool == NULL) {
    free(d);
    return NULL;
  }
  return d;
}

void mc_tds_decoder_reset(mc_tds_decoder *d) {
  mc_tds_result_free(d);
  mc_arrow_pool_trim(d->pool); /* an idle decoder holds no released buffers */
  d->start = 0;
  d->end = 0;
  d->want = 0;
  d->broken = MC_OK;
  d->broken_msg[0] = '\0';
  d->text.size = 0;
  memset(&d->done, 0, sizeof d->done);
  memset(&d->msg, 0, sizeof d->msg);
  memset(&d->env, 0, sizeof d->env);
  memset(&d->ack, 0, sizeof d->ack);
  d->return_status = 0;
}

void mc_tds_decoder_free(mc_tds_decoder *d) {
  if (d == NULL) return;
  mc_tds_result_free(d);
  free(d->buf);
  mc_arrow_buffer_free(&d->scratch);
  mc_arrow_buffer_free(&d->text);
  mc_arrow_pool_close(d->pool);
  free(d);
}

mc_status mc_tds_decoder_space(mc_tds_decoder *d, size_t min, uint8_t **space, size_t *room,
                               mc_error *err) {
  if (d->broken != MC_OK) return mc_error_set(err, d->broken, "%s", d->broken_msg);
  size_t live = d->end - d->start;
  if (min > d->opt.max_buffer || live > d->opt.max_buffer - min) {
    /* Well-formed data the client refuses to hold: the same request fails the same way again,
     * so it is MC_EUNSUPPORTED (permanent, never retried), not MC_EPROTO (a broken stream). */
    d->broken = MC_EUNSUPPORTED;
    snprintf(d->broken_msg, sizeof d->broken_msg,
             "a token or row (so one value) needs more than %zu bytes held in memory, the "
             "limit max_buffer (the reader option maxRowBytes)",
             d->opt.max_buffer);
    return mc_error_set(err, MC_EUNSUPPORTED, "%s", d->broken_msg);
  }
  if (d->cap - d->end < min) {
    if (d->start > 0) { /* drop consumed bytes first */
      memmove(d->buf, d->buf + d->start, live);
      d->end = live;
      d->start = 0;
    }
    if (d->cap - d->end < min) {
      size_t cap = d->cap < 4096 ? 4096 : d->cap;
      while (cap - d->end < min) cap *= 2;
      uint8_t *p = realloc(d->buf, cap);
      if (p == NULL) {
        return mc_error_set(err, MC_ENOMEM, "out of memory buffering %zu bytes", live + min);
      }
      d->buf = p;
      d->cap = cap;
    }
  }
  *space = d->buf + d->end;
  *room = d->cap - d->end;
  return MC_OK;
}

void mc_tds_decoder_commit(mc_tds_decoder *d, size_t n) { d->end += n; }

mc_status mc_tds_decoder_feed(mc_tds_decoder *d, const uint8_t *bytes, size_t n, mc_error *err) {
  if (d->broken != MC_OK) return mc_error_set(err, d->broken, "%s", d->broken_msg);
  if (n == 0) return MC_OK;
  uint8_t *space;
  size_t room;
  MC_RETURN_NOT_OK(mc_tds_decoder_space(d, n, &space, &room, err));
  memcpy(space, bytes, n);
  mc_tds_decoder_commit(d, n);
  return MC_OK;
}

mc_status mc_tds_decoder_finish(mc_tds_decoder *d, mc_error *err) {
  if (d->broken != MC_OK) return mc_error_set(err, d->broken, "%s", d->broken_msg);
  if (d->end != d->start) {
    return mc_error_set(err, MC_EPROTO,
                        "response truncated: it ends inside token 0x%02X with %zu bytes left",
                        d->buf[d->start], d->end - d->start);
  }
  return MC_OK;
}

size_t mc_tds_decoder_buffered(const mc_tds_decoder *d) { return d->end - d->start; }

int64_t mc_tds_decoder_column_count(const mc_tds_decoder *d) { return d->ncols; }

const char *mc_tds_decoder_column_name(const mc_tds_decoder *d, int64_t i) {
  return (i >= 0 && i < d->ncols) ? d->cols[i].name : NULL;
}

uint8_t mc_tds_decoder_column_type(const mc_tds_decoder *d, int64_t i) {
  return (i >= 0 && i < d->ncols) ? d->cols[i].type : 0;
}

int64_t mc_tds_decoder_pending_rows(const mc_tds_decoder *d) { return d->batch.length; }

mc_status mc_tds_decoder_export_schema(const mc_tds_decoder *d, struct ArrowSchema *out,
                                       mc_error *err) {
  return mc_arrow_batch_export_schema(&d->batch, out, err);
}

mc_status mc_tds_decoder_take_batch(mc_tds_decoder *d, struct ArrowArray *out, mc_error *err) {
  int64_t rows = d->batch.length;
  for (int64_t i = 0; i < d->ncols; i++) { /* the next batch reserves what this one needed */
    size_t used = d->batch.columns[i].values.size;
    if (used > d->cols[i].data_hint) d->cols[i].data_hint = used;
  }
  MC_RETURN_NOT_OK(mc_arrow_batch_export(&d->batch, out, err));
  if (rows > d->last_batch_rows) d->last_batch_rows = rows;
  d->row_cap = 0;
  d->batch_ready = 0;
  d->batch_wire_bytes = 0;
  return MC_OK;
}

const mc_tds_done *mc_tds_decoder_done(const mc_tds_decoder *d) { return &d->done; }
const mc_tds_message *mc_tds_decoder_message(const mc_tds_decoder *d) { return &d->msg; }
int32_t mc_tds_decoder_return_status(const mc_tds_decoder *d) { return d->return_status; }
const mc_tds_envchange *mc_tds_decoder_envchange(const mc_tds_decoder *d) { return &d->env; }
const mc_tds_loginack *mc_tds_decoder_loginack(const mc_tds_decoder *d) { return &d->ack; }
