/*
 * lsn.h: SQL Server log sequence numbers (LSNs).
 *
 * An LSN is binary(10): a 4-byte VLF sequence number, a 4-byte log block number and a 2-byte
 * slot, all big-endian, so an unsigned byte-wise compare is the log order
 * (docs/reference/sql-server-cdc.md#log-sequence-numbers). __$start_lsn, __$seqval, commit LSNs and
 * the lsn_time_mapping bounds all use this format.
 *
 * Text forms handled here:
 *   canonical  "0x0000002A000001F40003"   (0x + 20 upper-case hex digits, a T-SQL literal)
 *   parts      "0000002a:000001f4:0003"   (vlf:block:slot, the fn_dblog / Debezium form)
 */
#ifndef MSSQLCDC_LSN_H
#define MSSQLCDC_LSN_H

#include <stddef.h>
#include <stdint.h>

#include "mssqlcdc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_LSN_SIZE 10
/* "0x" + 20 hex digits + NUL */
#define MC_LSN_TEXT_SIZE 23
/* 8 + ':' + 8 + ':' + 4 + NUL */
#define MC_LSN_PARTS_TEXT_SIZE 23

typedef struct mc_lsn {
  unsigned char bytes[MC_LSN_SIZE]; /* big-endian, as SQL Server stores binary(10) */
} mc_lsn;

/*
 * Parses text of length len (no NUL needed) into *out.
 *
 * Accepted: an optional "0x"/"0X" prefix, then 1 to 20 hex digits in either case; fewer than
 * 20 digits are left-padded with zeros (so "0x2A" is VLF 0, block 0, slot 0x2A). Also the parts
 * form "V:B:S" with 1-8, 1-8 and 1-4 hex digits. No white space is accepted.
 *
 * Returns MC_OK, or MC_EINVAL with a message saying what was wrong (empty, a character that is
 * not a hex digit and where, too many digits). *out is unchanged on error.
 */
MC_NODISCARD mc_status mc_lsn_parse(const char *text, size_t len, mc_lsn *out, mc_error *err);

/* Writes the canonical form ("0x" + 20 upper-case hex digits) and a NUL into out. */
void mc_lsn_format(const mc_lsn *lsn, char out[MC_LSN_TEXT_SIZE]);

/* Writes the parts form ("0000002a:000001f4:0003", lower-case hex) and a NUL into out. */
void mc_lsn_format_parts(const mc_lsn *lsn, char out[MC_LSN_PARTS_TEXT_SIZE]);

/* <0, 0, >0 as a is before, equal to or after b in log order. */
int mc_lsn_compare(const mc_lsn *a, const mc_lsn *b);

/*
 * The next possible LSN, with none in between, as sys.fn_cdc_increment_lsn returns: the slot
 * goes up by one and carries into the block, the block into the VLF. Returns MC_ERANGE at the
 * largest LSN (0xFFFF...); *out is unchanged then. in and out may alias.
 */
MC_NODISCARD mc_status mc_lsn_increment(const mc_lsn *in, mc_lsn *out, mc_error *err);

/* The previous possible LSN, as sys.fn_cdc_decrement_lsn returns. MC_ERANGE at the zero LSN. */
MC_NODISCARD mc_status mc_lsn_decrement(const mc_lsn *in, mc_lsn *out, mc_error *err);

/* Field access and construction. */
uint32_t mc_lsn_vlf(const mc_lsn *lsn);
uint32_t mc_lsn_block(const mc_lsn *lsn);
uint16_t mc_lsn_slot(const mc_lsn *lsn);
mc_lsn mc_lsn_from_parts(uint32_t vlf, uint32_t block, uint16_t slot);

#ifdef __cplusplus
}
#endif

#endif /* MSSQLCDC_LSN_H */
