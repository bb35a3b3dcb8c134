/*
 * plp.c: partially length-prefixed values (MS-TDS 2.2.5.2.3), the wire form of the (max)
 * types, xml and CLR UDTs: a u64 total length (0xFFFFFFFFFFFFFFFF = NULL,
 * 0xFFFFFFFFFFFFFFFE = unknown), then chunks of a u32 length and data, ended by a chunk of
 * length 0. Chunks may be split anywhere across packets; the row decoder only decodes a value
 * once all its chunks are buffered, so a value is measured first and gathered afterwards.
 */
#include "tds/tds_int.h"

#define PLP_UNKNOWN_LEN 0xFFFFFFFFFFFFFFFEull

mc_status mc_tds_plp_measure(mc_rd *r, uint64_t total, mc_tds_cell *cell, mc_error *err) {
  const uint8_t *first = r->p;
  uint64_t sum = 0;
  for (;;) {
    uint32_t chunk;
    MC_RETURN_NOT_OK(mc_rd_u32(r, &chunk));
    if (chunk == 0) break;
    if (mc_rd_left(r) < chunk) {
      r->p -= 4;
      return MC_NEEDMORE;
    }
    r->p += chunk;
    sum += chunk;
    if (sum > MC_ARROW_MAX_DATA_BYTES) {
      return mc_error_set(err, MC_ERANGE, "PLP value of more than %zu bytes (too large to hold)",
                          MC_ARROW_MAX_DATA_BYTES);
    }
  }
  if (total != PLP_UNKNOWN_LEN && total != sum) {
    return MC_TDS_CORRUPT(err, "PLP value declares %llu bytes but its chunks hold %llu",
                          (unsigned long long)total, (unsigned long long)sum);
  }
  cell->data = first;
  cell->len = (size_t)sum;
  cell->is_null = 0;
  cell->is_plp = 1;
  return MC_OK;
}

mc_status mc_tds_plp_gather(const mc_tds_cell *cell, mc_arrow_buffer *scratch, mc_error *err) {
  scratch->size = 0;
  if (mc_arrow_buffer_reserve(scratch, cell->len + 1) != MC_OK) {
    return mc_error_set(err, MC_ENOMEM, "out of memory holding a PLP value of %zu bytes",
                        cell->len);
  }
  const uint8_t *p = cell->data;
  size_t left = cell->len;
  while (left > 0) { /* measured already: every chunk header and body is present */
    uint32_t chunk = mc_load_u32(p);
    p += 4;
    if (chunk > left) chunk = (uint32_t)left; /* cannot happen after measure; stay in bounds */
    memcpy(scratch->data + scratch->size, p, chunk);
    scratch->size += chunk;
    p += chunk;
    left -= chunk;
  }
  return MC_OK;
}
