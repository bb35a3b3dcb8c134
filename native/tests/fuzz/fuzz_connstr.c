/*
 * fuzz_connstr.c: libFuzzer target for mc_conn_params_parse. Any input parses or fails with a
 * message; parsed fields are NUL-terminated within their buffers; nothing over-reads.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mssqlcdc/connstr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mc_conn_params p;
  mc_conn_params_init(&p);
  mc_error err;
  err.message[0] = '\0';
  if (mc_conn_params_parse(&p, (const char *)data, size, &err) != MC_OK) {
    if (err.message[0] == '\0') abort();
  } else {
    if (memchr(p.host, '\0', sizeof p.host) == NULL) abort();
    if (memchr(p.password, '\0', sizeof p.password) == NULL) abort();
    if (memchr(p.unknown_keys, '\0', sizeof p.unknown_keys) == NULL) abort();
    if (p.packet_size < 512 || p.packet_size > 32767) abort();
  }
  mc_conn_params_clear(&p);
  return 0;
}
