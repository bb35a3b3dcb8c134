/*
 * row.c: ROW (MS-TDS 2.2.7.19) and NBCROW (2.2.7.14) tokens, and value framing
 * (2.2.5.2: fixed, byte-, ushort-, long-length and PLP values; 2.2.5.5 for text pointers).
 *
 * A row is decoded in two passes over the buffered bytes. The first (measure) frames every
 * value and checks its length against the column's type; it is the only pass that can run out
 * of bytes, and it reports MC_NEEDMORE before anything is appended. The second (decode) calls
 * each column's decoder, picked once at COLMETADATA. If a decoder fails, the columns are rolled
 * back to the row start, so a row is appended whole or not at all.
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

mc_status mc_tds_row_decode(mc_tds_decoder *d, mc_rd *r, size_t *used, mc_error *err) {
  const uint8_t *start = r->p;
  uint8_t token = r->p[0];
  r->p++;
  if (d->cols == NULL) {
    return MC_TDS_CORRUPT(err, "row token 0x%02X before any COLMETADATA", token);
  }
  const uint8_t *bitmap = NULL;
  if (token == MC_TDS_TOKEN_NBCROW) {
    mc_status st = mc_rd_bytes(r, (size_t)(d->ncols + 7) / 8, &bitmap);
    if (st != MC_OK) {
      r->p = start;
      return st;
    }
  }

  /* Pass 1: frame every value. */
  for (int64_t i = 0; i < d->ncols; i++) {
    mc_tds_cell *cell = &d->cells[i];
    if (bitmap != NULL && (bitmap[i >> 3] & (1u << (i & 7))) != 0) {
      cell->is_null = 1;
      cell->is_plp = 0;
      continue;
    }
    mc_status st = mc_tds_value_measure(&d->cols[i], r, cell, err);
    if (st != MC_OK) {
      if (st == MC_NEEDMORE) r->p = start;
      return st;
    }
  }

  /* Pass 2: decode. */
  int64_t length = d->batch.length;
  for (int64_t i = 0; i < d->ncols; i++) {
    mc_arrow_column *col = &d->batch.columns[i];
    const mc_tds_column *c = &d->cols[i];
    const mc_tds_cell *cell = &d->cells[i];
    mc_status st;
    if (cell->is_null) {
      st = mc_arrow_column_append_null(col);
      if (st != MC_OK) st = mc_error_set(err, st, "out of memory appending a NULL");
    } else {
      st = mc_arrow_column_reserve_one(col, 0);
      if (st != MC_OK) {
        st = mc_error_set(err, st, "out of memory appending to column %lld", (long long)i);
      } else if (cell->is_plp) {
        st = mc_tds_plp_gather(cell, &d->scratch, err);
        if (st == MC_OK) st = c->decode(c, col, d->scratch.data, d->scratch.size, err);
      } else {
        st = c->decode(c, col, cell->data, cell->len, err);
      }
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
  *used = (size_t)(r->p - start);
  return MC_OK;
}
