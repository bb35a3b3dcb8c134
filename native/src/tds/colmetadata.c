/*
 * colmetadata.c: the COLMETADATA token (MS-TDS 2.2.7.4) and TYPE_INFO (2.2.5.6): parses each
 * column's type, length, precision, scale and collation, then builds the decode plan once per
 * result set: the Arrow type (mc_tds_arrow_type, the one table of that choice, after the
 * bronze type map, docs/reference/bronze-schema.md) and the value decoder (mc_tds_pick_decoder), so
 * that the row loop never switches on the SQL type.
 */
#include <stdlib.h>

#include "tds/tds_int.h"

/* Skips a B_VARCHAR (u8 character count + UTF-16) or US_VARCHAR (u16 count). */
static mc_status skip_b_varchar(mc_rd *r) {
  uint8_t n;
  MC_RETURN_NOT_OK(mc_rd_u8(r, &n));
  return mc_rd_skip(r, (size_t)n * 2);
}
static mc_status skip_us_varchar(mc_rd *r) {
  uint16_t n;
  MC_RETURN_NOT_OK(mc_rd_u16(r, &n));
  return mc_rd_skip(r, (size_t)n * 2);
}

static mc_status set_fixed(mc_tds_column *c, uint32_t len) {
  c->wire = MC_WIRE_FIXED;
  c->max_len = len;
  return MC_OK;
}

mc_status mc_tds_type_info_parse(mc_rd *r, mc_tds_column *c, mc_error *err) {
  uint8_t t;
  MC_RETURN_NOT_OK(mc_rd_u8(r, &t));
  c->type = t;
  c->has_collation = 0;
  switch (t) {
    case MC_SQL_INT1:
    case MC_SQL_BIT: return set_fixed(c, 1);
    case MC_SQL_INT2: return set_fixed(c, 2);
    case MC_SQL_INT4:
    case MC_SQL_DATETIM4:
    case MC_SQL_FLT4:
    case MC_SQL_MONEY4: return set_fixed(c, 4);
    case MC_SQL_MONEY:
    case MC_SQL_DATETIME:
    case MC_SQL_FLT8:
    case MC_SQL_INT8: return set_fixed(c, 8);

    case MC_SQL_GUID:
    case MC_SQL_INTN:
    case MC_SQL_BITN:
    case MC_SQL_FLTN:
    case MC_SQL_MONEYN:
    case MC_SQL_DATETIMN: {
      uint8_t len;
      MC_RETURN_NOT_OK(mc_rd_u8(r, &len));
      bool ok = (t == MC_SQL_GUID && len == 16) ||
                (t == MC_SQL_INTN && (len == 1 || len == 2 || len == 4 || len == 8)) ||
                (t == MC_SQL_BITN && len == 1) ||
                ((t == MC_SQL_FLTN || t == MC_SQL_MONEYN || t == MC_SQL_DATETIMN) &&
                 (len == 4 || len == 8));
      if (!ok) return MC_TDS_CORRUPT(err, "type 0x%02X cannot have length %u", t, len);
      c->wire = MC_WIRE_BYTELEN;
      c->max_len = len;
      return MC_OK;
    }
    case MC_SQL_DECIMALN:
    case MC_SQL_NUMERICN: {
      uint8_t len, p, s;
      MC_RETURN_NOT_OK(mc_rd_u8(r, &len));
      MC_RETURN_NOT_OK(mc_rd_u8(r, &p));
      MC_RETURN_NOT_OK(mc_rd_u8(r, &s));
      if (len < 2 || len > 17 || p < 1 || p > 38 || s > p) {
        return MC_TDS_CORRUPT(err, "decimal type with length %u, precision %u, scale %u", len, p,
                              s);
      }
      c->wire = MC_WIRE_BYTELEN;
      c->max_len = len;
      c->precision = p;
      c->scale = s;
      return MC_OK;
    }
    case MC_SQL_DATEN:
      c->wire = MC_WIRE_BYTELEN;
      c->max_len = 3;
      return MC_OK;
    case MC_SQL_TIMEN:
    case MC_SQL_DATETIME2N:
    case MC_SQL_DATETIMEOFFSETN: {
      uint8_t s;
      MC_RETURN_NOT_OK(mc_rd_u8(r, &s));
      if (s > 7) return MC_TDS_CORRUPT(err, "time type 0x%02X with scale %u (at most 7)", t, s);
      c->wire = MC_WIRE_BYTELEN;
      c->scale = s;
      c->max_len = (uint32_t)mc_tds_time_bytes(s) + (t == MC_SQL_DATETIME2N        ? 3u
                                                     : t == MC_SQL_DATETIMEOFFSETN ? 5u
                                                                                   : 0u);
      return MC_OK;
    }
    case MC_SQL_BIGVARBINARY:
    case MC_SQL_BIGBINARY:
    case MC_SQL_BIGVARCHAR:
    case MC_SQL_BIGCHAR:
    case MC_SQL_NVARCHAR:
    case MC_SQL_NCHAR: {
      uint16_t len;
      MC_RETURN_NOT_OK(mc_rd_u16(r, &len));
      if (t == MC_SQL_BIGVARCHAR || t == MC_SQL_BIGCHAR || t == MC_SQL_NVARCHAR ||
          t == MC_SQL_NCHAR) {
        const uint8_t *coll;
        MC_RETURN_NOT_OK(mc_rd_bytes(r, 5, &coll));
        memcpy(c->collation, coll, 5);
        c->has_collation = 1;
      }
      if (len == 0xFFFF) {
        if (t == MC_SQL_BIGBINARY || t == MC_SQL_BIGCHAR || t == MC_SQL_NCHAR) {
          return MC_TDS_CORRUPT(err, "fixed-length type 0x%02X cannot be (max)", t);
        }
        c->wire = MC_WIRE_PLP;
      } else {
        if (len > 8000) return MC_TDS_CORRUPT(err, "type 0x%02X with length %u", t, len);
        c->wire = MC_WIRE_USHORTLEN;
      }
      c->max_len = len;
      return MC_OK;
    }
    case MC_SQL_TEXT:
    case MC_SQL_NTEXT:
    case MC_SQL_IMAGE: {
      uint32_t len;
      MC_RETURN_NOT_OK(mc_rd_u32(r, &len));
      if (t != MC_SQL_IMAGE) {
        const uint8_t *coll;
        MC_RETURN_NOT_OK(mc_rd_bytes(r, 5, &coll));
        memcpy(c->collation, coll, 5);
        c->has_collation = 1;
      }
      c->wire = MC_WIRE_TEXTPTR;
      c->max_len = len;
      return MC_OK;
    }
    case MC_SQL_SSVARIANT: {
      uint32_t len;
      MC_RETURN_NOT_OK(mc_rd_u32(r, &len));
      c->wire = MC_WIRE_LONGLEN;
      c->max_len = len;
      return MC_OK;
    }
    case MC_SQL_XML: {
      uint8_t schema_present;
      MC_RETURN_NOT_OK(mc_rd_u8(r, &schema_present));
      if (schema_present > 1)
        return MC_TDS_CORRUPT(err, "xml SCHEMA_PRESENT byte %u", schema_present);
      if (schema_present == 1) {
        MC_RETURN_NOT_OK(skip_b_varchar(r));  /* database */
        MC_RETURN_NOT_OK(skip_b_varchar(r));  /* owning schema */
        MC_RETURN_NOT_OK(skip_us_varchar(r)); /* xml schema collection */
      }
      c->wire = MC_WIRE_PLP;
      c->max_len = 0xFFFF;
      return MC_OK;
    }
    case MC_SQL_UDT: {
      uint16_t len;
      MC_RETURN_NOT_OK(mc_rd_u16(r, &len));
      MC_RETURN_NOT_OK(skip_b_varchar(r));  /* database */
      MC_RETURN_NOT_OK(skip_b_varchar(r));  /* schema */
      MC_RETURN_NOT_OK(skip_b_varchar(r));  /* type name */
      MC_RETURN_NOT_OK(skip_us_varchar(r)); /* assembly-qualified name */
      c->wire = MC_WIRE_PLP;
      c->max_len = len;
      return MC_OK;
    }
    default: return MC_TDS_UNSUPPORTED(err, "unknown or unsupported data type 0x%02X", t);
  }
}

void mc_tds_arrow_type(mc_tds_column *c) {
  c->arrow_precision = 0;
  c->arrow_scale = 0;
  switch (c->type) {
    /* tinyint is unsigned (0..255): int16, as the bronze map's SMALLINT, never int8. */
    case MC_SQL_INT1: c->arrow = MC_ARROW_INT16; return;
    case MC_SQL_INT2: c->arrow = MC_ARROW_INT16; return;
    case MC_SQL_INT4: c->arrow = MC_ARROW_INT32; return;
    case MC_SQL_INT8: c->arrow = MC_ARROW_INT64; return;
    case MC_SQL_INTN:
      c->arrow = c->max_len == 8   ? MC_ARROW_INT64
                 : c->max_len == 4 ? MC_ARROW_INT32
                                   : MC_ARROW_INT16;
      return;
    case MC_SQL_BIT:
    case MC_SQL_BITN: c->arrow = MC_ARROW_BOOL; return;
    case MC_SQL_FLT4: c->arrow = MC_ARROW_FLOAT32; return;
    case MC_SQL_FLT8: c->arrow = MC_ARROW_FLOAT64; return;
    case MC_SQL_FLTN: c->arrow = c->max_len == 4 ? MC_ARROW_FLOAT32 : MC_ARROW_FLOAT64; return;
    case MC_SQL_DECIMALN:
    case MC_SQL_NUMERICN:
      c->arrow = MC_ARROW_DECIMAL128;
      c->arrow_precision = c->precision;
      c->arrow_scale = c->scale;
      return;
    case MC_SQL_MONEY:
    case MC_SQL_MONEY4:
    case MC_SQL_MONEYN: {
      bool small = c->type == MC_SQL_MONEY4 || (c->type == MC_SQL_MONEYN && c->max_len == 4);
      c->arrow = MC_ARROW_DECIMAL128;
      c->arrow_precision = small ? 10 : 19;
      c->arrow_scale = 4;
      return;
    }
    case MC_SQL_DATETIME:
    case MC_SQL_DATETIM4:
    case MC_SQL_DATETIMN:
    case MC_SQL_DATETIME2N: c->arrow = MC_ARROW_TIMESTAMP_US; return;
    case MC_SQL_DATETIMEOFFSETN: c->arrow = MC_ARROW_TIMESTAMP_UTC; return;
    case MC_SQL_DATEN: c->arrow = MC_ARROW_DATE32; return;
    case MC_SQL_TIMEN:     /* "HH:MM:SS[.fffffff]", the bronze map's STRING */
    case MC_SQL_GUID:      /* canonical upper-case text */
    case MC_SQL_SSVARIANT: /* its value as CAST(... AS nvarchar) renders it */
    case MC_SQL_BIGVARCHAR:
    case MC_SQL_BIGCHAR:
    case MC_SQL_NVARCHAR:
    case MC_SQL_NCHAR:
    case MC_SQL_TEXT:
    case MC_SQL_NTEXT:
    case MC_SQL_XML: c->arrow = MC_ARROW_UTF8; return;
    default: /* binary, varbinary, image, timestamp/rowversion, CLR UDTs */
      c->arrow = MC_ARROW_BINARY;
      return;
  }
}

/* The inlined row path for c (mc_tds_kind), or MC_KIND_GENERIC. */
static uint8_t pick_kind(const mc_tds_column *c) {
  bool fixed_or_byte = c->wire == MC_WIRE_FIXED || c->wire == MC_WIRE_BYTELEN;
  switch (c->type) {
    case MC_SQL_INT1:
    case MC_SQL_INT2:
    case MC_SQL_INT4:
    case MC_SQL_INT8:
    case MC_SQL_INTN:
    case MC_SQL_FLT4:
    case MC_SQL_FLT8:
    case MC_SQL_FLTN:
      if (!fixed_or_byte) return MC_KIND_GENERIC;
      if (c->max_len == 1) return c->arrow == MC_ARROW_INT16 ? MC_KIND_INT1 : MC_KIND_GENERIC;
      if (mc_arrow_type_width(c->arrow) != c->max_len) return MC_KIND_GENERIC;
      return c->max_len == 2 ? MC_KIND_COPY2 : c->max_len == 4 ? MC_KIND_COPY4 : MC_KIND_COPY8;
    case MC_SQL_DATETIME:
    case MC_SQL_DATETIMN:
      return fixed_or_byte && c->max_len == 8 ? MC_KIND_DATETIME : MC_KIND_GENERIC;
    case MC_SQL_GUID: return MC_KIND_GUID;
    case MC_SQL_BIGBINARY:
    case MC_SQL_BIGVARBINARY:
      return c->wire == MC_WIRE_USHORTLEN ? MC_KIND_BINARY : MC_KIND_GENERIC;
    case MC_SQL_BIGCHAR:
    case MC_SQL_BIGVARCHAR:
      return c->wire == MC_WIRE_USHORTLEN && c->code_page == MC_CP_1252 ? MC_KIND_CP1252
                                                                        : MC_KIND_GENERIC;
    case MC_SQL_NCHAR:
    case MC_SQL_NVARCHAR: return c->wire == MC_WIRE_USHORTLEN ? MC_KIND_UTF16 : MC_KIND_GENERIC;
    default: return MC_KIND_GENERIC;
  }
}

static mc_status pick_function(mc_tds_column *c, mc_error *err);

mc_status mc_tds_pick_decoder(mc_tds_column *c, mc_error *err) {
  MC_RETURN_NOT_OK(pick_function(c, err));
  c->kind = pick_kind(c);
  return MC_OK;
}

static mc_status pick_function(mc_tds_column *c, mc_error *err) {
  c->code_page = 0;
  switch (c->type) {
    case MC_SQL_INT1:
    case MC_SQL_INT2:
    case MC_SQL_INT4:
    case MC_SQL_INT8:
    case MC_SQL_INTN: c->decode = mc_tds_decode_int; return MC_OK;
    case MC_SQL_BIT:
    case MC_SQL_BITN: c->decode = mc_tds_decode_bit; return MC_OK;
    case MC_SQL_FLT4:
    case MC_SQL_FLT8:
    case MC_SQL_FLTN: c->decode = mc_tds_decode_float; return MC_OK;
    case MC_SQL_DECIMALN:
    case MC_SQL_NUMERICN: c->decode = mc_tds_decode_decimal; return MC_OK;
    case MC_SQL_MONEY:
    case MC_SQL_MONEY4:
    case MC_SQL_MONEYN: c->decode = mc_tds_decode_money; return MC_OK;
    case MC_SQL_DATETIME:
    case MC_SQL_DATETIM4:
    case MC_SQL_DATETIMN: c->decode = mc_tds_decode_datetime; return MC_OK;
    case MC_SQL_DATEN: c->decode = mc_tds_decode_date; return MC_OK;
    case MC_SQL_TIMEN: c->decode = mc_tds_decode_time; return MC_OK;
    case MC_SQL_DATETIME2N:
    case MC_SQL_DATETIMEOFFSETN: c->decode = mc_tds_decode_datetime2; return MC_OK;
    case MC_SQL_GUID: c->decode = mc_tds_decode_guid; return MC_OK;
    case MC_SQL_SSVARIANT: c->decode = mc_tds_decode_variant; return MC_OK;
    case MC_SQL_NVARCHAR:
    case MC_SQL_NCHAR:
    case MC_SQL_NTEXT:
    case MC_SQL_XML:
      c->code_page = MC_CP_UTF16;
      c->decode = mc_tds_decode_utf16;
      return MC_OK;
    case MC_SQL_BIGVARCHAR:
    case MC_SQL_BIGCHAR:
    case MC_SQL_TEXT: {
      uint16_t cp = mc_tds_collation_code_page(c->collation);
      c->code_page = cp;
      if (cp == MC_CP_UTF8) {
        c->decode = mc_tds_decode_utf8;
        return MC_OK;
      }
      if (cp == MC_CP_1252) {
        c->decode = mc_tds_decode_cp1252;
        return MC_OK;
      }
      if (cp == 0) {
        uint32_t lcid = mc_load_u32(c->collation) & 0xFFFFFu;
        return MC_TDS_UNSUPPORTED(err,
                                  "char data with collation LCID 0x%05X, sort id %u: unknown "
                                  "code page",
                                  (unsigned)lcid, (unsigned)c->collation[4]);
      }
      MC_RETURN_NOT_OK(mc_tds_codepage_open(c, err));
      c->decode = mc_tds_decode_codepage;
      return MC_OK;
    }
    default: c->decode = mc_tds_decode_binary; return MC_OK;
  }
}

/* Reads a B_VARCHAR name into a new NUL-terminated UTF-8 string. */
static mc_status read_name(mc_rd *r, mc_tds_column *c) {
  uint8_t n;
  const uint8_t *p;
  MC_RETURN_NOT_OK(mc_rd_u8(r, &n));
  MC_RETURN_NOT_OK(mc_rd_bytes(r, (size_t)n * 2, &p));
  c->name = malloc(mc_tds_utf16_max_utf8((size_t)n * 2) + 1);
  if (c->name == NULL) return MC_ENOMEM;
  c->name_len = mc_tds_utf16_to_utf8(p, (size_t)n * 2, (uint8_t *)c->name);
  c->name[c->name_len] = '\0';
  return MC_OK;
}

static void free_columns(mc_tds_column *cols, int64_t n) {
  if (cols == NULL) return;
  for (int64_t i = 0; i < n; i++) {
    free(cols[i].name);
    mc_tds_codepage_close(&cols[i]);
  }
  free(cols);
}

void mc_tds_result_free(mc_tds_decoder *d) {
  free_columns(d->cols, d->ncols);
  d->cols = NULL;
  free(d->cells);
  d->cells = NULL;
  d->ncols = 0;
  mc_arrow_batch_free(&d->batch);
  d->batch_wire_bytes = 0;
  d->batch_ready = 0;
  d->one_pass = false;
  d->row_cap = 0;
  d->last_batch_rows = 0;
  d->row_col = 0;
  d->row_off = 0;
  d->plp_off = 0;
}

/* Parses the column descriptions; on failure frees what it made. */
static mc_status parse_columns(mc_rd *r, mc_tds_column *cols, uint16_t count, mc_error *err) {
  for (uint16_t i = 0; i < count; i++) {
    mc_tds_column *c = &cols[i];
    MC_RETURN_NOT_OK(mc_rd_u32(r, &c->user_type));
    MC_RETURN_NOT_OK(mc_rd_u16(r, &c->flags));
    MC_RETURN_NOT_OK(mc_tds_type_info_parse(r, c, err));
    if (c->wire == MC_WIRE_TEXTPTR) {
      uint8_t parts;
      MC_RETURN_NOT_OK(mc_rd_u8(r, &parts));
      for (uint8_t k = 0; k < parts; k++) MC_RETURN_NOT_OK(skip_us_varchar(r));
    }
    MC_RETURN_NOT_OK(read_name(r, c));
  }
  return MC_OK;
}

mc_status mc_tds_colmetadata_parse(mc_tds_decoder *d, mc_rd *r, size_t *used, mc_error *err) {
  const uint8_t *start = r->p;
  uint16_t count;
  MC_RETURN_NOT_OK(mc_rd_skip(r, 1));
  MC_RETURN_NOT_OK(mc_rd_u16(r, &count));
  if (count == 0xFFFF) { /* NoMetaData: the result set has no columns */
    mc_tds_result_free(d);
    *used = (size_t)(r->p - start);
    return MC_OK;
  }
  mc_tds_column *cols = calloc(count > 0 ? count : 1, sizeof *cols);
  if (cols == NULL) return mc_error_set(err, MC_ENOMEM, "out of memory reading COLMETADATA");
  mc_status st = parse_columns(r, cols, count, err);
  for (uint16_t i = 0; st == MC_OK && i < count; i++) {
    mc_tds_arrow_type(&cols[i]);
    st = mc_tds_pick_decoder(&cols[i], err);
  }
  if (st != MC_OK) {
    free_columns(cols, count);
    if (st == MC_ENOMEM) return mc_error_set(err, MC_ENOMEM, "out of memory reading COLMETADATA");
    return st;
  }
  mc_tds_result_free(d);
  d->cols = cols;
  d->ncols = count;
  d->cells = calloc(count > 0 ? count : 1, sizeof *d->cells);
  st = d->cells == NULL ? MC_ENOMEM : mc_arrow_batch_init(&d->batch, count);
  d->batch.pool = d->pool;
  d->one_pass = true;
  for (uint16_t i = 0; i < count; i++) {
    uint8_t w = cols[i].wire;
    if (w != MC_WIRE_FIXED && w != MC_WIRE_BYTELEN && w != MC_WIRE_USHORTLEN) d->one_pass = false;
  }
  for (uint16_t i = 0; st == MC_OK && i < count; i++) {
    const mc_tds_column *c = &cols[i];
    st = mc_arrow_column_init(&d->batch.columns[i], c->arrow, c->name, c->name_len,
                              c->arrow_precision, c->arrow_scale);
  }
  if (st != MC_OK) {
    mc_tds_result_free(d);
    return mc_error_set(err, MC_ENOMEM, "out of memory setting up %u columns", count);
  }
  *used = (size_t)(r->p - start);
  return MC_OK;
}
