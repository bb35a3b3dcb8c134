/*
 * fuzz_packet.c: libFuzzer target for the TDS deframer. The first input byte picks how the
 * rest is cut into reads; every run must end in MC_OK or MC_EPROTO with a message, every
 * returned payload must lie inside the read it came from, and payload never exceeds input.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mssqlcdc/packet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  size_t piece = (size_t)data[0] % 17 + 1;
  data++;
  size--;
  mc_tds_deframer d;
  mc_tds_deframer_init(&d, 0, 4096);
  size_t pos = 0, total_payload = 0;
  while (pos < size) {
    size_t n = piece < size - pos ? piece : size - pos;
    const uint8_t *chunk = data + pos;
    size_t left = n;
    while (left > 0) {
      size_t consumed = 0;
      const uint8_t *payload = NULL;
      size_t payload_len = 0;
      mc_error err;
      err.message[0] = '\0';
      mc_status st = mc_tds_deframe(&d, chunk, left, &consumed, &payload, &payload_len, &err);
      if (st != MC_OK) {
        if (st != MC_EPROTO || err.message[0] == '\0') abort();
        return 0;
      }
      if (consumed == 0 || consumed > left) abort();
      if (payload_len > 0 && (payload < chunk || payload + payload_len > chunk + left)) abort();
      total_payload += payload_len;
      chunk += consumed;
      left -= consumed;
    }
    pos += n;
  }
  if (total_payload > size) abort();
  return 0;
}
