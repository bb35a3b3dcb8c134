/*
 * test_tds_support.h: helpers shared by the TDS decoder tests: a byte builder for hand-made
 * token streams, a driver that feeds a response in chunks (or split at one byte offset) and
 * records everything the decoder reports as a transcript, so that every way of splitting the
 * same bytes can be compared with the one-shot decode.
 */
#ifndef MSSQLCDC_TEST_TDS_SUPPORT_H
#define MSSQLCDC_TEST_TDS_SUPPORT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mssqlcdc/tds.h"

/* ------------------------------------------------------------------ byte builder */

typedef struct tb {
  uint8_t *p;
  size_t n;
  size_t cap;
} tb;

static inline void tb_put(tb *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    b->p = realloc(b->p, cap);
    if (b->p == NULL) abort();
    b->cap = cap;
  }
  if (n > 0) memcpy(b->p + b->n, src, n);
  b->n += n;
}
static inline void tb_u8(tb *b, unsigned v) {
  uint8_t x = (uint8_t)v;
  tb_put(b, &x, 1);
}
static inline void tb_u16(tb *b, unsigned v) {
  tb_u8(b, v & 0xFF);
  tb_u8(b, (v >> 8) & 0xFF);
}
static inline void tb_u32(tb *b, uint32_t v) {
  tb_u16(b, v & 0xFFFF);
  tb_u16(b, v >> 16);
}
static inline void tb_u64(tb *b, uint64_t v) {
  tb_u32(b, (uint32_t)v);
  tb_u32(b, (uint32_t)(v >> 32));
}
static inline void tb_hex(tb *b, const char *hex) {
  for (; hex[0] && hex[1]; hex += 2) {
    while (*hex == ' ') hex++;
    unsigned v;
    if (sscanf(hex, "%2x", &v) != 1) abort();
    tb_u8(b, v);
  }
}
/* ASCII text as UTF-16LE code units (no length). */
static inline void tb_ucs2(tb *b, const char *ascii) {
  for (; *ascii; ascii++) tb_u16(b, (unsigned char)*ascii);
}
/* B_VARCHAR of an ASCII string. */
static inline void tb_bvarchar(tb *b, const char *ascii) {
  tb_u8(b, (unsigned)strlen(ascii));
  tb_ucs2(b, ascii);
}
static inline void tb_usvarchar(tb *b, const char *ascii) {
  tb_u16(b, (unsigned)strlen(ascii));
  tb_ucs2(b, ascii);
}
static inline void tb_free(tb *b) {
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

/* COLMETADATA header and one column (user type 0, nullable), TYPE_INFO given as hex. */
static inline void tb_colmeta(tb *b, unsigned count) {
  tb_u8(b, 0x81);
  tb_u16(b, count);
}
static inline void tb_column(tb *b, const char *type_info_hex, const char *name) {
  tb_u32(b, 0);
  tb_u16(b, 0x0009);
  tb_hex(b, type_info_hex);
  tb_bvarchar(b, name);
}
static inline void tb_done(tb *b, unsigned token, unsigned status, uint64_t rows) {
  tb_u8(b, token);
  tb_u16(b, status);
  tb_u16(b, 0xC1);
  tb_u64(b, rows);
}

/* Latin-1 collation (LCID 0x0409, SQL_Latin1_General_CP1_CI_AS: sort id 52) */
#define COLL_1252 "0904D00034"
/* UTF-8 collation (Latin1_General_100_CI_AS_SC_UTF8: fUTF8 bit 26, sort id 0) */
#define COLL_UTF8 "0904D00400"

/* ------------------------------------------------------------------ transcript */

/* Appends a text line to a transcript. */
static inline void tr_printf(tb *t, const char *fmt, ...) MC_PRINTF(2, 3);
static inline void tr_printf(tb *t, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0) tb_put(t, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static inline void tr_bytes(tb *t, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) tr_printf(t, "%02x", b[i]);
  tr_printf(t, "\n");
}

/* Writes every buffer of every child of a struct array. */
static inline void tr_array(tb *t, const struct ArrowSchema *schema, const struct ArrowArray *a) {
  tr_printf(t, "batch rows=%lld\n", (long long)a->length);
  for (int64_t i = 0; i < a->n_children; i++) {
    const struct ArrowArray *c = a->children[i];
    const char *fmt = schema->children[i]->format;
    tr_printf(t, " col %lld %s len=%lld nulls=%lld\n", (long long)i, fmt, (long long)c->length,
              (long long)c->null_count);
    if (c->null_count > 0) tr_bytes(t, c->buffers[0], (size_t)(c->length + 7) / 8);
    if (fmt[0] == 'u' || fmt[0] == 'z') {
      const int32_t *off = c->buffers[1];
      tr_bytes(t, off, (size_t)(c->length + 1) * 4);
      tr_bytes(t, c->buffers[2], (size_t)off[c->length]);
    } else if (fmt[0] == 'b') {
      tr_bytes(t, c->buffers[1], (size_t)(c->length + 7) / 8);
    } else {
      size_t w = fmt[0] == 'd'                                       ? 16
                 : (fmt[0] == 's')                                   ? 2
                 : (fmt[0] == 'i' || fmt[0] == 'f' || fmt[1] == 'd') ? 4
                 : fmt[0] == 'c' || fmt[0] == 'C'                    ? 1
                                                                     : 8;
      tr_bytes(t, c->buffers[1], (size_t)c->length * w);
    }
  }
}

typedef struct run_result {
  tb transcript;
  mc_status status; /* MC_OK, or the failing status */
  char message[MC_ERROR_MESSAGE_SIZE];
} run_result;

/* Drains events until NEEDMORE or failure, appending them to the transcript. */
static inline mc_status drain(mc_tds_decoder *d, struct ArrowSchema *schema, run_result *res) {
  mc_error err;
  for (;;) {
    mc_tds_event ev;
    err.message[0] = '\0';
    mc_status st = mc_tds_decoder_next(d, &ev, &err);
    if (st == MC_NEEDMORE) return MC_NEEDMORE;
    if (st != MC_OK) {
      snprintf(res->message, sizeof res->message, "%s", err.message);
      tr_printf(&res->transcript, "error %s: %s\n", mc_status_name(st), err.message);
      return st;
    }
    switch (ev) {
      case MC_TDS_EVENT_METADATA: {
        if (schema->release) schema->release(schema);
        if (mc_tds_decoder_export_schema(d, schema, &err) != MC_OK) abort();
        tr_printf(&res->transcript, "metadata %lld:", (long long)schema->n_children);
        for (int64_t i = 0; i < schema->n_children; i++) {
          tr_printf(&res->transcript, " %s[%s]", schema->children[i]->name,
                    schema->children[i]->format);
        }
        tr_printf(&res->transcript, "\n");
        break;
      }
      case MC_TDS_EVENT_BATCH: {
        struct ArrowArray a;
        if (mc_tds_decoder_take_batch(d, &a, &err) != MC_OK) abort();
        tr_array(&res->transcript, schema, &a);
        a.release(&a);
        break;
      }
      case MC_TDS_EVENT_DONE: {
        const mc_tds_done *done = mc_tds_decoder_done(d);
        tr_printf(&res->transcript, "done %02x status=%04x cmd=%04x rows=%llu\n", done->token,
                  done->status, done->cur_cmd, (unsigned long long)done->row_count);
        break;
      }
      case MC_TDS_EVENT_MESSAGE: {
        const mc_tds_message *m = mc_tds_decoder_message(d);
        tr_printf(&res->transcript, "%s %d state=%u class=%u '%s' server='%s' proc='%s' line=%u\n",
                  m->is_error ? "error-token" : "info", (int)m->number, m->state, m->severity,
                  m->message, m->server, m->procedure, (unsigned)m->line);
        break;
      }
      case MC_TDS_EVENT_RETURN_STATUS:
        tr_printf(&res->transcript, "return %d\n", (int)mc_tds_decoder_return_status(d));
        break;
      case MC_TDS_EVENT_ENVCHANGE: {
        const mc_tds_envchange *e = mc_tds_decoder_envchange(d);
        tr_printf(&res->transcript, "env %u new='%s' old='%s' bytes=%zu size=%u route=%s:%u\n",
                  e->type, e->new_value ? e->new_value : "", e->old_value ? e->old_value : "",
                  e->new_len, (unsigned)e->packet_size, e->routing_server ? e->routing_server : "",
                  e->routing_port);
        break;
      }
      case MC_TDS_EVENT_LOGINACK: {
        const mc_tds_loginack *a = mc_tds_decoder_loginack(d);
        tr_printf(&res->transcript, "loginack %u %08x '%s' %08x\n", a->interface,
                  (unsigned)a->tds_version, a->prog_name, (unsigned)a->prog_version);
        break;
      }
      case MC_TDS_EVENT_NONE: break;
    }
  }
}

/* Decodes bytes fed in pieces: split at `split` (if non-zero) or in chunks of `chunk` bytes
 * (0 = all at once). Each piece is a separate exact-size heap copy so that ASan catches any
 * read past what was fed. Returns the transcript (caller frees with tb_free). */
static inline run_result run_decoder(const uint8_t *bytes, size_t n, size_t chunk, size_t split,
                                     const mc_tds_options *opts) {
  run_result res;
  memset(&res, 0, sizeof res);
  mc_tds_decoder *d = mc_tds_decoder_new(opts);
  if (d == NULL) abort();
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  mc_error err;
  size_t pos = 0;
  mc_status st = MC_NEEDMORE;
  while (pos < n) {
    size_t take = n - pos;
    if (split > 0) {
      take = pos < split ? split - pos : n - pos;
    } else if (chunk > 0 && chunk < take) {
      take = chunk;
    }
    uint8_t *piece = malloc(take);
    if (piece == NULL) abort();
    memcpy(piece, bytes + pos, take);
    st = mc_tds_decoder_feed(d, piece, take, &err);
    free(piece);
    pos += take;
    if (st != MC_OK) {
      res.status = st;
      tr_printf(&res.transcript, "feed error %s\n", mc_status_name(st));
      break;
    }
    st = drain(d, &schema, &res);
    if (st != MC_NEEDMORE) break;
  }
  if (st == MC_NEEDMORE) {
    st = mc_tds_decoder_finish(d, &err);
    if (st != MC_OK) {
      snprintf(res.message, sizeof res.message, "%s", err.message);
      tr_printf(&res.transcript, "finish %s\n", mc_status_name(st));
    }
  }
  res.status = st;
  if (schema.release) schema.release(&schema);
  mc_tds_decoder_free(d);
  return res;
}

/* Asserts that every split point (or every `stride`-th) and the 1/512/4096/32767-byte chunkings
 * give the same transcript as the one-shot decode; returns the one-shot result. */
static inline run_result run_all_splits(const uint8_t *bytes, size_t n, size_t stride,
                                        const mc_tds_options *opts) {
  run_result whole = run_decoder(bytes, n, 0, 0, opts);
  static const size_t chunks[] = {1, 7, 512, 4096, 32767};
  for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
    if (chunks[k] == 1 && n > 20000) continue;
    run_result r = run_decoder(bytes, n, chunks[k], 0, opts);
    if (r.transcript.n != whole.transcript.n ||
        memcmp(r.transcript.p, whole.transcript.p, r.transcript.n) != 0) {
      fprintf(stderr, "chunk %zu differs:\n%.*s\n--- vs whole:\n%.*s\n", chunks[k],
              (int)r.transcript.n, (char *)r.transcript.p, (int)whole.transcript.n,
              (char *)whole.transcript.p);
      abort();
    }
    tb_free(&r.transcript);
  }
  for (size_t s = 1; s < n; s += (stride ? stride : 1)) {
    run_result r = run_decoder(bytes, n, 0, s, opts);
    if (r.transcript.n != whole.transcript.n ||
        memcmp(r.transcript.p, whole.transcript.p, r.transcript.n) != 0) {
      fprintf(stderr, "split at %zu differs:\n%.*s\n--- vs whole:\n%.*s\n", s, (int)r.transcript.n,
              (char *)r.transcript.p, (int)whole.transcript.n, (char *)whole.transcript.p);
      abort();
    }
    tb_free(&r.transcript);
  }
  return whole;
}

/* Decodes a complete response and returns its first batch and schema (caller releases). */
static inline void decode_first_batch(const uint8_t *bytes, size_t n, struct ArrowSchema *schema,
                                      struct ArrowArray *array) {
  mc_tds_decoder *d = mc_tds_decoder_new(NULL);
  mc_error err;
  memset(schema, 0, sizeof *schema);
  memset(array, 0, sizeof *array);
  if (mc_tds_decoder_feed(d, bytes, n, &err) != MC_OK) abort();
  for (;;) {
    mc_tds_event ev;
    mc_status st = mc_tds_decoder_next(d, &ev, &err);
    if (st != MC_OK) {
      fprintf(stderr, "decode_first_batch: %s %s\n", mc_status_name(st), err.message);
      abort();
    }
    if (ev == MC_TDS_EVENT_METADATA) {
      if (schema->release) schema->release(schema);
      if (mc_tds_decoder_export_schema(d, schema, &err) != MC_OK) abort();
    }
    if (ev == MC_TDS_EVENT_BATCH) {
      if (mc_tds_decoder_take_batch(d, array, &err) != MC_OK) abort();
      break;
    }
  }
  mc_tds_decoder_free(d);
}

#endif /* MSSQLCDC_TEST_TDS_SUPPORT_H */
