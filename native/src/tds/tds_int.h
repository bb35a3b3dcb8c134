/*
 * tds_int.h: the decoder's internal structs and the prototypes shared by the files of src/tds/
 * (libpq's libpq-int.h role). Not installed; tests may include it.
 *
 * Reading: every read goes through an mc_rd (a cursor and an end). A read past `end` reports
 * MC_NEEDMORE when the bytes may still come (the end of the buffered input) and is turned
 * into MC_EPROTO by the caller when the bytes should have been there (inside a token whose
 * length is known). Corruption messages all go through MC_TDS_CORRUPT.
 */
#ifndef MSSQLCDC_TDS_INT_H
#define MSSQLCDC_TDS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mssqlcdc/arrow.h"
#include "mssqlcdc/status.h"
#include "mssqlcdc/tds.h"

/* The single place corruption is reported (SQLite's CORRUPT_BKPT role). */
#define MC_TDS_CORRUPT(err, ...) mc_error_set((err), MC_EPROTO, __VA_ARGS__)
/* Well-formed data this decoder does not decode (a data type, a code page): not corrupt, and
 * not worth a retry. Every such report goes through this macro. */
#define MC_TDS_UNSUPPORTED(err, ...) mc_error_set((err), MC_EUNSUPPORTED, __VA_ARGS__)

/* For the few hot-path helpers that must be inlined into the row loop (row.c). */
#if defined(__GNUC__) || defined(__clang__)
#define MC_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define MC_ALWAYS_INLINE inline
#endif

/* ------------------------------------------------------------------ bounded reads */

typedef struct mc_rd {
  const uint8_t *p;   /* next byte */
  const uint8_t *end; /* one past the last readable byte */
} mc_rd;

static inline size_t mc_rd_left(const mc_rd *r) { return (size_t)(r->end - r->p); }

static inline uint16_t mc_load_u16(const uint8_t *p) {
  return (uint16_t)((unsigned)p[0] | ((unsigned)p[1] << 8));
}
static inline uint32_t mc_load_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t mc_load_u64(const uint8_t *p) {
  return (uint64_t)mc_load_u32(p) | ((uint64_t)mc_load_u32(p + 4) << 32);
}
/* Two's-complement reinterpretation without implementation-defined conversions. */
static inline int64_t mc_i64_from_u64(uint64_t u) {
  return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}
static inline int32_t mc_i32_from_u32(uint32_t u) {
  return u <= (uint32_t)INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1;
}

/* Each getter returns MC_NEEDMORE without moving when fewer bytes are left. */
static inline mc_status mc_rd_u8(mc_rd *r, uint8_t *v) {
  if (mc_rd_left(r) < 1) return MC_NEEDMORE;
  *v = r->p[0];
  r->p += 1;
  return MC_OK;
}
static inline mc_status mc_rd_u16(mc_rd *r, uint16_t *v) {
  if (mc_rd_left(r) < 2) return MC_NEEDMORE;
  *v = mc_load_u16(r->p);
  r->p += 2;
  return MC_OK;
}
static inline mc_status mc_rd_u32(mc_rd *r, uint32_t *v) {
  if (mc_rd_left(r) < 4) return MC_NEEDMORE;
  *v = mc_load_u32(r->p);
  r->p += 4;
  return MC_OK;
}
static inline mc_status mc_rd_u64(mc_rd *r, uint64_t *v) {
  if (mc_rd_left(r) < 8) return MC_NEEDMORE;
  *v = mc_load_u64(r->p);
  r->p += 8;
  return MC_OK;
}
static inline mc_status mc_rd_skip(mc_rd *r, size_t n) {
  if (mc_rd_left(r) < n) return MC_NEEDMORE;
  r->p += n;
  return MC_OK;
}
/* Points *bytes at the next n bytes and skips them. */
static inline mc_status mc_rd_bytes(mc_rd *r, size_t n, const uint8_t **bytes) {
  if (mc_rd_left(r) < n) return MC_NEEDMORE;
  *bytes = r->p;
  r->p += n;
  return MC_OK;
}

/* ------------------------------------------------------------------ types */

/* SQL type bytes (MS-TDS 2.2.5.4). */
enum {
  MC_SQL_IMAGE = 0x22,
  MC_SQL_TEXT = 0x23,
  MC_SQL_GUID = 0x24,
  MC_SQL_INTN = 0x26,
  MC_SQL_DATEN = 0x28,
  MC_SQL_TIMEN = 0x29,
  MC_SQL_DATETIME2N = 0x2A,
  MC_SQL_DATETIMEOFFSETN = 0x2B,
  MC_SQL_INT1 = 0x30,
  MC_SQL_BIT = 0x32,
  MC_SQL_INT2 = 0x34,
  MC_SQL_INT4 = 0x38,
  MC_SQL_DATETIM4 = 0x3A,
  MC_SQL_FLT4 = 0x3B,
  MC_SQL_MONEY = 0x3C,
  MC_SQL_DATETIME = 0x3D,
  MC_SQL_FLT8 = 0x3E,
  MC_SQL_SSVARIANT = 0x62,
  MC_SQL_NTEXT = 0x63,
  MC_SQL_BITN = 0x68,
  MC_SQL_DECIMALN = 0x6A,
  MC_SQL_NUMERICN = 0x6C,
  MC_SQL_FLTN = 0x6D,
  MC_SQL_MONEYN = 0x6E,
  MC_SQL_DATETIMN = 0x6F,
  MC_SQL_MONEY4 = 0x7A,
  MC_SQL_INT8 = 0x7F,
  MC_SQL_BIGVARBINARY = 0xA5,
  MC_SQL_BIGVARCHAR = 0xA7,
  MC_SQL_BIGBINARY = 0xAD,
  MC_SQL_BIGCHAR = 0xAF,
  MC_SQL_NVARCHAR = 0xE7,
  MC_SQL_NCHAR = 0xEF,
  MC_SQL_UDT = 0xF0,
  MC_SQL_XML = 0xF1
};

/* How a value's length is framed on the wire. */
typedef enum mc_tds_wire {
  MC_WIRE_FIXED = 1, /* no prefix, fixed_len bytes */
  MC_WIRE_BYTELEN,   /* u8 length, 0 = NULL */
  MC_WIRE_USHORTLEN, /* u16 length, 0xFFFF = NULL */
  MC_WIRE_TEXTPTR,   /* text/ntext/image: u8 textptr length (0 = NULL), textptr, 8-byte
                        timestamp, u32 length, data */
  MC_WIRE_LONGLEN,   /* sql_variant: u32 length, 0 = NULL */
  MC_WIRE_PLP        /* u64 total (~0 = NULL), chunks of u32 length + data, 0 ends */
} mc_tds_wire;

/* The row loop's inlined paths (row.c), chosen once per column by mc_tds_pick_decoder: the
 * common types decode without a call through c->decode. MC_KIND_GENERIC calls it. */
typedef enum mc_tds_kind {
  MC_KIND_GENERIC = 0,
  MC_KIND_INT1,     /* tinyint (1 byte, unsigned) -> int16 */
  MC_KIND_COPY2,    /* 2 little-endian bytes -> a 2-byte slot (smallint) */
  MC_KIND_COPY4,    /* 4 bytes -> a 4-byte slot (int, real) */
  MC_KIND_COPY8,    /* 8 bytes -> an 8-byte slot (bigint, float) */
  MC_KIND_DATETIME, /* datetime (8 bytes) -> timestamp[us] */
  MC_KIND_GUID,     /* uniqueidentifier -> 36 characters */
  MC_KIND_BINARY,   /* binary/varbinary(n) -> binary, copied */
  MC_KIND_CP1252,   /* char/varchar(n) in code page 1252 -> utf8 */
  MC_KIND_UTF16     /* nchar/nvarchar(n) -> utf8 */
} mc_tds_kind;

/* Text encodings of character data. */
enum { MC_CP_UTF16 = 1200, MC_CP_UTF8 = 65001, MC_CP_1252 = 1252 };

struct mc_tds_column;

/* Decodes one non-NULL value of n contiguous bytes and appends it to out. The bytes passed the
 * framing and length checks of mc_tds_value_measure. MC_EPROTO for an impossible value,
 * MC_ENOMEM / MC_ERANGE when it cannot be stored. */
typedef mc_status (*mc_tds_decode_fn)(const struct mc_tds_column *c, mc_arrow_column *out,
                                      const uint8_t *p, size_t n, mc_error *err);

/* One column's TYPE_INFO and decode plan, built once from COLMETADATA. */
typedef struct mc_tds_column {
  uint8_t type;         /* MC_SQL_* */
  uint8_t wire;         /* mc_tds_wire */
  uint8_t precision;    /* decimal/numeric */
  uint8_t scale;        /* decimal/numeric, time, datetime2, datetimeoffset */
  uint32_t max_len;     /* TYPE_INFO length (fixed types: the fixed length) */
  uint32_t user_type;   /* 80 = timestamp/rowversion */
  uint16_t flags;       /* COLMETADATA flags */
  uint8_t collation[5]; /* char types only */
  uint8_t has_collation;
  uint16_t code_page;      /* MC_CP_* or a Windows code page; 0 = not character data */
  mc_arrow_type arrow;     /* chosen by mc_tds_arrow_type */
  int32_t arrow_precision; /* decimal128 */
  int32_t arrow_scale;     /* decimal128 */
  mc_tds_decode_fn decode; /* chosen by mc_tds_pick_decoder */
  uint8_t kind;            /* mc_tds_kind, chosen by mc_tds_pick_decoder */
  size_t data_hint;        /* utf8/binary bytes the last full batch held (reserved up front) */
  void *iconv;             /* iconv_t for other code pages (types_codepage.c), or NULL */
  char *name;              /* UTF-8, owned */
  size_t name_len;
} mc_tds_column;

/* One value located by mc_tds_value_measure. */
typedef struct mc_tds_cell {
  const uint8_t *data; /* contiguous value bytes, or the first PLP chunk header */
  size_t off;          /* in a row: data's offset from the row token (buffers may move) */
  size_t len;          /* value bytes (PLP: sum of chunk lengths) */
  uint8_t is_null;
  uint8_t is_plp;
} mc_tds_cell;

/* Parses a TYPE_INFO (MS-TDS 2.2.5.6) into c (type, wire, lengths, precision, scale,
 * collation). Allocates nothing. MC_NEEDMORE if r ends early, MC_EUNSUPPORTED for an unknown
 * or unsupported type, MC_EPROTO for an impossible length. */
mc_status mc_tds_type_info_parse(mc_rd *r, mc_tds_column *c, mc_error *err);

/* Chooses the Arrow type of a SQL type (the bronze type map, docs/reference/bronze-schema.md) into
 * c->arrow / arrow_precision / arrow_scale. The one table of that choice. */
void mc_tds_arrow_type(mc_tds_column *c);

/* Chooses c->decode (and c->code_page for character data). MC_EUNSUPPORTED with a message for
 * character data in a code page this library does not decode yet. */
mc_status mc_tds_pick_decoder(mc_tds_column *c, mc_error *err);

/* Locates the next value of column c at r: frames it, checks its length against the type and
 * fills *cell. MC_NEEDMORE if the value is not complete, MC_EPROTO if it is malformed. */
mc_status mc_tds_value_measure(const mc_tds_column *c, mc_rd *r, mc_tds_cell *cell, mc_error *err);

/* Copies a measured PLP value's chunks into scratch (contiguous). */
mc_status mc_tds_plp_gather(const mc_tds_cell *cell, mc_arrow_buffer *scratch, mc_error *err);

/* Walks a PLP value at r (after its 8-byte total length was read as total). */
mc_status mc_tds_plp_measure(mc_rd *r, uint64_t total, mc_tds_cell *cell, mc_error *err);

/* Collation (5 bytes: LCID + flags + version, sort id) to a code page: MC_CP_UTF8 for UTF-8
 * collations, else the Windows code page the collation names; 0 if unknown. */
uint16_t mc_tds_collation_code_page(const uint8_t collation[5]);

/* --- value decoders (types_*.c) --- */
mc_status mc_tds_decode_int(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                            size_t n, mc_error *err);
mc_status mc_tds_decode_bit(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                            size_t n, mc_error *err);
mc_status mc_tds_decode_float(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                              size_t n, mc_error *err);
mc_status mc_tds_decode_decimal(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                size_t n, mc_error *err);
mc_status mc_tds_decode_money(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                              size_t n, mc_error *err);
mc_status mc_tds_decode_datetime(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                 size_t n, mc_error *err);
mc_status mc_tds_decode_date(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                             size_t n, mc_error *err);
mc_status mc_tds_decode_time(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                             size_t n, mc_error *err);
mc_status mc_tds_decode_datetime2(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                  size_t n, mc_error *err);
mc_status mc_tds_decode_guid(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                             size_t n, mc_error *err);
mc_status mc_tds_decode_binary(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                               size_t n, mc_error *err);
mc_status mc_tds_decode_utf16(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                              size_t n, mc_error *err);
mc_status mc_tds_decode_utf8(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                             size_t n, mc_error *err);
mc_status mc_tds_decode_cp1252(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                               size_t n, mc_error *err);

/* Code pages other than 1252 and UTF-8, through iconv (types_codepage.c). _open sets c->iconv
 * (MC_EUNSUPPORTED naming the code page if the C library cannot convert it); _close releases
 * it. */
mc_status mc_tds_codepage_open(mc_tds_column *c, mc_error *err);
void mc_tds_codepage_close(mc_tds_column *c);
mc_status mc_tds_decode_codepage(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                 size_t n, mc_error *err);
/* One value (sql_variant): dst needs 3 * n bytes. */
mc_status mc_tds_codepage_to_utf8(uint16_t code_page, const uint8_t *src, size_t n, uint8_t *dst,
                                  size_t *len, mc_error *err);
mc_status mc_tds_decode_variant(const mc_tds_column *c, mc_arrow_column *out, const uint8_t *p,
                                size_t n, mc_error *err);

/* --- helpers shared by the value decoders --- */

/* Bytes of the time part of time/datetime2/datetimeoffset at scale 0..7 (3, 4 or 5). */
size_t mc_tds_time_bytes(uint8_t scale);

/* Converts UTF-16LE (n bytes; an odd last byte becomes U+FFFD) to UTF-8 at dst, which has
 * room for mc_tds_utf16_max_utf8(n) bytes. Lone surrogates become U+FFFD. Returns the bytes
 * written. */
size_t mc_tds_utf16_to_utf8(const uint8_t *src, size_t n, uint8_t *dst);
static inline size_t mc_tds_utf16_max_utf8(size_t n) { return (n / 2) * 3 + (n & 1) * 3; }

/* Converts Windows-1252 bytes to UTF-8 (at most 3 bytes per input byte). */
size_t mc_tds_cp1252_to_utf8(const uint8_t *src, size_t n, uint8_t *dst);

/* Replaces invalid UTF-8 sequences with U+FFFD while copying (at most 3 bytes per input
 * byte). */
size_t mc_tds_utf8_sanitize(const uint8_t *src, size_t n, uint8_t *dst);

/* Microseconds since 1970 of a day count since 0001-01-01 plus units of 10^-scale seconds. */
int64_t mc_tds_us_from_days_units(int64_t days_since_0001, uint64_t units, uint8_t scale);

/* Renders units of 10^-scale s since midnight as "HH:MM:SS[.f...]" (scale fraction digits) at
 * dst (room for 17 bytes). Returns the length. */
size_t mc_tds_format_time(uint64_t units, uint8_t scale, char *dst);

/* Formats the 16 wire bytes of a uniqueidentifier as 36 upper-case canonical characters. */
void mc_tds_format_guid(const uint8_t *p, char *dst);

/* Reads a 128-bit decimal from a TDS sign byte + magnitude (mag_len 1..16 bytes) into 16
 * little-endian two's-complement bytes. MC_EPROTO if the magnitude exceeds 2^127 - 1. */
mc_status mc_tds_decimal_to_le128(uint8_t sign, const uint8_t *mag, size_t mag_len, uint8_t out[16],
                                  mc_error *err);

/* Renders a 16-byte LE two's-complement integer with `scale` decimals as text ("-12.3400")
 * at dst (room for 42 bytes). Returns the length. */
size_t mc_tds_format_decimal(const uint8_t v[16], uint8_t scale, char *dst);

/* Reserves one utf8/binary slot plus n data bytes: MC_ERANGE past the int32 offset limit,
 * MC_ENOMEM when memory runs out (both with a message). */
static inline mc_status mc_tds_reserve_data(mc_arrow_column *out, size_t n, mc_error *err) {
  if (n > MC_ARROW_MAX_DATA_BYTES - out->values.size) {
    return mc_error_set(err, MC_ERANGE, "a batch column would exceed 2 GiB");
  }
  if (mc_arrow_column_reserve_one(out, n) != MC_OK) {
    return mc_error_set(err, MC_ENOMEM, "out of memory appending %zu bytes", n);
  }
  return MC_OK;
}

/* ------------------------------------------------------------------ decoder */

struct mc_tds_decoder {
  mc_tds_options opt;

  uint8_t *buf; /* input; unconsumed bytes are buf[start, end) */
  size_t start;
  size_t end;
  size_t cap;
  size_t want; /* next() returns NEEDMORE until end - start >= want */

  mc_status broken; /* MC_OK, or the fatal status every call now returns */
  char broken_msg[MC_ERROR_MESSAGE_SIZE];

  mc_tds_column *cols; /* the current result set */
  int64_t ncols;
  mc_tds_cell *cells; /* ncols cells, the row being decoded */
  mc_arrow_batch batch;
  mc_arrow_pool *pool; /* buffers of released batches, for the next ones (owned) */
  bool one_pass;       /* every column's values carry their length up front (row.c) */
  int64_t row_cap;     /* rows every fixed-size buffer of the batch has room for */
  int64_t last_batch_rows;
  /* Where measuring a row that did not fit in the buffered bytes stopped (row.c), as offsets
   * from the row token at `start`: the next column to measure and where its value begins,
   * and inside a PLP value the next chunk header and the bytes counted so far. A new feed
   * resumes there instead of measuring the row again from its first column. */
  int64_t row_col; /* with row_off: 0 and 0 when no row is in progress */
  size_t row_off;
  size_t plp_off; /* 0: not inside a PLP value */
  uint64_t plp_sum;
  uint64_t plp_total;
  size_t batch_wire_bytes;
  int batch_ready;

  mc_arrow_buffer scratch; /* PLP gathering */
  mc_arrow_buffer text;    /* strings of the last message / envchange / loginack */

  mc_tds_done done;
  mc_tds_message msg;
  int32_t return_status;
  mc_tds_envchange env;
  mc_tds_loginack ack;
};

/* Token parsers (token.c, colmetadata.c, row.c). Each reads one token starting at the token
 * byte at r->p; on MC_OK *used is its size. MC_NEEDMORE if the buffered bytes end inside it
 * (with *want, when known, the bytes needed from the token start). */
mc_status mc_tds_colmetadata_parse(mc_tds_decoder *d, mc_rd *r, size_t *used, mc_error *err);
mc_status mc_tds_row_decode(mc_tds_decoder *d, mc_rd *r, size_t *used, size_t *want, mc_error *err);
mc_status mc_tds_returnvalue_skip(mc_rd *r, mc_error *err);

/* Frees the current result set (columns, cells, batch). */
void mc_tds_result_free(mc_tds_decoder *d);

/* Reads a UTF-16 string of nchars characters at r, converting it to UTF-8 appended to
 * d->text; *offset receives where it starts (NUL-terminated). */
mc_status mc_tds_read_text(mc_tds_decoder *d, mc_rd *r, size_t nchars, size_t *offset);

#endif /* MSSQLCDC_TDS_INT_H */
