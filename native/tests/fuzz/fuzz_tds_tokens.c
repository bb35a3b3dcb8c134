/*
 * fuzz_tds_tokens.c: libFuzzer target for the TDS token and row decoder (tds.h). The first
 * input byte picks where the rest is split into two feeds and the batch size; the decoder
 * must then either decode events and batches (which are exported and released) or fail
 * cleanly with a message: never crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mssqlcdc/tds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Drains events; returns the final status. */
static mc_status drain(mc_tds_decoder *d) {
  for (;;) {
    mc_tds_event ev;
    mc_error err;
    err.message[0] = '\0';
    mc_status st = mc_tds_decoder_next(d, &ev, &err);
    if (st == MC_NEEDMORE) return st;
    if (st != MC_OK) {
      if (err.message[0] == '\0') abort(); /* every failure explains itself */
      return st;
    }
    if (ev == MC_TDS_EVENT_METADATA) {
      struct ArrowSchema schema;
      if (mc_tds_decoder_export_schema(d, &schema, &err) == MC_OK) schema.release(&schema);
    } else if (ev == MC_TDS_EVENT_BATCH) {
      struct ArrowArray array;
      if (mc_tds_decoder_take_batch(d, &array, &err) != MC_OK) return MC_ENOMEM;
      if (array.length <= 0) abort(); /* a batch event always carries rows */
      array.release(&array);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t control = data[0];
  data++;
  size--;
  mc_tds_options opts;
  memset(&opts, 0, sizeof opts);
  opts.batch_rows = 1 + (control & 7);
  opts.max_buffer = 1 << 20;
  mc_tds_decoder *d = mc_tds_decoder_new(&opts);
  if (d == NULL) return 0;
  size_t split = size == 0 ? 0 : ((size_t)(control >> 3) * 7919u) % size;
  mc_error err;
  mc_status st = mc_tds_decoder_feed(d, data, split, &err);
  if (st == MC_OK) st = drain(d);
  if (st == MC_NEEDMORE) {
    st = mc_tds_decoder_feed(d, data + split, size - split, &err);
    if (st == MC_OK) st = drain(d);
  }
  if (st == MC_NEEDMORE && mc_tds_decoder_finish(d, &err) != MC_OK && err.message[0] == 0) abort();
  mc_tds_decoder_free(d);
  return 0;
}
