/*
 * tds_encode.h: encode Arrow columns into TDS ROW / NBCROW tokens (MS-TDS 2.2.7.19, 2.2.7.17).
 *
 * The server side of the decoder in tds.h. The caller describes each result column once (its
 * SQL Server type as an mc_enc_column) and passes one Arrow record batch through the Arrow C
 * data interface: a struct array ("+s") whose children are the columns, in order. The encoder
 * appends one token per row to a growable byte buffer. Every write is bounds-checked against the
 * buffer's capacity; the buffer grows geometrically, so there is no allocation per value.
 *
 * Values the encoder does not take in the given Arrow form (a date/time string outside the
 * canonical forms, non-ASCII text for a code-page collation, a decimal of another scale) fail
 * with MC_EUNSUPPORTED; values out of the column's range with MC_ERANGE; a NULL in a NOT NULL
 * column or malformed text with MC_EINVAL. On any error the buffer's length is restored to what
 * it was on entry, so a caller can fall back to another encoder for the whole batch.
 */
#ifndef MSSQLCDC_TDS_ENCODE_H
#define MSSQLCDC_TDS_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mssqlcdc/arrow_abi.h"
#include "mssqlcdc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The wire form of a column. Arrow inputs each kind accepts are listed per kind. */
typedef enum mc_enc_kind {
  MC_ENC_INT = 1,        /* tinyint/smallint/int/bigint (size 1/2/4/8; 1 is unsigned): any
                            Arrow integer */
  MC_ENC_BIT,            /* bit: Arrow bool */
  MC_ENC_FLOAT,          /* real (size 4) / float (size 8): Arrow float32 or float64 */
  MC_ENC_DECIMAL,        /* decimal/numeric (size 5/9/13/17): Arrow decimal128 of the same scale */
  MC_ENC_MONEY,          /* money (size 8) / smallmoney (size 4): Arrow decimal128 of scale 4 */
  MC_ENC_GUID,           /* uniqueidentifier: Arrow string (8-4-4-4-12 hex) or fixed binary 16 */
  MC_ENC_BINARY,         /* binary(n)/varbinary(n|max): Arrow binary */
  MC_ENC_ROWVERSION,     /* timestamp/rowversion: Arrow binary (first 8 bytes, left-padded) */
  MC_ENC_NCHAR,          /* nchar/nvarchar(n|max): Arrow string, sent as UTF-16LE */
  MC_ENC_CHAR,           /* char/varchar(n|max): Arrow string; bytes as-is for a UTF-8 collation,
                            else ASCII only (MC_EUNSUPPORTED for other text) */
  MC_ENC_DATE,           /* date, time(s), datetime2(s), datetimeoffset(s), datetime,       */
  MC_ENC_TIME,           /* smalldatetime: Arrow string in the canonical text forms          */
  MC_ENC_DATETIME2,      /* YYYY-MM-DD, [YYYY-MM-DD ]HH:MM[:SS[.fffffffff]] and an optional    */
  MC_ENC_DATETIMEOFFSET, /* Z or +HH:MM / -HH:MM suffix; rounded as SQL Server rounds     */
  MC_ENC_DATETIME,
  MC_ENC_SMALLDATETIME,
  MC_ENC_RAW /* a value already encoded by the caller (length prefix and all): Arrow
                binary, copied as-is; lets a caller encode a type this file does not
                (sql_variant, xml, text) and still use it for the other columns */
} mc_enc_kind;

typedef struct mc_enc_column {
  mc_enc_kind kind;
  bool nullable;     /* a NOT NULL fixed-length column has no length prefix (INT4, FLT8...) */
  bool plp;          /* a (max) type: partially length-prefixed (2.2.5.2.3) */
  bool utf8;         /* MC_ENC_CHAR: the column's wire collation is UTF-8 */
  uint8_t size;      /* INT, FLOAT, MONEY, DECIMAL: the value's byte size on the wire */
  uint8_t precision; /* DECIMAL */
  uint8_t scale;     /* DECIMAL; TIME, DATETIME2, DATETIMEOFFSET (0-7) */
  uint32_t width;    /* char(n)/nchar(n)/binary(n): the padded byte width; 0 = variable */
} mc_enc_column;

/* A growable output buffer. Zero-initialise it; free it with mc_enc_buffer_free. */
typedef struct mc_enc_buffer {
  uint8_t *data;
  size_t len;
  size_t cap;
} mc_enc_buffer;

void mc_enc_buffer_free(mc_enc_buffer *b);

/* Makes room for n more bytes (geometric growth). MC_ENOMEM or MC_ERANGE on failure. */
MC_NODISCARD mc_status mc_enc_buffer_reserve(mc_enc_buffer *b, size_t n, mc_error *err);

/* Appends one ROW (or, with nbcrow, NBCROW) token per row of the struct array `batch` (format
 * "+s", n_children == ncols) to out. `schema` describes `batch`. */
MC_NODISCARD mc_status mc_tds_encode_rows(const mc_enc_column *cols, size_t ncols,
                                          const struct ArrowSchema *schema,
                                          const struct ArrowArray *batch, bool nbcrow,
                                          mc_enc_buffer *out, mc_error *err);

/* The canonical date/time text of one value as the wire bytes of `col` (kind DATE ...
 * SMALLDATETIME), without the length prefix. Writes at most 10 bytes to out and their count to *n.
 */
MC_NODISCARD mc_status mc_tds_encode_temporal_text(const mc_enc_column *col, const char *text,
                                                   size_t len, uint8_t out[10], size_t *n,
                                                   mc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_TDS_ENCODE_H */
