/*
 * fuzz_lsn.c: libFuzzer target for mc_lsn_parse. Any input must either fail cleanly with a
 * message or parse to an LSN whose canonical text parses back to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mssqlcdc/lsn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mc_lsn lsn;
  mc_error err;
  err.message[0] = '\0';
  if (mc_lsn_parse((const char *)data, size, &lsn, &err) != MC_OK) {
    if (err.message[0] == '\0') abort(); /* every failure explains itself */
    return 0;
  }
  char text[MC_LSN_TEXT_SIZE];
  mc_lsn_format(&lsn, text);
  mc_lsn again;
  if (mc_lsn_parse(text, strlen(text), &again, &err) != MC_OK) abort();
  if (mc_lsn_compare(&lsn, &again) != 0) abort();
  char parts[MC_LSN_PARTS_TEXT_SIZE];
  mc_lsn_format_parts(&lsn, parts);
  if (mc_lsn_parse(parts, strlen(parts), &again, &err) != MC_OK) abort();
  if (mc_lsn_compare(&lsn, &again) != 0) abort();
  return 0;
}
