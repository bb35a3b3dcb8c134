/*
 * tds.h: the TDS response decoder: a non-blocking core that turns the payload bytes of a
 * server response (the TDS token stream of MS-TDS section 2.2.7, packet headers already
 * removed) into events and Arrow record batches.
 *
 * The decoder owns no socket. The caller feeds bytes in chunks of any size and asks for the next
 * event; when a token or row is not complete yet the decoder answers MC_NEEDMORE and keeps the
 * partial bytes, so a blocking loop around a socket is a few lines (libpq's PQgetResult shape):
 *
 *   for (;;) {
 *     mc_tds_event ev;
 *     mc_status st = mc_tds_decoder_next(dec, &ev, &err);
 *     if (st == MC_NEEDMORE) { read a packet; mc_tds_decoder_feed(dec, payload, n, &err);
 *                              on EOM after the last feed: mc_tds_decoder_finish(dec, &err);
 *                              continue; }
 *     if (st != MC_OK) break;                     // EPROTO, EUNSUPPORTED, ERANGE, ENOMEM: fatal
 *     switch (ev) {
 *       case MC_TDS_EVENT_METADATA: mc_tds_decoder_export_schema(dec, &schema, &err); break;
 *       case MC_TDS_EVENT_BATCH:    mc_tds_decoder_take_batch(dec, &array, &err); break;
 *       case MC_TDS_EVENT_MESSAGE:  mc_tds_decoder_message(dec)->is_error ...; break;
 *       case MC_TDS_EVENT_DONE:     if (!(mc_tds_decoder_done(dec)->status & MC_TDS_DONE_MORE)) ...
 *       ...
 *     }
 *   }
 *
 * Rows are decoded straight into Arrow column builders (arrow.h). A batch is reported when it
 * holds batch_rows rows or batch_bytes bytes of row data (TDS bytes of the rows), and before
 * the DONE or COLMETADATA token that ends its result set. A row is appended whole or not at
 * all. After MC_EPROTO (corrupt), MC_EUNSUPPORTED (a data type or code page it does not decode),
 * MC_ERANGE (a value or batch column too large to hold) or MC_ENOMEM the decoder is broken:
 * every later call returns the same status and message.
 */
#ifndef MSSQLCDC_TDS_H
#define MSSQLCDC_TDS_H

#include <stddef.h>
#include <stdint.h>

#include "mssqlcdc/arrow.h"
#include "mssqlcdc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque decoder. */
typedef struct mc_tds_decoder mc_tds_decoder;

/* What mc_tds_decoder_next found. */
typedef enum mc_tds_event {
  MC_TDS_EVENT_NONE = 0,
  MC_TDS_EVENT_METADATA,      /* COLMETADATA: a new result set shape (mc_tds_decoder_columns) */
  MC_TDS_EVENT_BATCH,         /* rows ready: mc_tds_decoder_take_batch */
  MC_TDS_EVENT_DONE,          /* DONE / DONEPROC / DONEINPROC: mc_tds_decoder_done */
  MC_TDS_EVENT_MESSAGE,       /* ERROR or INFO: mc_tds_decoder_message */
  MC_TDS_EVENT_RETURN_STATUS, /* RETURNSTATUS: mc_tds_decoder_return_status */
  MC_TDS_EVENT_ENVCHANGE,     /* ENVCHANGE: mc_tds_decoder_envchange */
  MC_TDS_EVENT_LOGINACK       /* LOGINACK: mc_tds_decoder_loginack */
} mc_tds_event;

/* Token bytes (MS-TDS 2.2.7). */
enum {
  MC_TDS_TOKEN_RETURNSTATUS = 0x79,
  MC_TDS_TOKEN_COLMETADATA = 0x81,
  MC_TDS_TOKEN_TABNAME = 0xA4,
  MC_TDS_TOKEN_COLINFO = 0xA5,
  MC_TDS_TOKEN_ORDER = 0xA9,
  MC_TDS_TOKEN_ERROR = 0xAA,
  MC_TDS_TOKEN_INFO = 0xAB,
  MC_TDS_TOKEN_RETURNVALUE = 0xAC,
  MC_TDS_TOKEN_LOGINACK = 0xAD,
  MC_TDS_TOKEN_FEATUREEXTACK = 0xAE,
  MC_TDS_TOKEN_ROW = 0xD1,
  MC_TDS_TOKEN_NBCROW = 0xD2,
  MC_TDS_TOKEN_ENVCHANGE = 0xE3,
  MC_TDS_TOKEN_SSPI = 0xED,
  MC_TDS_TOKEN_FEDAUTHINFO = 0xEE,
  MC_TDS_TOKEN_DONE = 0xFD,
  MC_TDS_TOKEN_DONEPROC = 0xFE,
  MC_TDS_TOKEN_DONEINPROC = 0xFF
};

/* DONE status bits. */
enum {
  MC_TDS_DONE_MORE = 0x0001,
  MC_TDS_DONE_ERROR = 0x0002,
  MC_TDS_DONE_INXACT = 0x0004,
  MC_TDS_DONE_COUNT = 0x0010,
  MC_TDS_DONE_ATTN = 0x0020,
  MC_TDS_DONE_SRVERROR = 0x0100
};

typedef struct mc_tds_done {
  uint8_t token; /* MC_TDS_TOKEN_DONE, _DONEPROC or _DONEINPROC */
  uint16_t status;
  uint16_t cur_cmd;
  uint64_t row_count; /* valid when status has MC_TDS_DONE_COUNT */
} mc_tds_done;

/* An ERROR or INFO token. Strings are UTF-8, NUL-terminated, owned by the decoder and valid
 * until the next call to mc_tds_decoder_next. */
typedef struct mc_tds_message {
  int is_error; /* 1 for ERROR (0xAA), 0 for INFO (0xAB) */
  int32_t number;
  uint8_t state;
  uint8_t severity; /* "class": 11 and above are errors */
  const char *message;
  const char *server;
  const char *procedure;
  uint32_t line;
} mc_tds_message;

/* ENVCHANGE types (MS-TDS 2.2.7.9). */
enum {
  MC_TDS_ENV_DATABASE = 1,
  MC_TDS_ENV_LANGUAGE = 2,
  MC_TDS_ENV_PACKET_SIZE = 4,
  MC_TDS_ENV_COLLATION = 7,
  MC_TDS_ENV_BEGIN_TRAN = 8,
  MC_TDS_ENV_COMMIT_TRAN = 9,
  MC_TDS_ENV_ROLLBACK_TRAN = 10,
  MC_TDS_ENV_ROUTING = 20
};

/* One ENVCHANGE. For the text types (database, language, packet size, ...) new_value and
 * old_value are UTF-8; for the binary types (collation, transactions) new_bytes/new_len hold
 * the raw new value; for routing, routing_port and routing_server are set. */
typedef struct mc_tds_envchange {
  uint8_t type;
  const char *new_value;
  const char *old_value;
  const uint8_t *new_bytes;
  size_t new_len;
  uint32_t packet_size; /* MC_TDS_ENV_PACKET_SIZE: the new size, parsed */
  uint16_t routing_port;
  const char *routing_server;
} mc_tds_envchange;

typedef struct mc_tds_loginack {
  uint8_t interface;
  uint32_t tds_version; /* as sent: 0x74000004 for TDS 7.4 */
  const char *prog_name;
  uint32_t prog_version; /* major, minor, build hi, build lo bytes */
} mc_tds_loginack;

/* Decoder options. Zero fields take the defaults. */
typedef struct mc_tds_options {
  int64_t batch_rows; /* default 65536 */
  size_t batch_bytes; /* default 64 MiB */
  size_t max_buffer;  /* largest row or token held in memory; default 1 GiB */
} mc_tds_options;

/* Allocates a decoder. options may be NULL. Returns NULL when out of memory. */
mc_tds_decoder *mc_tds_decoder_new(const mc_tds_options *options);

/* Frees the decoder and everything it owns (unexported rows included). NULL is ignored. */
void mc_tds_decoder_free(mc_tds_decoder *d);

/* Forgets all state except options (buffered bytes, metadata, rows, broken state), to start on
 * a new response, e.g. after a cancel. */
void mc_tds_decoder_reset(mc_tds_decoder *d);

/* Appends n payload bytes to the decoder's input. MC_ENOMEM if they cannot be held,
 * MC_EPROTO if the buffered input would exceed max_buffer, the broken status if broken. */
MC_NODISCARD mc_status mc_tds_decoder_feed(mc_tds_decoder *d, const uint8_t *bytes, size_t n,
                                           mc_error *err);

/* feed() without the copy: makes room for at least min more input bytes after the buffered
 * ones (compacting or growing the buffer) and points *space at it, with *room >= min bytes
 * there. The caller writes payload bytes there (e.g. reads them from the socket) and declares
 * them with mc_tds_decoder_commit before any other call. Same failures as feed. */
MC_NODISCARD mc_status mc_tds_decoder_space(mc_tds_decoder *d, size_t min, uint8_t **space,
                                            size_t *room, mc_error *err);

/* Appends the n bytes written at the space mc_tds_decoder_space returned (n <= its room). */
void mc_tds_decoder_commit(mc_tds_decoder *d, size_t n);

/* Decodes until something happens. MC_OK with *event set; MC_NEEDMORE when the buffered bytes
 * end inside a token or row (feed more, then call again); MC_EPROTO for a corrupt stream,
 * MC_EUNSUPPORTED for a data type or code page it does not decode, MC_ERANGE for a value or
 * batch column too large to hold and MC_ENOMEM when memory ran out, all with a message, after
 * which the decoder is broken. */
MC_NODISCARD mc_status mc_tds_decoder_next(mc_tds_decoder *d, mc_tds_event *event, mc_error *err);

/* Declares the end of the response (the EOM packet has been fed and next returned
 * MC_NEEDMORE). MC_OK if no partial token is buffered, else MC_EPROTO ("truncated"). */
MC_NODISCARD mc_status mc_tds_decoder_finish(mc_tds_decoder *d, mc_error *err);

/* Buffered bytes not yet consumed. */
size_t mc_tds_decoder_buffered(const mc_tds_decoder *d);

/* Columns of the current result set (0 before the first COLMETADATA). */
int64_t mc_tds_decoder_column_count(const mc_tds_decoder *d);

/* The UTF-8 name of column i, or NULL if i is out of range. */
const char *mc_tds_decoder_column_name(const mc_tds_decoder *d, int64_t i);

/* The SQL type byte (MS-TDS 2.2.5.4) of column i, or 0 if i is out of range. */
uint8_t mc_tds_decoder_column_type(const mc_tds_decoder *d, int64_t i);

/* Rows decoded into the pending batch. */
int64_t mc_tds_decoder_pending_rows(const mc_tds_decoder *d);

/* Exports the current result set's schema (a struct of nullable columns). */
MC_NODISCARD mc_status mc_tds_decoder_export_schema(const mc_tds_decoder *d,
                                                    struct ArrowSchema *out, mc_error *err);

/* Moves the pending rows (possibly zero) out as a struct array and clears the batch-ready
 * state. On failure nothing moves. */
MC_NODISCARD mc_status mc_tds_decoder_take_batch(mc_tds_decoder *d, struct ArrowArray *out,
                                                 mc_error *err);

/* The last DONE*, message, return status, ENVCHANGE and LOGINACK seen. Pointers are owned by
 * the decoder and valid until the next call to mc_tds_decoder_next. */
const mc_tds_done *mc_tds_decoder_done(const mc_tds_decoder *d);
const mc_tds_message *mc_tds_decoder_message(const mc_tds_decoder *d);
int32_t mc_tds_decoder_return_status(const mc_tds_decoder *d);
const mc_tds_envchange *mc_tds_decoder_envchange(const mc_tds_decoder *d);
const mc_tds_loginack *mc_tds_decoder_loginack(const mc_tds_decoder *d);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_TDS_H */
