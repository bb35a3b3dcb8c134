/*
 * row.c: ROW (MS-TDS 2.2.7.19) and NBCROW (2.2.7.14) tokens, and value framing
 * (2.2.5.2: fixed, byte-, ushort-, long-length and PLP values; 2.2.5.5 for text pointers).
 *
 * A row is decoded in two passes over the buffered bytes. The first (measure) frames every
 * value and checks its length against the column's type; it is the only pass that can run out
 * of bytes, and it reports MC_NEEDMORE before anything is appended. When it does, it keeps its
 * position (the next column, and the next chunk inside a PLP value) as offsets from the row
 * token, and sets the decoder's `want` to the bytes the value needs when its length is known,
 * so a row that spans many packets is measured once, not again from its first column on every
 * packet. The second pass (decode) appends each value: the common types inline (mc_tds_kind,
 * picked once at COLMETADATA), the others through the column's decoder. Fixed-size buffers are
 * reserved for many rows at once (grow_rows), so the inline paths check no capacity. If a
 * decoder fails, the columns are rolled back to the row start, so a row is appended whole or
 * not at all.
 */
#include "tds/tds_int.h"

/* Checks a BYTELEN value's length against its type. */
static bool bytelen_ok(const mc_tds_column *c, size_t len) {
  switch (c->type) {
    case MC_SQL_DECIMALN:
    case MC_SQL_NUMERICN: return len >= 2 && len <= 17;
    default: return len == c->max_len; /* ints, floats, money, datetime, guid, date, times */
  }
}

mc_status mc_tds_value_measure(const mc_tds_column *c, mc_rd *r, mc_tds_cell *cell, mc_error *err) {
  const uint8_t *start = r->p;
  cell->is_null = 0;
  cell->is_plp = 0;
  size_t len = 0;
  mc_status st = MC_OK;
  switch ((mc_tds_wire)c->wire) {
    case MC_WIRE_FIXED: len = c->max_len; break;
    case MC_WIRE_BYTELEN: {
      uint8_t n;
      MC_RETURN_NOT_OK(mc_rd_u8(r, &n));
      if (n == 0) {
        cell->is_null = 1;
        return MC_OK;
      }
      if (!bytelen_ok(c, n)) {
        return MC_TDS_CORRUPT(err, "value of type 0x%02X has length %u (column allows %u)", c->type,
                              n, (unsigned)c->max_len);
      }
      len = n;
      break;
    }
    case MC_WIRE_USHORTLEN: {
      uint16_t n;
      MC_RETURN_NOT_OK(mc_rd_u16(r, &n));
      if (n == 0xFFFF) {
        cell->is_null = 1;
        return MC_OK;
      }
      if (n > c->max_len) {
        return MC_TDS_CORRUPT(err, "value of %u bytes in a column of type 0x%02X(%u)", n, c->type,
                              (unsigned)c->max_len);
      }
      len = n;
      break;
    }
    case MC_WIRE_TEXTPTR: {
      uint8_t ptrlen;
      uint32_t n;
      MC_RETURN_NOT_OK(mc_rd_u8(r, &ptrlen));
      if (ptrlen == 0) {
        cell->is_null = 1;
        return MC_OK;
      }
      st = mc_rd_skip(r, (size_t)ptrlen + 8); /* text pointer, timestamp */
      if (st == MC_OK) st = mc_rd_u32(r, &n);
      if (st != MC_OK) {
        r->p = start;
        return st;
      }
      if (n > MC_ARROW_MAX_DATA_BYTES) {
        return MC_TDS_CORRUPT(err, "text value of %u bytes", (unsigned)n);
      }
      len = n;
      break;
    }
    case MC_WIRE_LONGLEN: {
      uint32_t n;
      MC_RETURN_NOT_OK(mc_rd_u32(r, &n));
      if (n == 0) {
        cell->is_null = 1;
        return MC_OK;
      }
      if (n > c->max_len || n < 2) {
        return MC_TDS_CORRUPT(err, "sql_variant value of %u bytes (column allows %u)", (unsigned)n,
                              (unsigned)c->max_len);
      }
      len = n;
      break;
    }
    case MC_WIRE_PLP: {
      uint64_t total;
      MC_RETURN_NOT_OK(mc_rd_u64(r, &total));
      if (total == 0xFFFFFFFFFFFFFFFFull) {
        cell->is_null = 1;
        return MC_OK;
      }
      st = mc_tds_plp_measure(r, total, cell, err);
      if (st == MC_NEEDMORE) r->p = start;
      return st;
    }
    default: return MC_TDS_CORRUPT(err, "column with no wire format");
  }
  if (mc_rd_left(r) < len) {
    r->p = start;
    return MC_NEEDMORE;
  }
  cell->data = r->p;
  cell->len = len;
  r->p += len;
  return MC_OK;
}

/* Drops a half-appended row: columns [0, upto] go back to `length` rows; the null counts of
 * columns before `upto` lose the NULLs this row added. */
static void rollback(mc_tds_decoder *d, int64_t upto, int64_t length) {
  for (int64_t j = 0; j <= upto && j < d->ncols; j++) {
    mc_arrow_column *col = &d->batch.columns[j];
    int64_t nulls = col->null_count;
    if (j < upto && d->cells[j].is_null && col->length > length) nulls--;
    mc_arrow_column_truncate(col, length, nulls);
  }
}

/* Measures the PLP value at v (its u64 total length first), resuming at the chunk saved in d
 * when this value was measured before. On MC_OK fills *cell and sets *next past the value; on
 * MC_NEEDMORE saves where it stopped and sets *want (bytes from the row token) when the
 * current chunk's length is known. */
static mc_status measure_plp(mc_tds_decoder *d, const uint8_t *row, const uint8_t *v,
                             const uint8_t *end, mc_tds_cell *cell, const uint8_t **next,
                             size_t *want, mc_error *err) {
  const uint8_t *q;
  uint64_t sum, total;
  if (d->plp_off != 0) {
    q = row + d->plp_off;
    sum = d->plp_sum;
    total = d->plp_total;
  } else {
    if ((size_t)(end - v) < 8) return MC_NEEDMORE;
    total = mc_load_u64(v);
    if (total == 0xFFFFFFFFFFFFFFFFull) {
      cell->is_null = 1;
      *next = v + 8;
      return MC_OK;
    }
    q = v + 8;
    sum = 0;
  }
  for (;;) {
    if ((size_t)(end - q) < 4) {
      *want = (size_t)(q - row) + 4;
      break;
    }
    uint32_t chunk = mc_load_u32(q);
    if (chunk == 0) {
      d->plp_off = 0;
      if (total != 0xFFFFFFFFFFFFFFFEull && total != sum) {
        return MC_TDS_CORRUPT(err, "PLP value declares %llu bytes but its chunks hold %llu",
                              (unsigned long long)total, (unsigned long long)sum);
      }
      cell->data = v + 8;
      cell->off = (size_t)(v + 8 - row);
      cell->len = (size_t)sum;
      cell->is_plp = 1;
      *next = q + 4;
      return MC_OK;
    }
    if (sum + chunk > MC_ARROW_MAX_DATA_BYTES) {
      return mc_error_set(err, MC_ERANGE, "PLP value of more than %zu bytes (too large to hold)",
                          MC_ARROW_MAX_DATA_BYTES);
    }
    if ((size_t)(end - q) - 4 < chunk) {
      *want = (size_t)(q - row) + 4 + chunk;
      break;
    }
    q += 4 + (size_t)chunk;
    sum += chunk;
  }
  d->plp_off = (size_t)(q - row);
  d->plp_sum = sum;
  d->plp_total = total;
  return MC_NEEDMORE;
}

/* Frames the value of column c at *pp (row: the row token). On MC_OK fills *cell and moves *pp
 * past the value; on MC_NEEDMORE leaves *pp at the value's start and sets *want (bytes from the
 * row token) when the value's length is known. */
static MC_ALWAYS_INLINE mc_status measure_as(uint8_t wire, uint8_t kind, mc_tds_decoder *d,
                                             const mc_tds_column *c, const uint8_t *row,
                                             const uint8_t **pp, const uint8_t *end,
                                             mc_tds_cell *cell, size_t *want, mc_error *err) {
  const uint8_t *p = *pp;
  size_t left = (size_t)(end - p);
  size_t len, hdr;
  cell->is_null = 0;
  cell->is_plp = 0;
  switch ((mc_tds_wire)wire) {
    case MC_WIRE_FIXED:
      hdr = 0;
      len = c->max_len;
      break;
    case MC_WIRE_BYTELEN:
      if (left < 1) return MC_NEEDMORE;
      hdr = 1;
      len = p[0];
      if (len == 0) {
        cell->is_null = 1;
        *pp = p + 1;
        return MC_OK;
      }
      /* The inlined kinds are all of one length (max_len); decimals are GENERIC. */
      if (kind != MC_KIND_GENERIC ? len != c->max_len : !bytelen_ok(c, len)) {
        return MC_TDS_CORRUPT(err, "value of type 0x%02X has length %u (column allows %u)", c->type,
                              (unsigned)len, (unsigned)c->max_len);
      }
      break;
    case MC_WIRE_USHORTLEN:
      if (left < 2) return MC_NEEDMORE;
      hdr = 2;
      len = mc_load_u16(p);
      if (len == 0xFFFF) {
        cell->is_null = 1;
        *pp = p + 2;
        return MC_OK;
      }
      if (len > c->max_len) {
        return MC_TDS_CORRUPT(err, "value of %u bytes in a column of type 0x%02X(%u)",
                              (unsigned)len, c->type, (unsigned)c->max_len);
      }
      break;
    case MC_WIRE_PLP: return measure_plp(d, row, p, end, cell, pp, want, err);
    default: { /* text pointers, sql_variant: the general framing */
      mc_rd r = {p, end};
      MC_RETURN_NOT_OK(mc_tds_value_measure(c, &r, cell, err));
      if (!cell->is_null) cell->off = (size_t)(cell->data - row);
      *pp = r.p;
      return MC_OK;
    }
  }
  if (left - hdr < len) {
    *want = (size_t)(p - row) + hdr + len;
    return MC_NEEDMORE;
  }
  cell->data = p + hdr;
  cell->off = (size_t)(p + hdr - row);
  cell->len = len;
  *pp = p + hdr + len;
  return MC_OK;
}

/* Makes room for more rows in every fixed-size buffer of the batch (values of fixed-width
 * columns, offsets, bitmaps), so that the inline paths need no capacity check: at a batch's
 * first row as many rows as the result's largest batch so far (at least 1024, at most
 * batch_rows), with the utf8/binary bytes the last batch needed; then doubling. */
static mc_status grow_rows(mc_tds_decoder *d, mc_error *err) {
  int64_t rows;
  if (d->row_cap <= d->batch.length && d->batch.length == 0) {
    rows = d->last_batch_rows > 1024 ? d->last_batch_rows : 1024;
  } else {
    rows = d->row_cap > INT64_MAX / 2 ? INT64_MAX : d->row_cap * 2;
  }
  if (rows > d->opt.batch_rows) rows = d->opt.batch_rows;
  if (rows <= d->batch.length) rows = d->batch.length + 1;
  for (int64_t i = 0; i < d->ncols; i++) {
    mc_arrow_column *col = &d->batch.columns[i];
    size_t data = col->values.size;
    if (col->length == 0 && d->cols[i].data_hint > data) data = d->cols[i].data_hint;
    if (mc_arrow_column_reserve_rows(col, rows, data, d->pool) != MC_OK) {
      return mc_error_set(err, MC_ENOMEM, "out of memory reserving %lld rows", (long long)rows);
    }
  }
  d->row_cap = rows;
  return MC_OK;
}

/* Copies n bytes with fixed-size moves for the short values of most binary columns (a
 * library memcpy call costs more than the copy). Reads and writes only [0, n). */
static inline void copy_short(uint8_t *dst, const uint8_t *src, size_t n) {
  if (n > 16) {
    memcpy(dst, src, n);
  } else if (n >= 8) {
    memcpy(dst, src, 8);
    memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    memcpy(dst, src, 4);
    memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    for (size_t k = 0; k < n; k++) dst[k] = src[k];
  }
}

/* Room for n more utf8/binary bytes in col (one check; the offsets slot is reserved). */
static inline mc_status data_room(mc_arrow_column *col, size_t n, mc_error *err) {
  if (col->values.capacity - col->values.size >= n) return MC_OK;
  return mc_tds_reserve_data(col, n, err);
}

/* Appends the measured, non-NULL value of column i. */
static MC_ALWAYS_INLINE mc_status decode_as(uint8_t kind, mc_tds_decoder *d, const mc_tds_column *c,
                                            mc_arrow_column *col, const uint8_t *v,
                                            const mc_tds_cell *cell, mc_error *err) {
  size_t n = cell->len;
  switch ((mc_tds_kind)kind) {
    case MC_KIND_INT1: {
      int16_t x = v[0];
      mc_arrow_column_append_fixed_unsafe(col, &x, 2);
      return MC_OK;
    }
    case MC_KIND_COPY2: {
      uint16_t x = mc_load_u16(v);
      mc_arrow_column_append_fixed_unsafe(col, &x, 2);
      return MC_OK;
    }
    case MC_KIND_COPY4: {
      uint32_t x = mc_load_u32(v);
      mc_arrow_column_append_fixed_unsafe(col, &x, 4);
      return MC_OK;
    }
    case MC_KIND_COPY8: {
      uint64_t x = mc_load_u64(v);
      mc_arrow_column_append_fixed_unsafe(col, &x, 8);
      return MC_OK;
    }
    case MC_KIND_DATETIME: {
      int64_t days = mc_i32_from_u32(mc_load_u32(v));
      uint32_t ticks = mc_load_u32(v + 4);
      if (ticks >= 25920000u) return c->decode(c, col, v, n, err); /* reports it */
      int64_t us =
          (days - 25567) * 86400000000LL + (int64_t)(((uint64_t)ticks * 10 + 1) / 3) * 1000;
      mc_arrow_column_append_fixed_unsafe(col, &us, 8);
      return MC_OK;
    }
    case MC_KIND_GUID:
      MC_RETURN_NOT_OK(data_room(col, 36, err));
      mc_tds_format_guid(v, (char *)mc_arrow_column_data_tail(col));
      mc_arrow_column_commit_bytes_unsafe(col, 36);
      return MC_OK;
    case MC_KIND_BINARY:
      MC_RETURN_NOT_OK(data_room(col, n, err));
      copy_short(mc_arrow_column_data_tail(col), v, n);
      mc_arrow_column_commit_bytes_unsafe(col, n);
      return MC_OK;
    case MC_KIND_CP1252: {
      MC_RETURN_NOT_OK(data_room(col, n * 3, err));
      size_t len = mc_tds_cp1252_to_utf8(v, n, mc_arrow_column_data_tail(col));
      mc_arrow_column_commit_bytes_unsafe(col, len);
      return MC_OK;
    }
    case MC_KIND_UTF16: {
      MC_RETURN_NOT_OK(data_room(col, mc_tds_utf16_max_utf8(n), err));
      size_t len = mc_tds_utf16_to_utf8(v, n, mc_arrow_column_data_tail(col));
      mc_arrow_column_commit_bytes_unsafe(col, len);
      return MC_OK;
    }
    default:
      if (mc_arrow_column_reserve_one(col, 0) != MC_OK) {
        return mc_error_set(err, MC_ENOMEM, "out of memory appending a value");
      }
      if (cell->is_plp) {
        mc_tds_cell gathered = *cell;
        gathered.data = v;
        MC_RETURN_NOT_OK(mc_tds_plp_gather(&gathered, &d->scratch, err));
        return c->decode(c, col, d->scratch.data, d->scratch.size, err);
      }
      return c->decode(c, col, v, n, err);
  }
}

/* The two passes of one value, with the column's wire format and kind passed as constants
 * where the caller knows them, so that the compiler folds both switches away. */
static MC_ALWAYS_INLINE mc_status one_value(uint8_t wire, uint8_t kind, mc_tds_decoder *d,
                                            const mc_tds_column *c, mc_arrow_column *col,
                                            mc_tds_cell *cell, const uint8_t *row,
                                            const uint8_t **p, const uint8_t *end, size_t *want,
                                            mc_error *err) {
  MC_RETURN_NOT_OK(measure_as(wire, kind, d, c, row, p, end, cell, want, err));
  if (cell->is_null) return mc_arrow_column_append_null(col);
  return decode_as(kind, d, c, col, cell->data, cell, err);
}

#define OP(wire, kind) ((wire)*16 + (kind))
#define ONE_VALUE_CASE(wire, kind) \
  case OP(wire, kind): st = one_value(wire, kind, d, c, col, cell, row, &p, end, &want, err); break

/* One pass that frames and appends each value, for result sets whose values all have their
 * length up front (no PLP, text pointer or sql_variant: d->one_pass) and a row that is not
 * resumed. The common (wire format, kind) pairs each get their own inlined code. On anything
 * but MC_OK it rolls the row back and returns, and the two-pass path below redoes the row: it
 * reports the same error, or MC_NEEDMORE with its position kept. */
static mc_status one_pass(mc_tds_decoder *d, const uint8_t *row, const uint8_t *p,
                          const uint8_t *bitmap, const uint8_t *end, size_t *used, mc_error *err) {
  int64_t length = d->batch.length;
  size_t want = 0;
  for (int64_t i = 0; i < d->ncols; i++) {
    mc_arrow_column *col = &d->batch.columns[i];
    const mc_tds_column *c = &d->cols[i];
    mc_tds_cell local; /* in registers; only is_null is kept, for a roll-back */
    mc_tds_cell *cell = &local;
    mc_status st;
    if (bitmap != NULL && (bitmap[i >> 3] & (1u << (i & 7))) != 0) {
      local.is_null = 1;
      st = mc_arrow_column_append_null(col);
    } else {
      switch (OP(c->wire, c->kind)) {
        ONE_VALUE_CASE(MC_WIRE_BYTELEN, MC_KIND_COPY4);
        ONE_VALUE_CASE(MC_WIRE_BYTELEN, MC_KIND_COPY8);
        ONE_VALUE_CASE(MC_WIRE_BYTELEN, MC_KIND_COPY2);
        ONE_VALUE_CASE(MC_WIRE_BYTELEN, MC_KIND_INT1);
        ONE_VALUE_CASE(MC_WIRE_BYTELEN, MC_KIND_DATETIME);
        ONE_VALUE_CASE(MC_WIRE_BYTELEN, MC_KIND_GUID);
        ONE_VALUE_CASE(MC_WIRE_FIXED, MC_KIND_COPY4);
        ONE_VALUE_CASE(MC_WIRE_FIXED, MC_KIND_COPY8);
        ONE_VALUE_CASE(MC_WIRE_FIXED, MC_KIND_COPY2);
        ONE_VALUE_CASE(MC_WIRE_FIXED, MC_KIND_INT1);
        ONE_VALUE_CASE(MC_WIRE_FIXED, MC_KIND_DATETIME);
        ONE_VALUE_CASE(MC_WIRE_USHORTLEN, MC_KIND_BINARY);
        ONE_VALUE_CASE(MC_WIRE_USHORTLEN, MC_KIND_CP1252);
        ONE_VALUE_CASE(MC_WIRE_USHORTLEN, MC_KIND_UTF16);
        default: st = one_value(c->wire, c->kind, d, c, col, cell, row, &p, end, &want, err);
      }
    }
    d->cells[i].is_null = local.is_null;
    if (st != MC_OK) {
      rollback(d, i, length);
      return st;
    }
  }
  d->batch.length = length + 1;
  *used = (size_t)(p - row);
  return MC_OK;
}

#undef ONE_VALUE_CASE
#undef OP

mc_status mc_tds_row_decode(mc_tds_decoder *d, mc_rd *r, size_t *used, size_t *want,
                            mc_error *err) {
  const uint8_t *row = r->p;
  const uint8_t *end = r->end;
  uint8_t token = row[0];
  if (d->cols == NULL) {
    return MC_TDS_CORRUPT(err, "row token 0x%02X before any COLMETADATA", token);
  }
  const uint8_t *bitmap = NULL;
  const uint8_t *p = row + 1;
  if (token == MC_TDS_TOKEN_NBCROW) {
    size_t nb = (size_t)(d->ncols + 7) / 8;
    if ((size_t)(end - p) < nb) return MC_NEEDMORE;
    bitmap = p;
    p += nb;
  }

  if (d->batch.length >= d->row_cap) MC_RETURN_NOT_OK(grow_rows(d, err));
  if (d->one_pass && d->row_col == 0 && one_pass(d, row, p, bitmap, end, used, err) == MC_OK) {
    return MC_OK;
  }

  /* Pass 1: frame every value, from where the last attempt stopped. */
  int64_t i = 0;
  if (d->row_col > 0) {
    i = d->row_col;
    p = row + d->row_off;
  }
  for (; i < d->ncols; i++) {
    mc_tds_cell *cell = &d->cells[i];
    if (bitmap != NULL && (bitmap[i >> 3] & (1u << (i & 7))) != 0) {
      cell->is_null = 1;
      cell->is_plp = 0;
      continue;
    }
    mc_status st =
        measure_as(d->cols[i].wire, d->cols[i].kind, d, &d->cols[i], row, &p, end, cell, want, err);
    if (st != MC_OK) {
      if (st == MC_NEEDMORE) {
        d->row_col = i;
        d->row_off = (size_t)(p - row);
      }
      return st;
    }
  }
  d->row_col = 0;
  d->plp_off = 0;

  /* Pass 2: decode. */
  int64_t length = d->batch.length;
  for (i = 0; i < d->ncols; i++) {
    mc_arrow_column *col = &d->batch.columns[i];
    const mc_tds_column *c = &d->cols[i];
    const mc_tds_cell *cell = &d->cells[i];
    mc_status st;
    if (cell->is_null) {
      st = mc_arrow_column_append_null(col);
      if (st != MC_OK) st = mc_error_set(err, st, "out of memory appending a NULL");
    } else {
      st = decode_as(c->kind, d, c, col, row + cell->off, cell, err);
    }
    if (st != MC_OK) {
      rollback(d, i, length);
      if (st == MC_ERANGE) { /* too large, not corrupt: a smaller batch fixes it */
        st = mc_error_set(err, MC_ERANGE,
                          "column %lld (\"%s\") holds more than 2 GiB in one batch; use a "
                          "smaller batch_bytes",
                          (long long)i, c->name);
      }
      return st;
    }
  }
  d->batch.length = length + 1;
  *used = (size_t)(p - row);
  return MC_OK;
}
